"""The benchmark's vocabulary (docs/design.md#vocabulary), defined once and imported everywhere.

Scenarios, task types and their abbreviations, implicitness subtypes, tool sources, tiers,
languages, patient literacy levels and the tool groups of the released format. Everything
else (option values, schemas, figures, builders) takes its values from here; this module
imports nothing of the project.
"""

from __future__ import annotations

SCENARIOS: tuple[str, ...] = (
    "diagnostic_workup",
    "med_safety",
    "treatment_response",
    "discharge_planning",
)

INFORMATION_LOOKUP = "Information Lookup"
DATA_GATHERING = "Data Gathering"
CLINICAL_REASONING = "Clinical Reasoning"
WRITE_UPDATE = "Write/Update"
TASK_TYPES: tuple[str, ...] = (INFORMATION_LOOKUP, DATA_GATHERING, CLINICAL_REASONING, WRITE_UPDATE)
#: Task type -> the paper's abbreviation (column and figure labels).
TASK_ABBREVIATIONS: dict[str, str] = {
    INFORMATION_LOOKUP: "IL",
    DATA_GATHERING: "DG",
    CLINICAL_REASONING: "CR",
    WRITE_UPDATE: "WU",
}

#: Implicitness of a follow-up question: nominal anaphora, predicate ellipsis, abstract event
#: anaphora (T0 and explicit paraphrases have none).
SUBTYPES: tuple[str, ...] = ("NA", "PE", "AE")
TOOL_SOURCES: tuple[str, ...] = ("ehr", "patient", "mixed", "write")
TIERS: tuple[int, ...] = (1, 2, 3)
LANGUAGES: tuple[str, ...] = ("en", "zh")
#: Health-literacy variants of a patient's replies, in the order the cohort generator draws them.
LITERACY_LEVELS: tuple[str, ...] = ("low", "medium", "high")
#: When a built session happens: at the end of the anchor admission's discharge date (the
#: paper's design) or on the morning of a hospital day inside the stay (our extension).
TIMEPOINTS: tuple[str, ...] = ("discharge", "in-stay")
N_TURNS = 4

# -- tools (docs/design.md#tools, FHIR-style dotted names) ----------------------------------------
# The groups whose members the released format fixes and the session model, the scorers and the
# patient simulator classify calls by. The EHR read tools are not listed here: each is a schema
# entry of physassist.ehr.tools (group "read") with its functions, so adding one touches no
# vocabulary (physassist.ehr.tools.EHR_READ_TOOLS is derived from those entries).
WRITE_TOOLS: tuple[str, ...] = (
    "MedicationRequest.create",
    "ServiceRequest.create",
    "Flag.create",
)
PATIENT_TOOL_PREFIX = "patient."
PATIENT_TOOLS: tuple[str, ...] = (
    "patient.get_symptom_history",
    "patient.get_medication_adherence",
    "patient.get_social_history",
    "patient.get_functional_status",
    "patient.get_pain_assessment",
)
#: The released format's end-of-gathering action: every gold trajectory ends with it. (The
#: control tools the assistant is offered belong to the terminal strategies, solvers/terminal.)
PREPARE_TO_ANSWER = "prepare_to_answer"

#: Doses per 24 h -> (frequency written in orders, accepted spellings): the builder writes
#: orders' frequencies with it, the grounding check derives a daily dose from it.
FREQUENCIES: dict[int, tuple[str, list[str]]] = {
    1: ("daily", ["daily", "qd", "once daily", "q24h", "every 24 hours", "QD"]),
    2: ("BID", ["BID", "twice daily", "q12h", "every 12 hours"]),
    3: ("TID", ["TID", "three times daily", "q8h", "every 8 hours"]),
    4: ("QID", ["QID", "four times daily", "q6h", "every 6 hours"]),
}
