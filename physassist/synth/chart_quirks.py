"""Two more MIMIC-IV quirks the synthetic cohort carries, for the clinical timeline's rules
(``physassist/timeline.py``, ``physassist/lab_artifacts.py``). Deterministic: no draws from a
random stream, so every other value stays as it was.

* **One order, two rows**: metoprolol succinate XL ordered as a 25 mg and a 50 mg tablet, two
  prescription rows of one ``poe_id`` (each its own ``pharmacy_id``), charted as one 75 mg dose
  (``emar_detail``: a 25 mg and a 50 mg component, ``dose_due`` 75), as MIMIC-IV writes subject
  10020944's.
* **A contaminated draw**: in the anchor admission of one subject in :data:`DRAW_EVERY`, a
  sample drawn from a line two hours before a later chemistry draw: glucose many times its
  level, bicarbonate high, potassium and chloride low, every one back at the draw after it (the
  demo's subject 10007928, glucose 942).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from physassist.synth.plan import SubjectPlan
from physassist.synth.writer import conform

#: (formulary code of the order, its rows' doses as strengths): the split order.
SPLIT_CODE, SPLIT_DOSES = "METO50XL", ("25", "50")
SPLIT_ID_OFFSET = 50_000_000  # the second row's pharmacy_id = the first's + this
DRAW_EVERY = 9  # subjects with idx % DRAW_EVERY == DRAW_AT get a contaminated draw
DRAW_AT = 4
DRAW_BEFORE = dt.timedelta(hours=2)
DRAW_ID_OFFSET = 8_000_000_000  # labevent_id / specimen_id offset of the contaminated rows
#: itemid -> the contaminated value from the next draw's value (glucose from a dextrose line).
CONTAMINATED: dict[int, Callable[[float], float]] = {
    50931: lambda v: round(v * 8.0),
    50882: lambda v: 45.0,
    50971: lambda v: round(v * 0.55, 1),
    50902: lambda v: round(v * 0.8),
}


def _rows(name: str, data: Any) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = conform(name, data).to_pylist()
    return rows


def split_orders(tables: dict[str, Any]) -> None:
    """Write each metoprolol succinate XL order as two rows (module docstring; in place)."""
    rx = _rows("prescriptions", tables["prescriptions"])
    first = {r["pharmacy_id"] for r in rx if r["formulary_drug_cd"] == SPLIT_CODE}
    if not first:
        return
    low, high = SPLIT_DOSES
    total = f"{int(low) + int(high)}"
    out = []
    for r in rx:
        out.append(r)
        if r["pharmacy_id"] in first:
            r.update(dose_val_rx=low, prod_strength=f"{low} mg Tablet")
            out.append(
                {
                    **r,
                    "pharmacy_id": r["pharmacy_id"] + SPLIT_ID_OFFSET,
                    "dose_val_rx": high,
                    "prod_strength": f"{high} mg Tablet",
                }
            )
    tables["prescriptions"] = conform("prescriptions", pa.Table.from_pylist(out))
    ph = _rows("pharmacy", tables["pharmacy"])
    ph += [
        {**p, "pharmacy_id": p["pharmacy_id"] + SPLIT_ID_OFFSET}
        for p in ph
        if p["pharmacy_id"] in first
    ]
    tables["pharmacy"] = conform("pharmacy", pa.Table.from_pylist(ph))
    events = {e["emar_id"] for e in _rows("emar", tables["emar"]) if e["pharmacy_id"] in first}
    detail = []
    for d in _rows("emar_detail", tables["emar_detail"]):
        detail.append(d)
        if d["emar_id"] not in events:
            continue
        if d["parent_field_ordinal"] is None:
            d["dose_due"] = total
        else:
            d["dose_given"] = low
            detail.append(
                {
                    **d,
                    "parent_field_ordinal": "2.1",
                    "dose_given": high,
                    "pharmacy_id": d["pharmacy_id"] + SPLIT_ID_OFFSET,
                }
            )
    tables["emar_detail"] = conform("emar_detail", pa.Table.from_pylist(detail))


def contaminated_draws(labevents: pa.Table, plans: list[SubjectPlan]) -> pa.Table:
    """``labevents`` plus a contaminated draw in the chosen admissions (module docstring)."""
    chosen = {p.anchor.hadm_id for p in plans if p.idx % DRAW_EVERY == DRAW_AT}
    rows = labevents.to_pylist()
    added = []
    for hadm in sorted(chosen):
        mine = [r for r in rows if r["hadm_id"] == hadm and r["itemid"] in CONTAMINATED]
        times = sorted({r["charttime"] for r in mine if r["itemid"] == 50931})
        if len(times) < 3:
            continue
        after = times[-2]  # a draw with one before it and one after it
        added += [_contaminated(r) for r in mine if r["charttime"] == after]
    if not added:
        return labevents
    return pa.Table.from_pylist(rows + added, schema=labevents.schema).sort_by(
        [("subject_id", "ascending"), ("charttime", "ascending"), ("itemid", "ascending")]
    )


def _contaminated(row: dict[str, Any]) -> dict[str, Any]:
    value = float(CONTAMINATED[row["itemid"]](row["valuenum"]))
    low, high = row["ref_range_lower"], row["ref_range_upper"]
    off = (low is not None and value < low) or (high is not None and value > high)
    return {
        **row,
        "labevent_id": row["labevent_id"] + DRAW_ID_OFFSET,
        "specimen_id": row["specimen_id"] + DRAW_ID_OFFSET,
        "charttime": row["charttime"] - DRAW_BEFORE,
        "storetime": row["storetime"] - DRAW_BEFORE,
        "value": f"{value:g}",
        "valuenum": value,
        "flag": "abnormal" if off else None,
    }
