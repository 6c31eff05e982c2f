"""Tool names, API-name mapping and parameter schemas (docs/compat.md#the-tools-offered)."""

from __future__ import annotations

import re

import pytest

from physassist.ehr.tools import (
    EHR_READ_TOOLS,
    TOOL_NAMES,
    from_api_name,
    to_api_name,
    tool_group,
    tool_schemas,
)
from physassist.vocab import PATIENT_TOOLS, PREPARE_TO_ANSWER, WRITE_TOOLS

# the reference's exact parameter names, types and required sets
EXPECTED = {
    "Patient.read": ({"subject_id": "integer"}, {"subject_id"}),
    "Encounter.search": ({"subject_id": "integer", "hadm_id": "integer"}, {"subject_id"}),
    "Condition.search": (
        {
            "subject_id": "integer",
            "hadm_id": "integer",
            "code": "string",
            "clinical_status": "string",
        },
        {"subject_id"},
    ),
    "Observation.search": (
        {
            "subject_id": "integer",
            "hadm_id": "integer",
            "category": "string",
            "code": "string",
            "date_from": "string",
            "date_to": "string",
            "_count": "integer",
        },
        {"subject_id"},
    ),
    "MedicationRequest.search": (  # + _count: ours (issue 27), compat ignores it
        {
            "subject_id": "integer",
            "hadm_id": "integer",
            "medication": "string",
            "status": "string",
            "_count": "integer",
        },
        {"subject_id"},
    ),
    "MedicationAdministration.search": (
        {"subject_id": "integer", "hadm_id": "integer", "medication": "string"},
        {"subject_id"},
    ),
    "DiagnosticReport.search": (
        {"subject_id": "integer", "hadm_id": "integer", "report_type": "string"},
        {"subject_id"},
    ),
    "DocumentReference.search": (
        {"subject_id": "integer", "hadm_id": "integer", "type_code": "string", "keyword": "string"},
        {"subject_id"},
    ),
    "CarePlan.search": (
        {"subject_id": "integer", "hadm_id": "integer", "category": "string"},
        {"subject_id"},
    ),
    "prepare_to_answer": ({"answer_type": "string"}, set()),
    "patient.get_symptom_history": (
        {"subject_id": "integer", "session_id": "string", "query": "string"},
        {"subject_id", "session_id"},
    ),
    "patient.get_medication_adherence": (
        {"subject_id": "integer", "session_id": "string", "drug": "string"},
        {"subject_id", "session_id"},
    ),
    "patient.get_social_history": (
        {"subject_id": "integer", "session_id": "string"},
        {"subject_id", "session_id"},
    ),
    "patient.get_functional_status": (
        {"subject_id": "integer", "session_id": "string"},
        {"subject_id", "session_id"},
    ),
    "patient.get_pain_assessment": (
        {"subject_id": "integer", "session_id": "string"},
        {"subject_id", "session_id"},
    ),
    "MedicationRequest.create": (
        {
            "subject_id": "integer",
            "medication": "string",
            "dose": "string",
            "route": "string",
            "frequency": "string",
            "indication": "string",
            "duration_days": "integer",
        },
        {"subject_id", "medication", "dose", "route", "frequency"},
    ),
    "ServiceRequest.create": (
        {
            "subject_id": "integer",
            "service_type": "string",
            "priority": "string",
            "note": "string",
            "target_date": "string",
        },
        {"subject_id", "service_type", "priority"},
    ),
    "Flag.create": (
        {"subject_id": "integer", "category": "string", "code": "string", "detail": "string"},
        {"subject_id", "category", "code", "detail"},
    ),
}
ENUMS = {
    ("Condition.search", "clinical_status"): ["active", "resolved", "inactive"],
    ("Observation.search", "category"): ["laboratory", "vital-signs", "microbiology"],
    ("MedicationRequest.search", "status"): ["active", "completed", "stopped"],
    ("DocumentReference.search", "type_code"): ["discharge-summary", "radiology"],
    ("CarePlan.search", "category"): ["discharge-planning", "followup", "treatment"],
    ("prepare_to_answer", "answer_type"): ["tool", "chat"],
    ("ServiceRequest.create", "priority"): ["routine", "urgent", "asap"],
    ("Flag.create", "category"): ["safety", "allergy", "administrative", "clinical"],
}


def test_eighteen_tools_with_reference_names() -> None:
    """The released format's 18, in its order, come first (a tool added later follows them)."""
    assert len(TOOL_NAMES) == len(set(TOOL_NAMES))
    assert tuple(TOOL_NAMES)[:18] == tuple(EXPECTED)


@pytest.mark.parametrize(
    "schema", tool_schemas(list(EXPECTED)), ids=lambda s: s["function"]["name"]
)
def test_schema_matches_reference(schema: dict) -> None:
    fn = schema["function"]
    props, required = EXPECTED[fn["name"]]
    params = fn["parameters"]
    assert {k: v["type"] for k, v in params["properties"].items()} == props
    assert set(params["required"]) == required
    for key, prop in params["properties"].items():
        assert prop["description"], (fn["name"], key)
        if (fn["name"], key) in ENUMS:
            assert prop["enum"] == ENUMS[(fn["name"], key)]
        else:
            assert "enum" not in prop


@pytest.mark.parametrize(
    "tool, default", [("Observation.search", 20), ("MedicationRequest.search", 200)]
)
def test_count_description_is_truthful(tool: str, default: int) -> None:
    fn = tool_schemas([tool])[0]["function"]
    text = fn["description"] + fn["parameters"]["properties"]["_count"]["description"]
    assert str(default) in text and "newest first" in text and "ignored" not in text.lower()
    assert fn["parameters"]["properties"]["_count"]["default"] == default


def test_schema_subset_and_unknown_name() -> None:
    assert [s["function"]["name"] for s in tool_schemas(["Flag.create", "Patient.read"])] == [
        "Flag.create",
        "Patient.read",
    ]
    with pytest.raises(KeyError, match="Patient.everything"):
        tool_schemas(["Patient.everything"])


@pytest.mark.parametrize("name", TOOL_NAMES)
def test_api_names_round_trip(name: str) -> None:
    api = to_api_name(name)
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", api)
    assert from_api_name(api) == name
    assert from_api_name(name) == name


def test_api_name_examples_and_pass_through() -> None:
    assert to_api_name("Observation.search") == "Observation__search"
    assert to_api_name("patient.get_symptom_history") == "patient__get_symptom_history"
    assert from_api_name("MedicationRequest__create") == "MedicationRequest.create"
    assert from_api_name("prepare_to_answer") == "prepare_to_answer"
    assert from_api_name("Made__up") == "Made__up"


def test_both_semantics_implement_every_read_tool_and_nothing_else() -> None:
    from physassist.ehr.tools.readers import READ_TOOLS, unimplemented
    from physassist.ehr.tools.reads import READS

    assert unimplemented() == []
    assert set(READ_TOOLS) == set(EHR_READ_TOOLS) == set(READS["strict"]) == set(READS["compat"])
    assert tuple(EHR_READ_TOOLS)[:9] == tuple(TOOL_NAMES)[:9]


def test_write_patient_and_control_groups_match_the_vocabulary() -> None:
    """The groups the released format fixes (physassist.vocab) are those of the entries."""
    assert [n for n in TOOL_NAMES if tool_group(n) == "write"] == list(WRITE_TOOLS)
    assert [n for n in TOOL_NAMES if tool_group(n) == "patient"] == list(PATIENT_TOOLS)
    assert [n for n in TOOL_NAMES if tool_group(n) == "control"] == [PREPARE_TO_ANSWER]
    assert tool_group("Patient.everything") is None
