"""compat medication tools: all orders with the start/stop-derived status and no limit; the eMAR
with status always ``completed``, the event text in ``_event_txt`` and no dose."""

from __future__ import annotations

from typing import Any

from . import fhir
from .compat_common import empty, hadm_filter, nullable_hadm, regex_arg, subject_key, text_arg
from .context import ToolContext
from .records import Row, by, contains, order, subject_rows, text


def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationRequest.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = regex_arg(tool, args, "medication")
    status = text_arg(tool, args, "status")
    if sid is None or not ok:
        return empty("MedicationRequest", args.get("subject_id"))
    # rx ids are the row's index in the subject's prescriptions file (subject_rows: file order)
    found = _indexed(subject_rows(ctx, "prescriptions", sid), hadm, "drug", medication)
    for r in found:
        r["s"], r["e"] = text(r["starttime"]), text(r["stoptime"])
    found = order(found, by("s", desc=True))
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
    found = _indexed(subject_rows(ctx, "emar", sid), hadm, "medication", medication)
    for r in found:
        r["t"] = text(r["charttime"])
    found = order(found, by("t", desc=True))
    if medication is None and hadm is None:
        found = found[:100]
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


def _indexed(
    rows: tuple[Row, ...], hadm: float | None, column: str, text_filter: str | None
) -> list[Row]:
    """Copies of the subject's rows with their file index as ``rowidx`` (counted before any
    filter, as the reference's CSV row index was), kept when ``hadm_id`` equals ``hadm`` and
    ``column`` contains ``text_filter`` (None = no filter)."""
    return [
        {**r, "rowidx": i}
        for i, r in enumerate(rows)
        if (hadm is None or r["hadm_id"] == hadm)
        and (text_filter is None or contains(r[column], text_filter))
    ]
