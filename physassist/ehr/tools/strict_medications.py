"""strict medication tools: orders with status derived against the cutoff, and the
administrations: the eMAR with given / not given / held statuses and the dose actually given
(``emar_detail``), and the ICU's (``icu/inputevents``, where MIMIC-IV charts most drugs given in
an ICU and not in the eMAR), shaped as MIMIC-on-FHIR's MedicationAdministrationICU."""

from __future__ import annotations

import datetime as dt
from typing import Any

from . import fhir
from .chart import Chart, Where, Window
from .records import (
    Row,
    by,
    contains,
    first_non_null,
    joined,
    order,
    stamp,
    text,
)
from .registry import read_tool
from .schemas import ORDERS_COUNT
from .strict_common import (
    ADMISSIONS_CHECKED,
    admission_miss,
    bundle,
    quantity,
)

MAR_LIMIT = 100

_STOPPED = ("discontinued", "inactive")
#: An order stopped this long before the session's discharge still ran at discharge: pharmacy
#: closes the orders running at discharge with a stop time after it (median 4 h on the MIMIC-IV
#: demo); the hour absorbs charting skew. ``physassist.timeline`` calls such orders current.
ORDER_GRACE = dt.timedelta(hours=1)


def _running(stop: Any, window: Window, at: dt.datetime | None = None) -> bool:
    """An order without a stop time, or stopping after the cutoff, is still running; so is an
    order of the session's admission that ran at its discharge (``at``, the discharge time
    when it is before the cutoff): on the discharge date the session is at discharge."""
    if stop is None:
        return True
    if at is not None and stamp(stop) >= at - ORDER_GRACE:
        return True
    return window.cutoff is not None and stamp(stop) > window.cutoff


def _discharged_at(chart: Chart, sid: int, window: Window) -> dict[Any, dt.datetime]:
    """The session's admission -> its discharge time, when the cutoff is after it."""
    for a in chart.subject_rows("admissions", sid):
        disch = stamp(a["dischtime"])
        if (
            a["hadm_id"] == chart.hadm_id
            and disch is not None
            and window.cutoff is not None
            and disch <= window.cutoff
        ):
            return {a["hadm_id"]: disch}
    return {}


def _halted(pharmacy_status: Any) -> bool:
    """Whether pharmacy says the order was discontinued or replaced (not at discharge)."""
    status = str(pharmacy_status or "").lower()
    return status.startswith(_STOPPED) and "discharge" not in status


def _rx_status(
    stop: Any, pharmacy_status: Any, window: Window, at: dt.datetime | None = None
) -> str:
    if _running(stop, window, at):
        return "active"
    return "stopped" if _halted(pharmacy_status) else "completed"


@read_tool(reads={
        "admissions": ("hadm_id", "admittime", "dischtime"),
        "prescriptions": ("hadm_id", "pharmacy_id", "poe_id", "poe_seq", "starttime", "stoptime", "drug",
                          "dose_val_rx", "dose_unit_rx", "route"),
        "pharmacy": ("pharmacy_id", "status", "frequency"),
    },
)  # fmt: skip
def medication_request_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "MedicationRequest.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    medication = args.get("medication")
    where = Where().equal("hadm_id", hadm).within(window, "starttime")
    if medication:  # matched on the distinct names in Python (``contains``), fetched in SQL
        names = chart.distinct("prescriptions", sid, "drug", where)
        where.among("drug", [d for d in names if contains(d, medication)], "VARCHAR")
    discharged = _discharged_at(chart, sid, window)
    if args.get("status"):
        _with_status(chart, sid, where, args["status"], window, discharged)
    count = args.get("_count", ORDERS_COUNT)
    total, orders = chart.newest(
        "prescriptions", sid, where, "starttime", ("drug", "pharmacy_id"), count
    )
    ids = list({p["pharmacy_id"] for p in orders if p["pharmacy_id"] is not None})
    pharmacy: dict[Any, list[dict[str, Any]]] = {}
    verified = Where().among("pharmacy_id", ids)
    for ph in chart.rows("pharmacy", sid, verified):
        pharmacy.setdefault(ph["pharmacy_id"], []).append(ph)
    found = []
    for p in orders:
        entries = pharmacy.get(p["pharmacy_id"], ())
        found.append(
            {
                **p,
                "s": text(p["starttime"]),
                "e": text(p["stoptime"]),
                "ph_status": first_non_null(entries, "status"),
                "frequency": first_non_null(entries, "frequency"),
            }
        )
    out = []
    for r in found:
        status = _rx_status(r["stoptime"], r["ph_status"], window, discharged.get(r["hadm_id"]))
        dose, unit, route = r["dose_val_rx"], r["dose_unit_rx"], r["route"]
        instruction = " ".join(str(x) for x in (dose, unit, route, r["frequency"]) if x)
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
                        "text": instruction or None,
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
        hint = (
            f"No medication order whose drug name contains '{args['medication']}' for this "
            "patient up to the current date."
        )
    return bundle(out, total, hint)


