"""compat ``Observation.search``: labs behind the day-exclusive string date gate with
dictionary-wide substring matching; vitals that ignore admission and dates, with OMR fallback;
microbiology through the lab path (so, in practice, nothing)."""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import fhir
from .compat_chart import BigChart, chart, within
from .compat_common import (
    empty,
    hadm_filter,
    head,
    subject_key,
    text_arg,
)
from .compat_frames import frame, sort_rows
from .context import ToolContext
from .errors import ToolError, bad_arguments
from .records import Row, contains, joined, lookup
from .registry import read_tool
from .schemas import DEFAULT_COUNT

VITAL_CATEGORIES = {"vital-signs", "vital_signs", "vitals"}
DATE_BOUNDS = (("date_from", ">="), ("date_to", "<="))  # applied in this order
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


@read_tool(reads={
        "labevents": ("labevent_id", "hadm_id", "itemid", "charttime", "value", "valuenum",
                      "valueuom", "ref_range_lower", "ref_range_upper", "flag"),
        "chartevents": ("hadm_id", "stay_id", "itemid", "charttime", "value", "valuenum",
                        "valueuom"),
        "omr": ("chartdate", "result_name", "result_value"),
    },
)  # fmt: skip
def observation_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Observation.search"
    sid = subject_key(tool, args)
    category = text_arg(tool, args, "category")
    code = text_arg(tool, args, "code")
    if category is not None and category in VITAL_CATEGORIES:
        return _vitals(ctx, sid, args, code)
    # the date gate was injected by compat_arguments; bounds are compared as strings
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    if sid is None or not ok:
        return _none(args)
    labs = chart(ctx.store, "labevents", sid, "charttime")
    if isinstance(labs, BigChart):
        found = _newest_labs(ctx, labs, args, hadm, code)
    else:
        found = [r for r in labs if hadm is None or r["hadm_id"] == hadm]
        if code is not None:
            found = _with_itemids(found, _matching_itemids(ctx, "d_labitems", code))
        for key, op in DATE_BOUNDS:
            bound = args.get(key)
            if bound is None:
                continue
            if not isinstance(bound, str):
                if any(r["charttime"] is not None for r in found):  # Python's error, per element
                    raise _incomparable(op, bound)
                found = []
            elif op == ">=":
                found = [r for r in found if r["charttime"] is not None and r["charttime"] >= bound]
            else:
                found = [r for r in found if r["charttime"] is not None and r["charttime"] <= bound]
        found = head(
            tool, sort_rows(found, "charttime", ascending=False), args.get("_count", DEFAULT_COUNT)
        )
    labels = lookup(ctx, "d_labitems", "itemid")
    found = [{**r, "label": joined(labels, r["itemid"], "label")} for r in found]
    if category == "microbiology":
        found = [
            r for r in found if any(w in str(r["label"] or "").lower() for w in MICRO_LAB_WORDS)
        ]
    if not found:
        return _none(args)
    return fhir.compat_bundle("Observation", [_lab(r, sid) for r in found])


def _newest_labs(
    ctx: ToolContext, labs: BigChart, args: dict[str, Any], hadm: float | None, code: str | None
) -> list[Row]:
    """The small chart's filters and sort over a big chart: admission and items in SQL, the
    text date bounds over the kept rows' times."""
    where = [] if hadm is None else [labs.equal("hadm_id", hadm)]
    itemids = None if code is None else _matching_itemids(ctx, "d_labitems", code)
    if itemids is not None:
        where.append(labs.among("itemid", itemids))
    kept = labs.kept(where)
    keep = np.ones(len(kept[0]), dtype=bool)
    for key, op in DATE_BOUNDS:
        bound = args.get(key)
        if bound is None:
            continue
        if not isinstance(bound, str):
            if (keep & ~kept[2]).any():
                raise _incomparable(op, bound)
            keep[:] = False
        else:
            keep &= within(kept, op, bound)
    return labs.newest("Observation.search", kept, keep, args.get("_count", DEFAULT_COUNT))


def _incomparable(op: str, bound: Any) -> ToolError:
    """Python's error comparing a chart time (text) with a bound that is not text."""
    return bad_arguments(
        "Observation.search",
        f"'{op}' not supported between instances of 'str' and '{type(bound).__name__}'",
    )


