"""What in a chart makes a session worth asking: medication-safety signals and measured
treatment responses, read from the timeline with the tables of :mod:`.vocab`.

A **safety signal** is a renally cleared drug above its labelled renal range (:mod:`.renal`), a
drug level out of its range, an anticoagulant with its monitoring lab, a monitored drug made
unsafe by its lab (``UNSAFE_WHEN``), two current orders of one drug or class, a warfarin bridge,
or a known interaction between two current drugs. A **treatment response** is a treatment
given (eMAR or ICU ``inputevents``) with its marker measured before the first dose and again
after it.
A medication-safety session is built only where the chart has a signal, and asks about one; a
treatment-response session only where a response can be measured.
"""

from __future__ import annotations

import datetime as dt
from itertools import combinations
from typing import Any

from physassist.timeline import Timeline

from .interpret import ON_WARFARIN, warfarin_order
from .kinds import Topic
from .profile import Profile
from .renal import renal_dose
from .trends import turned_back
from .vocab import (
    ANTIBIOTIC_CLASSES,
    BRIDGES,
    DRUG_LEVELS,
    DUPLICATE_CLASSES,
    INFECTION_MARKERS,
    INTERACTIONS,
    TREATMENTS,
    TRENDS,
    WARFARIN,
    Treatment,
    drug_spoken,
    unsafe,
)

#: A marker value this long after the first dose shows the treatment's effect.
EFFECT_AFTER = dt.timedelta(hours=4)
#: The value before the first dose is its baseline when drawn at most this long before it.
BASELINE_WITHIN = dt.timedelta(days=2)
#: The latest value measures a treatment when drawn at most this long after its last dose: a
#: value weeks after a stopped drug measures something else.
RESPONSE_WITHIN = dt.timedelta(hours=72)
#: A stopped antibiotic course shorter than this is prophylaxis or a stopped empiric course.
BRIEF_COURSE = dt.timedelta(hours=48)
#: A course is at least this many doses (one dose, or a first dose and nothing to judge, is not).
COURSE_DOSES = 2
INR = "INR(PT)"
#: Warfarin started this recently is still being loaded; an INR above INR_OVERSHOOT this
#: recently is an overshoot a dose rise would repeat (CHEST 2012: the INR takes days to follow
#: a dose change).
WARFARIN_INITIATION = dt.timedelta(days=7)
INR_OVERSHOOT = 3.0
WARFARIN_TARGET_LOW = 2.0
#: Drugs that cause hypoglycaemia (sulfonylureas, insulin), not metformin alone.
HYPOGLYCAEMICS = ("insulin", "glipizide", "glyburide", "glimepiride")
#: The antibiotic that, by mouth, is not absorbed (:func:`gut_only`).
GUT_ONLY = "vancomycin"


def _latest(tl: Timeline, label: str) -> float | None:
    series = tl.lab(label)
    return series.latest.value if series is not None else None


def lab_signals(prof: Profile) -> list[Topic]:
    """drug_lab_safety topics with a real signal: renal dosing, a level out of range, warfarin
    and its INR, a monitored drug made unsafe by its latest lab."""
    tl = prof.timeline
    if tl is None:
        return []
    out: list[Topic] = []
    for word in sorted(prof.drugs):
        level = next((lv for w, lv in DRUG_LEVELS.items() if w in word), None)
        value = _latest(tl, level.lab) if level is not None else None
        if level is not None and value is not None and not level.low <= value <= level.high:
            if not _changed_since_level(tl, word, level.lab):
                out.append(Topic("drug_lab_safety", lab=level.lab, drug=word))
        elif (renal := renal_dose(prof, word)) is not None and renal.excess:
            out.append(Topic("drug_lab_safety", lab="Creatinine", drug=word))
        elif WARFARIN in word and _latest(tl, INR) is not None:
            if not inr_settling(tl):
                out.append(Topic("drug_lab_safety", lab=INR, drug=word))
        else:
            out += [
                Topic("drug_lab_safety", lab=lab, drug=word)
                for lab in prof.labs
                if (v := _latest(tl, lab)) is not None
                and unsafe(word, lab, v)
                and not _other_cause(tl, word, lab)
            ][:1]
    return out


def _changed_since_level(tl: Timeline, word: str, lab: str) -> bool:
    """A current order of the drug started after its latest level: the level was drawn on a
    dose already changed (vancomycin 1500 mg reduced to 1250 mg after a trough of 21.5)."""
    series = tl.lab(lab)
    drawn = series.latest.time if series is not None else None
    return drawn is not None and any(
        o.start is not None and o.start > drawn for o in tl.current_orders(word)
    )


def warfarin_start(tl: Timeline) -> dt.datetime | None:
    """When the warfarin course a patient is on began: MIMIC-IV writes warfarin as a dose a
    day (``ONCE`` orders), so orders that follow each other within :data:`ON_WARFARIN` (from
    the one's stop, else start, to the next's start) are one course."""
    orders = sorted(
        (o for o in tl.orders_for(WARFARIN) if o.start is not None and o.start <= tl.ref),
        key=lambda o: o.start or tl.ref,
    )
    orders = [o for o in orders if o.dose is not None and o.dose > 0]
    if not orders:
        return None
    first = orders[-1]
    for o in reversed(orders[:-1]):
        end = max(o.stop or o.start or tl.ref, o.start or tl.ref)
        if first.start is not None and first.start - end > ON_WARFARIN:
            break
        first = o
    return first.start


