"""Parameter schemas of the 18 tools (names and types exactly as the reference; our wording).

One table (:data:`PARAMS`) drives both the OpenAI-style function schemas shown to models and
the argument validation in :mod:`physassist.ehr.tools.args`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .names import TOOL_NAMES

DEFAULT_COUNT = 20
STRICT_MAX_COUNT = 200


@dataclass(frozen=True)
class Param:
    """One tool parameter: JSON type (``integer`` or ``string``), optional enum, our description."""

    type: str
    description: str
    required: bool = False
    enum: tuple[str, ...] | None = None
    default: Any = None


def _subject() -> Param:
    return Param("integer", "MIMIC-IV subject_id of the patient in this session.", required=True)


def _hadm(what: str) -> Param:
    return Param("integer", f"Restrict to one hospital admission (MIMIC-IV hadm_id) {what}.")


def _session() -> Param:
    return Param("string", "Session identifier given in the environment message.", required=True)


PARAMS: dict[str, dict[str, Param]] = {
    "Patient.read": {"subject_id": _subject()},
    "Encounter.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("instead of listing every admission"),
    },
    "Condition.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("to get that stay's coded diagnoses"),
        "code": Param(
            "string", "ICD-9/ICD-10 code or code prefix, e.g. 'I48' for atrial fibrillation."
        ),
        "clinical_status": Param(
            "string", "Clinical status of the diagnosis.", enum=("active", "resolved", "inactive")
        ),
    },
    "Observation.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for results drawn during that stay"),
        "category": Param(
            "string",
            "Kind of observation: laboratory results, vital signs, or microbiology cultures.",
            enum=("laboratory", "vital-signs", "microbiology"),
        ),
        "code": Param(
            "string", "Test or vital-sign name, e.g. 'Creatinine', 'Potassium', 'Heart Rate'."
        ),
        "date_from": Param("string", "Earliest chart date to include (YYYY-MM-DD)."),
        "date_to": Param("string", "Latest chart date to include (YYYY-MM-DD)."),
        "_count": Param(
            "integer",
            "Maximum number of results, newest first. Defaults to 20 whether or not a code is given.",
            default=DEFAULT_COUNT,
        ),
    },
    "MedicationRequest.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for the orders written during that stay"),
        "medication": Param("string", "Drug name or part of it, e.g. 'apixaban'."),
        "status": Param("string", "Order status to keep.", enum=("active", "completed", "stopped")),
    },
    "MedicationAdministration.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for doses charted during that stay"),
        "medication": Param(
            "string", "Drug name or part of it, as charted on the administration record."
        ),
    },
    "DiagnosticReport.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for reports from that stay"),
        "report_type": Param(
            "string",
            "Kind of report, e.g. 'CT', 'MRI', 'chest x-ray', 'ultrasound', 'echo', or 'culture' "
            "/ 'blood' / 'urine' for microbiology.",
        ),
    },
    "DocumentReference.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for notes written during that stay"),
        "type_code": Param(
            "string", "Kind of clinical note.", enum=("discharge-summary", "radiology")
        ),
        "keyword": Param("string", "Word or phrase that must appear in the note text."),
    },
    "CarePlan.search": {
        "subject_id": _subject(),
        "hadm_id": _hadm("for the plan written at that discharge"),
        "category": Param(
            "string",
            "Which part of the plan: discharge instructions, follow-up, or treatment plan.",
            enum=("discharge-planning", "followup", "treatment"),
        ),
    },
    "prepare_to_answer": {
        "answer_type": Param(
            "string",
            "Call when you have gathered enough information and are ready to answer the "
            "physician: 'tool' after using tools, 'chat' if no tool was needed.",
            enum=("tool", "chat"),
        ),
    },
    "patient.get_symptom_history": {
        "subject_id": _subject(),
        "session_id": _session(),
        "query": Param("string", "The symptom or complaint to ask the patient about."),
    },
    "patient.get_medication_adherence": {
        "subject_id": _subject(),
        "session_id": _session(),
        "drug": Param(
            "string", "The medicine to ask the patient about (how they actually take it)."
        ),
    },
    "patient.get_social_history": {"subject_id": _subject(), "session_id": _session()},
    "patient.get_functional_status": {"subject_id": _subject(), "session_id": _session()},
    "patient.get_pain_assessment": {"subject_id": _subject(), "session_id": _session()},
    "MedicationRequest.create": {
        "subject_id": _subject(),
        "medication": Param("string", "Drug to order.", required=True),
        "dose": Param("string", "Dose with unit, e.g. '5 mg'.", required=True),
        "route": Param("string", "Route, e.g. 'oral', 'IV'.", required=True),
        "frequency": Param("string", "Frequency, e.g. 'BID', 'daily'.", required=True),
        "indication": Param("string", "Why the drug is ordered."),
        "duration_days": Param("integer", "Planned duration in days."),
    },
    "ServiceRequest.create": {
        "subject_id": _subject(),
        "service_type": Param(
            "string",
            "What is requested, e.g. a lab test, imaging study or referral.",
            required=True,
        ),
        "priority": Param(
            "string", "How soon it is needed.", required=True, enum=("routine", "urgent", "asap")
        ),
        "note": Param("string", "Free-text details for the team carrying it out."),
        "target_date": Param("string", "When it should happen (YYYY-MM-DD)."),
    },
    "Flag.create": {
        "subject_id": _subject(),
        "category": Param(
            "string",
            "Kind of alert.",
            required=True,
            enum=("safety", "allergy", "administrative", "clinical"),
        ),
        "code": Param("string", "Short label of the alert.", required=True),
        "detail": Param("string", "What the care team must know.", required=True),
    },
}

DESCRIPTIONS: dict[str, str] = {
    "Patient.read": "Read the patient's demographics (sex, age, date of death if any).",
    "Encounter.search": "List the patient's hospital admissions with admission and discharge times.",
    "Condition.search": "Search the coded diagnoses (ICD-9/ICD-10) recorded for the patient's admissions.",
    "Observation.search": (
        "Search the patient's observations: laboratory results (with reference ranges), vital "
        "signs, or microbiology. Results come newest first and are limited by _count."
    ),
    "MedicationRequest.search": "Search the medication orders (prescriptions) of the patient.",
    "MedicationAdministration.search": (
        "Search the medication administration record (doses charted as given or not given)."
    ),
    "DiagnosticReport.search": "Search imaging reports and microbiology culture reports.",
    "DocumentReference.search": "Search clinical notes (discharge summaries, radiology reports) by type or keyword.",
    "CarePlan.search": (
        "Get the care plan written at discharge: instructions, discharge condition, follow-up, treatment plan."
    ),
    "prepare_to_answer": "Signal that information gathering is finished and you will now answer.",
    "patient.get_symptom_history": "Ask the patient about a symptom: onset, character, course, triggers.",
    "patient.get_medication_adherence": "Ask the patient how they actually take their medicines.",
    "patient.get_social_history": "Ask the patient about living situation, support, smoking, alcohol, work.",
    "patient.get_functional_status": "Ask the patient what daily activities they can manage on their own.",
    "patient.get_pain_assessment": "Ask the patient about pain: where, how bad, what makes it better or worse.",
    "MedicationRequest.create": "Write a new medication order for the patient.",
    "ServiceRequest.create": "Order a test, imaging study, consult or other service for the patient.",
    "Flag.create": "Place an alert on the patient's chart for the care team.",
}

assert set(PARAMS) == set(TOOL_NAMES) == set(DESCRIPTIONS)


def parameters_schema(name: str) -> dict[str, Any]:
    """JSON-Schema ``parameters`` object of one tool."""
    props: dict[str, Any] = {}
    for pname, p in PARAMS[name].items():
        prop: dict[str, Any] = {"type": p.type, "description": p.description}
        if p.enum:
            prop["enum"] = list(p.enum)
        if p.default is not None:
            prop["default"] = p.default
        props[pname] = prop
    required = [pname for pname, p in PARAMS[name].items() if p.required]
    return {"type": "object", "properties": props, "required": required}


def tool_schemas(names: list[str] | tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """OpenAI function schemas (dotted names) for ``names`` (default: all 18, in TOOL_NAMES order).

    Raises ``KeyError`` naming the tool when a name is not one of the 18.
    """
    chosen = TOOL_NAMES if names is None else tuple(names)
    unknown = [n for n in chosen if n not in PARAMS]
    if unknown:
        raise KeyError(f"unknown tool name(s): {unknown}; known: {list(TOOL_NAMES)}")
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": DESCRIPTIONS[n],
                "parameters": parameters_schema(n),
            },
        }
        for n in chosen
    ]
