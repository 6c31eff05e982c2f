"""Gold answers rendered from gold observations (no LLM).

:func:`digest` reads a topic's observations into a :class:`Digest` (the numbers, dates and
verdicts an answer states); :func:`answer` writes it in the paper's per-type formats: IL one
or two lines with values, units and normal/abnormal; DG bullets; CR two sentences ending in a
recommendation; WU a confirmation of the order. Rubrics (:mod:`.rubrics`) use the same digest,
so every rubric value is one the gold answer states.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from physassist.ehr.tools.microbiology import RESISTANCE_NAMES

from . import facts as F
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
from .vocab import LABS, MEANINGS, TREND_DELTAS, unsafe
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
    status: str
    time: str
    day: str


def _lab_fact(p: F.LabPoint) -> LabFact:
    return LabFact(p.label, p.value, p.unit, p.status, F.minute(p.time), F.day(p.time))


@dataclass(frozen=True)
class MedFact:
    word: str
    drug: str
    dose: float
    unit: str
    route: str
    start: str


@dataclass
class Digest:
    """Everything a topic's answer and rubric state, read from its observations."""

    topic: Topic
    labs: list[LabFact] = field(default_factory=list)  # latest value per lab, in topic order
    series: list[LabFact] = field(default_factory=list)  # trend: reference point and last value
    anchor: str = "first"  # what series[0] is: first | peak | nadir (of the admission)
    med: MedFact | None = None
    admin_count: int = 0
    admin_total: int = 0  # charted administrations given or not given (unknown left out)
    admin_first: str = ""
    admin_last: str = ""
    dx: F.Diagnosis | None = None
    stay: F.Stay | None = None
    trend: str = ""  # rising | falling | stable
    course: str = ""  # worsening | improving | normal | abnormal_stable
    verdict: str = ""  # hold | ok | responding | not_responding | unclear
    reports: list[F.Report] = field(default_factory=list)  # newest first
    adherence: str = ""  # good | stopped | forgets | ran_out (patient's own account)
    missed: int = 0
    reason: dict[str, str] | None = None  # the patient's words, {"en", "zh"}
    home: dict[str, Any] = field(default_factory=dict)
    symptom: dict[str, Any] = field(default_factory=dict)
    said: frozenset[str] = frozenset()  # numbers the patient's own reply states: severity, pain_score
    pain: dict[str, Any] = field(default_factory=dict)
    write: dict[str, Any] = field(default_factory=dict)  # the write call's arguments
    write_result: dict[str, Any] = field(default_factory=dict)


def judge_trend(points: list[F.LabPoint], delta: float) -> tuple[str, F.LabPoint, str]:
    """(rising | falling | stable, reference point, first | peak | nadir) of an admission
    series, oldest first, judged on the analyte's meaningful absolute change ``delta``.

    When the series turned (an interior peak or nadir at least ``delta`` beyond both ends),
    the direction is the one since that turn and the turn is the reference; the later turn
    wins when there are two. Otherwise the direction is last versus first.
    """
    first, last = points[0], points[-1]
    peak = max(points, key=lambda p: p.value)
    nadir = min(points, key=lambda p: p.value)
    turns = []
    if peak.value - max(first.value, last.value) >= delta:
        turns.append(("falling", peak, "peak"))
    if min(first.value, last.value) - nadir.value >= delta:
        turns.append(("rising", nadir, "nadir"))
    if turns:
        return max(turns, key=lambda t: t[1].time)
    change = last.value - first.value
    if abs(change) < delta:
        return "stable", first, "first"
    return ("rising" if change > 0 else "falling"), first, "first"


def _course(last: LabFact, trend: str) -> str:
    """normal | improving | worsening | abnormal_stable. A stable value just past the lab's
    range but short of its clinical threshold (vocab.MEANINGS: an INR of 1.2, a glucose of
    120) needs no action, so it is "normal"; a moving one is judged by its trend."""
    status = last.status
    m = MEANINGS.get((last.label, status))
    if status == "normal" or (trend == "stable" and m is not None
                              and not m.limit.passed(last.value, status)):
        return "normal"
    if trend == "stable" or status == "abnormal":
        return "abnormal_stable"
    worse = (status == "high" and trend == "rising") or (status == "low" and trend == "falling")
    return "worsening" if worse else "improving"


