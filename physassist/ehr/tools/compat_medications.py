"""compat medication tools: all orders with the start/stop-derived status and no limit; the eMAR
with status always ``completed``, the event text in ``_event_txt`` and no dose."""

from __future__ import annotations

from typing import Any

from . import fhir
from .compat_common import empty, hadm_filter, nullable_hadm, regex_arg, subject_key, text_arg
from .context import ToolContext
from .db import and_contains, and_equal, rows, ts


def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationRequest.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = regex_arg(tool, args, "medication")
    status = text_arg(tool, args, "status")
    if sid is None or not ok:
        return empty("MedicationRequest", args.get("subject_id"))
    # rx ids are the row's index in the subject's prescriptions file (store column _row)
    sql = (
        f"SELECT * FROM (SELECT hadm_id, {ts('starttime')} AS s, {ts('stoptime')} AS e, drug, drug_type, "
        "dose_val_rx, dose_unit_rx, route, row_number() OVER (ORDER BY _row) - 1 AS rowidx "
        "FROM prescriptions WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    sql += and_equal("hadm_id", hadm, params)
    sql += and_contains("drug", medication, params)
    found = rows(ctx, sql + " ORDER BY s DESC NULLS LAST, rowidx", params)
    out = []
    for r in found:
        derived = "completed" if r["s"] and r["e"] else ("active" if r["s"] else "unknown")
        if status is not None and status != derived:
            continue
        dose = r["dose_val_rx"]
        unit = r["dose_unit_rx"] or ""
        route = r["route"] or ""
        out.append(
            {
                "resourceType": "MedicationRequest",
                "id": f"rx-{sid}-{r['rowidx']}",
                "status": derived,
                "intent": "order",
                "medicationCodeableConcept": {
                    "coding": [{"system": "mimic-iv/drug", "display": r["drug"]}],
                    "text": r["drug"],
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "dosageInstruction": [
                    {
                        "doseAndRate": [
                            {"doseQuantity": {"value": fhir.as_number(dose), "unit": unit}}
                        ],
                        "route": {"text": route},
                        "timing": {"repeat": {"boundsPeriod": {"start": r["s"], "end": r["e"]}}},
                        "text": f"{dose or ''}{unit} {route}",
                    }
                ],
                "_drug_type": r["drug_type"],
            }
        )
    if not out:
        return empty("MedicationRequest", sid)
    return fhir.compat_bundle("MedicationRequest", out)


def medication_administration_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationAdministration.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = regex_arg(tool, args, "medication")
    if sid is None or not ok:
        return empty("MedicationAdministration", args.get("subject_id"))
    sql = (
        f"SELECT * FROM (SELECT hadm_id, {ts('charttime')} AS t, medication, event_txt, "
        "row_number() OVER (ORDER BY _row) - 1 AS rowidx FROM emar WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    sql += and_equal("hadm_id", hadm, params)
    sql += and_contains("medication", medication, params)
    sql += " ORDER BY t DESC NULLS LAST, rowidx"
    if medication is None and hadm is None:
        sql += " LIMIT 100"
    found = rows(ctx, sql, params)
    if not found:
        return empty("MedicationAdministration", sid)
    as_float = nullable_hadm(ctx, "emar", sid)
    out = [
        {
            "resourceType": "MedicationAdministration",
            "id": f"emar-{sid}-{r['rowidx']}",
            "status": "completed",
            "medicationCodeableConcept": {"text": r["medication"]},
            "subject": fhir.patient_ref(sid),
            "context": fhir.encounter_ref(r["hadm_id"], as_float=as_float),
            "effectiveDateTime": r["t"],
            "_event_txt": r["event_txt"],
        }
        for r in found
    ]
    return fhir.compat_bundle("MedicationAdministration", out)
