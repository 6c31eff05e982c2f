"""The topics a turn can be about, and the gold tool calls each one makes.

A topic is one clinical question shape (``kind``) bound to the patient's entities (a lab
label, a drug). Which kinds a scenario uses, and for which task type, is fixed here; which
entities are available comes from the patient's :class:`~.profile.Profile`.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from .arcs import CR, DG, IL, WU
from .patient_topics import adherence_drugs, has_home_function, has_symptoms
from .profile import Profile
from .vocab import (
    DRUG_CLASSES,
    FREQUENCIES,
    INFECTION_MARKERS,
    LABS,
    TRENDS,
    antibiotic_class_of,
    drug_class_of,
)

#: kind -> (task type, tool source, gold tools in call order)
KINDS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "lab_latest": (IL, "ehr", ("Observation.search",)),
    "med_current": (IL, "ehr", ("MedicationRequest.search",)),
    "dx_primary": (IL, "ehr", ("Condition.search",)),
    "encounter_info": (IL, "ehr", ("Encounter.search",)),
    "culture_latest": (IL, "ehr", ("DiagnosticReport.search",)),
    "imaging_latest": (IL, "ehr", ("DiagnosticReport.search",)),
    "lab_pair": (DG, "ehr", ("Observation.search", "Observation.search")),
    "lab_and_med": (DG, "ehr", ("Observation.search", "MedicationRequest.search")),
    "med_and_admin": (DG, "ehr", ("MedicationRequest.search", "MedicationAdministration.search")),
    "lab_trend": (CR, "ehr", ("Observation.search",)),
    "drug_lab_safety": (CR, "ehr", ("MedicationRequest.search", "Observation.search")),
    "abx_response": (CR, "ehr", ("MedicationAdministration.search", "Observation.search")),
    "admin_reliability": (CR, "ehr", ("MedicationRequest.search",
                                      "MedicationAdministration.search")),
    "order_lab_recheck": (WU, "write", ("ServiceRequest.create",)),
    "continue_med": (WU, "write", ("MedicationRequest.create",)),
    "flag_abnormal": (WU, "write", ("Flag.create",)),
    "followup_visit": (WU, "write", ("ServiceRequest.create",)),
    "adherence_check": (DG, "mixed", ("MedicationRequest.search", "patient.get_medication_adherence")),
    "home_function": (DG, "patient", ("patient.get_social_history", "patient.get_functional_status")),
    "symptom_pain": (DG, "patient", ("patient.get_symptom_history", "patient.get_pain_assessment")),
}

#: Which kinds each scenario draws from (its clinical focus).
SCENARIO_KINDS: dict[str, tuple[str, ...]] = {
    "diagnostic_workup": ("lab_latest", "dx_primary", "imaging_latest", "culture_latest", "lab_pair", "lab_trend", "lab_and_med",
                          "order_lab_recheck", "flag_abnormal", "symptom_pain"),
    "med_safety": ("lab_latest", "med_current", "lab_pair", "lab_and_med", "med_and_admin",
                   "admin_reliability",
                   "drug_lab_safety", "lab_trend", "continue_med", "flag_abnormal",
                   "order_lab_recheck", "adherence_check"),
    "treatment_response": ("lab_latest", "med_current", "culture_latest", "lab_pair", "med_and_admin",
                           "admin_reliability",
                           "abx_response", "lab_trend", "order_lab_recheck", "continue_med",
                           "symptom_pain"),
    "discharge_planning": ("encounter_info", "lab_latest", "med_current", "dx_primary",
                           "med_and_admin", "admin_reliability", "lab_and_med", "lab_trend",
                           "drug_lab_safety",
                           "continue_med", "followup_visit", "order_lab_recheck",
                           "adherence_check", "home_function"),
}

#: Each scenario's signature kinds (tried first by the planner at most turns).
SCENARIO_FOCUS: dict[str, frozenset[str]] = {
    "diagnostic_workup": frozenset({"lab_pair", "imaging_latest", "culture_latest", "dx_primary",
                                    "flag_abnormal", "symptom_pain"}),
    "med_safety": frozenset({"drug_lab_safety", "adherence_check", "med_and_admin", "lab_and_med",
                             "admin_reliability", "continue_med", "med_current"}),
    "treatment_response": frozenset({"abx_response", "culture_latest", "med_and_admin",
                                     "admin_reliability",
                                     "lab_pair", "continue_med"}),
    "discharge_planning": frozenset({"encounter_info", "home_function", "followup_visit",
                                     "continue_med", "adherence_check", "med_and_admin"}),
}

#: Labs each scenario prefers to ask about (others in the profile are used after these).
SCENARIO_LABS: dict[str, tuple[str, ...]] = {
    "diagnostic_workup": ("Creatinine", "Urea Nitrogen", "Hemoglobin", "Platelet Count",
                          "White Blood Cells", "Alanine Aminotransferase (ALT)",
                          "Bilirubin, Total", "INR(PT)", "Lactate", "Troponin T", "Sodium",
                          "Potassium", "Glucose", "Albumin"),
    "med_safety": ("Creatinine", "Potassium", "Glucose", "INR(PT)", "Sodium", "Urea Nitrogen",
                   "Magnesium"),
    "treatment_response": ("White Blood Cells", "Lactate", "Neutrophils", "C-Reactive Protein",
                           "Creatinine", "Platelet Count"),
    "discharge_planning": ("Creatinine", "Hemoglobin", "Potassium", "Sodium", "Glucose",
                           "White Blood Cells", "INR(PT)"),
}


#: Lab values a gold lab call asks for: the tool's maximum page, the admission's series.
LAB_COUNT = 200


@dataclass(frozen=True)
class Topic:
    """One turn's subject: a kind bound to entities (lab labels are MIMIC-IV labels)."""

    kind: str
    lab: str | None = None
    lab2: str | None = None
    drug: str | None = None  # searchable drug word, lower-case

    @property
    def task_type(self) -> str:
        return KINDS[self.kind][0]

    @property
    def source(self) -> str:
        return KINDS[self.kind][1]

    @property
    def tools(self) -> tuple[str, ...]:
        return KINDS[self.kind][2]

    @property
    def resource_types(self) -> frozenset[str]:
        return frozenset(t.split(".")[0] for t in self.tools if not t.startswith("patient."))

    @property
    def entities(self) -> tuple[str, ...]:
        return tuple(e for e in (self.lab, self.lab2, self.drug) if e)

    def label(self) -> str:
        ents = ", ".join(self.entities)
        return f"{self.kind}({ents})" if ents else self.kind


