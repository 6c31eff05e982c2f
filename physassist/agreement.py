"""How much two or more judgings of the same turns agree (pure pandas/numpy, no Inspect).

A *judging* is one judge's verdicts on a run's stored turns: its item table (one row per
session, epoch, turn, rubric item; ``passed`` True/False/None, see
``physassist.results.item_table``) and its turn table (``physassist.results.turn_table``).
Undecided items (None) and unscored turns are left out of every statistic and counted, never
read as a fail.

* ``cohen_kappa``: two judges, nominal labels: (p_o - p_e) / (1 - p_e).
* ``krippendorff_alpha``: any number of judges, nominal, missing values allowed:
  1 - (n - 1) * sum_{c != k} o_ck / sum_{c != k} n_c n_k over the coincidence matrix.
* ``compare``: the agreement metrics of two judgings (items, kappa, alpha, Pass@Turn at each
  tau, Pearson correlation of turn scores), overall and per task type and implicitness.
* ``panel``: alpha and mean pairwise kappa over several judgings of the same run.

Both coefficients are NaN when undefined (fewer than two decided pairs, or every verdict the
same value, so chance agreement is 1: the oracle's run rescored by rules passes every item).
``kappa_text`` says which, beside the observed agreement, wherever a kappa is shown.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from physassist.metrics import RATE_SCALE, metric_key, tau_key

__all__ = [
    "ITEM_KEYS",
    "TURN_KEYS",
    "cohen_kappa",
    "compare",
    "kappa_text",
    "krippendorff_alpha",
    "panel",
]

TURN_KEYS = ("session_id", "epoch", "turn")
ITEM_KEYS = (*TURN_KEYS, "item")
GROUPS = ("task_type", "implicitness")


def _decided(values: pd.Series) -> pd.Series:
    return values.map(
        lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else bool(v)
    )


def cohen_kappa(a: Sequence[object], b: Sequence[object]) -> float:
    """Cohen's kappa of two label sequences (pairs with a missing label are left out)."""
    pairs = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    if len(pairs) < 2:
        return math.nan
    n = len(pairs)
    labels = sorted({v for p in pairs for v in p}, key=str)
    p_o = sum(x == y for x, y in pairs) / n
    p_e = sum(
        (sum(x == c for x, _ in pairs) / n) * (sum(y == c for _, y in pairs) / n) for c in labels
    )
    return math.nan if math.isclose(p_e, 1.0) else (p_o - p_e) / (1 - p_e)


def kappa_text(metrics: Mapping[str, float], prefix: str = "agreement.vs_source.") -> str:
    """A kappa of ``compare``'s metrics as shown to people: the value, or why it is undefined
    with the observed agreement (points), never a bare ``nan``."""
    kappa = metrics.get(prefix + "kappa", math.nan)
    if not math.isnan(kappa):
        return f"{kappa:.3f}"
    compared = metrics.get(prefix + "items_compared", math.nan)
    if not compared >= 2:  # NaN: not known
        return (
            f"undefined ({0 if math.isnan(compared) else compared:.0f} item(s) decided by both "
            "judges)"
        )
    observed = metrics.get(prefix + "items", math.nan)
    return (
        f"undefined (no variance: all {compared:.0f} items one verdict; items agree {observed:.1f})"
    )


def krippendorff_alpha(units: Sequence[Sequence[object]]) -> float:
    """Krippendorff's alpha (nominal) of per-unit labels, one label per judge (None = missing).

    Units with fewer than two labels carry no pairable information and are skipped.
    """
    coincidence: dict[tuple[object, object], float] = {}
    for labels in units:
        values = [v for v in labels if v is not None]
        m = len(values)
        if m < 2:
            continue
        for i, j in itertools.permutations(range(m), 2):
            key = (values[i], values[j])
            coincidence[key] = coincidence.get(key, 0.0) + 1.0 / (m - 1)
    if not coincidence:
        return math.nan
    totals: dict[object, float] = {}
    for (c, _), o in coincidence.items():
        totals[c] = totals.get(c, 0.0) + o
    n = sum(totals.values())
    observed = sum(o for (c, k), o in coincidence.items() if c != k)
    expected = sum(totals[c] * totals[k] for c in totals for k in totals if c != k)
    if expected == 0:
        return math.nan
    return 1.0 - (n - 1) * observed / expected


