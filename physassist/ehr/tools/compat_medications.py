"""compat medication tools: all orders with the start/stop-derived status and no limit; the eMAR
with status always ``completed``, the event text in ``_event_txt`` and no dose."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from . import fhir
from .compat_chart import BigChart, Where, chart
from .compat_common import (
    empty,
    encounter,
    hadm_filter,
    nan_text,
    present,
    regex_matcher,
    subject_key,
    text_arg,
)
from .compat_frames import frame, sort_rows
from .context import ToolContext
from .records import Row
from .registry import read_tool

MAR_LIMIT = 100  # administrations listed when neither a medication nor an admission is asked


@read_tool(
    reads={"prescriptions": ("hadm_id", "starttime", "stoptime", "drug_type", "drug", "dose_val_rx",
                             "dose_unit_rx", "route")},
)  # fmt: skip
def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationRequest.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = text_arg(tool, args, "medication")
    matches = None if medication is None else regex_matcher(tool, medication)
    status = text_arg(tool, args, "status")
    if sid is None or not ok:
        return empty("MedicationRequest", args)
    # rx ids are the row's index in the subject's prescriptions file
    found = _matching(ctx, "prescriptions", sid, hadm, "drug", matches)
    found = sort_rows(found, "starttime", ascending=False)
    out = []
    for r in found:
        start, stop = r["starttime"], r["stoptime"]
        derived = "completed" if start and stop else ("active" if start else "unknown")
        if status is not None and status != derived:
            continue
        dose = r["dose_val_rx"]
        dosage: dict[str, Any] = {}
        if dose is not None:  # no dose (NaN): the reference built the timing only
            unit, route = r["dose_unit_rx"], r["route"]
            dosage["doseAndRate"] = [
                {"doseQuantity": present({"value": fhir.as_number(dose), "unit": unit}, "unit")}
            ]
            dosage["route"] = present({"text": route}, "text")
            dosage["text"] = f"{dose}{nan_text(unit)} {nan_text(route)}"
        dosage["timing"] = {
            "repeat": {"boundsPeriod": present({"start": start, "end": stop}, "start", "end")}
        }
        out.append(
            present(
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
                    "encounter": encounter(r["hadm_id"]),
                    "dosageInstruction": [dosage],
                    "_drug_type": r["drug_type"],
                },
                "encounter",
                "_drug_type",
            )
        )
    if not out:
        return empty("MedicationRequest", args)
    return fhir.compat_bundle("MedicationRequest", out)


@read_tool(
    reads={"emar": ("hadm_id", "charttime", "medication", "event_txt")},
)
def medication_administration_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationAdministration.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = text_arg(tool, args, "medication")
    matches = None if medication is None else regex_matcher(tool, medication)
    if sid is None or not ok:
        return empty("MedicationAdministration", args)
    given = chart(ctx.store, "emar", sid, "charttime")
    if isinstance(given, BigChart) and medication is None and hadm is None:
        kept = given.kept([])
        found = given.newest(tool, kept, np.ones(len(kept[0]), dtype=bool), MAR_LIMIT)
    else:
        found = _matching(ctx, "emar", sid, hadm, "medication", matches, "charttime")
        found = sort_rows(found, "charttime", ascending=False)
        if medication is None and hadm is None:
            found = found[:MAR_LIMIT]
    if not found:
        return empty("MedicationAdministration", args)
    out = [
        present(
            {
                "resourceType": "MedicationAdministration",
                "id": f"emar-{sid}-{r['rowidx']}",
                "status": "completed",
                "medicationCodeableConcept": {"text": r["medication"] or "unknown"},
                "subject": fhir.patient_ref(sid),
                "context": encounter(r["hadm_id"]),
                "effectiveDateTime": r["charttime"],
                "_event_txt": r["event_txt"],
            },
            "context",
            "effectiveDateTime",
            "_event_txt",
        )
        for r in found
    ]
    return fhir.compat_bundle("MedicationAdministration", out)


def _matching(
    ctx: ToolContext,
    table: str,
    sid: int,
    hadm: float | None,
    column: str,
    matches: Callable[[Any], bool] | None,
    time: str | None = None,
) -> list[Row]:
    """The subject's typed rows whose ``hadm_id`` equals ``hadm`` and whose ``column``
    ``matches`` (the ``medication`` pattern; None = no filter), in file order: of a big chart
    (``chart(..., time)``) only those are fetched, unless the pattern cannot be decided per
    stored text. Without a filter the answer is the whole chart, typed whole."""
    if hadm is None and matches is None:
        return list(frame(ctx.store, table, sid))
    rows = chart(ctx.store, table, sid, time)
    if isinstance(rows, BigChart):
        by_hadm: list[Where] = [] if hadm is None else [rows.equal("hadm_id", hadm)]
        where: list[Where] | None = by_hadm
        if matches is not None:
            text = rows.matches(column, by_hadm, matches)
            where = None if text is None else [*by_hadm, text]
        if where is not None:
            return rows.matching(where)
        rows = frame(ctx.store, table, sid)
    return [
        r
        for r in rows
        if (hadm is None or r["hadm_id"] == hadm) and (matches is None or matches(r[column]))
    ]
