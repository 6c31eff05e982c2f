"""strict ``Observation.search``: laboratory (exact -> synonym -> fuzzy labels, true totals),
vital signs (ICU chartevents honouring admission and dates, OMR fallback) and microbiology
Observations from ``microbiologyevents``; everything bounded by the session cutoff."""

from __future__ import annotations

import re
from typing import Any

from . import fhir
from .context import ToolContext
from .labels import LabelMatch, match_label
from .records import by, contains, joined, lookup, order, stamp, subject_rows, text
from .registry import read_tool
from .schemas import DEFAULT_COUNT
from .strict_common import (
    Expression,
    Where,
    Window,
    admission_miss,
    bundle,
    distinct,
    interpretation,
    miss_hint,
    newest,
    quantity,
    rows,
)

#: The microbiology columns ``micro_rows``' callers read (here and ``DiagnosticReport.search``).
MICRO_COLUMNS = ("hadm_id", "micro_specimen_id", "chartdate", "charttime", "spec_type_desc", "test_seq",
                 "test_itemid", "test_name", "org_name", "isolate_num", "ab_name", "dilution_text",
                 "interpretation", "comments")  # fmt: skip


@read_tool(
    "strict",
    "Observation.search",
    reads={
        "admissions": ("hadm_id", "admittime", "dischtime"),
        "labevents": ("labevent_id", "hadm_id", "itemid", "charttime", "value", "valuenum", "valueuom",
                      "ref_range_lower", "ref_range_upper", "flag", "comments"),
        "chartevents": ("hadm_id", "stay_id", "itemid", "charttime", "value", "valuenum", "valueuom"),
        "icustays": ("hadm_id", "stay_id"),
        "omr": ("chartdate", "seq_num", "result_name", "result_value"),
        "microbiologyevents": MICRO_COLUMNS,
    },
)  # fmt: skip
def observation_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, args, "Observation.search")
    if (miss := admission_miss(ctx, sid, hadm, window)) is not None:
        return miss
    count = args.get("_count", DEFAULT_COUNT)
    category = args.get("category") or "laboratory"
    if category == "vital-signs":
        return _vitals(ctx, sid, hadm, args.get("code"), window, count)
    if category == "microbiology":
        return _micro_observations(ctx, sid, hadm, args.get("code"), window, count)
    return _labs(ctx, sid, hadm, args.get("code"), window, count)