def _pearson(x: np.ndarray, y: np.ndarray) -> float:
    if len(x) < 2 or np.std(x) == 0 or np.std(y) == 0:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _with_groups(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out["session_id"] = out["session_id"].astype(str)
    if "implicitness" not in out.columns:
        out["implicitness"] = out["subtype"].fillna("none") if "subtype" in out.columns else "none"
    return out


def _item_stats(merged: pd.DataFrame, prefix: str) -> dict[str, float]:
    both = merged["a"].notna() & merged["b"].notna()
    a, b = merged.loc[both, "a"].tolist(), merged.loc[both, "b"].tolist()
    out = {
        f"{prefix}items_compared": float(both.sum()),
        f"{prefix}items_undecided": float((~both).sum()),
        f"{prefix}items": float(np.mean([x == y for x, y in zip(a, b, strict=True)]) * RATE_SCALE)
        if a
        else math.nan,
        f"{prefix}kappa": cohen_kappa(a, b),
        f"{prefix}alpha": krippendorff_alpha(list(zip(merged["a"], merged["b"], strict=True))),
    }
    return out


def _turn_stats(merged: pd.DataFrame, taus: Sequence[float], prefix: str) -> dict[str, float]:
    both = merged["scored_a"] & merged["scored_b"]
    x, y = merged.loc[both, "score_a"].to_numpy(float), merged.loc[both, "score_b"].to_numpy(float)
    out = {f"{prefix}turns_compared": float(both.sum()), f"{prefix}turn_score_corr": _pearson(x, y)}
    for tau in taus:
        pa, pb = (x >= tau - 1e-12), (y >= tau - 1e-12)
        t = tau_key(tau)
        out[f"{prefix}pass_turn_{t}"] = (
            float(np.mean(pa == pb) * RATE_SCALE) if len(x) else math.nan
        )
        out[f"{prefix}pass_turn_{t}_kappa"] = cohen_kappa(pa.tolist(), pb.tolist())
    return out


def _merge_items(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    keys = list(ITEM_KEYS)
    left = _with_groups(a)[[*keys, *GROUPS, "passed"]].rename(columns={"passed": "a"})
    right = _with_groups(b)[[*keys, "passed"]].rename(columns={"passed": "b"})
    merged = left.merge(right, on=keys, how="inner")
    merged["a"], merged["b"] = _decided(merged["a"]), _decided(merged["b"])
    return merged


def _merge_turns(a: pd.DataFrame, b: pd.DataFrame) -> pd.DataFrame:
    keys = list(TURN_KEYS)

    def side(frame: pd.DataFrame, suffix: str) -> pd.DataFrame:
        f = _with_groups(frame)
        score = pd.to_numeric(f["score"], errors="coerce")
        return pd.DataFrame(
            {
                **{k: f[k] for k in keys},
                **({g: f[g] for g in GROUPS} if suffix == "a" else {}),
                f"score_{suffix}": score,
                f"scored_{suffix}": (f["status"] == "scored") & score.notna(),
            }
        )

    return side(a, "a").merge(side(b, "b"), on=keys, how="inner")


def compare(
    items_a: pd.DataFrame,
    items_b: pd.DataFrame,
    turns_a: pd.DataFrame,
    turns_b: pd.DataFrame,
    taus: Sequence[float] = (0.6, 0.75),
    prefix: str = "agreement.",
) -> dict[str, float]:
    """Agreement of judging B with judging A on the items and turns both hold.

    Names: ``<prefix>items`` (points: share of decided items with the same verdict),
    ``kappa``, ``alpha``, ``items_compared`` / ``items_undecided``, ``pass_turn_<tau>``
    (points: share of turns scored by both on the same side of tau) and its ``_kappa``,
    ``turn_score_corr``; the item statistics again per ``task_type.<IL..>`` and
    ``implicitness.<NA..>``.
    """
    items = _merge_items(items_a, items_b)
    turns = _merge_turns(turns_a, turns_b)
    out = {**_item_stats(items, prefix), **_turn_stats(turns, taus, prefix)}
    for group in GROUPS:
        for value, part in items.groupby(items[group].astype(str), sort=True):
            stats = _item_stats(part, "")
            for name in ("items", "kappa", "items_compared"):
                out[prefix + metric_key(name, group, value)] = stats[name]
        for value, part in turns.groupby(turns[group].astype(str), sort=True):
            out[prefix + metric_key("turn_score_corr", group, value)] = _turn_stats(part, (), "")[
                "turn_score_corr"
            ]
    return out


def panel(items: Mapping[str, pd.DataFrame], prefix: str = "agreement.judges.") -> dict[str, float]:
    """Agreement of several judgings of the same run: Krippendorff's alpha over all of them,
    the mean and minimum pairwise Cohen's kappa, and the number of judges."""
    names = list(items)
    if len(names) < 2:
        raise ValueError(f"panel agreement needs at least two judgings, got {len(names)}")
    wide = None
    for name in names:
        part = _with_groups(items[name])[[*ITEM_KEYS, "passed"]].rename(columns={"passed": name})
        wide = part if wide is None else wide.merge(part, on=list(ITEM_KEYS), how="inner")
    assert wide is not None
    for name in names:
        wide[name] = _decided(wide[name])
    kappas = [
        cohen_kappa(wide[x].tolist(), wide[y].tolist()) for x, y in itertools.combinations(names, 2)
    ]
    finite = [k for k in kappas if not math.isnan(k)]
    return {
        f"{prefix}n": float(len(names)),
        f"{prefix}alpha": krippendorff_alpha(list(wide[names].itertuples(index=False, name=None))),
        f"{prefix}kappa_mean": float(np.mean(finite)) if finite else math.nan,
        f"{prefix}kappa_min": float(min(finite)) if finite else math.nan,
        f"{prefix}items_compared": float(len(wide)),
    }
