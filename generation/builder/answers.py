"""Gold answers rendered from gold observations (no LLM).

:func:`digest` reads a topic's observations into a :class:`Digest` (the numbers, dates and
verdicts an answer states); :func:`answer` writes it in the paper's per-type formats: IL one
or two lines with values, units and normal/abnormal; DG bullets; CR two sentences ending in a
recommendation; WU a confirmation of the order. Rubrics (:mod:`.rubrics`) use the same digest,
so every rubric value is one the gold answer states.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from physassist.ehr.tools.microbiology import RESISTANCE_NAMES
from physassist.lab_artifacts import REVERT, SPIKE
from physassist.timeline import DISCHARGE_WINDOW, Culture, Order, counts_toward, dose_event

from . import facts as F
from .interpret import AT_GOAL, OFF_TARGET, Context, actionable, marrow_cytopenia
from .interpret import label as label_in_context
from .interpret import meaning as condition
from .patient_topics import (
    ADHERENCE_CLASS,
    PATIENT_KINDS,
    home_facts,
    onset_phrase,
    phm_medication,
    primary_symptom,
)
from .profile import Profile
from .topics import Topic
from .trends import Trend, judge_trend
from .vocab import LABS, SEVERE_CYTOPENIA, TRENDS, Meaning
from .wording import say


def fmt(value: float) -> str:
    """A lab or dose number as a clinician writes it: no float noise, no trailing zeros."""
    if value == int(value) and abs(value) < 1e12:
        return str(int(value))
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return text if text not in ("", "-0") else "0"


def lab_name(label: str, lang: str) -> str:
    """The lab as named in an answer. ZH keeps the MIMIC-IV label beside the Chinese name, so
    one value check (label + number) holds in both languages."""
    if lang == "zh" and label in LABS:
        return f"{LABS[label].zh}（{label}）"
    return label


def lab_spoken(label: str, lang: str) -> str:
    """The lab as a clinician says it in a question ("BUN", "尿素氮")."""
    if label in LABS:
        return LABS[label].en if lang == "en" else LABS[label].zh
    return label


@dataclass(frozen=True)
class LabFact:
    label: str
    value: float
    unit: str
    status: str  # against the reference range: high | low | normal | abnormal
    time: str
    day: str
    word: str = (
        ""  # the label in context (interpret.label): "subtherapeutic" for an INR on warfarin
    )
    low: float | None = None
    high: float | None = None

    @property
    def said(self) -> str:
        """How the answer names the value's state: its label in context, else its status."""
        return self.word or self.status


def _lab_fact(p: F.LabPoint, ctx: Context | None = None) -> LabFact:
    word = label_in_context(p.label, p.value, p.status, ctx or Context())
    return LabFact(
        p.label, p.value, p.unit, p.status, F.minute(p.time), F.day(p.time), word, p.low, p.high
    )


@dataclass(frozen=True)
class MedFact:
    word: str
    drug: str
    dose: float
    unit: str
    route: str
    start: str
    parts: tuple[str, ...] = ()  # the order's rows' doses when it has several (25 + 50 mg)
    frequency: str = ""  # the order's frequency (Q12H): how it is dosed, beside dose and route


