"""Simulated write tools. Nothing reaches the store: results live in ``ctx.sandbox``.

Ids and timestamps are derived from the session (subject, ``current_date``/cutoff and the
sandbox's own sequence number), never from the wall clock, so a replayed session produces the
same write results. ``compat`` keeps the reference's eval-time shapes and takes arguments raw
(no validation, a missing subject becomes 0); ``strict`` validates against the schema, refuses
another subject, and returns valid FHIR R4 resources tagged as simulated.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from . import fhir
from .context import ToolContext
from .errors import ToolError

SIM_TAG = {
    "system": "https://physassist.dev/fhir/tags",
    "code": "simulated",
    "display": "Simulated write",
}
_PREFIX = {"MedicationRequest.create": "MR", "ServiceRequest.create": "SR", "Flag.create": "FL"}


def _session_day(ctx: ToolContext) -> str:
    cutoff = ctx.effective_cutoff()
    return cutoff.date().isoformat() if cutoff else "1970-01-01"


def _sim_id(ctx: ToolContext, tool: str, subject: Any, seq: int) -> str:
    """strict: unique per write within the session (the sandbox's sequence number)."""
    return fhir.safe_id(f"{_PREFIX[tool]}-sim-{subject}-{_session_day(ctx).replace('-', '')}-{seq}")


def _created_at(ctx: ToolContext, seq: int) -> str:
    """Session day at midnight plus one second per write: ordered, deterministic, not wall clock."""
    base = dt.datetime.fromisoformat(_session_day(ctx)) + dt.timedelta(seconds=seq)
    return base.strftime("%Y-%m-%dT%H:%M:%S+00:00")


def compat_write(ctx: ToolContext, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """The reference's eval-time simulator: raw arguments, id ``<MR|SR|FL>-sim-<subject>-<day>``
    (no sequence number, so two writes of one session share an id, as in the reference), where
    the day is the session's current date instead of the reference's wall-clock UTC date."""
    seq = ctx.sandbox.next_seq()
    subject = args.get("subject_id", 0)
    head = {
        "id": f"{_PREFIX[tool]}-sim-{subject}-{_session_day(ctx).replace('-', '')}",
        "status": "active",
    }
    tail = {"_simulated": True, "_created_at": _created_at(ctx, seq)}
    if tool == "MedicationRequest.create":
        dose, route, freq = args.get("dose", ""), args.get("route", ""), args.get("frequency", "")
        indication = args.get("indication")
        res: dict[str, Any] = {
            "resourceType": "MedicationRequest",
            **head,
            "intent": "order",
            "medicationCodeableConcept": {"text": args.get("medication", "")},
            "subject": {"reference": f"Patient/{subject}"},
            "dosageInstruction": [
                {
                    "text": f"{dose} {route} {freq}",
                    "route": {"text": route},
                    "timing": {"code": {"text": freq}},
                    "doseAndRate": [{"doseQuantity": {"text": dose}}],
                }
            ],
            "reasonCode": [{"text": indication}] if indication else [],
            **tail,
        }
    elif tool == "ServiceRequest.create":
        res = {
            "resourceType": "ServiceRequest",
            **head,
            "intent": "order",
            "priority": args.get("priority") or "routine",
            "code": {"text": args.get("service_type", "")},
            "subject": {"reference": f"Patient/{subject}"},
            "note": [{"text": args.get("note", "")}],
            "occurrenceDateTime": args.get("target_date") or "",
            **tail,
        }
    else:
        res = {
            "resourceType": "Flag",
            **head,
            "category": [{"text": args.get("category", "")}],
            "code": {"text": args.get("code", ""), "coding": [{"display": args.get("detail", "")}]},
            "subject": {"reference": f"Patient/{subject}"},
            **tail,
        }
    ctx.sandbox.add(res)
    return res


_DOSE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z%µ/][\w%µ/.\- ]*)?\s*$")
FLAG_CATEGORY = "http://terminology.hl7.org/CodeSystem/flag-category"
_FLAG_CODES = {
    "safety": "safety",
    "allergy": "drug",
    "administrative": "admin",
    "clinical": "clinical",
}


def strict_write(ctx: ToolContext, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` were already validated by ``strict_arguments`` (required fields, enums, types)."""
    if args["subject_id"] != ctx.subject_id:
        raise ToolError(
            f"{tool}: writes are limited to this session's patient (subject_id {ctx.subject_id}); "
            f"got {args['subject_id']}.",
            code="forbidden",
        )
    seq = ctx.sandbox.next_seq()
    day = _session_day(ctx)
    common: dict[str, Any] = {
        "id": _sim_id(ctx, tool, ctx.subject_id, seq),
        "meta": {"tag": [SIM_TAG]},
        "subject": fhir.patient_ref(ctx.subject_id),
    }
    if tool == "MedicationRequest.create":
        dose = args["dose"]
        m = _DOSE.match(dose)
        if not m:
            raise ToolError(
                f"{tool}: 'dose' must be a number with a unit, e.g. '5 mg'; got {dose!r}."
            )
        dosage: dict[str, Any] = {
            "text": f"{dose} {args['route']} {args['frequency']}",
            "route": {"text": args["route"]},
            "timing": {"code": {"text": args["frequency"]}},
            "doseAndRate": [
                {
                    "doseQuantity": {
                        "value": float(m.group(1)),
                        "unit": (m.group(2) or "").strip() or None,
                    }
                }
            ],
        }
        res: dict[str, Any] = {
            "resourceType": "MedicationRequest",
            **common,
            "status": "active",
            "intent": "order",
            "medicationCodeableConcept": {"text": args["medication"]},
            "authoredOn": _created_at(ctx, seq),
            "dosageInstruction": [dosage],
            "reasonCode": [{"text": args["indication"]}] if args.get("indication") else None,
        }
        if "duration_days" in args:
            days = args["duration_days"]
            if days < 1:
                raise ToolError(f"{tool}: 'duration_days' must be at least 1; got {days}.")
            res["dispenseRequest"] = {
                "expectedSupplyDuration": {
                    "value": days,
                    "unit": "days",
                    "system": "http://unitsofmeasure.org",
                    "code": "d",
                }
            }
    elif tool == "ServiceRequest.create":
        target = args.get("target_date")
        if target is not None:
            try:
                target = dt.date.fromisoformat(target[:10]).isoformat()
            except ValueError:
                raise ToolError(
                    f"{tool}: 'target_date' must be YYYY-MM-DD; got {target!r}."
                ) from None
        res = {
            "resourceType": "ServiceRequest",
            **common,
            "status": "active",
            "intent": "order",
            "priority": args["priority"],
            "code": {"text": args["service_type"]},
            "authoredOn": _created_at(ctx, seq),
            "note": [{"text": args["note"]}] if args.get("note") else None,
            "occurrenceDateTime": target,
        }
    else:
        res = {
            "resourceType": "Flag",
            **common,
            "status": "active",
            "category": [
                {
                    "coding": [{"system": FLAG_CATEGORY, "code": _FLAG_CODES[args["category"]]}],
                    "text": args["category"],
                }
            ],
            "code": {"text": f"{args['code']}: {args['detail']}"},
            "period": {"start": day},
        }
    res = fhir.clean(res)
    ctx.sandbox.add(res)
    return res
