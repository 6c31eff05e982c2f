"""The topics a turn can be about, and the gold tool calls each one makes.

A topic is one clinical question shape (``kind``) bound to the patient's entities (a lab
label, a drug). Which kinds a scenario uses, and for which task type, is fixed here; which
entities are available comes from the patient's :class:`~.profile.Profile`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from physassist.vocab import FREQUENCIES

from .followup import interval, problem_labs, reason, relevant
from .interpret import label as context_label
from .kinds import KINDS, Topic
from .patient_topics import adherence_drugs, has_home_function, has_symptoms
from .profile import Profile
from .running import running_responses
from .signals import safety_topics
from .vocab import (
    ANC_RANGE,
    DRUG_CLASSES,
    LABS,
    TRENDS,
    drug_class_of,
    drug_spoken,
)

#: Which kinds each scenario draws from (its clinical focus).
SCENARIO_KINDS: dict[str, tuple[str, ...]] = {
    "diagnostic_workup": (
        "lab_latest",
        "dx_primary",
        "imaging_latest",
        "culture_latest",
        "lab_pair",
        "lab_trend",
        "lab_and_med",
        "order_lab_recheck",
        "flag_abnormal",
        "symptom_pain",
    ),
    "med_safety": (
        "lab_latest",
        "med_current",
        "lab_pair",
        "lab_and_med",
        "med_and_admin",
        "admin_reliability",
        "drug_lab_safety",
        "duplicate_therapy",
        "duplicate_class",
        "interaction",
        "anticoag_bridge",
        "lab_trend",
        "continue_med",
        "flag_abnormal",
        "order_lab_recheck",
        "adherence_check",
    ),
    "treatment_response": (
        "lab_latest",
        "med_current",
        "culture_latest",
        "lab_pair",
        "med_and_admin",
        "admin_reliability",
        "abx_response",
        "treatment_effect",
        "lab_trend",
        "order_lab_recheck",
        "continue_med",
        "symptom_pain",
    ),
    "discharge_planning": (
        "encounter_info",
        "lab_latest",
        "med_current",
        "dx_primary",
        "med_and_admin",
        "admin_reliability",
        "lab_and_med",
        "lab_trend",
        "drug_lab_safety",
        "continue_med",
        "followup_visit",
        "order_lab_recheck",
        "adherence_check",
        "home_function",
    ),
}

#: Each scenario's signature kinds (tried first by the planner at most turns).
SCENARIO_FOCUS: dict[str, frozenset[str]] = {
    "diagnostic_workup": frozenset(
        {
            "lab_pair",
            "imaging_latest",
            "culture_latest",
            "dx_primary",
            "flag_abnormal",
            "symptom_pain",
        }
    ),
    "med_safety": frozenset(
        {
            "drug_lab_safety",
            "duplicate_therapy",
            "duplicate_class",
            "interaction",
            "anticoag_bridge",
            "adherence_check",
            "med_and_admin",
            "lab_and_med",
            "admin_reliability",
            "continue_med",
            "med_current",
        }
    ),
    "treatment_response": frozenset(
        {
            "abx_response",
            "treatment_effect",
            "culture_latest",
            "med_and_admin",
            "admin_reliability",
            "lab_pair",
            "continue_med",
        }
    ),
    "discharge_planning": frozenset(
        {
            "encounter_info",
            "home_function",
            "followup_visit",
            "continue_med",
            "adherence_check",
            "med_and_admin",
        }
    ),
}

#: Scenarios built only where the chart has what they ask about (:func:`fits`).
SIGNAL_SCENARIOS = frozenset({"med_safety", "treatment_response"})

#: Labs each scenario prefers to ask about (others in the profile are used after these).
SCENARIO_LABS: dict[str, tuple[str, ...]] = {
    "diagnostic_workup": (
        "Creatinine",
        "Urea Nitrogen",
        "Hemoglobin",
        "Platelet Count",
        "White Blood Cells",
        "Alanine Aminotransferase (ALT)",
        "Bilirubin, Total",
        "INR(PT)",
        "Lactate",
        "Troponin T",
        "Sodium",
        "Potassium",
        "Glucose",
        "Albumin",
    ),
    "med_safety": (
        "Creatinine",
        "Potassium",
        "Glucose",
        "INR(PT)",
        "Sodium",
        "Urea Nitrogen",
        "Magnesium",
    ),
    "treatment_response": (
        "White Blood Cells",
        "Lactate",
        "Neutrophils",
        "C-Reactive Protein",
        "Creatinine",
        "Platelet Count",
    ),
    "discharge_planning": (
        "Creatinine",
        "Hemoglobin",
        "Potassium",
        "Sodium",
        "Glucose",
        "White Blood Cells",
        "INR(PT)",
    ),
}


#: Kinds whose answer states a lab's latest value, and kinds that only look one up: a lookup
#: right after a turn that stated that lab asks the same thing again.
STATES_LAB = frozenset(
    {
        "lab_latest",
        "lab_pair",
        "lab_and_med",
        "lab_trend",
        "drug_lab_safety",
        "abx_response",
        "treatment_effect",
        "anticoag_bridge",
    }
)
LAB_LOOKUPS = frozenset({"lab_latest", "lab_pair", "lab_and_med"})
#: Kinds whose answer states a drug's current order; ``med_current`` only looks one up.
STATES_ORDER = frozenset(
    {
        "med_current",
        "lab_and_med",
        "med_and_admin",
        "admin_reliability",
        "drug_lab_safety",
        "adherence_check",
    }
)


def labs_of(topic: Topic) -> set[str]:
    return {lab for lab in (topic.lab, topic.lab2) if lab}


def follows(previous: Topic | None, topic: Topic) -> bool:
    """Whether ``topic`` may come right after ``previous``: it never asks again what the
    previous turn stated (its lab's latest value, its drug's order), and flagging an abnormal
    lab ("flag the abnormal INR") refers to one the previous turn stated."""
    if topic.kind == "flag_abnormal":
        return (
            previous is not None and previous.kind in STATES_LAB and topic.lab in labs_of(previous)
        )
    if previous is None:
        return True
    if (
        topic.kind in LAB_LOOKUPS
        and previous.kind in STATES_LAB
        and labs_of(topic) & labs_of(previous)
    ):
        return False
    return not (
        topic.kind == "med_current"
        and previous.kind in STATES_ORDER
        and topic.drug == previous.drug
    )


#: Kinds that look up a drug's orders (their gold calls search them).
SEARCHES_ORDERS = STATES_ORDER | {
    "duplicate_therapy",
    "duplicate_class",
    "interaction",
    "anticoag_bridge",
}


def repeats(earlier: list[Topic], topic: Topic) -> bool:
    """Whether ``topic`` asks again what an earlier turn of the session answered: a lab looked
    up or trended after a turn that stated it ("creatinine?" then "trend on the
    creatinine?"), or a drug's order looked up after a turn that searched it ("enoxaparin
    bridge?" then "enoxaparin?")."""
    stated = set().union(*(labs_of(t) for t in earlier if t.kind in STATES_LAB))
    if topic.kind in LAB_LOOKUPS | {"lab_trend"} and labs_of(topic) & stated:
        return True
    searched = {d for t in earlier if t.kind in SEARCHES_ORDERS for d in (t.drug, t.drug2) if d}
    return topic.kind == "med_current" and topic.drug in searched


#: Labs that have no place in an outpatient follow-up (they guide acute care only).
INPATIENT_ONLY = frozenset({"Lactate", "Troponin T", "Creatine Kinase (CK)"})

#: Why a repeat lab falls before the follow-up visit, as its order's note says it.
RECHECK_WHY = {
    "inr_bridge": "warfarin bridge",
    "inr_warfarin": "warfarin initiation",
    "dialysis": "with the next dialysis",
}

#: Days from discharge to the follow-up visit a discharge-date order is dated for (a repeat
#: lab "at follow-up" and the primary-care visit both fall a week out).
FOLLOW_UP_DAYS = 7

#: Lab values a gold lab call asks for: the tool's maximum page, the admission's series.
LAB_COUNT = 200


def _lab_order(scenario: str, prof: Profile) -> list[str]:
    preferred = [lab for lab in SCENARIO_LABS[scenario] if lab in prof.labs]
    rest = [lab for lab in sorted(prof.labs) if lab not in preferred and lab in LABS]
    return [lab for lab in preferred + rest if not _percent_only(lab, prof)]


def _percent_only(lab: str, prof: Profile) -> bool:
    """The latest neutrophil percentage is off its range while the absolute count of that
    draw (white count x percentage) is normal (:data:`~.vocab.ANC_RANGE`; CLL, neutrophils 32 %
    of 8.2 K/uL: 2.6): a physician reads the count, so no question grades the percentage."""
    tl = prof.timeline
    pct = tl.lab(lab) if tl is not None and lab == "Neutrophils" else None
    wbc = tl.lab("White Blood Cells") if tl is not None else None
    if pct is None or wbc is None or not pct.points:
        return False
    last = pct.latest
    off = (last.low is not None and last.value < last.low) or (
        last.high is not None and last.value > last.high
    )
    count = next((p.value for p in wbc.points if p.time == last.time), None)
    return off and count is not None and ANC_RANGE[0] <= count * last.value / 100 <= ANC_RANGE[1]


def _dosable(prof: Profile, word: str) -> bool:
    d = prof.drugs[word]
    return d.numeric_dose and bool(d.unit)


@dataclass(frozen=True)
class Pools:
    """What one patient's chart offers a scenario's topics (see :func:`pools`)."""

    labs: list[str]  # the scenario's labs first
    trend_labs: list[str]
    abnormal: list[str]
    drugs: list[str]  # current scheduled orders, the scenario's drugs first
    monitored: list[str]  # of them, drugs of a monitored class
    given: list[str]  # of them, doses charted and countable in both semantics
    signals: list[Topic]  # the scenario's required topics (signals.py): one must be asked
    #: The labs of a medication-safety session's problem (followup.problem_labs): a repeat
    #: lab it orders is one of them; None elsewhere.
    problem: frozenset[str] | None = None


def pools(scenario: str, prof: Profile) -> Pools:
    """The entities a scenario draws its topics from: medication-safety sessions ask about
    the drugs of the chart's safety signals, treatment-response sessions about its treatments."""
    labs = _lab_order(scenario, prof)
    trend_labs = [
        lab
        for lab in labs
        if prof.labs[lab].n >= 2 and lab in TRENDS and not _follows_known_disease(lab, prof)
    ]
    drugs = [w for w in sorted(prof.drugs) if _dosable(prof, w)]
    signals = (
        safety_topics(prof)
        if scenario == "med_safety"
        else running_responses(prof)
        if scenario == "treatment_response"
        else []
    )
    focus = [w for t in signals for w in (t.drug, t.drug2) if w in drugs]
    if scenario == "med_safety":
        monitored = [w for w in drugs if drug_class_of(w) is not None]
        drugs = list(dict.fromkeys(focus + monitored + drugs))[: max(len(focus) + 2, 4)]
    elif scenario == "treatment_response":
        drugs = list(dict.fromkeys(focus))
    # Dose counts only where both semantics show the same count (physassist.timeline's rule).
    given = [w for w in drugs if prof.drugs[w].n_admin > 0 and prof.drugs[w].admin_countable]
    return Pools(
        labs,
        trend_labs,
        [lab for lab in labs if prof.labs[lab].abnormal],
        drugs,
        [w for w in drugs if drug_class_of(w) is not None],
        given,
        list(dict.fromkeys(signals)),
        problem_labs(signals, drugs) if scenario == "med_safety" else None,
    )


def candidates(scenario: str, task_type: str, prof: Profile) -> list[Topic]:
    """Every topic of this task type the scenario uses and the patient's data supports."""
    pool = pools(scenario, prof)
    out = [
        t
        for kind in SCENARIO_KINDS[scenario]
        if KINDS[kind][0] == task_type
        for t in _CANDIDATES[kind](pool, prof)
    ]
    return [named(t, prof) for t in out]


def named(topic: Topic, prof: Profile) -> Topic:
    """The topic with its drugs as a physician says them (the current order's own name)."""

    def say(word: str | None, name: str | None) -> str | None:
        return drug_spoken(prof.drugs[word].drug) if word in prof.drugs else name or word

    return replace(topic, name=say(topic.drug, topic.name), name2=say(topic.drug2, topic.name2))


def _lab_and_med(p: Pools, prof: Profile) -> list[Topic]:
    """A drug with a lab that monitors it (its class's labs): never an unrelated pair."""
    out = []
    for w in p.drugs[:4]:
        cls = drug_class_of(w)
        pair_labs = [lab for lab in (cls.labs if cls else ()) if lab in prof.labs]
        out += [Topic("lab_and_med", lab=lab, drug=w) for lab in pair_labs[:2]]
    return out


def _drug_lab_safety(p: Pools, prof: Profile) -> list[Topic]:
    """The chart's safety signals on a lab; elsewhere a monitored drug and its first lab."""
    signals = [t for t in p.signals if t.kind == "drug_lab_safety"]
    if signals or p.signals:
        return signals
    out = []
    for w in p.monitored[:4]:
        cls = drug_class_of(w)
        assert cls is not None
        out += [Topic("drug_lab_safety", lab=lab, drug=w) for lab in cls.labs if lab in prof.labs][
            :1
        ]
    return out


def _rechecks(p: Pools, prof: Profile) -> list[Topic]:
    """A repeat is ordered for a value that is off, not for a normal one; after discharge not
    for an acute-care test; only where it is relevant (:func:`.followup.relevant`), dated by
    why it is repeated (:func:`.followup.reason`)."""
    out = []
    for lab in p.abnormal[:6]:
        if (prof.at_discharge and lab in INPATIENT_ONLY) or not relevant(prof, lab, p.problem):
            continue
        why = reason(prof, lab) if prof.at_discharge else "follow_up"
        out.append(Topic("order_lab_recheck", lab=lab, when=None if why == "follow_up" else why))
    return out


def _signals(kind: str) -> Callable[[Pools, Profile], list[Topic]]:
    return lambda p, prof: [t for t in p.signals if t.kind == kind]


def _one(kind: str, present: Callable[[Profile], bool]) -> Callable[[Pools, Profile], list[Topic]]:
    return lambda p, prof: [Topic(kind)] if present(prof) else []


#: kind -> its candidate topics from a patient's pools.
_CANDIDATES: dict[str, Callable[[Pools, Profile], list[Topic]]] = {
    "lab_latest": lambda p, prof: [Topic("lab_latest", lab=lab) for lab in p.labs[:6]],
    "med_current": lambda p, prof: [Topic("med_current", drug=w) for w in p.drugs[:6]],
    "dx_primary": _one("dx_primary", lambda prof: prof.n_dx > 0),
    "encounter_info": _one("encounter_info", lambda prof: True),
    "culture_latest": _one("culture_latest", lambda prof: prof.n_micro > 0),
    "imaging_latest": _one("imaging_latest", lambda prof: prof.n_radiology > 0),
    "lab_pair": lambda p, prof: [
        Topic("lab_pair", lab=a, lab2=b)
        for i, a in enumerate(p.labs[:5])
        for b in p.labs[:5][i + 1 :]
    ],
    "lab_and_med": _lab_and_med,
    "med_and_admin": lambda p, prof: [Topic("med_and_admin", drug=w) for w in p.given[:5]],
    "admin_reliability": lambda p, prof: [Topic("admin_reliability", drug=w) for w in p.given[:5]],
    "lab_trend": lambda p, prof: [Topic("lab_trend", lab=lab) for lab in p.trend_labs[:6]],
    "drug_lab_safety": _drug_lab_safety,
    "duplicate_therapy": _signals("duplicate_therapy"),
    "duplicate_class": _signals("duplicate_class"),
    "interaction": _signals("interaction"),
    "anticoag_bridge": _signals("anticoag_bridge"),
    "abx_response": _signals("abx_response"),
    "treatment_effect": _signals("treatment_effect"),
    "order_lab_recheck": lambda p, prof: _rechecks(p, prof),
    "continue_med": lambda p, prof: [
        Topic("continue_med", drug=w)
        for w in p.drugs[:6]
        if _frequency(prof, w) is not None and _route(prof.drugs[w].route)
    ],
    "flag_abnormal": lambda p, prof: [Topic("flag_abnormal", lab=lab) for lab in p.abnormal[:4]],
    "followup_visit": _one("followup_visit", lambda prof: True),
    "adherence_check": lambda p, prof: [
        Topic("adherence_check", drug=w) for w in adherence_drugs(prof)[:3]
    ],
    "home_function": _one("home_function", has_home_function),
    "symptom_pain": _one("symptom_pain", has_symptoms),
}


def required(scenario: str, prof: Profile) -> list[Topic]:
    """Topics one of which a session of ``scenario`` must ask (its chart's safety signals or
    measured responses; empty for scenarios without such a requirement)."""
    return [named(t, prof) for t in pools(scenario, prof).signals]


def fits(scenario: str, prof: Profile) -> bool:
    """Whether the chart supports the scenario: a medication-safety session needs a safety
    signal, a treatment-response session a treatment with a measured response."""
    return scenario not in SIGNAL_SCENARIOS or bool(pools(scenario, prof).signals)


#: Labs that follow a coded disease more than an acute course: creatinine and BUN follow
#: dialysis in end-stage renal disease, the white count a leukaemia or myeloid neoplasm (and
#: says nothing of an antibiotic's effect there).
RENAL_MARKERS = ("Creatinine", "Urea Nitrogen")
HEME_MARKERS = ("White Blood Cells", "Neutrophils")


def _follows_known_disease(lab: str, prof: Profile) -> bool:
    """No trend question where the value follows a coded disease (see above)."""
    return prof.context.esrd and lab in RENAL_MARKERS


def _frequency(prof: Profile, word: str) -> str | None:
    per_day = prof.drugs[word].per_day
    if per_day is None or int(per_day) != per_day or int(per_day) not in FREQUENCIES:
        return None
    return FREQUENCIES[int(per_day)][0]


def _route(route: str) -> str:
    """The first route of a prescription route field ("PO/NG" -> "PO")."""
    return route.replace(" ", "/").split("/")[0].upper() if route else ""


def _off_how(prof: Profile, lab: str) -> str:
    """How a flagged value is off: an INR on warfarin against its target (interpret.label),
    anything else against its reference range."""
    series = prof.timeline.lab(lab) if prof.timeline is not None else None
    if lab == "INR(PT)" and prof.context.on_warfarin and series is not None:
        said = context_label(lab, series.latest.value, "abnormal", prof.context)
        return f"{said} on warfarin (target 2-3)"
    return "outside its reference range"


def next_day(day: str, days: int = 1) -> str:
    return (dt.date.fromisoformat(day[:10]) + dt.timedelta(days=days)).isoformat()


def calls(topic: Topic, prof: Profile, session_id: str = "") -> list[tuple[str, dict[str, Any]]]:
    """The gold tool calls of a topic, in order, with `subject_id` and `hadm_id` set
    (patient tools get `session_id` instead of `hadm_id`)."""
    base = {"subject_id": prof.subject_id}
    adm = {**base, "hadm_id": prof.hadm_id}
    pat = {**base, "session_id": session_id}

    def lab_call(label: str) -> tuple[str, dict[str, Any]]:
        # The whole admission's series (the tool's default page is the newest 20).
        return "Observation.search", {
            **adm,
            "category": "laboratory",
            "code": label,
            "_count": LAB_COUNT,
        }

    k = topic.kind
    if k in ("lab_latest", "lab_trend"):
        return [lab_call(topic.lab or "")]
    if k == "lab_pair":
        return [lab_call(topic.lab or ""), lab_call(topic.lab2 or "")]

    def orders(word: str | None) -> tuple[str, dict[str, Any]]:
        return "MedicationRequest.search", {**adm, "medication": word}

    if k in ("med_current",):
        return [orders(topic.drug)]
    if k == "duplicate_therapy":
        return [orders(topic.drug)]
    if k in ("duplicate_class", "interaction"):
        return [orders(topic.drug), orders(topic.drug2)]
    if k == "anticoag_bridge":
        return [orders(topic.drug), orders(topic.drug2), lab_call(topic.lab or "")]
    if k == "dx_primary":
        return [("Condition.search", dict(adm))]
    if k == "encounter_info":
        return [("Encounter.search", dict(adm))]
    if k == "culture_latest":
        return [("DiagnosticReport.search", {**adm, "report_type": "culture"})]
    if k == "imaging_latest":
        return [("DiagnosticReport.search", {**adm, "report_type": "radiology"})]
    if k == "lab_and_med":
        return [
            lab_call(topic.lab or ""),
            ("MedicationRequest.search", {**adm, "medication": topic.drug}),
        ]
    if k in ("med_and_admin", "admin_reliability"):
        return [
            ("MedicationRequest.search", {**adm, "medication": topic.drug}),
            ("MedicationAdministration.search", {**adm, "medication": topic.drug}),
        ]
    if k == "drug_lab_safety":
        return [
            ("MedicationRequest.search", {**adm, "medication": topic.drug}),
            lab_call(topic.lab or ""),
        ]
    if k in ("abx_response", "treatment_effect"):
        return [
            ("MedicationAdministration.search", {**adm, "medication": topic.drug}),
            lab_call(topic.lab or ""),
        ]
    if k == "order_lab_recheck":
        lab = LABS[topic.lab or ""] if topic.lab in LABS else None
        name = topic.lab or ""
        days = interval(topic).days if prof.at_discharge else 1
        when = (
            "in the morning"
            if not prof.at_discharge
            else f"{days} days after discharge ({RECHECK_WHY[topic.when]})"
            if topic.when
            else "at the follow-up visit after discharge"
        )
        return [
            (
                "ServiceRequest.create",
                {
                    **base,
                    "service_type": f"Repeat {name}",
                    "priority": "routine",
                    "target_date": next_day(prof.current_date, days),
                    "note": f"Recheck {lab.en if lab else name} {when}.",
                },
            )
        ]
    if k == "followup_visit":
        return [
            (
                "ServiceRequest.create",
                {
                    **base,
                    "service_type": "Primary care follow-up",
                    "priority": "routine",
                    "target_date": next_day(prof.current_date, FOLLOW_UP_DAYS),
                    "note": "Post-discharge visit with the primary care physician.",
                },
            )
        ]
    if k == "continue_med":
        d = prof.drugs[topic.drug or ""]
        return [
            (
                "MedicationRequest.create",
                {
                    **base,
                    "medication": d.drug,
                    "dose": f"{d.dose} {d.unit}",
                    "route": _route(d.route),
                    "frequency": _frequency(prof, d.word),
                },
            )
        ]
    if k == "flag_abnormal":
        name = topic.lab or ""
        return [
            (
                "Flag.create",
                {
                    **base,
                    "category": "clinical",
                    "code": f"Abnormal {name}",
                    "detail": f"Latest {name} is {_off_how(prof, name)}; review before next "
                    "orders.",
                },
            )
        ]
    if k == "adherence_check":
        return [
            ("MedicationRequest.search", {**adm, "medication": topic.drug}),
            ("patient.get_medication_adherence", {**pat, "drug": topic.drug}),
        ]
    if k == "home_function":
        return [
            ("patient.get_social_history", dict(pat)),
            ("patient.get_functional_status", dict(pat)),
        ]
    if k == "symptom_pain":
        return [
            ("patient.get_symptom_history", dict(pat)),
            ("patient.get_pain_assessment", dict(pat)),
        ]
    raise ValueError(f"unknown topic kind {k!r}")


__all__ = ["KINDS", "SCENARIO_KINDS", "Topic", "calls", "candidates", "DRUG_CLASSES"]