def _med(observation: Any, word: str, prof: Profile) -> MedFact | None:
    """The order of ``word`` that is current and scheduled at the cutoff (the timeline's),
    as the order tool returned it; None when there is none (stopped, sliding-scale, PRN or
    one-time orders never answer a dose question)."""
    current = prof.timeline.current_order(word) if prof.timeline is not None else None
    if current is None or current.start is None or current.dose is None:
        return None
    start = current.start.strftime("%Y-%m-%d %H:%M")
    for order in F.med_orders(observation, word):
        if (order.dose == current.dose and order.unit and F.minute(order.start) == start
                and order.drug == current.drug):
            return MedFact(word, order.drug, order.dose, order.unit, order.route or "",
                           F.day(order.start))
    return None


def _given_admins(d: Digest, observation: Any) -> bool:
    """Record count, first day and last minute of the topic drug's given doses; False when
    none, or when the tool's page does not hold every charted event."""
    if _truncated(observation):
        return False
    events = F.given(F.admin_events(observation, d.topic.drug))
    if not events:
        return False
    d.admin_count, d.admin_first, d.admin_last = (
        len(events), F.day(events[0].time), F.minute(events[-1].time))
    return True


def _truncated(observation: Any) -> bool:
    """A searchset whose ``total`` is more than the entries it returned."""
    total = observation.get("total") if isinstance(observation, dict) else None
    return isinstance(total, int) and total > len(F.resources(observation))


def digest(topic: Topic, observations: list[Any], prof: Profile,
           arguments: list[dict[str, Any]] | None = None) -> Digest | None:
    """Read the gold observations of one topic; None when they cannot support an answer."""
    d = Digest(topic)
    k = topic.kind
    obs = observations

    def points(o: Any, label: str) -> list[F.LabPoint]:
        series = prof.timeline.lab(label) if prof.timeline is not None else None
        return F.lab_points(o, label, series.itemids) if series is not None else []

    def latest(o: Any, label: str) -> LabFact | None:
        pts = points(o, label)
        return _lab_fact(pts[-1]) if pts else None

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
    elif k in ("med_current", "lab_and_med", "med_and_admin", "drug_lab_safety",
               "admin_reliability"):
        med_obs = obs[1] if k == "lab_and_med" else obs[0]
        d.med = _med(med_obs, topic.drug or "", prof)
        if d.med is None:
            return None
        if k in ("lab_and_med", "drug_lab_safety"):
            fact = latest(obs[0] if k == "lab_and_med" else obs[1], topic.lab or "")
            if fact is None:
                return None
            d.labs = [fact]
        if k == "admin_reliability":
            if _truncated(obs[1]):
                return None
            charted = F.admin_events(obs[1], topic.drug)
            events, missed = F.given(charted), F.not_given(charted)
            if not events:
                return None
            d.admin_count, d.admin_total, d.admin_last = (
                len(events), len(events) + len(missed), F.minute(events[-1].time))
            d.verdict = "ok" if not missed else "missed"
        if k == "med_and_admin" and not _given_admins(d, obs[1]):
            return None
        if k == "drug_lab_safety":
            lab = d.labs[0]
            d.verdict = "hold" if unsafe(topic.drug or "", lab.label, lab.value) else "ok"
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
    elif k in ("lab_trend", "abx_response"):
        lab_obs = obs[0] if k == "lab_trend" else obs[1]
        pts = points(lab_obs, topic.lab or "")
        delta = TREND_DELTAS.get(topic.lab or "")
        if len(pts) < 2 or pts[0].time == pts[-1].time or delta is None:
            return None
        d.trend, ref, d.anchor = judge_trend(pts, delta)
        last = _lab_fact(pts[-1])
        d.series = [_lab_fact(ref), last]
        d.labs = [last]
        d.course = _course(last, d.trend)
        if k == "abx_response":
            if not _given_admins(d, obs[0]):
                return None
            d.verdict = {"falling": "responding", "rising": "not_responding"}.get(d.trend, "unclear")
            if d.trend == "falling" and last.status == "low":
                d.verdict = "unclear"
    elif k == "culture_latest":
        d.reports = _cultures(obs[0], prof)
        if not d.reports:
            return None
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


#: Specimens a culture answer states: the key one first (:func:`key_culture`).
CULTURES_SAID = 3


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

    ranked = sorted(found, key=rank)  # stable: newest first within a rank
    record = prof.timeline.cultures if prof.timeline is not None else ()
    if any(c.significant for c in record) and not (ranked and ranked[0].significant):
        return []
    return ranked[:CULTURES_SAID]


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
    return number is not None and re.search(rf"(?<![\d.]){re.escape(str(number))}(?![\d.])",
                                            text) is not None