@dataclass
class Digest:
    """Everything a topic's answer and rubric state, read from its observations."""

    topic: Topic
    labs: list[LabFact] = field(default_factory=list)  # latest value per lab, in topic order
    series: list[LabFact] = field(default_factory=list)  # trend: reference point and last value
    anchor: str = "first"  # what series[0] is: first | peak | nadir (of the admission)
    trend_size: str = ""  # clear | slight | none (trends.change)
    artifact: LabFact | None = None  # a suspect extreme left out of the trend (lab_artifacts)
    procedural: list[LabFact] = field(default_factory=list)  # a procedure's draws, left out
    band: tuple[float, float] = (0.0, 0.0)  # trend: the lowest and highest value judged
    context: Context = field(default_factory=Context)  # what changes a value's meaning
    meds: list[MedFact] = field(default_factory=list)  # the orders a safety signal involves
    rule: Any = None  # the vocab rule behind a safety signal (an Interaction, a DuplicateClass)
    at_discharge: bool = True  # the session is at the discharge date (its forward words)
    med: MedFact | None = None
    renal: Any = None  # an adjusted renal dose against its band (renal.RenalDose)
    admin_count: int = 0  # doses of the order charted given
    admin_total: int = 0  # dose events of the order: given, missed and held at discharge
    admin_missed: int = 0  # held or not given before the discharge window
    admin_expected: int = 0  # held or not given at discharge (expected)
    admin_since: str = ""  # the order's start (its doses are counted from it)
    admin_first: str = ""
    admin_last: str = ""
    dx: F.Diagnosis | None = None
    stay: F.Stay | None = None
    trend: str = ""  # rising | falling | stable
    shape: str = ""  # "" | plateau | turned (trends.Trend.shape)
    dated: bool = False  # the response's latest value is too old to call "now" (response.py)
    cultured: bool = True  # a culture was sent in the stay (an antibiotic is reviewed against it)
    course: str = ""  # worsening | improving | normal | off_target | minor | abnormal_stable
    verdict: str = ""  # hold | ok | responding | not_responding | unclear
    reports: list[F.Report] = field(default_factory=list)  # newest first
    pending_left: list[F.Report] = field(default_factory=list)  # pending, not in ``reports``
    positive_left: list[F.Report] = field(default_factory=list)  # positive tests, not listed
    adherence: str = ""  # good | stopped | forgets | ran_out (patient's own account)
    missed: int = 0
    reason: dict[str, str] | None = None  # the patient's words, {"en", "zh"}
    home: dict[str, Any] = field(default_factory=dict)
    symptom: dict[str, Any] = field(default_factory=dict)
    said: frozenset[str] = (
        frozenset()
    )  # numbers the patient's own reply states: severity, pain_score
    pain: dict[str, Any] = field(default_factory=dict)
    write: dict[str, Any] = field(default_factory=dict)  # the write call's arguments
    write_result: dict[str, Any] = field(default_factory=dict)


#: Safety-signal kinds whose digest, answer and rubric live in :mod:`.safety`, and the
#: treatment-response kinds whose live in :mod:`.response` (:mod:`.gold` dispatches them).
SIGNAL_KINDS = frozenset({"duplicate_therapy", "duplicate_class", "interaction", "anticoag_bridge"})
RESPONSE_KINDS = frozenset({"abx_response", "treatment_effect"})

#: Context labels that lie above / below the patient's target (interpret.label).
_HIGH_SIDE = frozenset({"high", "supratherapeutic", "prediabetes", "diabetes_range"})
_LOW_SIDE = frozenset({"low", "subtherapeutic"})


def course(last: LabFact, trend: Trend, ctx: Context) -> str:
    """normal | off_target | minor | improving | worsening | abnormal_stable. A value at goal
    is normal, one off a drug's target (an INR on warfarin) calls for dosing; a clear move away
    from goal is worsening (a KDIGO-sized creatinine rise counts before the
    value names a condition); otherwise a deviation that calls for nothing
    (interpret.actionable: a low BUN of 4) is minor, a clear move toward goal is improving, and
    a slight or no move needs a recheck. A severe cytopenia with a coded marrow disease
    (interpret.marrow_cytopenia) is that disease's known course (known_cause), whatever its
    move: no cause is left to look for."""
    if last.said in AT_GOAL:
        return "normal"
    if last.said in OFF_TARGET:
        return "off_target"
    if marrow_cytopenia(last.label, last.value, last.status, ctx) is not None:
        return "known_cause"
    clear = trend.size == "clear" and last.status != "abnormal"
    worse = (last.said in _HIGH_SIDE and trend.direction == "rising") or (
        last.said in _LOW_SIDE and trend.direction == "falling"
    )
    if clear and worse:
        return "worsening"
    if not actionable(last.label, last.value, last.status, last.said, (last.low, last.high), ctx):
        return "minor"
    return "improving" if clear else "abnormal_stable"


def trend_points(
    pts: list[F.LabPoint], prof: Profile
) -> tuple[list[F.LabPoint], F.LabPoint | None]:
    """The series a trend is judged on: the timeline's suspect values left out; and the
    suspect value that would otherwise have been its peak or nadir (an answer calls it
    spurious), if any."""
    series = prof.timeline.lab(pts[0].label) if prof.timeline is not None and pts else None
    suspect = {t.strftime("%Y-%m-%d %H:%M") for t in series.suspect} if series else set()
    drawn = {t.strftime("%Y-%m-%d %H:%M") for t in series.procedural} if series else set()
    kept = [p for p in pts if F.minute(p.time) not in suspect]
    extremes = (max(pts, key=lambda p: p.value), min(pts, key=lambda p: p.value)) if pts else ()
    artifact = next((p for p in extremes if F.minute(p.time) in suspect - drawn), None)
    return kept, artifact


