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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from physassist.synth.catalog import LABS
from physassist.synth.plan import SubjectPlan
from physassist.synth.writer import Tables, conform

#: (formulary code of the order, its rows' doses as strengths): the split order.
SPLIT_CODE, SPLIT_DOSES = "METO50XL", ("25", "50")
SPLIT_ID_OFFSET = 50_000_000  # the second row's pharmacy_id = the first's + this
DRAW_EVERY = 9  # subjects with idx % DRAW_EVERY == DRAW_AT get a contaminated draw
DRAW_AT = 4
DRAW_BEFORE = dt.timedelta(hours=2)
DRAW_ID_OFFSET = 8_000_000_000  # labevent_id / specimen_id offset of the contaminated rows
#: itemid -> the contaminated value from the next draw's value (glucose from a dextrose line).
GLUCOSE = LABS["glu"].itemid
CONTAMINATED: dict[int, Callable[[float], float]] = {
    GLUCOSE: lambda v: round(v * 8.0),
    LABS["hco3"].itemid: lambda v: 45.0,
    LABS["k"].itemid: lambda v: round(v * 0.55, 1),
    LABS["cl"].itemid: lambda v: round(v * 0.8),
}


def _replaced(
    table: pa.Table, mask: pa.ChunkedArray, fix: Callable[[dict[str, Any]], list[dict[str, Any]]]
) -> pa.Table:
    """``table`` with each row where ``mask`` holds replaced, in place, by the rows ``fix`` makes
    of it. Only those rows pass through Python: the quirks touch a few of a chunk's many rows."""
    hit = np.flatnonzero(pc.fill_null(mask, False).to_numpy())
    if not len(hit):
        return table
    made = [fix(r) for r in table.take(hit).to_pylist()]
    extra = pa.Table.from_pylist([row for rows in made for row in rows], schema=table.schema)
    kept = np.ones(table.num_rows, dtype=bool)
    kept[hit] = False
    # each made row takes its source row's place; a stable sort keeps the made rows in order
    place = np.concatenate([np.flatnonzero(kept), np.repeat(hit, [len(rows) for rows in made])])
    whole = pa.concat_tables([table.filter(pa.array(kept)), extra])
    return whole.take(np.argsort(place, kind="stable"))


def split_orders(tables: Tables) -> None:
    """Write each metoprolol succinate XL order as two rows (module docstring; in place)."""
    rx = conform("prescriptions", tables["prescriptions"])
    split = pc.equal(rx["formulary_drug_cd"], SPLIT_CODE)
    first = pc.unique(pc.filter(rx["pharmacy_id"], pc.fill_null(split, False)))
    if not len(first):
        return
    low, high = SPLIT_DOSES
    total = f"{int(low) + int(high)}"

    def two_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
        r.update(dose_val_rx=low, prod_strength=f"{low} mg Tablet")
        second = {"dose_val_rx": high, "prod_strength": f"{high} mg Tablet"}
        return [r, {**r, "pharmacy_id": r["pharmacy_id"] + SPLIT_ID_OFFSET, **second}]

    tables["prescriptions"] = _replaced(rx, split, two_rows)
    ph = conform("pharmacy", tables["pharmacy"])
    copies = ph.filter(pc.is_in(ph["pharmacy_id"], first)).to_pylist()
    for p in copies:
        p["pharmacy_id"] += SPLIT_ID_OFFSET
    tables["pharmacy"] = pa.concat_tables([ph, pa.Table.from_pylist(copies, schema=ph.schema)])
    emar = conform("emar", tables["emar"])
    events = pc.unique(pc.filter(emar["emar_id"], pc.is_in(emar["pharmacy_id"], first)))

    def two_components(d: dict[str, Any]) -> list[dict[str, Any]]:
        if d["parent_field_ordinal"] is None:
            d["dose_due"] = total
            return [d]
        d["dose_given"] = low
        second = {"parent_field_ordinal": "2.1", "dose_given": high}
        return [d, {**d, "pharmacy_id": d["pharmacy_id"] + SPLIT_ID_OFFSET, **second}]

    detail = conform("emar_detail", tables["emar_detail"])
    tables["emar_detail"] = _replaced(detail, pc.is_in(detail["emar_id"], events), two_components)


def contaminated_draws(labevents: pa.Table, plans: list[SubjectPlan]) -> pa.Table:
    """``labevents`` plus a contaminated draw in the chosen admissions (module docstring)."""
    chosen = pa.array(sorted({p.anchor.hadm_id for p in plans if p.idx % DRAW_EVERY == DRAW_AT}))
    near = pc.and_(
        pc.is_in(labevents["hadm_id"], chosen),
        pc.is_in(labevents["itemid"], pa.array(list(CONTAMINATED), pa.int64())),
    )
    by_hadm: dict[int, list[dict[str, Any]]] = {}
    for r in labevents.filter(near).to_pylist():
        by_hadm.setdefault(r["hadm_id"], []).append(r)
    added = []
    for hadm in sorted(by_hadm):
        mine = by_hadm[hadm]
        times = sorted({r["charttime"] for r in mine if r["itemid"] == GLUCOSE})
        if len(times) < 3:
            continue
        after = times[-2]  # a draw with one before it and one after it
        added += [_contaminated(r) for r in mine if r["charttime"] == after]
    if not added:
        return labevents
    extra = pa.Table.from_pylist(added, schema=labevents.schema)
    return pa.concat_tables([labevents, extra]).sort_by(
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
