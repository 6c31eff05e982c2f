"""The tools' schema entries: name, group, description and parameters (the 18 of the released
format with the reference's names and types, in its ``tools`` order; our wording).

:data:`SCHEMAS` is the registry every list of tools is derived from (``names.TOOL_NAMES``, the
read tools, the function schemas shown to models, the argument validation in
:mod:`physassist.ehr.tools.args`). A read tool is its entry here plus one function per
semantics (``registry.read_tool``), named by its line in ``readers.READ_TOOLS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from physassist.vocab import SCENARIOS

DEFAULT_COUNT = 20
STRICT_MAX_COUNT = 200
#: ``MedicationRequest.search``'s default ``_count``: what the ``full`` rendering shows of a long
#: order list anyway (186-201 orders fit its 16,000 characters), so only an answer a model could
#: not have read is cut; the sample's calls return at most 34 orders, the demo's admissions 348
#: (``benchmarks/README.md``, full MIMIC-IV scale).
ORDERS_COUNT = STRICT_MAX_COUNT


@dataclass(frozen=True)
class Param:
    """One tool parameter: JSON type (``integer`` or ``string``), optional enum, our description."""

    type: str
    description: str
    required: bool = False
    enum: tuple[str, ...] | None = None
    default: Any = None


ToolGroup = Literal["read", "control", "patient", "write"]
TOOL_GROUPS: tuple[ToolGroup, ...] = ("read", "control", "patient", "write")


@dataclass(frozen=True)
class ToolSchema:
    """One tool's schema entry. ``group`` says who answers it: ``read`` the EHR read tools (one
    function per semantics, ``readers.READ_TOOLS``), ``control`` ``prepare_to_answer``,
    ``patient`` the interview (``PatientResponder``), ``write`` the sandboxed writes.
    ``scenarios``: the clinical scenarios whose tool families it belongs to (what
    ``menu=scenario`` offers in a session of that scenario)."""

    name: str
    group: ToolGroup
    description: str
    params: dict[str, Param]
    scenarios: tuple[str, ...] = ()


def _subject() -> Param:
    return Param("integer", "MIMIC-IV subject_id of the patient in this session.", required=True)


def _hadm(what: str) -> Param:
    return Param("integer", f"Restrict to one hospital admission (MIMIC-IV hadm_id) {what}.")


def _session() -> Param:
    return Param("string", "Session identifier given in the environment message.", required=True)


_BUILT_IN: tuple[ToolSchema, ...] = (
    ToolSchema(
        "Patient.read",
        "read",
        "Read the patient's demographics (sex, age, date of death if any).",
        {"subject_id": _subject()},
        scenarios=SCENARIOS,
    ),
    ToolSchema(
        "Encounter.search",
        "read",
        "List the patient's hospital admissions with admission and discharge times.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("instead of listing every admission"),
        },
        scenarios=SCENARIOS,
    ),
    ToolSchema(
        "Condition.search",
        "read",
        "Search the coded diagnoses (ICD-9/ICD-10) recorded for the patient's admissions.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("to get that stay's coded diagnoses"),
            "code": Param(
                "string", "ICD-9/ICD-10 code or code prefix, e.g. 'I48' for atrial fibrillation."
            ),
            "clinical_status": Param(
                "string",
                "Clinical status of the diagnosis.",
                enum=("active", "resolved", "inactive"),
            ),
        },
        scenarios=SCENARIOS,
    ),
    ToolSchema(
        "Observation.search",
        "read",
        "Search the patient's observations: laboratory results (with reference ranges), vital "
        "signs, or microbiology. Results come newest first and are limited by _count.",
        {
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
                "Maximum number of results, newest first. "
                "Defaults to 20 whether or not a code is given.",
                default=DEFAULT_COUNT,
            ),
        },
        scenarios=SCENARIOS,
    ),
    ToolSchema(
        "MedicationRequest.search",
        "read",
        "Search the medication orders (prescriptions) of the patient. Results come newest "
        "first and are limited by _count.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("for the orders written during that stay"),
            "medication": Param("string", "Drug name or part of it, e.g. 'apixaban'."),
            "status": Param(
                "string", "Order status to keep.", enum=("active", "completed", "stopped")
            ),
            "_count": Param(
                "integer",
                f"Maximum number of orders, newest first. Defaults to {ORDERS_COUNT}.",
                default=ORDERS_COUNT,
            ),
        },
        scenarios=("med_safety", "treatment_response", "discharge_planning"),
    ),
    ToolSchema(
        "MedicationAdministration.search",
        "read",
        "Search the medication administration record (doses charted as given or not given).",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("for doses charted during that stay"),
            "medication": Param(
                "string", "Drug name or part of it, as charted on the administration record."
            ),
        },
        scenarios=("med_safety", "treatment_response"),
    ),
    ToolSchema(
        "DiagnosticReport.search",
        "read",
        "Search imaging reports and microbiology culture reports.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("for reports from that stay"),
            "report_type": Param(
                "string",
                "Kind of report, e.g. 'CT', 'MRI', 'chest x-ray', 'ultrasound', 'echo', or "
                "'culture' / 'blood' / 'urine' for microbiology.",
            ),
        },
        scenarios=("diagnostic_workup", "treatment_response"),
    ),
    ToolSchema(
        "DocumentReference.search",
        "read",
        "Search clinical notes (discharge summaries, radiology reports) by type or keyword.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("for notes written during that stay"),
            "type_code": Param(
                "string", "Kind of clinical note.", enum=("discharge-summary", "radiology")
            ),
            "keyword": Param("string", "Word or phrase that must appear in the note text."),
        },
        scenarios=("diagnostic_workup", "discharge_planning"),
    ),
    ToolSchema(
        "CarePlan.search",
        "read",
        "Get the care plan written at discharge: instructions, discharge condition, follow-up, "
        "treatment plan.",
        {
            "subject_id": _subject(),
            "hadm_id": _hadm("for the plan written at that discharge"),
            "category": Param(
                "string",
                "Which part of the plan: discharge instructions, follow-up, or treatment plan.",
                enum=("discharge-planning", "followup", "treatment"),
            ),
        },
        scenarios=("discharge_planning",),
    ),
    ToolSchema(
        "prepare_to_answer",
        "control",
        "Signal that information gathering is finished and you will now answer.",
        {
            "answer_type": Param(
                "string",
                "Call when you have gathered enough information and are ready to answer the "
                "physician: 'tool' after using tools, 'chat' if no tool was needed.",
                enum=("tool", "chat"),
            ),
        },
    ),
    ToolSchema(
        "patient.get_symptom_history",
        "patient",
        "Ask the patient about a symptom: onset, character, course, triggers.",
        {
            "subject_id": _subject(),
            "session_id": _session(),
            "query": Param("string", "The symptom or complaint to ask the patient about."),
        },
        scenarios=("diagnostic_workup", "med_safety", "treatment_response"),
    ),
    ToolSchema(
        "patient.get_medication_adherence",
        "patient",
        "Ask the patient how they actually take their medicines.",
        {
            "subject_id": _subject(),
            "session_id": _session(),
            "drug": Param(
                "string", "The medicine to ask the patient about (how they actually take it)."
            ),
        },
        scenarios=("med_safety", "discharge_planning"),
    ),
    ToolSchema(
        "patient.get_social_history",
        "patient",
        "Ask the patient about living situation, support, smoking, alcohol, work.",
        {"subject_id": _subject(), "session_id": _session()},
        scenarios=("discharge_planning",),
    ),
    ToolSchema(
        "patient.get_functional_status",
        "patient",
        "Ask the patient what daily activities they can manage on their own.",
        {"subject_id": _subject(), "session_id": _session()},
        scenarios=("discharge_planning",),
    ),
    ToolSchema(
        "patient.get_pain_assessment",
        "patient",
        "Ask the patient about pain: where, how bad, what makes it better or worse.",
        {"subject_id": _subject(), "session_id": _session()},
        scenarios=("diagnostic_workup", "treatment_response"),
    ),
    ToolSchema(
        "MedicationRequest.create",
        "write",
        "Write a new medication order for the patient.",
        {
            "subject_id": _subject(),
            "medication": Param("string", "Drug to order.", required=True),
            "dose": Param("string", "Dose with unit, e.g. '5 mg'.", required=True),
            "route": Param("string", "Route, e.g. 'oral', 'IV'.", required=True),
            "frequency": Param("string", "Frequency, e.g. 'BID', 'daily'.", required=True),
            "indication": Param("string", "Why the drug is ordered."),
            "duration_days": Param("integer", "Planned duration in days."),
        },
        scenarios=("med_safety", "treatment_response", "discharge_planning"),
    ),
    ToolSchema(
        "ServiceRequest.create",
        "write",
        "Order a test, imaging study, consult or other service for the patient.",
        {
            "subject_id": _subject(),
            "service_type": Param(
                "string",
                "What is requested, e.g. a lab test, imaging study or referral.",
                required=True,
            ),
            "priority": Param(
                "string",
                "How soon it is needed.",
                required=True,
                enum=("routine", "urgent", "asap"),
            ),
            "note": Param("string", "Free-text details for the team carrying it out."),
            "target_date": Param("string", "When it should happen (YYYY-MM-DD)."),
        },
        scenarios=("diagnostic_workup", "treatment_response", "discharge_planning"),
    ),
    ToolSchema(
        "Flag.create",
        "write",
        "Place an alert on the patient's chart for the care team.",
        {
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
        scenarios=("diagnostic_workup", "med_safety", "discharge_planning"),
    ),
)

#: Every tool, by name, in registration order (the released ``tools`` order first).
SCHEMAS: dict[str, ToolSchema] = {}


def add_schema(schema: ToolSchema) -> ToolSchema:
    """Register a tool's schema entry; a name registered twice is an error."""
    if schema.name in SCHEMAS:
        raise ValueError(f"tool {schema.name!r} already has a schema entry")
    if schema.group not in TOOL_GROUPS:
        raise ValueError(
            f"tool {schema.name!r}: group {schema.group!r} is not one of {TOOL_GROUPS}"
        )
    if unknown := [s for s in schema.scenarios if s not in SCENARIOS]:
        raise ValueError(f"tool {schema.name!r}: unknown scenario(s) {unknown}; valid: {SCENARIOS}")
    SCHEMAS[schema.name] = schema
    return schema