def procedural_draws(pts: list[F.LabPoint], prof: Profile) -> list[F.LabPoint]:
    """The values of ``pts`` a procedure drew before a direct admission's start (the timeline's
    :attr:`~physassist.timeline.LabSeries.procedural`): a trend answer says why it leaves them
    out (drawn during the procedure), not that they look spurious."""
    series = prof.timeline.lab(pts[0].label) if prof.timeline is not None and pts else None
    drawn = {t.strftime("%Y-%m-%d %H:%M") for t in series.procedural} if series else set()
    return [p for p in pts if F.minute(p.time) in drawn]


def confirmed_end(pts: list[F.LabPoint]) -> bool:
    """The latest value may end a trend: it is not a jump within hours of the draw before
    (lab_artifacts.SPIKE within REVERT) that no later draw confirms yet."""
    before, last = pts[-2], pts[-1]
    scale = max(abs(before.value), abs(last.value))
    hours = _at(last.time) - _at(before.time)
    return scale == 0 or abs(last.value - before.value) / scale < SPIKE or hours > REVERT


def _at(time: str) -> dt.datetime:
    return dt.datetime.fromisoformat(time[:19])


def _med(observation: Any, word: str, prof: Profile) -> MedFact | None:
    """The order of ``word`` that is current and scheduled at the cutoff (the timeline's, its
    rows merged), as the order tool returned it: the rows of its drug and start, whose doses
    give its dose (one of them, or their sum); None when there is none (stopped,
    sliding-scale, PRN or one-time orders never answer a dose question)."""
    current = prof.timeline.current_order(word) if prof.timeline is not None else None
    return order_fact(observation, current, word) if current is not None else None


def order_fact(observation: Any, order: Order, word: str) -> MedFact | None:
    """One order as the order tool returned it: the rows of its drug and start, whose doses
    give its dose (one of them, or their sum); None when the tool does not show it so."""
    if order.start is None or order.dose is None:
        return None
    start = order.start.strftime("%Y-%m-%d %H:%M")
    rows = [
        o
        for o in F.med_orders(observation, word)
        if o.drug == order.drug
        and F.minute(o.start) == start
        and o.unit == order.unit
        and o.dose is not None
    ]
    doses = [o.dose for o in rows if o.dose is not None]
    if not doses or not any(abs(order.dose - v) < 1e-6 for v in [*doses, sum(doses)]):
        return None
    parts = order.components if len(set(order.components)) > 1 else ()
    return MedFact(
        word,
        order.drug,
        order.dose,
        order.unit,
        rows[0].route or "",
        F.day(rows[0].start),
        parts,
        spoken_frequency(order.frequency),
    )


def spoken_frequency(code: str | None) -> str:
    """An order's frequency as a physician reads it: MIMIC's hour-stamped codes without the
    administration hour (``DAILY16`` is daily, given at 16:00)."""
    return re.sub(r"^(DAILY)\d{1,2}$", r"\1", " ".join(str(code or "").split()))


def _order_doses(d: Digest, observation: Any, prof: Profile) -> bool:
    """The dose events of the topic's current order as the tool returned them (its drug name,
    charted since its start: the timeline's countable rule): given, missed and held at
    discharge; False when there is no given dose, or the tool's page does not hold them all."""
    tl = prof.timeline
    order = tl.current_order(d.topic.drug or "") if tl is not None else None
    if order is None or order.start is None or _truncated(observation):
        return False
    events = [
        (e, dose_event(e.event))
        for e in F.admin_events(observation)
        if e.drug.lower() == order.drug.lower()
        and e.time
        and counts_toward(_at(e.time), order.start)
    ]
    given = [e for e, kind in events if kind == "given"]
    withheld = [e for e, kind in events if kind == "not_given"]
    disch = tl.discharged_at if tl is not None else None
    window = disch - DISCHARGE_WINDOW if disch is not None else None
    expected = [e for e in withheld if window is not None and _at(e.time) >= window]
    if not given:
        return False
    d.admin_count, d.admin_first, d.admin_last = (
        len(given),
        F.day(given[0].time),
        F.minute(given[-1].time),
    )
    d.admin_missed, d.admin_expected = len(withheld) - len(expected), len(expected)
    d.admin_total = d.admin_count + len(withheld)
    d.admin_since = order.start.strftime("%Y-%m-%d %H:%M")
    return True


def _truncated(observation: Any) -> bool:
    """A searchset whose ``total`` is more than the entries it returned."""
    total = observation.get("total") if isinstance(observation, dict) else None
    return isinstance(total, int) and total > len(F.resources(observation))


def new_digest(topic: Topic, prof: Profile) -> Digest:
    """An empty digest of ``topic`` in the patient's context."""
    return Digest(topic, context=prof.context, at_discharge=prof.at_discharge)