def _with_status(
    chart: Chart,
    sid: int,
    where: Where,
    status: str,
    window: Window,
    discharged: dict[Any, dt.datetime],
) -> None:
    """Keep in ``where`` the orders ``_rx_status`` gives ``status`` (the total counts all of
    them): active by the stop time alone (and the session's discharge time); stopped or
    completed also by the order's first pharmacy status (``first_non_null``), read from the
    pharmacy rows that have one."""
    terms, params = ['"stoptime" IS NULL'], []
    if window.cutoff is not None:
        terms.append('"stoptime" > ?')
        params.append(window.cutoff)
    for hadm, at in discharged.items():
        terms.append('("hadm_id" = ? AND "stoptime" >= ?)')
        params += [hadm, at - ORDER_GRACE]
    sql = f"({' OR '.join(terms)})"

    def running(r: Row) -> bool:
        return _running(r["stoptime"], window, discharged.get(r["hadm_id"]))

    if status == "active":
        where.add(sql, running, *params)
        return
    where.add(f"NOT {sql}", lambda r: not running(r), *params)
    first: dict[Any, Any] = {}
    known = Where().add('"status" IS NOT NULL', lambda ph: ph["status"] is not None)
    for ph in chart.rows("pharmacy", sid, known):
        first.setdefault(ph["pharmacy_id"], ph["status"])
    halted = [i for i, s in first.items() if i is not None and _halted(s)]
    if status == "stopped":
        where.among("pharmacy_id", halted)
        return
    held = set(halted)
    where.add(
        f"(pharmacy_id IS NULL OR NOT {Where.IN.format('pharmacy_id', 'BIGINT')})",
        lambda r: r["pharmacy_id"] not in held,
        halted,
    )


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