def _labs(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    items = lookup(ctx, "d_labitems", "itemid")
    itemids = None
    if code is not None:  # match on the chart's distinct items up to the window's end
        ids = distinct(ctx, "labevents", sid, "itemid", Where().within(window, "charttime", False))
        label_of = {i: joined(items, i, "label") for i in ids}
        match = match_label(code, label_of.values())
        if not match.matched:
            return bundle([], 0, miss_hint("laboratory test", code, match))
        chosen = set(match.labels)
        itemids = [i for i, label in label_of.items() if label in chosen]
        fluids = {joined(items, i, "fluid") for i in itemids}
        if (
            len(fluids) > 1
            and "Blood" in fluids
            and not any(f and f.lower() in code.lower() for f in fluids - {"Blood"})
        ):  # "Creatinine" means serum
            itemids = [i for i in itemids if joined(items, i, "fluid") == "Blood"]
    where = Where().within(window, "charttime").among("itemid", itemids).equal("hadm_id", hadm)
    total, rows = newest(ctx, "labevents", sid, where, "charttime", ("labevent_id",), count)
    found = [{**r, "label": joined(items, r["itemid"], "label")} for r in rows]
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        low, high = fhir.as_number(r["ref_range_lower"]), fhir.as_number(r["ref_range_upper"])
        unit = r["valueuom"]
        label = r["label"] or str(r["itemid"])
        comment = str(r["comments"] or "").strip()
        out.append(
            {
                **fhir.observation(
                    f"lab-{r['labevent_id']}",
                    sid,
                    "laboratory",
                    fhir.named_concept("mimic-iv/itemid", str(r["itemid"]), label),
                ),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(text(r["charttime"])),
                "valueQuantity": quantity(value, unit),
                "valueString": None
                if value is not None
                else (r["value"] if r["value"] not in (None, "") else None),
                "interpretation": interpretation(value, low, high, r["flag"]),
                "referenceRange": [{"low": quantity(low, unit), "high": quantity(high, unit)}]
                if low is not None or high is not None
                else None,
                "note": [{"text": comment}] if comment and comment != "___" else None,
            }
        )
    return bundle(out, total)


def _vitals(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    items = lookup(ctx, "d_items", "itemid")
    ids = distinct(ctx, "chartevents", sid, "itemid", Where().within(window, "charttime", False))
    label_of = {i: joined(items, i, "label") for i in ids}
    omr = [
        r for r in subject_rows(ctx, "omr", sid) if window.keeps(r["chartdate"], use_start=False)
    ]
    if hadm is not None:  # OMR has no admission: keep the admission's days
        stay = next(a for a in subject_rows(ctx, "admissions", sid) if a["hadm_id"] == hadm)
        first, last = (stamp(stay[k]) for k in ("admittime", "dischtime"))
        omr = [
            r
            for r in omr
            if first is not None
            and last is not None
            and r["chartdate"] is not None
            and first.date() <= r["chartdate"] <= last.date()
        ]
    use_omr = False
    itemids = None
    if code is not None:  # match on the distinct items, then fetch only their rows
        match = match_label(code, label_of.values())
        if match.matched:
            chosen = set(match.labels)
            itemids = [i for i, label in label_of.items() if label in chosen]
        else:
            omr_match = match_label(code, (r["result_name"] for r in omr))
            if not omr_match.matched:
                merged = LabelMatch(
                    (), "none", tuple(dict.fromkeys(match.closest + omr_match.closest))[:6]
                )
                return bundle([], 0, miss_hint("vital sign", code, merged))
            use_omr = True
            chosen = set(omr_match.labels)
            omr = [r for r in omr if r["result_name"] in chosen]
    elif not any(label_of.values()):
        use_omr = True
    if use_omr:
        return _omr(sid, omr, window, count)
    where = Where().within(window, "charttime").among("itemid", itemids)
    if hadm is not None:  # the admission's rows, or its ICU stays'
        stays = [s["stay_id"] for s in subject_rows(ctx, "icustays", sid) if s["hadm_id"] == hadm]
        term, in_stays = f"(hadm_id = ? OR {Where.IN.format('stay_id', 'BIGINT')})", set(stays)
        where.add(term, lambda r: r["hadm_id"] == hadm or r["stay_id"] in in_stays, hadm, stays)
    total, rows = newest(ctx, "chartevents", sid, where, "charttime", ("itemid",), count)
    found = [  # labelled once chosen: a big chart has hundreds of thousands of rows
        {
            **r,
            "label": joined(items, r["itemid"], "label"),
            "unitname": joined(items, r["itemid"], "unitname"),
        }
        for r in rows
    ]
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        label = r["label"] or str(r["itemid"])
        when = text(r["charttime"])
        digits = re.sub(r"\D", "", str(when))[:14]
        out.append(
            {
                **fhir.observation(
                    fhir.safe_id(f"vital-{r['stay_id']}-{r['itemid']}-{digits}"),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
                ),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(when),
                "valueQuantity": quantity(value, r["valueuom"] or r["unitname"]),
                "valueString": None if value is not None else r["value"],
            }
        )
    return bundle(out, total)


def _omr(sid: int, omr: list[dict[str, Any]], window: Window, count: int) -> dict[str, Any]:
    omr = [r for r in omr if window.keeps(r["chartdate"])]
    found = order(omr, by("chartdate", desc=True), by("seq_num"), by("result_name"))[:count]
    out = []
    for r in found:
        name = str(r["result_name"])
        when = text(r["chartdate"])
        value = fhir.as_number(r["result_value"])
        unit = re.search(r"\(([^)]+)\)", name)
        out.append(
            {
                **fhir.observation(
                    fhir.stable_id("omr", sid, when, r["seq_num"], name),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/omr", name, name),
                ),
                "effectiveDateTime": str(when)[:10],
                "valueQuantity": quantity(value, unit.group(1) if unit else None),
                "valueString": None if value is not None else r["result_value"],
            }
        )
    return bundle(out, len(omr))


#: A microbiology row's time: its chart time, else its chart date.
MICRO_TIME: Expression = (
    'COALESCE("charttime", "chartdate")',
    lambda r: r["charttime"] if r["charttime"] is not None else r["chartdate"],
)
#: The columns a microbiology ``code`` is looked for in.
_MICRO_TEXT = ("spec_type_desc", "test_name", "org_name")


def micro_where(
    ctx: ToolContext, sid: int, hadm: int | None, window: Window, code: str | None = None
) -> Where:
    """The subject's microbiology rows of the admission in the window; ``code`` matches
    specimen, test or organism (on their distinct values, in Python: ``contains``)."""
    where = Where().equal("hadm_id", hadm).within(window, MICRO_TIME)
    needle = normalize_micro(code) if code is not None else ""
    if needle:
        names = [
            [v for v in distinct(ctx, "microbiologyevents", sid, k, where) if contains(v, needle)]
            for k in _MICRO_TEXT
        ]
        where.add(
            "(" + " OR ".join(Where.IN.format(k, "VARCHAR") for k in _MICRO_TEXT) + ")",
            lambda r: any(contains(r[k], needle) for k in _MICRO_TEXT),
            *names,
        )
    return where


def micro_rows(ctx: ToolContext, sid: int, where: Where) -> list[dict[str, Any]]:
    """The microbiology rows ``where`` keeps, newest first, each with ``when`` (``MICRO_TIME``)
    and ``t``, that time as text."""
    found = [
        {**r, "when": (when := MICRO_TIME[1](r)), "t": text(when)}
        for r in rows(ctx, "microbiologyevents", sid, where)
    ]
    return order(
        found,
        by("when", desc=True),
        by("micro_specimen_id"),
        by("test_seq"),
        by("isolate_num"),
        by("ab_name"),
        by("org_name"),  # two organisms of one isolate number: a stable, readable order
    )


def normalize_micro(code: str) -> str:
    """'blood culture' -> 'blood'; generic words ('culture', 'micro') mean every specimen."""
    words = [
        w
        for w in re.split(r"\s+", code.lower().strip())
        if w not in {"culture", "cultures", "micro", "microbiology", "cx"}
    ]
    return " ".join(words)


def _micro_observations(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in micro_rows(ctx, sid, micro_where(ctx, sid, hadm, window, code)):
        key = (r["micro_specimen_id"], r["test_itemid"], r["org_name"], r["isolate_num"])
        groups.setdefault(key, []).append(r)
    out = []
    for key, items in list(groups.items())[:count]:
        first = items[0]
        organism = first["org_name"]
        comment = str(first["comments"] or "").strip()
        value = organism or (comment if comment and comment != "___" else "No organism reported")
        components = [
            {
                "code": {"text": r["ab_name"]},
                "valueString": " ".join(x for x in (r["interpretation"], r["dilution_text"]) if x)
                or "reported",
            }
            for r in items
            if r["ab_name"]
        ]
        out.append(
            {
                **fhir.observation(
                    fhir.safe_id(
                        f"micro-{key[0]}-{key[1]}-{key[3] if key[3] is not None else 0}-{fhir.stable_id('o', key[2])[2:8]}"
                    ),
                    sid,
                    "laboratory",
                    {
                        "text": f"{first['test_name'] or 'Culture'} ({first['spec_type_desc'] or 'specimen'})"
                    },
                    category_text="Microbiology",
                ),
                "encounter": fhir.encounter_ref(first["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(first["t"]),
                "valueString": value,
                "component": components or None,
            }
        )
    hint = None
    if not out and code is not None:
        hint = f"No microbiology specimen, test or organism matching '{code}' for this patient."
    return bundle(out, len(groups), hint)