def digest(
    topic: Topic,
    observations: list[Any],
    prof: Profile,
    arguments: list[dict[str, Any]] | None = None,
) -> Digest | None:
    """Read the gold observations of one topic of the common kinds (:mod:`.gold` reads every
    kind); None when they cannot support an answer."""
    d = new_digest(topic, prof)
    k = topic.kind
    obs = observations

    def points(o: Any, label: str) -> list[F.LabPoint]:
        series = prof.timeline.lab(label) if prof.timeline is not None else None
        return F.lab_points(o, label, series.itemids) if series is not None else []

    def latest(o: Any, label: str) -> LabFact | None:
        pts = points(o, label)
        return _lab_fact(pts[-1], prof.context) if pts else None

    if k == "lab_latest":
        fact = latest(obs[0], topic.lab or "")
        if fact is None:
            return None
        d.labs = [fact]
    elif k == "lab_pair":
        a, b = latest(obs[0], topic.lab or ""), latest(obs[1], topic.lab2 or "")
        if a is None or b is None:
            return None
        d.labs = [a, b]
    elif k in (
        "med_current",
        "lab_and_med",
        "med_and_admin",
        "drug_lab_safety",
        "admin_reliability",
    ):
        med_obs = obs[1] if k == "lab_and_med" else obs[0]
        d.med = _med(med_obs, topic.drug or "", prof)
        if d.med is None:
            return None
        if k in ("lab_and_med", "drug_lab_safety"):
            fact = latest(obs[0] if k == "lab_and_med" else obs[1], topic.lab or "")
            if fact is None:
                return None
            d.labs = [fact]
        if k in ("admin_reliability", "med_and_admin"):
            if not _order_doses(d, obs[1], prof):
                return None
            d.verdict = "ok" if not d.admin_missed else "missed"
    elif k == "dx_primary":
        dxs = [x for x in F.diagnoses(obs[0]) if x.title and x.code]
        if not dxs:
            return None
        d.dx = dxs[0]
    elif k == "encounter_info":
        stays = [s for s in F.stays(obs[0]) if s.start and s.end]
        if not stays:
            return None
        d.stay = stays[0]
    elif k == "lab_trend":
        if not _trend_digest(d, points(obs[0], topic.lab or ""), prof):
            return None
    elif k == "culture_latest":
        d.reports = _cultures(obs[0], prof)
        if not d.reports:
            return None
        d.pending_left = pending_left(obs[0], d.reports)
        d.positive_left = positive_left(obs[0], d.reports)
    elif k == "imaging_latest":
        found = [r for r in F.reports(obs[0]) if not r.micro and r.conclusion and r.time]
        d.reports = found[:1]
        if not d.reports:
            return None
    elif k in PATIENT_KINDS:
        if not _patient_digest(d, obs, prof):
            return None
    elif topic.source == "write":
        result = F.write_result(obs[0])
        if result is None or not arguments:
            return None
        d.write, d.write_result = dict(arguments[0]), result
    else:
        raise ValueError(f"no digest for topic kind {k!r}")
    return d


def _trend_digest(d: Digest, pts: list[F.LabPoint], prof: Profile) -> bool:
    """Fill a trend digest: the series without suspect values, judged by the trend table;
    False when it cannot support a trend (fewer than two days, an unconfirmed last value)."""
    rule = TRENDS.get(d.topic.lab or "")
    raw = pts
    pts, artifact = trend_points(pts, prof)
    if rule is None or len(pts) < 2 or pts[0].time == pts[-1].time or not confirmed_end(pts):
        return False
    trend = judge_trend(pts, rule)
    d.trend, d.trend_size, d.anchor = trend.direction, trend.size, trend.anchor
    d.shape = trend.shape
    last = _lab_fact(pts[-1], prof.context)
    d.series, d.labs = [_lab_fact(trend.ref, prof.context), last], [last]
    d.artifact = _lab_fact(artifact, prof.context) if artifact is not None else None
    d.procedural = [_lab_fact(p, prof.context) for p in procedural_draws(raw, prof)]
    d.course = course(last, trend, prof.context)
    d.band = (min(p.value for p in pts), max(p.value for p in pts))
    return True


#: Specimens a culture answer states: the key one first (:func:`key_culture`).
CULTURES_SAID = 3
#: The flag of an isolate whose laboratory comment doubts it (:func:`doubt`).
DOUBTED = "doubted"


