"""Medication tables from the plans' orders: `prescriptions`, `pharmacy`, `emar`, `emar_detail`.

Orders are few per subject; their doses are many, so the eMAR is expanded in numpy: scheduled
doses fall on the frequency's hours (pharmacy.disp_sched) between start and stop, as-needed orders
get their planned number of doses, one-time orders one dose. Doses in an order's hold window are
charted 'Hold Dose' (no dose given), a few random doses 'Not Given' (patient refused).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from physassist.synth.catalog import DRUG_CODES, DRUG_INDEX, DRUGS, SCHEDULE_HOURS
from physassist.synth.plan import DAY, HOUR, SubjectPlan
from physassist.synth.planner import PROVIDERS
from physassist.synth.quirks import blank_events

if TYPE_CHECKING:
    from physassist.synth.writer import Columns

_D = [DRUGS[c] for c in DRUG_CODES]


def _col(attr: str) -> pa.Array:
    return pa.array([getattr(d, attr) for d in _D], pa.string())


_DRUG, _STRENGTH, _DOSE, _UNIT = _col("drug"), _col("strength"), _col("dose"), _col("unit")
_FORMVAL, _FORMUNIT, _ROUTE, _FREQ, _CD = (
    _col("form_val"),
    _col("form_unit"),
    _col("route"),
    _col("freq"),
    _col("formulary_cd"),
)
_FORM_RX = pa.array(
    [d.form_unit if d.form_unit in ("TAB", "CAP") else None for d in _D], pa.string()
)
_PER_DAY = np.array([float(d.per_day) if d.per_day else np.nan for d in _D])
_IS_PRN = np.array(["PRN" in d.freq for d in _D])
_IS_ONCE = np.array([d.freq == "ONCE" for d in _D])
_HOURS = np.full((len(_D), 4), -1, dtype=np.int64)
_NHOURS = np.zeros(len(_D), dtype=np.int64)
for _i, _d in enumerate(_D):
    if not _IS_PRN[_i] and not _IS_ONCE[_i]:
        hrs = SCHEDULE_HOURS[_d.freq]
        _HOURS[_i, : len(hrs)] = hrs
        _NHOURS[_i] = len(hrs)
_SCHED = pa.array(
    [", ".join(f"{h:02d}" for h in SCHEDULE_HOURS.get(d.freq, ())) or None for d in _D], pa.string()
)
_PROC = pa.array(
    [
        "IV Piggyback"
        if d.route == "IV" and d.unit in ("g", "mg") and d.form_unit in ("BAG", "VIAL")
        else "IV Large Volume"
        if d.route == "IV" and d.form_unit == "mL" and d.form_val in ("50", "100")
        else "Unit Dose"
        for d in _D
    ],
    pa.string(),
)
_ADMIN_TYPE = pa.array(
    [
        "IV Flush"
        if c == "ns_flush"
        else "Insulin SC Sliding Scale"
        if c == "insulin_ss"
        else "IV Infusion"
        if DRUGS[c].route == "IV" and DRUGS[c].form_unit in ("BAG", "mL")
        else "Standard Maintenance Medication"
        for c in DRUG_CODES
    ],
    pa.string(),
)
_PROVIDERS = pa.array(PROVIDERS, pa.string())
#: A null cell for ``np.where`` (what numpy makes of a bare ``None``; its stubs take no ``None``).
_NULL = np.array(None, dtype=object)


def _orders_arrays(plans: list[SubjectPlan]) -> Columns | None:
    rows = []
    for si, plan in enumerate(plans):
        for j, o in enumerate(plan.orders):
            rows.append(
                (
                    si,
                    plan.subject_id,
                    plan.idx,
                    o.hadm_id,
                    DRUG_INDEX[o.drug],
                    o.start,
                    o.stop,
                    o.hold_from,
                    o.hold_n,
                    o.n_prn,
                    o.status,
                    j,
                )
            )
    if not rows:
        return None
    cols = list(zip(*rows, strict=True))
    names = (
        "si",
        "subject_id",
        "idx",
        "hadm_id",
        "drug",
        "start",
        "stop",
        "hold_from",
        "hold_n",
        "n_prn",
        "status",
        "local",
    )
    out = {
        n: (np.asarray(c) if n != "status" else list(c)) for n, c in zip(names, cols, strict=True)
    }
    order = np.lexsort((out["local"], out["start"], out["subject_id"]))
    out = {
        n: (v[order] if isinstance(v, np.ndarray) else [v[i] for i in order])
        for n, v in out.items()
    }
    # poe_seq: order position within subject (1-based, by start time)
    subj = out["subject_id"]
    first = np.r_[0, np.nonzero(np.diff(subj))[0] + 1]
    pos = np.arange(len(subj)) - np.repeat(first, np.diff(np.r_[first, len(subj)]))
    out["poe_seq"] = pos + 1
    out["pharmacy_id"] = out["idx"] * 1000 + pos + 100_000_000
    return out


def _poe_id(subject_id: np.ndarray, seq: np.ndarray) -> pa.Array:
    return pc.binary_join_element_wise(
        pc.cast(pa.array(subject_id), pa.string()), pc.cast(pa.array(seq), pa.string()), "-"
    )


def med_tables(plans: list[SubjectPlan], rng: np.random.Generator) -> dict[str, Columns]:
    o = _orders_arrays(plans)
    if o is None:
        return {}
    n = len(o["drug"])
    drug = pa.array(o["drug"])
    poe = _poe_id(o["subject_id"], o["poe_seq"])
    start = o["start"].astype("datetime64[s]")
    stop = o["stop"].astype("datetime64[s]")
    provider = pc.take(_PROVIDERS, pa.array(rng.integers(0, len(PROVIDERS), n)))
    prescriptions = {
        "subject_id": o["subject_id"],
        "hadm_id": o["hadm_id"],
        "pharmacy_id": o["pharmacy_id"],
        "poe_id": poe,
        "poe_seq": o["poe_seq"],
        "order_provider_id": provider,
        "starttime": pa.array(start),
        "stoptime": pa.array(stop),
        "drug_type": pa.array(["MAIN"] * n),
        "drug": pc.take(_DRUG, drug),
        "formulary_drug_cd": pc.take(_CD, drug),
        "gsn": pa.nulls(n, pa.string()),
        "ndc": pa.nulls(n, pa.string()),
        "prod_strength": pc.take(_STRENGTH, drug),
        "form_rx": pc.take(_FORM_RX, drug),
        "dose_val_rx": pc.take(_DOSE, drug),
        "dose_unit_rx": pc.take(_UNIT, drug),
        "form_val_disp": pc.take(_FORMVAL, drug),
        "form_unit_disp": pc.take(_FORMUNIT, drug),
        "doses_per_24_hrs": pa.array(_PER_DAY[o["drug"]]),
        "route": pc.take(_ROUTE, drug),
    }
    enter = o["start"] - rng.integers(10, 90, n) * 60
    los_h = (o["stop"] - o["start"]) / HOUR
    pharmacy = {
        "subject_id": o["subject_id"],
        "hadm_id": o["hadm_id"],
        "pharmacy_id": o["pharmacy_id"],
        "poe_id": poe,
        "starttime": pa.array(start),
        "stoptime": pa.array(stop),
        "medication": pc.take(_DRUG, drug),
        "proc_type": pc.take(_PROC, drug),
        "status": pa.array(o["status"], pa.string()),
        "entertime": pa.array(enter.astype("datetime64[s]")),
        "verifiedtime": pa.array((enter + rng.integers(2, 40, n) * 60).astype("datetime64[s]")),
        "route": pc.take(_ROUTE, drug),
        "frequency": pc.take(_FREQ, drug),
        "disp_sched": pc.take(_SCHED, drug),
        "infusion_type": pa.nulls(n, pa.string()),
        "sliding_scale": pa.array(
            np.where(o["drug"] == DRUG_INDEX["insulin_ss"], "Y", _NULL), pa.string()
        ),
        "lockout_interval": pa.nulls(n, pa.string()),
        "basal_rate": pa.nulls(n, pa.float64()),
        "one_hr_max": pa.nulls(n, pa.string()),
        "doses_per_24_hrs": pa.array(_PER_DAY[o["drug"]]),
        "duration": pa.array(np.round(los_h, 0)),
        "duration_interval": pa.array(["Hours"] * n),
        "expiration_value": pa.array(np.full(n, 36, dtype=np.int64)),
        "expiration_unit": pa.array(["Hours"] * n),
        "expirationdate": pa.nulls(n, pa.timestamp("s")),
        "dispensation": pa.array(["Omnicell"] * n),
        "fill_quantity": pa.nulls(n, pa.string()),
    }
    emar, detail = _emar(o, rng)
    return {
        "prescriptions": prescriptions,
        "pharmacy": pharmacy,
        "emar": emar,
        "emar_detail": detail,
    }


def _emar(o: Columns, rng: np.random.Generator) -> tuple[Columns, Columns]:
    d = o["drug"]
    start, stop = o["start"], o["stop"]
    nh = _NHOURS[d]
    day0 = start // DAY
    ndays = stop // DAY - day0 + 1
    cand = np.where(_IS_PRN[d], o["n_prn"], np.where(_IS_ONCE[d], 1, ndays * nh))
    oi = np.repeat(np.arange(len(d)), cand)
    offs = np.cumsum(cand) - cand
    j = np.arange(int(cand.sum())) - np.repeat(offs, cand)
    dd = d[oi]
    nh_r = np.maximum(nh[oi], 1)
    sched = (day0[oi] + j // nh_r) * DAY + _HOURS[dd, j % nh_r] * HOUR
    sched = np.where(_IS_PRN[dd], start[oi] + (j + 1) * 7 * HOUR, sched)
    sched = np.where(_IS_ONCE[dd], start[oi] + 15 * 60, sched)
    keep = (sched >= start[oi]) & (sched < stop[oi])
    oi, sched = oi[keep], sched[keep]
    # dose index within its order (rows are already in time order per order)
    first = np.r_[0, np.nonzero(np.diff(oi))[0] + 1] if len(oi) else np.array([], dtype=np.int64)
    k = (
        np.arange(len(oi)) - np.repeat(first, np.diff(np.r_[first, len(oi)]))
        if len(oi)
        else np.array([], dtype=np.int64)
    )
    hold = (
        (o["hold_from"][oi] >= 0)
        & (k >= o["hold_from"][oi])
        & (k < o["hold_from"][oi] + o["hold_n"][oi])
    )
    refused = (~hold) & (rng.random(len(oi)) < 0.012) & (~_IS_ONCE[d[oi]])
    event = np.where(hold, "Hold Dose", np.where(refused, "Not Given", "Administered"))
    chart = (
        sched + np.where(hold, rng.integers(0, 20, len(oi)), rng.integers(-10, 50, len(oi))) * 60
    )
    subject_id = o["subject_id"][oi]
    order = np.lexsort((o["poe_seq"][oi], chart, subject_id))
    oi, sched, chart, event, hold, subject_id = (
        a[order] for a in (oi, sched, chart, event, hold, subject_id)
    )
    m = len(oi)
    first_s = (
        np.r_[0, np.nonzero(np.diff(subject_id))[0] + 1] if m else np.array([], dtype=np.int64)
    )
    seq = (
        (np.arange(m) - np.repeat(first_s, np.diff(np.r_[first_s, m])) + 1)
        if m
        else np.array([], dtype=np.int64)
    )
    emar_id = _poe_id(subject_id, seq)
    drug = pa.array(o["drug"][oi])
    emar = {
        "subject_id": subject_id,
        "hadm_id": o["hadm_id"][oi],
        "emar_id": emar_id,
        "emar_seq": seq,
        "poe_id": _poe_id(subject_id, o["poe_seq"][oi]),
        "pharmacy_id": o["pharmacy_id"][oi],
        "enter_provider_id": pa.nulls(m, pa.string()),
        "charttime": pa.array(chart.astype("datetime64[s]")),
        "medication": pc.take(_DRUG, drug),
        "event_txt": blank_events(event),
        "scheduletime": pa.array(sched.astype("datetime64[s]")),
        "storetime": pa.array((chart + rng.integers(0, 12, m) * 60).astype("datetime64[s]")),
    }
    # emar_detail: a parent row per eMAR event; a child row (the product given) for given doses
    given = event == "Administered"
    dose = pc.take(_DOSE, drug)
    is_ss = o["drug"][oi] == DRUG_INDEX["insulin_ss"]
    dose_given = pc.if_else(
        pa.array(is_ss), pc.cast(pa.array(rng.integers(2, 9, m)), pa.string()), dose
    )
    parent = _detail_rows(
        m,
        subject_id,
        emar_id,
        seq,
        None,
        pc.take(_ADMIN_TYPE, drug),
        None,
        pa.array(np.where(given, "No", _NULL), pa.string()),
        dose,
        pc.take(_UNIT, drug),
        None,
        None,
        pc.take(_ROUTE, drug),
    )
    gi = np.nonzero(given)[0]
    gdrug = pa.array(o["drug"][oi][gi])
    child = _detail_rows(
        len(gi),
        subject_id[gi],
        emar_id.take(pa.array(gi)),
        seq[gi],
        "1.1",
        None,
        o["pharmacy_id"][oi][gi],
        None,
        None,
        None,
        dose_given.take(pa.array(gi)),
        pc.take(_UNIT, gdrug),
        None,
        product=(
            pc.take(_FORMVAL, gdrug),
            pc.take(_FORMUNIT, gdrug),
            pc.take(_CD, gdrug),
            pc.take(_DRUG, gdrug),
        ),
    )
    both = {
        k: pa.concat_arrays([_as_arr(parent[k], m), _as_arr(child[k], len(gi))]) for k in parent
    }
    # order: by subject, emar_seq, parent before child
    sub = np.concatenate([subject_id, subject_id[gi]])
    sq = np.concatenate([seq, seq[gi]])
    lvl = np.concatenate([np.zeros(m, dtype=np.int64), np.ones(len(gi), dtype=np.int64)])
    idx = pa.array(np.lexsort((lvl, sq, sub)))
    return emar, {k: v.take(idx) for k, v in both.items()}


def _as_arr(v: object, n: int) -> pa.Array:
    if isinstance(v, pa.ChunkedArray):
        return v.combine_chunks()
    if isinstance(v, pa.Array):
        return v
    return pa.array(v)


def _detail_rows(
    n: int,
    subject_id: np.ndarray,
    emar_id: pa.Array,
    seq: np.ndarray,
    ordinal: str | None,
    admin_type: pa.Array | None,
    pharmacy_id: np.ndarray | None,
    not_given: pa.Array | None,
    dose_due: pa.Array | None,
    due_unit: pa.Array | None,
    dose_given: pa.Array | None,
    given_unit: pa.Array | None,
    route: pa.Array | None,
    product: tuple[pa.Array, pa.Array, pa.Array, pa.Array] | None = None,
) -> Columns:
    def s(v: pa.Array | str | None) -> pa.Array:
        if v is None:
            return pa.nulls(n, pa.string())
        if isinstance(v, str):
            return pa.array([v] * n, pa.string())
        return v

    out = {
        "subject_id": pa.array(subject_id, pa.int64()),
        "emar_id": emar_id,
        "emar_seq": pa.array(seq, pa.int64()),
        "parent_field_ordinal": s(ordinal),
        "administration_type": s(admin_type),
        "pharmacy_id": pa.nulls(n, pa.int64())
        if pharmacy_id is None
        else pa.array(pharmacy_id, pa.int64()),
        "barcode_type": s("if" if ordinal else None),
        "reason_for_no_barcode": s(None),
        "complete_dose_not_given": s(not_given),
        "dose_due": s(dose_due),
        "dose_due_unit": s(due_unit),
        "dose_given": s(dose_given),
        "dose_given_unit": s(given_unit),
        "will_remainder_of_dose_be_given": s(None if ordinal else "No"),
        "product_amount_given": s(product[0] if product else None),
        "product_unit": s(product[1] if product else None),
        "product_code": s(product[2] if product else None),
        "product_description": s(product[3] if product else None),
        "product_description_other": s(None),
        "prior_infusion_rate": s(None),
        "infusion_rate": s(None),
        "infusion_rate_adjustment": s(None),
        "infusion_rate_adjustment_amount": s(None),
        "infusion_rate_unit": s(None),
        "route": s(route),
        "infusion_complete": s(None),
        "completion_interval": s(None),
        "new_iv_bag_hung": s(None),
        "continued_infusion_in_other_location": s(None),
        "restart_interval": s(None),
        "side": s(None),
        "site": s(None),
        "non_formulary_visual_verification": s(None),
    }
    return out