def _patient_answer(d: Digest, lang: str) -> str:
    k = d.topic.kind
    if k == "adherence_check":
        assert d.med is not None
        status = say(lang, f"answers.patient.adherence.{d.adherence}", missed=d.missed)
        reason = (say(lang, "answers.patient.reason", reason=d.reason[lang])
                  if d.reason and d.reason.get(lang) else "")
        return "\n".join([say(lang, "answers.med_bullet", **_med_vars(d.med)),
                          say(lang, "answers.patient.report", word=d.topic.drug, status=status,
                              reason=reason)])
    if k == "home_function":
        h = d.home
        living = say(lang, f"answers.patient.living.{'alone' if h['alone'] else 'spouse'}")
        smoking = say(lang, f"answers.patient.smoking.{h['smoking']}")
        device = say(lang, f"answers.patient.device.{h['device']}")
        falls = say(lang, f"answers.patient.falls.{'yes' if h['fell'] else 'no'}")
        return "\n".join([say(lang, "answers.patient.home", living=living, smoking=smoking),
                          say(lang, "answers.patient.mobility", blocks=h["blocks"], device=device,
                              falls=falls)])
    if k == "symptom_pain":
        s, p = d.symptom, d.pain
        symptom = "symptom" if "severity" in d.said else "symptom_unscored"
        lines = [say(lang, f"answers.patient.{symptom}", term=s["term"][lang],
                     onset=onset_phrase(s["onset"], lang), severity=s["severity"])]
        if p.get("present"):
            pain = "pain" if "pain_score" in d.said else "pain_unscored"
            lines.append(say(lang, f"answers.patient.{pain}", score=p["score"],
                             location=p["location"][lang], quality=p["quality"][lang]))
        else:
            lines.append(say(lang, "answers.patient.no_pain"))
        return "\n".join(lines)
    raise ValueError(f"no patient answer for topic kind {k!r}")


def _status(lang: str, status: str) -> str:
    return say(lang, f"answers.status.{status}")


def _lab_vars(f: LabFact, lang: str) -> dict[str, Any]:
    return {"label": lab_name(f.label, lang), "value": fmt(f.value), "unit": f.unit,
            "status": _status(lang, f.status), "time": f.time}


def _med_vars(m: MedFact) -> dict[str, Any]:
    return {"drug": m.drug, "dose": fmt(m.dose), "unit": m.unit, "route": m.route or "",
            "start": m.start or "?", "drug_word": m.word}


def meaning(d: Digest) -> Any:
    """What the latest value suggests (vocab.MEANINGS), only past its clinical threshold."""
    if not d.labs:
        return None
    lab = d.labs[-1]
    m = MEANINGS.get((lab.label, lab.status))
    return m if m is not None and m.limit.passed(lab.value, lab.status) else None


def answer(d: Digest, lang: str) -> str:
    """The gold answer text of a digested topic in one language."""
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
        return "\n".join([say(lang, "answers.lab_bullet", **_lab_vars(d.labs[0], lang)),
                          say(lang, "answers.med_bullet", **_med_vars(d.med))])
    if k == "med_and_admin":
        assert d.med is not None
        return "\n".join([say(lang, "answers.med_bullet", **_med_vars(d.med)),
                          say(lang, "answers.admin_bullet", time=d.admin_last,
                              count=d.admin_count)])
    if k == "admin_reliability":
        assert d.med is not None
        first = say(lang, "answers.reliability", **_med_vars(d.med), total=d.admin_total,
                    given=d.admin_count, missed=d.admin_total - d.admin_count, last=d.admin_last)
        second = say(lang, f"answers.reliability_{d.verdict}")
        return f"{first} {second}" if lang == "en" else f"{first}{second}"
    if k == "dx_primary":
        assert d.dx is not None
        return say(lang, "answers.dx_line", title=d.dx.title, code=d.dx.code)
    if k == "encounter_info":
        assert d.stay is not None
        return say(lang, "answers.encounter_line", admit=F.minute(d.stay.start),
                   admission_type=d.stay.admission_type or "-",
                   discharge=F.minute(d.stay.end),
                   destination=d.stay.discharge_location or say(lang, "answers.no_dest"))
    if k == "culture_latest":
        return "\n".join(culture_line(r, lang) for r in d.reports)
    if k == "imaging_latest":
        r = d.reports[0]
        return say(lang, "answers.report_line", title=r.title, time=F.minute(r.time),
                   conclusion=r.conclusion)
    if k == "lab_trend":
        return _trend_answer(d, lang)
    if k == "drug_lab_safety":
        assert d.med is not None
        lab = d.labs[0]
        values = {**_med_vars(d.med), "label": lab_name(lab.label, lang), "value": fmt(lab.value),
                  "lab_unit": lab.unit, "status": _status(lang, lab.status),
                  "lab": lab_spoken(lab.label, lang)}
        first = say(lang, f"answers.safety.{d.verdict}", **values)
        return f"{first} {say(lang, f'answers.safety.{d.verdict}_rec', **values)}".strip()
    if k == "abx_response":
        first, last = d.series
        values = {"drug_word": d.topic.drug, "count": d.admin_count, "since": d.admin_first,
                  "label": lab_name(last.label, lang), "first": fmt(first.value),
                  "last": fmt(last.value), "unit": last.unit,
                  "trend_word": say(lang, f"answers.trend_word.{d.trend}")}
        return (f"{say(lang, 'answers.response.first', **values)} "
                f"{say(lang, f'answers.response.{d.verdict}', **values)}")
    if d.topic.source == "write":
        return _write_answer(d, lang)
    if k in PATIENT_KINDS:
        return _patient_answer(d, lang)
    raise ValueError(f"no answer template for topic kind {k!r}")