def _cultures(observation: Any, prof: Profile) -> list[F.Report]:
    """The specimens a culture answer states, from the report page: only specimens a culture
    was sent from (a serology or a PCR is no culture). Those that grew an organism of clinical
    weight lead (clinical cultures before surveillance screens, then one with a resistance
    first), then those that grew only commensal flora (named as such), then those with a
    culture still pending, then the others; within each, newest first. A page that misses a significant culture
    the record has at the cutoff is unusable (empty)."""
    found = [r for r in F.reports(observation) if r.micro and r.time and r.cultured]

    def rank(r: F.Report) -> tuple[int, bool, bool]:
        group = 0 if r.significant else 1 if r.grown else 2 if r.pending else 3
        resistant = any(t.resistance for t in r.significant)
        screen = all(t.kind == "screen" for t in r.results if t.culture)
        return group, screen, not resistant

    record = prof.timeline.cultures if prof.timeline is not None else ()
    ranked = sorted((doubt(r, record) for r in found), key=rank)  # newest first within a rank
    if any(c.significant for c in record) and not (ranked and ranked[0].significant):
        return []
    return ranked[:CULTURES_SAID]


def doubt(r: F.Report, record: Sequence[Culture]) -> F.Report:
    """The report with :data:`DOUBTED` on each isolate the laboratory's comment doubts
    (contamination, mixed flora, uncertain significance: ``Culture.doubted``): the tool's page
    does not carry that comment, the record does. A doubted isolate is no pathogen: it does not
    lead the answer, and its susceptibilities are not read as a treatment guide."""
    same = [c for c in record if F.minute(str(c.time)) == F.minute(r.time)]
    doubted = {o for c in same if " ".join(c.specimen.split()) == r.title for o in c.doubted}
    if not doubted:
        return r
    results = tuple(
        replace(t, flags=(*t.flags, DOUBTED)) if t.grown and t.organism in doubted else t
        for t in r.results
    )
    return replace(r, results=results)


def pending_left(observation: Any, said: Sequence[F.Report]) -> list[F.Report]:
    """The specimens with a culture still pending that a culture answer does not list (it
    lists :data:`CULTURES_SAID`): named in one closing line, so an answer that lists a send-out
    as pending never leaves out the routine blood cultures still incubating."""
    listed = {(r.title, r.time) for r in said}
    return [
        r
        for r in F.reports(observation)
        if r.micro and r.time and r.pending and (r.title, r.time) not in listed
    ]


def positive_left(observation: Any, said: Sequence[F.Report]) -> list[F.Report]:
    """The specimens with a positive non-culture test (a C. difficile PCR, a urinary antigen,
    a reactive serology) that a culture answer does not list: each gets its own line beside
    the cultures, since such a result may be the stay's diagnosis (a physician reviewing a
    build rejected a "micro so far" that left out the only positive result, a C. difficile
    PCR)."""
    listed = {(r.title, r.time) for r in said}
    return [
        r
        for r in F.reports(observation)
        if r.micro and r.time and r.positive and (r.title, r.time) not in listed
    ]


def _patient_digest(d: Digest, obs: list[Any], prof: Profile) -> bool:
    """Fill a patient-turn digest from the PHM behind the (non-empty) patient replies."""
    phm = prof.phm
    if not phm or any(F.is_empty(o) for o in obs):
        return False
    k = d.topic.kind
    if k == "adherence_check":
        d.med = _med(obs[0], d.topic.drug or "", prof)
        entry = phm_medication(phm, d.topic.drug or "")
        if d.med is None or entry is None:
            return False
        d.adherence = ADHERENCE_CLASS.get(str(entry.get("adherence")), "")
        d.missed = int(entry.get("missed_per_week") or 0)
        d.reason = entry.get("reason") if isinstance(entry.get("reason"), dict) else None
        return bool(d.adherence)
    if k == "home_function":
        d.home = home_facts(phm)
        return True
    if k == "symptom_pain":
        d.symptom = primary_symptom(phm)
        d.pain = dict(phm.get("pain") or {})
        # A low-literacy reply gives no scores: only numbers the reply states are facts.
        said = set()
        if _states(obs[0], d.symptom.get("severity")):
            said.add("severity")
        if d.pain.get("present") and _states(obs[1], d.pain.get("score")):
            said.add("pain_score")
        d.said = frozenset(said)
        return True
    return False


def _states(observation: Any, number: Any) -> bool:
    """The patient's reply states ``number`` as a number ("7/10", "about a 7")."""
    text = str((observation or {}).get("patient_response") or "")
    return (
        number is not None
        and re.search(rf"(?<![\d.]){re.escape(str(number))}(?![\d.])", text) is not None
    )