def _none(args: dict[str, Any]) -> dict[str, Any]:
    """The reference's empty answer names the category and code it searched for."""
    detail = "".join(f" {k}={args[k]}" for k in ("category", "code") if args.get(k) is not None)
    return empty("Observation", args, detail)


def _lab(r: dict[str, Any], sid: int) -> dict[str, Any]:
    label = r["label"] or str(r["itemid"])
    obs: dict[str, Any] = {
        **fhir.observation(
            f"lab-{r['labevent_id']}",
            sid,
            "laboratory",
            fhir.named_concept("mimic-iv/itemid", str(r["itemid"]), label),
        ),
    }
    if r["hadm_id"] is not None:
        obs["encounter"] = {"reference": f"Encounter/encounter-{r['hadm_id']}"}
    obs["effectiveDateTime"] = r["charttime"]
    if r["valuenum"] is not None:
        obs["valueQuantity"] = {"value": r["valuenum"], "unit": r["valueuom"] or ""}
    elif r["value"] is not None:
        obs["valueString"] = r["value"]
    if r["flag"] in ("abnormal", "delta"):
        obs["interpretation"] = [
            {"coding": [{"system": fhir.INTERPRETATION, "code": "A", "display": "Abnormal"}]}
        ]
    if r["ref_range_lower"] is not None or r["ref_range_upper"] is not None:
        rr: dict[str, Any] = {}
        if r["ref_range_lower"] is not None:
            rr["low"] = {"value": r["ref_range_lower"], "unit": r["valueuom"] or ""}
        if r["ref_range_upper"] is not None:
            rr["high"] = {"value": r["ref_range_upper"], "unit": r["valueuom"] or ""}
        obs["referenceRange"] = [rr]
    return obs


def _vitals(
    ctx: ToolContext, sid: int | None, args: dict[str, Any], code: str | None
) -> dict[str, Any]:
    """ICU chartevents (hadm_id, dates and the gate all ignored), OMR only when that is empty."""
    tool = "Observation.search"
    if sid is None:
        return _none(args)
    count = args.get("_count", DEFAULT_COUNT)
    charted = chart(ctx.store, "chartevents", sid, "charttime")
    itemids = None if code is None else _matching_itemids(ctx, "d_items", code)
    if isinstance(charted, BigChart):
        kept = charted.kept([] if itemids is None else [charted.among("itemid", itemids)])
        found = charted.newest(tool, kept, np.ones(len(kept[0]), dtype=bool), count)
    else:
        found = _with_itemids(list(charted), itemids)
        found = head(tool, sort_rows(found, "charttime", ascending=False), count)
    items = lookup(ctx, "d_items", "itemid")
    out = []
    for r in found:
        t = r["charttime"]
        label = joined(items, r["itemid"], "label") or str(r["itemid"])
        obs: dict[str, Any] = {
            **fhir.observation(
                f"vital-{sid}-{r['itemid']}-{t}",
                sid,
                "vital-signs",
                fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
            ),
            "effectiveDateTime": t,
            "_stay_id": str(r["stay_id"]),
        }
        if r["valuenum"] is not None:
            unit = joined(items, r["itemid"], "unitname") or ""
            obs["valueQuantity"] = {"value": r["valuenum"], "unit": unit}
        elif r["value"] is not None:
            obs["valueString"] = r["value"]
        out.append(obs)
    if not out:
        out = _omr(ctx, sid, code, count)
    if not out:
        return _none(args)
    return fhir.compat_bundle("Observation", out)


def _omr(ctx: ToolContext, sid: int, code: str | None, count: Any) -> list[dict[str, Any]]:
    # ids use the row's index in the subject's file
    found = [
        r for r in frame(ctx.store, "omr", sid) if code is None or contains(r["result_name"], code)
    ]
    found = head("Observation.search", sort_rows(found, "chartdate", ascending=False), count)
    return [
        {
            **fhir.observation(
                f"omr-{sid}-{r['rowidx']}",
                sid,
                "vital-signs",
                {
                    "coding": [{"system": "mimic-iv/omr", "display": r["result_name"]}],
                    "text": r["result_name"],
                },
            ),
            "effectiveDateTime": r["chartdate"],
            "valueString": str(r["result_value"]),
        }
        for r in found
    ]
