"""compat ``Observation.search``: labs behind the day-exclusive string date gate with
dictionary-wide substring matching; vitals that ignore admission and dates, with OMR fallback;
microbiology through the lab path (so, in practice, nothing)."""

from __future__ import annotations

from typing import Any

from . import fhir
from .compat_common import (
    count_arg,
    empty,
    hadm_filter,
    head,
    is_nan,
    nullable_hadm,
    subject_key,
    text_arg,
)
from .context import ToolContext
from .db import and_contains, and_equal, placeholders, rows, ts
from .errors import bad_arguments
from .schemas import DEFAULT_COUNT

VITAL_CATEGORIES = {"vital-signs", "vital_signs", "vitals"}
MICRO_LAB_WORDS = ("micro", "culture", "bacteria")


def _matching_itemids(ctx: ToolContext, dictionary: str, code: str) -> list[int] | None:
    """Dictionary-wide case-insensitive substring match; ``None`` = no label matched (no filter)."""
    found = rows(
        ctx, f"SELECT itemid FROM {dictionary} WHERE strpos(lower(label), lower(?)) > 0", [code]
    )
    return [r["itemid"] for r in found] or None


def observation_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Observation.search"
    sid = subject_key(tool, args)
    category = text_arg(tool, args, "category")
    code = text_arg(tool, args, "code")
    count = count_arg(tool, args, DEFAULT_COUNT)
    if category is not None and category in VITAL_CATEGORIES:
        return _vitals(ctx, sid, args, code, count)
    # the date gate was injected by compat_arguments; bounds are compared as strings
    date_to = args.get("date_to")
    date_from = args.get("date_from")
    for key, value in (("date_from", date_from), ("date_to", date_to)):
        if value is not None and not isinstance(value, str):
            raise bad_arguments(
                tool,
                f"'<=' not supported between instances of 'str' and '{type(value).__name__}' ({key})",
            )
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    if sid is None or not ok:
        return empty("Observation", args.get("subject_id"))
    sql = (
        f"SELECT l.labevent_id, l.itemid, l.hadm_id, {ts('l.charttime')} AS t, l.value, l.valuenum, "
        "l.valueuom, l.ref_range_lower, l.ref_range_upper, l.flag, d.label "
        "FROM labevents l LEFT JOIN d_labitems d ON d.itemid = l.itemid WHERE l.subject_id = ?"
    )
    params: list[Any] = [sid]
    sql += and_equal("l.hadm_id", hadm, params)
    if code is not None:
        itemids = _matching_itemids(ctx, "d_labitems", code)
        if itemids is not None:
            sql += f" AND l.itemid IN ({placeholders(itemids)})"
            params.extend(itemids)
    if date_from is not None:
        sql += f" AND {ts('l.charttime')} >= ?"
        params.append(date_from)
    if date_to is not None:
        sql += f" AND {ts('l.charttime')} <= ?"
        params.append(date_to)
    found = head(rows(ctx, sql + " ORDER BY l.charttime DESC, l._row", params), count)
    if category == "microbiology":
        found = [
            r for r in found if any(w in str(r["label"] or "").lower() for w in MICRO_LAB_WORDS)
        ]
    if not found:
        return empty("Observation", sid)
    as_float = nullable_hadm(ctx, "labevents", sid)
    return fhir.compat_bundle("Observation", [_lab(r, sid, as_float) for r in found])


def _lab(r: dict[str, Any], sid: int, as_float: bool) -> dict[str, Any]:
    label = r["label"] or str(r["itemid"])
    obs: dict[str, Any] = {
        **fhir.observation(
            f"lab-{r['labevent_id']}",
            sid,
            "laboratory",
            fhir.named_concept("mimic-iv/itemid", str(r["itemid"]), label),
        ),
    }
    enc = fhir.encounter_ref(r["hadm_id"], as_float=as_float)
    if enc:
        obs["encounter"] = enc
    obs["effectiveDateTime"] = r["t"]
    if not is_nan(r["valuenum"]):
        obs["valueQuantity"] = {"value": r["valuenum"], "unit": r["valueuom"] or ""}
    else:
        obs["valueString"] = r["value"] if r["value"] is not None else ""
    if r["flag"] in ("abnormal", "delta"):
        obs["interpretation"] = [
            {"coding": [{"system": fhir.INTERPRETATION, "code": "A", "display": "Abnormal"}]}
        ]
    if not is_nan(r["ref_range_lower"]) or not is_nan(r["ref_range_upper"]):
        rr: dict[str, Any] = {}
        if not is_nan(r["ref_range_lower"]):
            rr["low"] = {"value": r["ref_range_lower"], "unit": r["valueuom"] or ""}
        if not is_nan(r["ref_range_upper"]):
            rr["high"] = {"value": r["ref_range_upper"], "unit": r["valueuom"] or ""}
        obs["referenceRange"] = [rr]
    return obs


def _vitals(
    ctx: ToolContext, sid: int | None, args: dict[str, Any], code: str | None, count: int | None
) -> dict[str, Any]:
    """ICU chartevents (hadm_id, dates and the gate all ignored), OMR only when that is empty."""
    if sid is None:
        return empty("Observation", args.get("subject_id"))
    sql = (
        f"SELECT c.stay_id, c.itemid, {ts('c.charttime')} AS t, c.value, c.valuenum, d.label, d.unitname "
        "FROM chartevents c LEFT JOIN d_items d ON d.itemid = c.itemid WHERE c.subject_id = ?"
    )
    params: list[Any] = [sid]
    if code is not None:
        itemids = _matching_itemids(ctx, "d_items", code)
        if itemids is not None:
            sql += f" AND c.itemid IN ({placeholders(itemids)})"
            params.extend(itemids)
    found = head(rows(ctx, sql + " ORDER BY c.charttime DESC, c._row", params), count)
    out = []
    for r in found:
        label = r["label"] or str(r["itemid"])
        obs: dict[str, Any] = {
            **fhir.observation(
                f"vital-{sid}-{r['itemid']}-{r['t']}",
                sid,
                "vital-signs",
                fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
            ),
            "effectiveDateTime": r["t"],
            "_stay_id": r["stay_id"],
        }
        if not is_nan(r["valuenum"]):
            obs["valueQuantity"] = {"value": r["valuenum"], "unit": r["unitname"] or ""}
        else:
            obs["valueString"] = r["value"] if r["value"] is not None else ""
        out.append(obs)
    if not out:
        out = _omr(ctx, sid, code, count)
    if not out:
        return empty("Observation", sid)
    return fhir.compat_bundle("Observation", out)


def _omr(ctx: ToolContext, sid: int, code: str | None, count: int | None) -> list[dict[str, Any]]:
    # ids use the row's index in the subject's file (the store keeps file order in _row)
    sql = (
        f"SELECT * FROM (SELECT {ts('chartdate')} AS t, result_name, result_value, "
        "row_number() OVER (ORDER BY _row) - 1 AS rowidx "
        "FROM omr WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    sql += and_contains("result_name", code, params)
    found = head(rows(ctx, sql + " ORDER BY t DESC, rowidx", params), count)
    return [
        {
            **fhir.observation(
                f"omr-{sid}-{r['rowidx']}",
                sid,
                "vital-signs",
                fhir.named_concept("mimic-iv/omr", r["result_name"], r["result_name"]),
            ),
            "effectiveDateTime": r["t"],
            "valueString": r["result_value"],
        }
        for r in found
    ]