def _patient_answer(d: Digest, lang: str) -> str:
    k = d.topic.kind
    if k == "adherence_check":
        assert d.med is not None
        status = say(lang, f"answers.patient.adherence.{d.adherence}", missed=d.missed)
        reason = (
            say(lang, "answers.patient.reason", reason=d.reason[lang])
            if d.reason and d.reason.get(lang)
            else ""
        )
        return "\n".join(
            [
                say(lang, "answers.med_bullet", **_med_vars(d.med)),
                say(
                    lang, "answers.patient.report", word=d.topic.drug, status=status, reason=reason
                ),
            ]
        )
    if k == "home_function":
        h = d.home
        living = say(lang, f"answers.patient.living.{'alone' if h['alone'] else 'spouse'}")
        smoking = say(lang, f"answers.patient.smoking.{h['smoking']}")
        device = say(lang, f"answers.patient.device.{h['device']}")
        falls = say(lang, f"answers.patient.falls.{'yes' if h['fell'] else 'no'}")
        return "\n".join(
            [
                say(lang, "answers.patient.home", living=living, smoking=smoking),
                say(
                    lang, "answers.patient.mobility", blocks=h["blocks"], device=device, falls=falls
                ),
            ]
        )
    if k == "symptom_pain":
        s, p = d.symptom, d.pain
        symptom = "symptom" if "severity" in d.said else "symptom_unscored"
        lines = [
            say(
                lang,
                f"answers.patient.{symptom}",
                term=s["term"][lang],
                onset=onset_phrase(s["onset"], lang),
                severity=s["severity"],
            )
        ]
        if p.get("present"):
            pain = "pain" if "pain_score" in d.said else "pain_unscored"
            lines.append(
                say(
                    lang,
                    f"answers.patient.{pain}",
                    score=p["score"],
                    location=p["location"][lang],
                    quality=p["quality"][lang],
                )
            )
        else:
            lines.append(say(lang, "answers.patient.no_pain"))
        return "\n".join(lines)
    raise ValueError(f"no patient answer for topic kind {k!r}")


def _status(lang: str, status: str) -> str:
    return say(lang, f"answers.status.{status}")


def _lab_vars(f: LabFact, lang: str) -> dict[str, Any]:
    return {
        "label": lab_name(f.label, lang),
        "value": fmt(f.value),
        "unit": f.unit,
        "status": _status(lang, f.said),
        "time": f.time,
    }


def _med_vars(m: MedFact) -> dict[str, Any]:
    parts = f" ({' + '.join(f'{p} {m.unit}' for p in m.parts)})" if m.parts else ""
    return {
        "drug": m.drug,
        "dose": fmt(m.dose),
        "unit": m.unit,
        "route": m.route or "",
        "start": m.start or "?",
        "drug_word": m.word,
        "parts": parts,
        "freq": f" {m.frequency}" if m.frequency else "",
    }


def meaning(d: Digest) -> Meaning | None:
    """What the latest value suggests (interpret.meaning), only past its clinical threshold."""
    if not d.labs:
        return None
    lab = d.labs[-1]
    return condition(lab.label, lab.value, lab.status, d.context)


