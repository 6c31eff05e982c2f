"""strict ``Observation.search``: laboratory (exact -> synonym -> fuzzy labels, true totals),
vital signs (ICU chartevents honouring admission and dates, OMR fallback) and microbiology
Observations from ``microbiologyevents``; everything bounded by the session cutoff."""

from __future__ import annotations

import re
from typing import Any

from . import fhir
from .context import ToolContext
from .db import and_equal, like_escape, placeholders, rows, rows_and_total, ts
from .labels import LabelMatch, match_label
from .schemas import DEFAULT_COUNT
from .strict_common import (
    Window,
    admission_miss,
    bundle,
    interpretation,
    miss_hint,
    quantity,
)


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
    params: list[Any] = [sid]
    base = (
        "FROM labevents l LEFT JOIN d_labitems d ON d.itemid = l.itemid WHERE l.subject_id = ?"
        + window.sql("l.charttime", params, use_start=False)
    )
    if code is not None:
        labels = rows(ctx, f"SELECT DISTINCT d.label, d.fluid {base}", params)
        match = match_label(code, [r["label"] for r in labels if r["label"]])
        if not match.matched:
            return bundle([], 0, miss_hint("laboratory test", code, match))
        chosen = set(match.labels)
        fluids = {r["fluid"] for r in labels if r["label"] in chosen}
        params2 = list(params)
        base += f" AND d.label IN ({placeholders(chosen)})"
        params2.extend(sorted(chosen))
        if (
            len(fluids) > 1
            and "Blood" in fluids
            and not any(f and f.lower() in code.lower() for f in fluids - {"Blood"})
        ):
            base += " AND d.fluid = 'Blood'"  # "Creatinine" means serum unless a fluid is named
        params = params2
    base += and_equal("l.hadm_id", hadm, params)
    base += window.sql("l.charttime", params)
    sql = (
        f"SELECT l.labevent_id, l.itemid, l.hadm_id, {ts('l.charttime')} AS t, l.value, l.valuenum, l.valueuom, "
        "l.ref_range_lower, l.ref_range_upper, l.flag, l.comments, d.label, count(*) OVER () AS n_total "
        f"{base} ORDER BY l.charttime DESC, l.labevent_id LIMIT ?"
    )
    found, total = rows_and_total(ctx, sql, params + [count])
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
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
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
    params: list[Any] = [sid]
    base = (
        "FROM chartevents c LEFT JOIN d_items d ON d.itemid = c.itemid WHERE c.subject_id = ?"
        + window.sql("c.charttime", params, use_start=False)
    )
    chart_labels = [
        r["label"] for r in rows(ctx, f"SELECT DISTINCT d.label {base}", params) if r["label"]
    ]
    omr_params: list[Any] = [sid]
    omr_base = "FROM omr WHERE subject_id = ?" + window.sql(
        "chartdate", omr_params, use_start=False
    )
    if hadm is not None:  # OMR has no admission: keep the admission's days
        omr_base += (
            " AND CAST(chartdate AS DATE) BETWEEN (SELECT CAST(admittime AS DATE) FROM admissions WHERE hadm_id = ?)"
            " AND (SELECT CAST(dischtime AS DATE) FROM admissions WHERE hadm_id = ?)"
        )
        omr_params += [hadm, hadm]
    use_omr = False
    if code is not None:
        match = match_label(code, chart_labels)
        if match.matched:
            base += f" AND d.label IN ({placeholders(match.labels)})"
            params.extend(match.labels)
        else:
            omr_names = [
                r["result_name"]
                for r in rows(ctx, f"SELECT DISTINCT result_name {omr_base}", omr_params)
            ]
            omr_match = match_label(code, omr_names)
            if not omr_match.matched:
                merged = LabelMatch(
                    (), "none", tuple(dict.fromkeys(match.closest + omr_match.closest))[:6]
                )
                return bundle([], 0, miss_hint("vital sign", code, merged))
            use_omr = True
            omr_base += f" AND result_name IN ({placeholders(omr_match.labels)})"
            omr_params.extend(omr_match.labels)
    elif not chart_labels:
        use_omr = True
    if use_omr:
        return _omr(ctx, sid, omr_base, omr_params, window, count)
    if hadm is not None:
        base += (
            " AND (c.hadm_id = ? OR c.stay_id IN (SELECT stay_id FROM icustays WHERE hadm_id = ?))"
        )
        params += [hadm, hadm]
    base += window.sql("c.charttime", params)
    sql = (
        f"SELECT c.stay_id, c.hadm_id, c.itemid, {ts('c.charttime')} AS t, c.value, c.valuenum, c.valueuom, "
        f"d.label, d.unitname, count(*) OVER () AS n_total {base} ORDER BY c.charttime DESC, c.itemid LIMIT ?"
    )
    found, total = rows_and_total(ctx, sql, params + [count])
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        label = r["label"] or str(r["itemid"])
        stamp = re.sub(r"\D", "", str(r["t"]))[:14]
        out.append(
            {
                **fhir.observation(
                    fhir.safe_id(f"vital-{r['stay_id']}-{r['itemid']}-{stamp}"),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/icu-itemid", str(r["itemid"]), label),
                ),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
                "valueQuantity": quantity(value, r["valueuom"] or r["unitname"]),
                "valueString": None if value is not None else r["value"],
            }
        )
    return bundle(out, total)