def _dose(details: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The dose given: every charted component (the fields with a ``parent_field_ordinal``:
    a 25 mg and a 50 mg tablet of one 75 mg dose) summed over the first component's unit, each
    listed in ``components``; the route of the first component that records one. All None when
    the administration has no dose given."""
    parts = sorted(
        (
            d
            for d in details or ()
            if d["dose_given"] is not None and d["parent_field_ordinal"] is not None
        ),
        key=lambda d: d["parent_field_ordinal"],
    )
    out: dict[str, Any] = {
        "dose_given": None,
        "dose_given_unit": None,
        "route": None,
        "components": [],
    }
    routed = [d["route"] for d in parts if d["route"] is not None]
    out["route"] = routed[0] if routed else None
    if not parts:
        return out
    unit = parts[0]["dose_given_unit"]
    out["dose_given_unit"] = unit
    out["components"] = [
        " ".join(str(x) for x in (d["dose_given"], d["dose_given_unit"]) if x) for d in parts
    ]
    values = [fhir.as_number(d["dose_given"]) for d in parts if d["dose_given_unit"] == unit]
    if len(parts) == 1 or any(v is None for v in values):
        out["dose_given"] = parts[0]["dose_given"]
    else:
        out["dose_given"] = f"{round(sum(v for v in values if v is not None), 6):g}"
    return out


#: ``inputevents.statusdescription`` -> MedicationAdministration.status. A segment that ended
#: by a dose or rate change ran (completed); "Rewritten" rows were superseded by a corrected row.
ICU_STATUS = {
    "finishedrunning": "completed",
    "changedose/rate": "completed",
    "bolus": "completed",
    "flushed": "completed",
    "stopped": "stopped",
    "paused": "on-hold",
    "rewritten": "entered-in-error",
}
#: ``inputevents.ordercategorydescription`` of a continuous infusion: its rows are segments of
#: one running drip, not doses.
CONTINUOUS = ("continuous med", "continuous iv")


def icu_status(statusdescription: Any, ends_after_cutoff: bool = False) -> str:
    """MedicationAdministration.status of one ``inputevents`` row; a row still running at the
    cutoff is ``in-progress`` (how it ended is not known yet)."""
    if ends_after_cutoff:
        return "in-progress"
    return ICU_STATUS.get(str(statusdescription or "").strip().lower(), "unknown")


def is_continuous(ordercategorydescription: Any) -> bool:
    return str(ordercategorydescription or "").strip().lower() in CONTINUOUS


def _tiebreak(r: Row) -> str:
    """The administrations' order after time: the eMAR id or the ICU order id, as text."""
    return str(r.get("emar_id") or r.get("orderid"))


#: ``_tiebreak`` of each side, in SQL and in Python (``Chart.newest``).
_EMAR_TIE = ("""COALESCE(NULLIF("emar_id", ''), 'None')""", _tiebreak)
_ICU_TIE = ("""COALESCE(CAST(NULLIF("orderid", 0) AS VARCHAR), 'None')""", _tiebreak)


@read_tool(
    reads={
        **ADMISSIONS_CHECKED,
        "emar": ("emar_id", "hadm_id", "charttime", "medication", "event_txt"),
        "emar_detail": (
            "emar_id",
            "parent_field_ordinal",
            "dose_given",
            "dose_given_unit",
            "route",
        ),
        "inputevents": (
            "hadm_id",
            "stay_id",
            "orderid",
            "itemid",
            "starttime",
            "endtime",
            "amount",
            "amountuom",
            "rate",
            "rateuom",
            "ordercategoryname",
            "ordercategorydescription",
            "statusdescription",
        ),
    },
)
def medication_administration_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "MedicationAdministration.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    medication = args.get("medication")
    # The MAR_LIMIT newest of the union are among each side's MAR_LIMIT newest (one key).
    where = Where().equal("hadm_id", hadm).within(window, "charttime")
    if medication:  # matched on the distinct names in Python (``contains``), fetched in SQL
        names = chart.distinct("emar", sid, "medication", where)
        where.among("medication", [m for m in names if contains(m, medication)], "VARCHAR")
    emar_total, emar = chart.newest("emar", sid, where, "charttime", (_EMAR_TIE,), MAR_LIMIT)
    items = chart.lookup("d_items", "itemid")
    icu_where = Where().equal("hadm_id", hadm).within(window, "starttime")
    if medication:  # the items whose d_items label matches (``contains``), fetched in SQL
        icu_where.among("itemid", [i for i, d in items.items() if contains(d["label"], medication)])
    icu_total, icu = chart.newest(
        "inputevents", sid, icu_where, "starttime", (_ICU_TIE,), MAR_LIMIT
    )
    given = [{**e, "t": e["charttime"], "icu": False} for e in emar] + [
        {**r, "t": r["starttime"], "icu": True, "label": joined(items, r["itemid"], "label")}
        for r in icu
    ]
    found = order(given, by("t", desc=True), by(_tiebreak))[:MAR_LIMIT]
    shown = [e["emar_id"] for e in found if not e["icu"]]
    details: dict[Any, list[dict[str, Any]]] = {}
    given_dose = Where().add("dose_given IS NOT NULL", lambda d: d["dose_given"] is not None)
    for d in chart.rows("emar_detail", sid, given_dose.among("emar_id", shown, "VARCHAR")):
        details.setdefault(d["emar_id"], []).append(d)
    out = [
        _icu_administration(r, sid, window)
        if r["icu"]
        else _emar_administration({**r, **_dose(details.get(r["emar_id"]))}, sid)
        for r in found
    ]
    return bundle(out, emar_total + icu_total)


def _emar_administration(r: dict[str, Any], sid: int) -> dict[str, Any]:
    status = mar_status(r["event_txt"])
    dose_value = fhir.as_number(r["dose_given"])
    dosage = None
    if r["dose_given"] is not None or r["route"]:
        parts = r["components"] if len(r["components"]) > 1 else []
        given = " + ".join(parts) + " = " if parts else ""
        dosage = {
            "text": given
            + " ".join(str(x) for x in (r["dose_given"], r["dose_given_unit"], r["route"]) if x)
            or None,
            "route": {"text": r["route"]} if r["route"] else None,
            "dose": quantity(dose_value, r["dose_given_unit"]),
        }
    event = str(r["event_txt"] or "").strip()
    return {
        "resourceType": "MedicationAdministration",
        "id": fhir.safe_id(f"emar-{r['emar_id']}"),
        "status": status,
        "statusReason": [{"text": event}]
        if status in ("not-done", "on-hold", "stopped") and event
        else None,
        "medicationCodeableConcept": {"text": r["medication"] or "(medication not recorded)"},
        "subject": fhir.patient_ref(sid),
        "context": fhir.encounter_ref(r["hadm_id"]),
        "effectiveDateTime": fhir.fhir_datetime(text(r["charttime"])),
        "note": [{"text": event}] if event else None,
        "dosage": dosage,
    }


def _icu_administration(r: dict[str, Any], sid: int, window: Window) -> dict[str, Any]:
    """One ``inputevents`` row as MIMIC-on-FHIR's MedicationAdministrationICU: the d_items
    item as the medication, the order category, the period, the amount and rate, the method
    (Drug Push, Bolus, Continuous Med, ...). A row running at the cutoff shows no end, amount
    or status description (they are charted when it ends)."""
    running = not window.visible(r["endtime"])
    status = icu_status(r["statusdescription"], running)
    method = str(r["ordercategorydescription"] or "")
    amount = None if running else fhir.as_number(r["amount"])
    rate = fhir.as_number(r["rate"])
    parts = [
        f"{amount:g} {r['amountuom'] or ''}".strip() if amount is not None else "",
        f"at {rate:g} {r['rateuom'] or ''}".strip() if rate is not None else "",
        method,
    ]
    label = r["label"]
    return {
        "resourceType": "MedicationAdministration",
        "id": fhir.stable_id(
            "icu", sid, r["stay_id"], r["orderid"], r["itemid"], text(r["starttime"])
        ),
        "status": status,
        "category": {"text": r["ordercategoryname"]} if r["ordercategoryname"] else None,
        "medicationCodeableConcept": {
            "coding": [{"system": "mimic-iv/d_items", "code": str(r["itemid"]), "display": label}]
            if label
            else None,
            "text": label or f"(ICU item {r['itemid']})",
        },
        "subject": fhir.patient_ref(sid),
        "context": fhir.encounter_ref(r["hadm_id"]),
        "effectivePeriod": {
            "start": fhir.fhir_datetime(text(r["starttime"])),
            "end": None if running else fhir.fhir_datetime(text(r["endtime"])),
        },
        "note": [{"text": f"ICU ({r['statusdescription']})"}]
        if r["statusdescription"] and not running
        else [{"text": "ICU (running)"}],
        "dosage": {
            "text": " ".join(p for p in parts if p) or None,
            "method": {"text": method} if method else None,
            "dose": quantity(amount, r["amountuom"]),
            "rateQuantity": quantity(rate, r["rateuom"]),
        },
    }