def answer(d: Digest, lang: str) -> str:
    """The gold answer text of a digested topic of the common kinds in one language."""
    k = d.topic.kind
    if k == "lab_latest":
        return say(lang, "answers.lab_line", **_lab_vars(d.labs[0], lang))
    if k == "lab_pair":
        return "\n".join(say(lang, "answers.lab_bullet", **_lab_vars(f, lang)) for f in d.labs)
    if k == "med_current":
        assert d.med is not None
        return say(lang, "answers.med_line", **_med_vars(d.med))
    if k == "lab_and_med":
        assert d.med is not None
        return "\n".join(
            [
                say(lang, "answers.lab_bullet", **_lab_vars(d.labs[0], lang)),
                say(lang, "answers.med_bullet", **_med_vars(d.med)),
            ]
        )
    if k == "med_and_admin":
        assert d.med is not None
        return "\n".join(
            [
                say(lang, "answers.med_bullet", **_med_vars(d.med)),
                say(
                    lang,
                    "answers.admin_bullet",
                    time=d.admin_last,
                    count=d.admin_count,
                    since=d.admin_since,
                ),
            ]
        )
    if k == "admin_reliability":
        assert d.med is not None
        expected = (
            say(lang, "answers.reliability_expected", n=d.admin_expected)
            if d.admin_expected
            else ""
        )
        first = say(
            lang,
            "answers.reliability",
            **_med_vars(d.med),
            total=d.admin_total,
            given=d.admin_count,
            missed=d.admin_missed,
            last=d.admin_last,
            since=d.admin_since,
            expected=expected,
        )
        second = say(lang, f"answers.reliability_{d.verdict}")
        return f"{first} {second}" if lang == "en" else f"{first}{second}"
    if k == "dx_primary":
        assert d.dx is not None
        return say(lang, "answers.dx_line", title=d.dx.title, code=d.dx.code)
    if k == "encounter_info":
        assert d.stay is not None
        return say(
            lang,
            "answers.encounter_line",
            admit=F.minute(d.stay.start),
            admission_type=d.stay.admission_type or "-",
            discharge=F.minute(d.stay.end),
            destination=d.stay.discharge_location or say(lang, "answers.no_dest"),
        )
    if k == "culture_latest":
        lines = [culture_line(r, lang) for r in (*d.reports, *d.positive_left)]
        if d.pending_left:
            lines.append(say(lang, "answers.culture.also_pending", specimens=_left(d, lang)))
        return "\n".join(lines)
    if k == "imaging_latest":
        r = d.reports[0]
        return say(
            lang,
            "answers.report_line",
            title=r.title,
            time=F.minute(r.time),
            conclusion=r.conclusion,
        )
    if k == "lab_trend":
        return _trend_answer(d, lang)
    if d.topic.source == "write":
        return _write_answer(d, lang)
    if k in PATIENT_KINDS:
        return _patient_answer(d, lang)
    raise ValueError(f"no answer template for topic kind {k!r}")


def severe_band(d: Digest) -> bool:
    """A known-cause cytopenia (:func:`course`) whose every judged value stayed below the severe
    limit: a chronically severe band, where a small move is no trend."""
    limit = SEVERE_CYTOPENIA.get(d.series[-1].label) if d.series else None
    return d.course == "known_cause" and limit is not None and d.band[1] < limit.value


def trend_word(d: Digest, lang: str) -> str:
    """The answer's word for the trend: "stable" for a slight move within a chronically severe
    band (:func:`severe_band`); the course's shape where it has one (levelled off, back from a
    bump); "slightly falling" for a slight move."""
    if d.trend_size == "slight" and severe_band(d):
        return say(lang, "answers.trend_word.stable")
    key = (
        f"{d.shape}_{d.trend}"
        if d.shape
        else f"slight_{d.trend}"
        if d.trend_size == "slight"
        else d.trend
    )
    return say(lang, f"answers.trend_word.{key}")


def next_check(d: Digest, lang: str) -> str:
    """When a recheck happens: tomorrow during a stay, at follow-up at the discharge date."""
    return say(lang, f"answers.next_check.{'discharge' if d.at_discharge else 'stay'}")


def _trend_answer(d: Digest, lang: str) -> str:
    first, last = d.series
    m = meaning(d) if d.course in ("worsening", "abnormal_stable") else None
    if m is None:
        extra = ""
    elif lang == "en":
        extra = f", consistent with {m.en}"
    else:
        extra = f"，提示{m.zh}"
    same_day = first.day == last.day
    template = "answers.trend" if d.anchor == "first" else "answers.trend_turn"
    if same_day and d.anchor == "first":
        template = "answers.trend_day"
    text = say(
        lang,
        template,
        label=lab_name(last.label, lang),
        first=fmt(first.value),
        last=fmt(last.value),
        unit=last.unit,
        first_time=first.time if same_day else first.day,
        last_time=last.time if same_day else last.day,
        day=first.day,
        first_hm=first.time[11:16],
        last_hm=last.time[11:16],
        trend_word=trend_word(d, lang),
        status=_status(lang, last.said),
        meaning=extra,
        anchor_word=say(lang, f"answers.anchor_word.{d.anchor}") if d.anchor != "first" else "",
    )
    gap = " " if lang == "en" else ""
    for p in d.procedural[:1]:  # the earliest: the one that would have started the trend
        text += gap + say(lang, "answers.procedural", value=fmt(p.value), unit=p.unit, time=p.time)
    if d.artifact is not None:
        a = d.artifact
        text += gap + say(lang, "answers.artifact", value=fmt(a.value), unit=a.unit, time=a.time)
    known = marrow_cytopenia(last.label, last.value, last.status, d.context)
    cause = "" if known is None else known.en if lang == "en" else known.zh
    rec = say(lang, f"answers.rec.{d.course}", next_check=next_check(d, lang), meaning=cause)
    if severe_band(d):
        band = say(
            lang, "answers.severe_band", low=fmt(d.band[0]), high=fmt(d.band[1]), unit=last.unit
        )
        rec = f"{band} {rec}" if lang == "en" else f"{band}{rec}"
    return f"{text} {rec}" if lang == "en" else f"{text}{rec}"