def _trend_answer(d: Digest, lang: str) -> str:
    first, last = d.series
    m = meaning(d) if d.course in ("worsening", "abnormal_stable") else None
    if m is None:
        extra = ""
    elif lang == "en":
        extra = f", consistent with {m.en}"
    else:
        extra = f"，提示{m.zh}"
    action = ""
    template = "answers.trend" if d.anchor == "first" else "answers.trend_turn"
    text = say(lang, template, label=lab_name(last.label, lang), first=fmt(first.value),
               last=fmt(last.value), unit=last.unit, first_time=first.day, last_time=last.day,
               trend_word=say(lang, f"answers.trend_word.{d.trend}"),
               status=_status(lang, last.status), meaning=extra,
               anchor_word=say(lang, f"answers.anchor_word.{d.anchor}")
               if d.anchor != "first" else "")
    rec = say(lang, f"answers.rec.{d.course}", action=action)
    return f"{text} {rec}" if lang == "en" else f"{text}{rec}"


def _write_answer(d: Digest, lang: str) -> str:
    args = d.write
    name = d.topic.tools[0]
    if name == "ServiceRequest.create":
        return say(lang, "answers.write.service", service=args["service_type"],
                   priority=args["priority"], date=args.get("target_date", ""))
    if name == "MedicationRequest.create":
        return say(lang, "answers.write.medication", drug=args["medication"], dose=args["dose"],
                   route=args["route"], frequency=args["frequency"])
    if name == "Flag.create":
        return say(lang, "answers.write.flag", category=args["category"], code=args["code"])
    raise ValueError(f"no write answer for tool {name!r}")


def key_culture(d: Digest) -> F.Report:
    """The culture a rubric asks about: the first the answer states (:func:`_cultures`)."""
    return d.reports[0]


def culture_line(r: F.Report, lang: str) -> str:
    """One specimen of a culture answer: each culture's organisms (resistances and
    susceptibilities, commensal flags) or its result, its pending and its cancelled cultures
    (a rejected specimen)."""
    parts = []
    for t in (x for x in r.results if x.culture):
        if t.pending:
            parts.append(say(lang, "answers.culture.pending", test=t.test))
        elif t.grown:
            parts.append(say(lang, "answers.culture.grew", test=t.test,
                             organism=_isolate(t, lang)))
        elif t.status == "cancelled":
            parts.append(say(lang, "answers.culture.rejected", test=t.test))
        elif not t.organism:
            parts.append(say(lang, "answers.culture.result", test=t.test,
                             result=t.value or say(lang, "answers.culture.no_growth")))
    origin = say(lang, "answers.culture.from_ed") if r.origin == "emergency department" else ""
    return say(lang, "answers.culture.bullet", specimen=r.title, time=F.minute(r.time),
               origin=origin, results="; ".join(dict.fromkeys(parts)))


def _isolate(t: F.MicroResult, lang: str) -> str:
    """``STAPH AUREUS COAG + (MRSA ...; resistant to OXACILLIN; susceptible to VANCOMYCIN)``."""
    said = [RESISTANCE_NAMES[r] for r in t.resistance]
    said += [say(lang, f"answers.culture.flag.{f}") for f in t.flags if f != "result"]
    for sir, key in (("R", "resistant"), ("S", "susceptible")):
        drugs = [ab for ab, code in t.susceptibilities if code == sir]
        if drugs:
            said.append(say(lang, f"answers.culture.{key}", drugs=", ".join(drugs)))
    sep = "; " if lang == "en" else "；"
    return t.organism + (f" ({sep.join(said)})" if said else "")


def organisms(r: F.Report) -> list[str]:
    """The organisms a report's reported cultures grew (in report order, once each)."""
    return list(dict.fromkeys(t.organism for t in r.grown))
