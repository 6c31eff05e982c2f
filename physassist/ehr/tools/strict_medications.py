"""strict medication tools: orders with status derived against the cutoff, and the eMAR with
given / not given / held statuses and the dose actually given (``emar_detail``)."""

from __future__ import annotations

from typing import Any

from . import fhir
from .context import ToolContext
from .db import and_equal, and_ilike, rows, rows_and_total, ts
from .strict_common import Window, admission_miss, bundle, quantity, to_datetime

MAR_LIMIT = 100

_STOPPED = ("discontinued", "inactive")


def _rx_status(stop: Any, pharmacy_status: Any, window: Window) -> str:
    if stop is None or (window.cutoff is not None and to_datetime(stop) > window.cutoff):
        return "active"
    status = str(pharmacy_status or "").lower()
    if status.startswith(_STOPPED) and "discharge" not in status:
        return "stopped"
    return "completed"


def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "MedicationRequest.search")
    if (miss := admission_miss(ctx, sid, hadm, window)) is not None:
        return miss
    params: list[Any] = [sid]
    sql = (
        f"SELECT p.hadm_id, p.pharmacy_id, p.poe_id, p.poe_seq, {ts('p.starttime')} AS s, {ts('p.stoptime')} AS e, "
        "p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, ph.status AS ph_status, ph.frequency "
        "FROM prescriptions p LEFT JOIN (SELECT pharmacy_id, any_value(status) AS status, any_value(frequency) AS frequency "
        "FROM pharmacy WHERE subject_id = ? GROUP BY pharmacy_id) ph ON ph.pharmacy_id = p.pharmacy_id "
        "WHERE p.subject_id = ?"
    )
    params.append(sid)
    sql += window.sql("p.starttime", params)
    sql += and_equal("p.hadm_id", hadm, params)
    sql += and_ilike("p.drug", args.get("medication"), params)
    found = rows(ctx, sql + " ORDER BY p.starttime DESC, p.drug, p.pharmacy_id", params)
    out = []
    for r in found:
        status = _rx_status(r["e"], r["ph_status"], window)
        if args.get("status") and args["status"] != status:
            continue
        dose, unit, route = r["dose_val_rx"], r["dose_unit_rx"], r["route"]
        text = " ".join(str(x) for x in (dose, unit, route, r["frequency"]) if x)
        out.append(
            {
                "resourceType": "MedicationRequest",
                "id": fhir.stable_id(
                    "rx", sid, r["pharmacy_id"], r["poe_id"], r["poe_seq"], r["drug"], r["s"]
                ),
                "status": status,
                "intent": "order",
                "medicationCodeableConcept": {
                    "coding": [{"system": "mimic-iv/drug", "display": r["drug"]}],
                    "text": r["drug"] or "(drug not recorded)",
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "authoredOn": fhir.fhir_datetime(r["s"]),
                "dosageInstruction": [
                    {
                        "text": text or None,
                        "route": {"text": route} if route else None,
                        "timing": {
                            "code": {"text": r["frequency"]} if r["frequency"] else None,
                            "repeat": {
                                "boundsPeriod": {
                                    "start": fhir.fhir_datetime(r["s"]),
                                    "end": fhir.fhir_datetime(r["e"])
                                    if status != "active"
                                    else None,
                                }
                            },
                        },
                        "doseAndRate": [{"doseQuantity": quantity(fhir.as_number(dose), unit)}]
                        if fhir.as_number(dose) is not None
                        else None,
                    }
                ],
            }
        )
    hint = None
    if not out and args.get("medication"):
        hint = f"No medication order whose drug name contains '{args['medication']}' for this patient up to the current date."
    return bundle(out, hint=hint)


_NOT_DONE = (
    "not given",
    "not started",
    "not applied",
    "not flushed",
    "not confirmed",
    "not assessed",
    "not removed",
    "not read",
    "not done",
)


def mar_status(event: Any) -> str:
    text = str(event or "").strip().lower()
    if not text:
        return "unknown"
    if any(p in text for p in _NOT_DONE):
        return "not-done"
    if "hold" in text or "held" in text:
        return "on-hold"
    if text.startswith("stopped") or "delayed stopped" in text:
        return "stopped"
    if any(
        w in text
        for w in (
            "administered",
            "given",
            "applied",
            "started",
            "confirmed",
            "flushed",
            "assessed",
            "removed",
            "read",
            "rate change",
            "reconciliation",
        )
    ):
        return "completed"
    return "unknown"


def medication_administration_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "MedicationAdministration.search")
    if (miss := admission_miss(ctx, sid, hadm, window)) is not None:
        return miss
    params: list[Any] = [sid]
    where = "WHERE e.subject_id = ?" + window.sql("e.charttime", params)
    where += and_equal("e.hadm_id", hadm, params)
    where += and_ilike("e.medication", args.get("medication"), params)
    sql = (
        f"WITH m AS (SELECT e.emar_id, e.hadm_id, {ts('e.charttime')} AS t, e.charttime AS ct, e.medication, e.event_txt, "
        f"count(*) OVER () AS n_total FROM emar e {where} ORDER BY e.charttime DESC, e.emar_id LIMIT ?) "
        "SELECT m.*, d.dose_given, d.dose_given_unit, d.route FROM m LEFT JOIN ("
        "SELECT emar_id, arg_min(dose_given, parent_field_ordinal) AS dose_given, "
        "arg_min(dose_given_unit, parent_field_ordinal) AS dose_given_unit, arg_min(route, parent_field_ordinal) AS route "
        "FROM emar_detail WHERE subject_id = ? AND dose_given IS NOT NULL AND emar_id IN (SELECT emar_id FROM m) "
        "GROUP BY emar_id) d ON d.emar_id = m.emar_id ORDER BY m.ct DESC, m.emar_id"
    )
    found, total = rows_and_total(ctx, sql, params + [MAR_LIMIT, sid])
    out = []
    for r in found:
        status = mar_status(r["event_txt"])
        dose_value = fhir.as_number(r["dose_given"])
        dosage = None
        if r["dose_given"] is not None or r["route"]:
            dosage = {
                "text": " ".join(
                    str(x) for x in (r["dose_given"], r["dose_given_unit"], r["route"]) if x
                )
                or None,
                "route": {"text": r["route"]} if r["route"] else None,
                "dose": quantity(dose_value, r["dose_given_unit"]),
            }
        event = str(r["event_txt"] or "").strip()
        out.append(
            {
                "resourceType": "MedicationAdministration",
                "id": fhir.safe_id(f"emar-{r['emar_id']}"),
                "status": status,
                "statusReason": [{"text": event}]
                if status in ("not-done", "on-hold", "stopped") and event
                else None,
                "medicationCodeableConcept": {
                    "text": r["medication"] or "(medication not recorded)"
                },
                "subject": fhir.patient_ref(sid),
                "context": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
                "note": [{"text": event}] if event else None,
                "dosage": dosage,
            }
        )
    return bundle(out, total)
