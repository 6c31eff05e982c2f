"""Tool results validated against real FHIR models (fhir.resources 8, R4B package).

fhir.resources 8 ships R4B (a compatible R4 update) and R5, not plain R4; every resource type
and element we emit is unchanged between R4 and R4B.

strict results must validate as they are. compat results carry the reference's non-standard
fields; ``standardize`` lists and undoes exactly those before validating:

* keys starting with ``_`` (``_fhir_resource_type``, ``_anchor_age``, ``_mimic``, ``_seq_num``,
  ``_drug_type``, ``_event_txt``, ``_stay_id``, ``_simulated``, ``_created_at``, ``_error``);
* MIMIC time strings with a space and no zone (``2150-01-06 06:00:00``);
* ids built from such times (vitals, microbiology) containing spaces and colons;
* ``Attachment.data`` holding plain text instead of base64;
* ``null`` / ``""`` values (e.g. ``doseQuantity.value`` for ranges, empty units, empty
  ``occurrenceDateTime``) and empty lists (``reasonCode: []``);
* a MIMIC row without a drug name gives ``medicationCodeableConcept.text: null``;
* ``CarePlan`` without ``subject`` and MedicationRequest.create's ``doseQuantity.text``
  and a ``coding`` with only a display (the reference's write simulator shapes).
"""

from __future__ import annotations

import base64
import re
from typing import Any

import fixtures_tools as fx
import pytest
from fhir.resources.R4B import get_fhir_model_class
from fixtures_tools import SID, tiny_ctx

from physassist.ehr.tools import TOOL_NAMES, ToolContext, call_tool

tiny_store = fx.tiny_store
demo_store = fx.demo_store

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("Patient.read", {}),
    ("Encounter.search", {}),
    ("Condition.search", {}),
    ("Observation.search", {"_count": 200}),
    ("Observation.search", {"category": "vital-signs"}),
    ("Observation.search", {"category": "vital-signs", "code": "weight"}),
    ("Observation.search", {"category": "microbiology"}),
    ("Observation.search", {"code": "Zzzznotexist"}),
    ("MedicationRequest.search", {}),
    ("MedicationAdministration.search", {}),
    ("DiagnosticReport.search", {}),
    ("DocumentReference.search", {}),
    ("CarePlan.search", {}),
    (
        "MedicationRequest.create",
        {
            "medication": "Apixaban",
            "dose": "5 mg",
            "route": "oral",
            "frequency": "BID",
            "indication": "AF",
            "duration_days": 30,
        },
    ),
    (
        "ServiceRequest.create",
        {
            "service_type": "Basic metabolic panel",
            "priority": "urgent",
            "note": "K recheck",
            "target_date": "2150-01-12",
        },
    ),
    ("Flag.create", {"category": "allergy", "code": "Penicillin", "detail": "Rash"}),
    ("Encounter.search", {"hadm_id": "not-a-number"}),
]


def validate(resource: dict[str, Any]) -> None:
    get_fhir_model_class(resource["resourceType"]).model_validate(resource)


def _fix_time(value: Any) -> Any:
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", value):
        return value.replace(" ", "T") + "+00:00"
    return value


def standardize(obj: Any, key: str = "") -> Any:
    """Undo the documented non-standard parts of a compat result (see module docstring)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if k.startswith("_") or v is None or v == "" or v == []:
                continue
            if k == "data" and isinstance(v, str):
                v = base64.b64encode(v.encode()).decode()
            elif k == "id" and isinstance(v, str):
                v = re.sub(r"[^A-Za-z0-9\-.]", "-", v)[:64]
            elif k == "doseQuantity" and "text" in v:
                v = {kk: vv for kk, vv in v.items() if kk != "text"}
            else:
                v = standardize(v, k)
            out[k] = _fix_time(v)
        if out.get("resourceType", "").startswith("Medication") and not out.get(
            "medicationCodeableConcept"
        ):
            out["medicationCodeableConcept"] = {"text": "unknown"}
        if out.get("resourceType") == "OperationOutcome":  # the reference's issues lack `code`
            out["issue"] = [{"code": "not-found", **i} for i in out["issue"]]
        if out.get("resourceType") == "CarePlan" and "subject" not in out:
            out["subject"] = {"reference": f"Patient/{SID}"}
        return {k: v for k, v in out.items() if v not in ({}, [])}
    if isinstance(obj, list):
        return [standardize(v, key) for v in obj]
    return obj


def _resources(result: dict[str, Any]) -> list[dict[str, Any]]:
    out = [result]
    if result["resourceType"] == "Bundle":
        out += [e["resource"] for e in result.get("entry", [])]
    return out


@pytest.mark.parametrize(
    ("tool", "args"), CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)]
)
def test_strict_results_are_valid_fhir_r4(tiny_store, tool: str, args: dict[str, Any]) -> None:
    result = call_tool(tiny_ctx(tiny_store), tool, {"subject_id": SID, **args})
    for resource in _resources(result):
        validate(resource)
    assert not any(k.startswith("_") for r in _resources(result) for k in r)


@pytest.mark.parametrize(
    ("tool", "args"), CALLS, ids=[f"{t}-{i}" for i, (t, _) in enumerate(CALLS)]
)
def test_compat_results_are_fhir_after_documented_fixes(
    tiny_store, tool: str, args: dict[str, Any]
) -> None:
    result = call_tool(tiny_ctx(tiny_store, "compat"), tool, {"subject_id": SID, **args})
    resources = list(_resources(standardize(result)))
    assert resources, f"{tool} returned nothing to validate"
    for resource in resources:
        if resource["resourceType"] == "Flag":  # the reference's coding with only a display
            resource["code"].pop("coding")
        validate(resource)


def test_every_strict_resource_type_covered(tiny_store) -> None:
    seen = set()
    for tool, args in CALLS:
        for r in _resources(call_tool(tiny_ctx(tiny_store), tool, {"subject_id": SID, **args})):
            seen.add(r["resourceType"])
    assert seen >= {
        "Bundle",
        "Patient",
        "Encounter",
        "Condition",
        "Observation",
        "MedicationRequest",
        "MedicationAdministration",
        "DiagnosticReport",
        "DocumentReference",
        "CarePlan",
        "OperationOutcome",
        "ServiceRequest",
        "Flag",
    }


@pytest.mark.parametrize("semantics", ["strict", "compat"])
def test_demo_results_validate(demo_store, semantics: str) -> None:
    cur = demo_store.cursor()
    sid, hadm, day = cur.execute(
        "SELECT subject_id, hadm_id, CAST(dischtime AS DATE) FROM admissions WHERE hadm_id IN "
        "(SELECT hadm_id FROM emar) AND hadm_id IN (SELECT hadm_id FROM microbiologyevents) "
        "ORDER BY hadm_id LIMIT 1"
    ).fetchone()
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=hadm, current_date=str(day), semantics=semantics
    )
    n = 0
    for tool in TOOL_NAMES:
        if tool.startswith("patient.") or tool == "prepare_to_answer" or tool.endswith(".create"):
            continue
        for args in ({}, {"hadm_id": hadm}):
            result = call_tool(ctx, tool, {"subject_id": sid, **args})
            for resource in _resources(result if semantics == "strict" else standardize(result)):
                validate(resource)
                n += 1
    assert n > 50