def _write_answer(d: Digest, lang: str) -> str:
    args = d.write
    name = d.topic.tools[0]
    if name == "ServiceRequest.create":
        return say(
            lang,
            "answers.write.service",
            service=args["service_type"],
            priority=args["priority"],
            date=args.get("target_date", ""),
        )
    if name == "MedicationRequest.create":
        return say(
            lang,
            "answers.write.medication",
            drug=args["medication"],
            dose=args["dose"],
            route=args["route"],
            frequency=args["frequency"],
        )
    if name == "Flag.create":
        return say(lang, "answers.write.flag", category=args["category"], code=args["code"])
    raise ValueError(f"no write answer for tool {name!r}")


def key_culture(d: Digest) -> F.Report:
    """The culture a rubric asks about: the first the answer states (:func:`_cultures`)."""
    return d.reports[0]


def culture_line(r: F.Report, lang: str) -> str:
    """One specimen of a culture answer: each culture's organisms (resistances and
    susceptibilities, commensal flags) or its result, its pending and its cancelled cultures
    (a rejected specimen), and its positive non-culture tests, named as the test they are."""
    parts = []
    for t in (x for x in r.results if x.culture or x.positive):
        if t.positive:
            found = t.organism or t.value.strip()
            parts.append(say(lang, "answers.culture.positive", test=t.test, result=found))
        elif t.pending:
            parts.append(say(lang, "answers.culture.pending", test=t.test))
        elif t.grown:
            parts.append(say(lang, "answers.culture.grew", test=t.test, organism=_isolate(t, lang)))
        elif t.status == "cancelled":
            parts.append(say(lang, "answers.culture.rejected", test=t.test))
        elif not t.organism:
            parts.append(
                say(
                    lang,
                    "answers.culture.result",
                    test=t.test,
                    result=t.value or say(lang, "answers.culture.no_growth"),
                )
            )
    origin = say(lang, "answers.culture.from_ed") if r.origin == "emergency department" else ""
    return say(
        lang,
        "answers.culture.bullet",
        specimen=r.title,
        time=F.minute(r.time),
        origin=origin,
        results="; ".join(dict.fromkeys(parts)),
    )


def _left(d: Digest, lang: str) -> str:
    """``BLOOD CULTURE x4 (2129-04-06 to 2129-04-08)``: the pending specimens an answer does
    not list, by specimen."""
    days: dict[str, list[str]] = {}
    for r in d.pending_left:
        days.setdefault(r.title, []).append(r.time[:10])
    parts = []
    for title, drawn in days.items():
        span = min(drawn) if min(drawn) == max(drawn) else f"{min(drawn)} - {max(drawn)}"
        parts.append(f"{title} x{len(drawn)} ({span})")
    return ("; " if lang == "en" else "；").join(parts)


def _isolate(t: F.MicroResult, lang: str) -> str:
    """``STAPH AUREUS COAG + (MRSA ...; resistant to OXACILLIN; susceptible to VANCOMYCIN)``;
    an isolate the laboratory doubts (:data:`DOUBTED`) with that caveat and no susceptibility
    panel (its workup was not meant to guide treatment). A surveillance screen's isolate (a
    rectal VRE swab, an MRSA nares screen) is said to be colonisation: the screen looks for
    carriage for infection control, not for the cause of an infection."""
    said = [say(lang, "answers.culture.flag.screen")] if t.kind == "screen" else []
    said += [RESISTANCE_NAMES[r] for r in t.resistance if DOUBTED not in t.flags]
    said += [say(lang, f"answers.culture.flag.{f}") for f in t.flags if f != "result"]
    if DOUBTED in t.flags:
        sep = "; " if lang == "en" else "；"
        return f"{t.organism} ({sep.join(said)})"
    for sir, key in (("R", "resistant"), ("S", "susceptible")):
        drugs = [ab for ab, code in t.susceptibilities if code == sir]
        if drugs:
            said.append(say(lang, f"answers.culture.{key}", drugs=", ".join(drugs)))
    sep = "; " if lang == "en" else "；"
    return t.organism + (f" ({sep.join(said)})" if said else "")


def organisms(r: F.Report) -> list[str]:
    """The organisms a report's reported cultures grew (in report order, once each)."""
    return list(dict.fromkeys(t.organism for t in r.grown))