for _schema in _BUILT_IN:
    add_schema(_schema)


def tool_group(name: str) -> ToolGroup | None:
    """The group of a registered tool; None for a name that is not one."""
    schema = SCHEMAS.get(name)
    return None if schema is None else schema.group


def parameters_schema(name: str) -> dict[str, Any]:
    """JSON-Schema ``parameters`` object of one tool."""
    params = SCHEMAS[name].params
    props: dict[str, Any] = {}
    for pname, p in params.items():
        prop: dict[str, Any] = {"type": p.type, "description": p.description}
        if p.enum:
            prop["enum"] = list(p.enum)
        if p.default is not None:
            prop["default"] = p.default
        props[pname] = prop
    required = [pname for pname, p in params.items() if p.required]
    return {"type": "object", "properties": props, "required": required}


def tool_schemas(names: list[str] | tuple[str, ...] | None = None) -> list[dict[str, Any]]:
    """OpenAI function schemas (dotted names) for ``names`` (default: every registered tool, in
    registration order).

    Raises ``KeyError`` naming the tool when a name has no schema entry.
    """
    chosen = tuple(SCHEMAS) if names is None else tuple(names)
    unknown = [n for n in chosen if n not in SCHEMAS]
    if unknown:
        raise KeyError(f"unknown tool name(s): {unknown}; known: {list(SCHEMAS)}")
    return [
        {
            "type": "function",
            "function": {
                "name": n,
                "description": SCHEMAS[n].description,
                "parameters": parameters_schema(n),
            },
        }
        for n in chosen
    ]
