"""Vectorised expansion of lab and vital-sign series into `labevents` and `chartevents` rows.

Each plan contributes compact series specs (item, draws, start/end value, shape, noise). A chunk
of subjects is expanded in numpy at once, which is what makes 100k-subject cohorts with tens
of millions of lab rows feasible. Endpoints are noise-free, so the first and last value of each
anchor-admission series are exactly the plan's values (the discharge note quotes them).
Derived items are computed from the same draw: anion gap = Na - Cl - HCO3, hematocrit = 3 x
hemoglobin, eGFR = MDRD(creatinine, age, sex), mean BP = (SBP + 2 DBP) / 3.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from physassist.synth.catalog import CHART, LABS, PANEL_CODE
from physassist.synth.plan import SHAPE_FAST, SHAPE_LATE, SHAPE_NOISY, Series, SubjectPlan
from physassist.synth.planner import PROVIDERS

LAB_CODES = tuple(LABS)
LAB_IDX = {c: i for i, c in enumerate(LAB_CODES)}
CHART_CODES = tuple(CHART)
CHART_IDX = {c: i for i, c in enumerate(CHART_CODES)}

_LAB_DEC = np.array([LABS[c].decimals for c in LAB_CODES])
_LAB_ITEMID = np.array([LABS[c].itemid for c in LAB_CODES], dtype=np.int64)
_LAB_PANEL = np.array([PANEL_CODE[LABS[c].panel] for c in LAB_CODES], dtype=np.int64)
_LAB_UNIT = pa.array([LABS[c].unit for c in LAB_CODES], pa.string())
_LO = np.array(
    [
        [np.nan if LABS[c].ref_range(s)[0] is None else LABS[c].ref_range(s)[0] for s in ("M", "F")]
        for c in LAB_CODES
    ]
)
_HI = np.array(
    [
        [np.nan if LABS[c].ref_range(s)[1] is None else LABS[c].ref_range(s)[1] for s in ("M", "F")]
        for c in LAB_CODES
    ]
)
_CH_DEC = np.array([CHART[c].decimals for c in CHART_CODES])
_CH_ITEMID = np.array([CHART[c].itemid for c in CHART_CODES], dtype=np.int64)
_CH_UNIT = pa.array([CHART[c].unit for c in CHART_CODES], pa.string())
_PROVIDERS = pa.array(PROVIDERS, pa.string())
_FAST_NORM = 1.0 - np.exp(-3.0)


def _expand(
    first: np.ndarray,
    stride: np.ndarray,
    n: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    shape: np.ndarray,
    noise: np.ndarray,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Rows of all series: (series index, position k, draw index, value before rounding)."""
    total = int(n.sum())
    sid = np.repeat(np.arange(len(n)), n)
    offs = np.cumsum(n) - n
    k = np.arange(total) - np.repeat(offs, n)
    draw = first[sid] + k * stride[sid]
    nn = n[sid]
    p = k / np.maximum(nn - 1, 1)
    sh = shape[sid]
    g = np.where(
        sh == SHAPE_FAST,
        (1.0 - np.exp(-3.0 * p)) / _FAST_NORM,
        np.where(sh == SHAPE_LATE, p * p, p),
    )
    g = np.where(sh == SHAPE_NOISY, 0.0, g)
    base = start[sid] + (end[sid] - start[sid]) * g
    noisy = ((k > 0) & (k < nn - 1)) | (sh == SHAPE_NOISY)
    val = base + rng.standard_normal(total) * noise[sid] * noisy
    return sid, k, draw, val