def inr_settling(tl: Timeline) -> bool:
    """An INR below the warfarin target that is no reason to raise the dose: warfarin started
    within :data:`WARFARIN_INITIATION` (the INR is still climbing), an INR above
    :data:`INR_OVERSHOOT` within that time (a recent overshoot), or the INR rising on its last
    two values. Continue and recheck is the answer then, which no signal asks."""
    series = tl.lab(INR)
    given = tl.administrations(WARFARIN).given
    if series is None or series.latest.value >= WARFARIN_TARGET_LOW:
        return False
    since = tl.ref - WARFARIN_INITIATION
    values = series.confirmed
    return (
        (bool(given) and given[0] >= since)
        or any(p.value > INR_OVERSHOOT for p in values if p.time >= since)
        or (len(values) >= 2 and values[-1].value > values[-2].value)
    )


def _other_cause(tl: Timeline, word: str, lab: str) -> bool:
    """Metformin with a low glucose when a sulfonylurea or insulin was given: metformin alone
    does not cause hypoglycaemia (ADA 2024, 9), so the signal would blame the wrong drug."""
    return (
        lab == "Glucose"
        and "metformin" in word
        and any(c in m for m in tl.medications_given for c in HYPOGLYCAEMICS)
    )


def duplicate_signals(prof: Profile) -> list[Topic]:
    """Two current orders of one drug (an IR and an ER diltiazem) or of one class."""
    tl = prof.timeline
    if tl is None:
        return []
    words = sorted(
        {
            o.word
            for o in tl.orders
            if o.current_at(tl.ref)
            and not o.line_care
            and o.scheduled
            and len(o.word) >= 4
            and o.word.isalpha()
        }
        - NOT_ONE_DRUG
    )
    out = [Topic("duplicate_therapy", drug=w) for w in words if _twice(tl, w)]
    for cls in DUPLICATE_CLASSES:
        mine = [w for w in sorted(prof.drugs) if any(c in w for c in cls.words)]
        out += [Topic("duplicate_class", drug=a, drug2=b) for a, b in combinations(mine, 2)]
    return out


#: First words that name no single drug: "Vitamin D" and "Vitamin B12" are two drugs, and
#: insulin glargine with insulin lispro is one basal-bolus regimen.
NOT_ONE_DRUG = frozenset(
    {
        "vitamin",
        "insulin",
        "sodium",
        "potassium",
        "calcium",
        "magnesium",
        "multivitamins",
        "multivitamin",
    }
)


def _twice(tl: Timeline, word: str) -> bool:
    """Two current scheduled orders of the drug ``word`` (same first word) that differ and
    were not written together: one prescription's rows (``poe_id``), or orders of one drug
    started at the same minute (2 mg mornings and nights, 1 mg at noon), are one regimen."""
    orders = [o for o in tl.current_orders(word) if o.word == word]
    if len(orders) < 2 or not all(o.scheduled for o in orders):
        return False
    written = {(o.poe_id,) if o.poe_id else (o.drug, o.start) for o in orders}
    together = len({(o.drug, o.start) for o in orders}) == 1
    return len(written) > 1 and not together and len({(o.drug, o.dose_text) for o in orders}) > 1


def bridge_signals(prof: Profile) -> list[Topic]:
    """Warfarin with a parenteral anticoagulant bridging it, and an INR to judge it by."""
    tl = prof.timeline
    if tl is None or _latest(tl, INR) is None:
        return []
    bridges = [w for w in sorted(prof.drugs) if _treatment_dose(prof, w)]
    if not bridges or warfarin_order(tl) is None:
        return []
    return [Topic("anticoag_bridge", lab=INR, drug=WARFARIN, drug2=b) for b in bridges]


def _treatment_dose(prof: Profile, word: str) -> bool:
    """A bridging anticoagulant at a treatment dose (vocab.BRIDGES: its daily minimum)."""
    d = prof.drugs[word]
    least = next((v for b, v in BRIDGES.items() if b in word), None)
    try:
        daily = float(d.dose) * (d.per_day or 1.0)
    except ValueError:
        return False
    return least is not None and daily >= least


def interaction_signals(prof: Profile) -> list[Topic]:
    """Two current drugs of a known interaction (vocab.INTERACTIONS)."""
    out = []
    for rule in INTERACTIONS:
        for a in sorted(prof.drugs):
            if not any(x in a for x in rule.first):
                continue
            out += [
                Topic("interaction", drug=a, drug2=b)
                for b in sorted(prof.drugs)
                if b != a and any(x in b for x in rule.second)
            ]
    return out


def safety_topics(prof: Profile) -> list[Topic]:
    """Every medication-safety signal of the chart, as the topics that ask about it."""
    return (
        lab_signals(prof)
        + duplicate_signals(prof)
        + bridge_signals(prof)
        + interaction_signals(prof)
    )


