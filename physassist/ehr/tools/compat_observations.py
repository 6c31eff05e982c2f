"""compat ``Observation.search``: labs behind the day-exclusive string date gate with
dictionary-wide substring matching; vitals that ignore admission and dates, with OMR fallback;
microbiology through the lab path (so, in practice, nothing)."""

from __future__ import annotations

import weakref
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
from .errors import bad_arguments
from .records import Row, by, contains, joined, keep, lookup, order, subject_rows, text
from .schemas import DEFAULT_COUNT

VITAL_CATEGORIES = {"vital-signs", "vital_signs", "vitals"}
MICRO_LAB_WORDS = ("micro", "culture", "bacteria")


#: Per open store, (dictionary, code) -> ``_matching_itemids``. Agents repeat the same names
#: within and across sessions, and a scan of every label (d_items: ~4k) costs ~0.2 ms.
_MATCHES: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], frozenset[Any] | None]] = (
    weakref.WeakKeyDictionary()
)
MATCH_MEMO = 1024  # remembered codes per store; the memo starts over when full


def _matching_itemids(ctx: ToolContext, dictionary: str, code: str) -> frozenset[Any] | None:
    """Dictionary-wide case-insensitive substring match; ``None`` = no label matched (no filter)."""
    memo = _MATCHES.setdefault(ctx.store, {})
    key = (dictionary, code)
    if key not in memo:
        items = lookup(ctx, dictionary, "itemid").values()
        if len(memo) >= MATCH_MEMO:
            memo.clear()
        memo[key] = frozenset(r["itemid"] for r in items if contains(r["label"], code)) or None
    return memo[key]


def _with_itemids(rows: list[Row], itemids: frozenset[Any] | None) -> list[Row]:
    """Rows whose itemid is one of ``itemids``; all rows when there is no such filter."""
    if itemids is None:
        return rows
    return [r for r in rows if r["itemid"] is not None and r["itemid"] in itemids]


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
    found = keep(subject_rows(ctx, "labevents", sid), hadm_id=hadm)
    if code is not None:
        found = _with_itemids(found, _matching_itemids(ctx, "d_labitems", code))
    if date_from is not None:
        found = [r for r in found if (t := text(r["charttime"])) is not None and t >= date_from]
    if date_to is not None:
        found = [r for r in found if (t := text(r["charttime"])) is not None and t <= date_to]
    labels = lookup(ctx, "d_labitems", "itemid")
    found = [
        {**r, "t": text(r["charttime"]), "label": joined(labels, r["itemid"], "label")}
        for r in head(order(found, by("charttime", desc=True)), count)
    ]
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
    found = list(subject_rows(ctx, "chartevents", sid))
    if code is not None:
        found = _with_itemids(found, _matching_itemids(ctx, "d_items", code))
    found = head(order(found, by("charttime", desc=True)), count)
    items = lookup(ctx, "d_items", "itemid")
    out = []
    for r in found:
        t = text(r["charttime"])
        label = joined(items, r["itemid"], "label") or str(r["itemid"])
        obs: dict[str, Any] = {
            **fhir.observation(
                f"vital-{sid}-{r['itemid']}-{t}",
                sid,
                "vital-signs",
                fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
            ),
            "effectiveDateTime": t,
            "_stay_id": r["stay_id"],
        }
        if not is_nan(r["valuenum"]):
            unit = joined(items, r["itemid"], "unitname") or ""
            obs["valueQuantity"] = {"value": r["valuenum"], "unit": unit}
        else:
            obs["valueString"] = r["value"] if r["value"] is not None else ""
        out.append(obs)
    if not out:
        out = _omr(ctx, sid, code, count)
    if not out:
        return empty("Observation", sid)
    return fhir.compat_bundle("Observation", out)


def _omr(ctx: ToolContext, sid: int, code: str | None, count: int | None) -> list[dict[str, Any]]:
    # ids use the row's index in the subject's file (subject_rows keeps file order)
    found = [
        {"t": text(r["chartdate"]), "rowidx": i, **r}
        for i, r in enumerate(subject_rows(ctx, "omr", sid))
        if code is None or contains(r["result_name"], code)
    ]
    found = head(order(found, by("t", desc=True)), count)
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