def _expand_series(
    specs: list[tuple[int, Series]],
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_expand` over (offset of the plan's first draw, series) pairs gathered from many plans."""
    return _expand(
        np.asarray([base + s.first for base, s in specs]),
        np.asarray([s.stride for _, s in specs]),
        np.asarray([s.n for _, s in specs], dtype=np.int64),
        np.asarray([s.start for _, s in specs], float),
        np.asarray([s.end for _, s in specs], float),
        np.asarray([s.shape for _, s in specs]),
        np.asarray([s.noise for _, s in specs], float),
        rng,
    )


def _round(val: np.ndarray, dec: np.ndarray) -> np.ndarray:
    scale = 10.0**dec
    return np.round(val * scale) / scale


def _value_text_fast(val: np.ndarray, dec: np.ndarray) -> pa.Array:
    """MIMIC's `value` text: fixed decimals per item ('2.0'), unlike `valuenum` ('2')."""
    scaled = np.round(val * 10.0**dec).astype(np.int64)
    div = (10**dec).astype(np.int64)
    whole = pc.cast(pa.array(scaled // div), pa.string())
    frac = pc.utf8_lpad(pc.cast(pa.array(scaled % div), pa.string()), 1, "0")
    # pad to the item's decimals: only 0, 1 and 2 decimals occur
    frac2 = pc.utf8_lpad(pc.cast(pa.array(scaled % div), pa.string()), 2, "0")
    joined1 = pc.binary_join_element_wise(whole, frac, ".")
    joined2 = pc.binary_join_element_wise(whole, frac2, ".")
    dec_pa = pa.array(dec)
    return pc.if_else(pc.equal(dec_pa, 0), whole, pc.if_else(pc.equal(dec_pa, 1), joined1, joined2))


def _cumcount(sorted_keys: np.ndarray) -> np.ndarray:
    """Position of each row within its run of equal (sorted) keys."""
    n = len(sorted_keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    first = np.r_[0, np.nonzero(np.diff(sorted_keys))[0] + 1]
    position: np.ndarray = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
    return position


def lab_table(plans: list[SubjectPlan], rng: np.random.Generator) -> pa.Table:
    """labevents rows for a chunk of subjects, sorted by (subject_id, charttime, itemid)."""
    draw_time: list[int] = []
    draw_prio: list[int] = []
    draw_local: list[int] = []
    draw_subj: list[int] = []
    specs: list[tuple[int, Series]] = []
    s_code, s_hadm, s_subj = [], [], []
    subj_ids, subj_female, subj_age = [], [], []
    for si, plan in enumerate(plans):
        base = len(draw_time)
        draw_time.extend(plan.draws)
        draw_prio.extend(1 if p == "STAT" else 0 for p in plan.draw_priority)
        draw_local.extend(range(len(plan.draws)))
        draw_subj.extend([si] * len(plan.draws))
        subj_ids.append(plan.subject_id)
        subj_female.append(plan.sex == "F")
        subj_age.append(plan.age)
        for s in plan.series:
            specs.append((base, s))
            s_code.append(LAB_IDX[s.code])
            s_hadm.append(s.hadm_id)
            s_subj.append(si)
    sid, k, draw, val = _expand_series(specs, rng)
    code = np.asarray(s_code)[sid]
    dec = _LAB_DEC[code]
    val = _round(np.maximum(val, 10.0**-dec), dec)
    subj = np.asarray(s_subj)[sid]
    female = np.asarray(subj_female)[subj]
    # derived items from the same draw
    n_draws = len(draw_time)

    def dense(c: str) -> np.ndarray:
        d = np.full(n_draws, np.nan)
        m = code == LAB_IDX[c]
        d[draw[m]] = val[m]
        return d

    na, cl, hco3, hgb, cr = dense("na"), dense("cl"), dense("hco3"), dense("hgb"), dense("cr")
    m = code == LAB_IDX["ag"]
    val[m] = np.round(na[draw[m]] - cl[draw[m]] - hco3[draw[m]])
    m = code == LAB_IDX["hct"]
    val[m] = np.round(hgb[draw[m]] * 3.0, 1)
    m = code == LAB_IDX["egfr"]
    age = np.asarray(subj_age, float)[subj[m]]
    with np.errstate(invalid="ignore", divide="ignore"):
        val[m] = np.round(
            175.0 * cr[draw[m]] ** -1.154 * age**-0.203 * np.where(female[m], 0.742, 1.0)
        )
    keep = ~np.isnan(val)
    if not keep.all():
        sid, k, draw, val, code, dec, subj, female = (
            a[keep] for a in (sid, k, draw, val, code, dec, subj, female)
        )
    dtime = np.asarray(draw_time, dtype=np.int64)
    charttime = dtime[draw]
    itemid = _LAB_ITEMID[code]
    subject_id = np.asarray(subj_ids, dtype=np.int64)[subj]
    order = np.lexsort((itemid, charttime, subject_id))
    sid, draw, val, code, dec, subj, female, charttime, itemid, subject_id = (
        a[order] for a in (sid, draw, val, code, dec, subj, female, charttime, itemid, subject_id)
    )
    total = len(val)
    hadm = np.asarray(s_hadm, dtype=np.int64)[sid]
    # per-draw attributes (shared by a panel): result delay, provider, priority
    delay = rng.integers(25, 140, n_draws) * 60
    provider_ix = rng.integers(0, len(PROVIDERS), n_draws)
    provider_null = rng.random(n_draws) < 0.35
    lo = _LO[code, female.astype(int)]
    hi = _HI[code, female.astype(int)]
    abnormal = (val < lo) | (val > hi)
    specimen = (
        np.asarray(draw_local)[draw] * 8
        + _LAB_PANEL[code]
        + (np.asarray([p.idx for p in plans])[subj] * 1000 + 10_000_000)
    )
    prio = np.asarray(draw_prio)[draw]
    cols = {
        "labevent_id": pa.array(
            (np.asarray([p.idx for p in plans], dtype=np.int64)[subj] + 1) * 10_000
            + _cumcount(subject_id)
        ),
        "subject_id": pa.array(subject_id),
        "hadm_id": pa.array(hadm, mask=hadm == 0),
        "specimen_id": pa.array(specimen.astype(np.int64)),
        "itemid": pa.array(itemid),
        "order_provider_id": pc.take(
            _PROVIDERS, pa.array(provider_ix[draw], mask=provider_null[draw])
        ),
        "charttime": pa.array(charttime.astype("datetime64[s]")),
        "storetime": pa.array((charttime + delay[draw]).astype("datetime64[s]")),
        "value": _value_text_fast(val, dec),
        "valuenum": pa.array(val),
        "valueuom": pc.take(_LAB_UNIT, pa.array(code)),
        "ref_range_lower": pa.array(lo, mask=np.isnan(lo)),
        "ref_range_upper": pa.array(hi, mask=np.isnan(hi)),
        "flag": pc.if_else(pa.array(abnormal), pa.scalar("abnormal"), pa.scalar(None, pa.string())),
        "priority": pa.array(np.where(prio == 1, "STAT", "ROUTINE")),
        "comments": pa.nulls(total, pa.string()),
    }
    return pa.table(cols)


def chart_table(plans: list[SubjectPlan], rng: np.random.Generator) -> pa.Table:
    """chartevents vital signs of ICU stays, sorted by (subject_id, charttime, itemid)."""
    vt: list[int] = []
    specs: list[tuple[int, Series]] = []
    s_code, s_hadm, s_stay, s_subj = [], [], [], []
    for plan in plans:
        base = len(vt)
        vt.extend(plan.vtimes)
        for s in plan.vseries:
            specs.append((base, s))
            s_code.append(CHART_IDX[s.code])
            s_hadm.append(s.hadm_id)
            s_stay.append(s.stay_id)
            s_subj.append(plan.subject_id)
    if not specs:
        return empty_chart()
    sid, k, draw, val = _expand_series(specs, rng)
    code = np.asarray(s_code)[sid]
    dec = _CH_DEC[code]
    val = _round(np.maximum(val, 0.0), dec)
    sbp = np.full(len(vt), np.nan)
    dbp = np.full(len(vt), np.nan)
    m = code == CHART_IDX["sbp"]
    sbp[draw[m]] = val[m]
    m = code == CHART_IDX["dbp"]
    dbp[draw[m]] = val[m]
    m = code == CHART_IDX["mbp"]
    val[m] = np.round((sbp[draw[m]] + 2 * dbp[draw[m]]) / 3.0)
    m = code == CHART_IDX["spo2"]
    val[m] = np.minimum(val[m], 100.0)
    charttime = np.asarray(vt, dtype=np.int64)[draw] + rng.integers(0, 15, len(draw)) * 60
    subject_id = np.asarray(s_subj, dtype=np.int64)[sid]
    itemid = _CH_ITEMID[code]
    order = np.lexsort((itemid, charttime, subject_id))
    sid, val, code, dec, charttime, itemid, subject_id = (
        a[order] for a in (sid, val, code, dec, charttime, itemid, subject_id)
    )
    total = len(val)
    return pa.table(
        {
            "subject_id": pa.array(subject_id),
            "hadm_id": pa.array(np.asarray(s_hadm, dtype=np.int64)[sid]),
            "stay_id": pa.array(np.asarray(s_stay, dtype=np.int64)[sid]),
            "caregiver_id": pa.array(rng.integers(10000, 99999, total)),
            "charttime": pa.array(charttime.astype("datetime64[s]")),
            "storetime": pa.array(
                (charttime + rng.integers(1, 30, total) * 60).astype("datetime64[s]")
            ),
            "itemid": pa.array(itemid),
            "value": _value_text_fast(val, dec),
            "valuenum": pa.array(val),
            "valueuom": pc.take(_CH_UNIT, pa.array(code)),
            "warning": pa.array(np.zeros(total, dtype=np.int64)),
        }
    )


def empty_chart() -> pa.Table:
    from physassist.synth.writer import empty_table

    return empty_table("chartevents")