def treatment_of(word: str) -> Treatment | None:
    """The treatment (vocab.TREATMENTS) a drug word gives, antibiotics included."""
    found = next((t for t in TREATMENTS if any(w in word or word in w for w in t.words)), None)
    if found is None and any(n in word for names in ANTIBIOTIC_CLASSES.values() for n in names):
        return Treatment(
            "antibiotic",
            (word,),
            INFECTION_MARKERS[0],
            "falling",
            "clinical response of the white count (Surviving Sepsis Campaign 2021)",
        )
    return found


def measurable(
    tl: Timeline, word: str, lab: str, corrects: str, treated: float | None = None
) -> bool:
    """A course of the drug (:data:`COURSE_DOSES`) was given, its marker was off
    (``corrects``: low or high; past ``treated`` where the treatment has its own threshold)
    just before the first dose, measured again after it, last within :data:`RESPONSE_WITHIN`
    of the last dose, and the last values do not turn back against the move since the first
    dose (:func:`.trends.turned_back`)."""
    given = tl.administrations(word).given
    series = tl.lab(lab)
    if not given or series is None or lab not in TRENDS:
        return False
    first = given[0]
    before = [p for p in series.confirmed if first - BASELINE_WITHIN <= p.time <= first]
    after = [p for p in series.confirmed if p.time >= first + EFFECT_AFTER]
    if not before or not after or not _off(before[-1], corrects, treated):
        return False
    course = [t for t in given if t <= after[-1].time]  # the doses the latest value can show
    return (
        len(course) >= COURSE_DOSES
        and after[-1].time <= course[-1] + RESPONSE_WITHIN
        and not turned_back(before[-1], after, TRENDS[lab])
    )


def active(tl: Timeline, word: str) -> bool:
    """The drug runs at the session date ("continue X" is advice only then): a current order
    of it; without any order (ICU doses only), a dose given within :data:`ON_WARFARIN` of the
    reference moment. A stopped order's recent dose (cefepime stepped down to cefpodoxime)
    is not."""
    if tl.orders_for(word):
        return bool(tl.current_orders(word))
    given = tl.administrations(word).given
    return bool(given) and given[-1] >= tl.ref - ON_WARFARIN


def brief_course(tl: Timeline, word: str) -> bool:
    """A course of less than :data:`BRIEF_COURSE` from first to last dose, stopped by the
    session date: surgical prophylaxis (cefazolin and vancomycin around a CABG) or an empiric
    course stopped (metronidazole, 2 doses), not a treatment whose response can be judged."""
    given = tl.administrations(word).given
    return bool(given) and not active(tl, word) and given[-1] - given[0] < BRIEF_COURSE


def gut_only(tl: Timeline, word: str) -> bool:
    """An order of the antibiotic by mouth that acts only in the gut (oral vancomycin for
    C. difficile): the word's doses then mix it with any IV course, and it moves no systemic
    marker."""
    return any(
        GUT_ONLY in o.drug.lower() and str(o.route or "").upper().startswith("PO")
        for o in tl.orders_for(word)
    )


def _off(p: Any, corrects: str, treated: float | None) -> bool:
    """Whether a value is beyond ``treated`` (else its reference range) on the side named."""
    limit = treated if treated is not None else p.high if corrects == "high" else p.low
    if limit is None:
        return False
    return p.value > limit if corrects == "high" else p.value < limit


def treatment_words(tl: Timeline) -> list[tuple[str, str]]:
    """(search word, the name it was given as) of each treatment given in the admission
    (vocab.TREATMENTS in their order, then antibiotics): an eMAR medication or ICU item."""
    given = sorted(tl.medications_given)
    words = [w for t in TREATMENTS for w in t.words]
    words += [n for names in ANTIBIOTIC_CLASSES.values() for n in names]
    found = [(w, next((name for name in given if w in name), "")) for w in words]
    return [(w, name) for w, name in found if name]


def response_topics(prof: Profile) -> list[Topic]:
    """abx_response / treatment_effect topics whose response the chart measured; a white count
    of a coded leukaemia measures no antibiotic."""
    tl = prof.timeline
    if tl is None:
        return []
    out, seen = [], set()
    for word, given_as in treatment_words(tl):
        t = treatment_of(word)
        if t is None or ((t.name, t.lab) in seen and t.name != "antibiotic"):
            continue
        kind = "abx_response" if t.name == "antibiotic" else "treatment_effect"
        labs = (
            [
                m
                for m in INFECTION_MARKERS
                if not (prof.context.heme_malignancy and m in ("White Blood Cells", "Neutrophils"))
            ]
            if kind == "abx_response"
            else [t.lab]
        )
        if kind == "abx_response" and (gut_only(tl, word) or brief_course(tl, word)):
            continue
        lab = next((m for m in labs if measurable(tl, word, m, t.corrects, t.treated)), None)
        if lab is not None:
            out.append(Topic(kind, lab=lab, drug=word, name=drug_spoken(given_as)))
            seen.add((t.name, t.lab))
    return out