def _lab_order(scenario: str, prof: Profile) -> list[str]:
    preferred = [lab for lab in SCENARIO_LABS[scenario] if lab in prof.labs]
    rest = [lab for lab in sorted(prof.labs) if lab not in preferred and lab in LABS]
    return preferred + rest


def _dosable(prof: Profile, word: str) -> bool:
    d = prof.drugs[word]
    return d.numeric_dose and bool(d.unit)


def candidates(scenario: str, task_type: str, prof: Profile) -> list[Topic]:
    """Every topic of this task type the scenario uses and the patient's data supports."""
    labs = _lab_order(scenario, prof)
    trend_labs = [lab for lab in labs if prof.labs[lab].n >= 2 and lab in TRENDS
                  and not _follows_known_disease(lab, prof)]
    abnormal = [lab for lab in labs if prof.labs[lab].abnormal]
    drugs = [w for w in sorted(prof.drugs) if _dosable(prof, w)]
    monitored = [w for w in drugs if drug_class_of(w) is not None]
    # Dose counts only where both semantics show the same count (physassist.timeline's rule).
    given = [w for w in drugs if prof.drugs[w].n_admin > 0 and prof.drugs[w].admin_countable]
    antibiotics = [w for w in given if antibiotic_class_of(w)]
    # Keep medication topics on the scenario's focus when the patient has such drugs.
    if scenario == "med_safety" and monitored:
        drugs = monitored + [w for w in drugs if w not in monitored][:2]
        given = [w for w in monitored if w in given] + [w for w in given if w not in monitored]
    if scenario == "treatment_response" and antibiotics:
        drugs = antibiotics
        given = antibiotics
    out: list[Topic] = []
    for kind in SCENARIO_KINDS[scenario]:
        if KINDS[kind][0] != task_type:
            continue
        if kind == "lab_latest":
            out += [Topic(kind, lab=lab) for lab in labs[:6]]
        elif kind == "med_current":
            out += [Topic(kind, drug=w) for w in drugs[:6]]
        elif kind == "dx_primary":
            if prof.n_dx > 0:
                out.append(Topic(kind))
        elif kind == "encounter_info":
            out.append(Topic(kind))
        elif kind == "culture_latest" and prof.n_micro > 0:
            out.append(Topic(kind))
        elif kind == "imaging_latest" and prof.n_radiology > 0:
            out.append(Topic(kind))
        elif kind == "lab_pair":
            top = labs[:5]
            out += [Topic(kind, lab=a, lab2=b) for i, a in enumerate(top) for b in top[i + 1:]]
        elif kind == "lab_and_med":
            for w in drugs[:4]:
                cls = drug_class_of(w)
                pair_labs = [lab for lab in (cls.labs if cls else ()) if lab in prof.labs]
                for lab in (pair_labs or labs[:2])[:2]:
                    out.append(Topic(kind, lab=lab, drug=w))
        elif kind in ("med_and_admin", "admin_reliability"):
            out += [Topic(kind, drug=w) for w in given[:5]]
        elif kind == "lab_trend":
            out += [Topic(kind, lab=lab) for lab in trend_labs[:6]]
        elif kind == "drug_lab_safety":
            for w in monitored[:4]:
                cls = drug_class_of(w)
                assert cls is not None
                out += [Topic(kind, lab=lab, drug=w) for lab in cls.labs if lab in prof.labs][:1]
        elif kind == "abx_response":
            wbc = [lab for lab in INFECTION_MARKERS if lab in trend_labs
                   and not (prof.context.heme_malignancy and lab in HEME_MARKERS)][:1]
            out += [Topic(kind, lab=wbc[0], drug=w) for w in antibiotics[:4]] if wbc else []
        elif kind == "order_lab_recheck":
            out += [Topic(kind, lab=lab) for lab in labs[:6]]
        elif kind == "continue_med":
            out += [Topic(kind, drug=w) for w in drugs[:6]
                    if _frequency(prof, w) is not None and _route(prof.drugs[w].route)]
        elif kind == "flag_abnormal":
            out += [Topic(kind, lab=lab) for lab in abnormal[:4]]
        elif kind == "followup_visit":
            out.append(Topic(kind))
        elif kind == "adherence_check":
            out += [Topic(kind, drug=w) for w in adherence_drugs(prof)[:3]]
        elif kind == "home_function" and has_home_function(prof):
            out.append(Topic(kind))
        elif kind == "symptom_pain" and has_symptoms(prof):
            out.append(Topic(kind))
    return out


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
        return "Observation.search", {**adm, "category": "laboratory", "code": label,
                                      "_count": LAB_COUNT}

    k = topic.kind
    if k in ("lab_latest", "lab_trend"):
        return [lab_call(topic.lab or "")]
    if k == "lab_pair":
        return [lab_call(topic.lab or ""), lab_call(topic.lab2 or "")]
    if k in ("med_current",):
        return [("MedicationRequest.search", {**adm, "medication": topic.drug})]
    if k == "dx_primary":
        return [("Condition.search", dict(adm))]
    if k == "encounter_info":
        return [("Encounter.search", dict(adm))]
    if k == "culture_latest":
        return [("DiagnosticReport.search", {**adm, "report_type": "culture"})]
    if k == "imaging_latest":
        return [("DiagnosticReport.search", {**adm, "report_type": "radiology"})]
    if k == "lab_and_med":
        return [lab_call(topic.lab or ""),
                ("MedicationRequest.search", {**adm, "medication": topic.drug})]
    if k in ("med_and_admin", "admin_reliability"):
        return [("MedicationRequest.search", {**adm, "medication": topic.drug}),
                ("MedicationAdministration.search", {**adm, "medication": topic.drug})]
    if k == "drug_lab_safety":
        return [("MedicationRequest.search", {**adm, "medication": topic.drug}),
                lab_call(topic.lab or "")]
    if k == "abx_response":
        return [("MedicationAdministration.search", {**adm, "medication": topic.drug}),
                lab_call(topic.lab or "")]
    if k == "order_lab_recheck":
        lab = LABS[topic.lab or ""] if topic.lab in LABS else None
        name = topic.lab or ""
        return [("ServiceRequest.create", {
            **base, "service_type": f"Repeat {name}", "priority": "routine",
            "target_date": next_day(prof.current_date),
            "note": f"Recheck {lab.en if lab else name} in the morning.",
        })]
    if k == "followup_visit":
        return [("ServiceRequest.create", {
            **base, "service_type": "Primary care follow-up", "priority": "routine",
            "target_date": next_day(prof.current_date, 7),
            "note": "Post-discharge visit with the primary care physician.",
        })]
    if k == "continue_med":
        d = prof.drugs[topic.drug or ""]
        return [("MedicationRequest.create", {
            **base, "medication": d.drug, "dose": f"{d.dose} {d.unit}",
            "route": _route(d.route), "frequency": _frequency(prof, d.word),
        })]
    if k == "flag_abnormal":
        name = topic.lab or ""
        return [("Flag.create", {
            **base, "category": "clinical", "code": f"Abnormal {name}",
            "detail": f"Latest {name} is outside its reference range; review before next orders.",
        })]
    if k == "adherence_check":
        return [("MedicationRequest.search", {**adm, "medication": topic.drug}),
                ("patient.get_medication_adherence", {**pat, "drug": topic.drug})]
    if k == "home_function":
        return [("patient.get_social_history", dict(pat)),
                ("patient.get_functional_status", dict(pat))]
    if k == "symptom_pain":
        return [("patient.get_symptom_history", dict(pat)),
                ("patient.get_pain_assessment", dict(pat))]
    raise ValueError(f"unknown topic kind {k!r}")


__all__ = ["KINDS", "SCENARIO_KINDS", "Topic", "calls", "candidates", "DRUG_CLASSES"]