def _omr(
    ctx: ToolContext, sid: int, base: str, params: list[Any], window: Window, count: int
) -> dict[str, Any]:
    params = list(params)
    if window.start is not None:
        base += " AND TRY_CAST(chartdate AS TIMESTAMP) >= ?"
        params.append(window.start)
    sql = (
        f"SELECT {ts('chartdate')} AS t, seq_num, result_name, result_value, count(*) OVER () AS n_total "
        f"{base} ORDER BY chartdate DESC, seq_num, result_name LIMIT ?"
    )
    found, total = rows_and_total(ctx, sql, params + [count])
    out = []
    for r in found:
        name = str(r["result_name"])
        value = fhir.as_number(r["result_value"])
        unit = re.search(r"\(([^)]+)\)", name)
        out.append(
            {
                **fhir.observation(
                    fhir.stable_id("omr", sid, r["t"], r["seq_num"], name),
                    sid,
                    "vital-signs",
                    fhir.named_concept("mimic-iv/omr", name, name),
                ),
                "effectiveDateTime": str(r["t"])[:10],
                "valueQuantity": quantity(value, unit.group(1) if unit else None),
                "valueString": None if value is not None else r["result_value"],
            }
        )
    return bundle(out, total)


def micro_rows(
    ctx: ToolContext, sid: int, hadm: int | None, window: Window, code: str | None = None
) -> list[dict[str, Any]]:
    params: list[Any] = [sid]
    when = "coalesce(charttime, chartdate)"
    sql = (
        f"SELECT micro_specimen_id, {ts(when)} AS t, hadm_id, spec_type_desc, test_itemid, test_name, "
        "org_name, isolate_num, ab_name, dilution_text, interpretation, comments "
        "FROM microbiologyevents WHERE subject_id = ?" + window.sql(when, params)
    )
    sql += and_equal("hadm_id", hadm, params)
    if code is not None and normalize_micro(code):
        needle = f"%{like_escape(normalize_micro(code))}%"
        sql += (
            " AND (spec_type_desc ILIKE ? ESCAPE '\\' OR test_name ILIKE ? ESCAPE '\\' "
            "OR org_name ILIKE ? ESCAPE '\\')"
        )
        params += [needle, needle, needle]
    return rows(
        ctx,
        sql + f" ORDER BY {when} DESC, micro_specimen_id, test_seq, isolate_num, ab_name",
        params,
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
    for r in micro_rows(ctx, sid, hadm, window, code):
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
