"""Is a difference between two runs real? Paired statistics over the sessions both runs share.

Pure numpy/pandas. Two runs of the benchmark judge the same sessions, so their difference is
read session by session (a paired design): the session-to-session spread, which dwarfs most
effects, cancels out.

* ``session_values``: per session, its mRS contribution (mean turn score, points) and its
  Pass@Session at each tau (points: share of its eligible trials that pass).
* ``paired``: mean difference a - b over the shared sessions, a paired bootstrap 95% interval
  (resampling sessions), and a two-sided p-value: McNemar's exact test when both sides are
  pass/fail per session, else the paired permutation (sign-flip) test, exact up to 16 sessions.
* ``sessions_needed`` / ``epochs_needed``: how many sessions (or epochs per session) a given
  difference needs to be detected, from the observed variance (normal approximation,
  two-sided).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from physassist.metrics import RATE_SCALE, tau_key

__all__ = [
    "PairedResult",
    "epochs_needed",
    "mcnemar_p",
    "paired",
    "paired_bootstrap",
    "permutation_p",
    "session_values",
    "sessions_needed",
]

EXACT_PERMUTATION_MAX = 16  # 2**16 sign patterns; beyond, a seeded Monte Carlo sample


def session_values(turns: pd.DataFrame, taus: Sequence[float] = (0.6, 0.75)) -> pd.DataFrame:
    """Per session (index ``session_id``): ``mrs`` and ``pass_session_<tau>`` in points.

    ``mrs``: the mean of the session's scored turn scores over all its epochs x100 (NaN when
    none was scored). ``pass_session_<tau>``: share of its trials (session, epoch) whose turns
    are all scored and all >= tau, among the trials with every turn scored (NaN when none).
    """
    df = turns.copy()
    df["session_id"] = df["session_id"].astype(str)
    if "epoch" not in df.columns:
        df["epoch"] = 1
    score = pd.to_numeric(df["score"], errors="coerce")
    df["scored"] = (df["status"] == "scored") & score.notna()
    df["score"] = score.where(df["scored"])
    trials = df.groupby(["session_id", "epoch"])
    out = pd.DataFrame({"mrs": trials["score"].mean().groupby(level="session_id").mean() * RATE_SCALE})
    eligible = trials["scored"].all()
    for tau in taus:
        passed = (df["score"] >= tau - 1e-12).groupby([df["session_id"], df["epoch"]]).all() & eligible
        share = passed[eligible].groupby(level="session_id").mean() * RATE_SCALE
        out[f"pass_session_{tau_key(tau)}"] = share.reindex(out.index)
    return out


def paired_bootstrap(diffs: Sequence[float], n_boot: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Percentile 95% interval of the mean difference, resampling sessions."""
    d = np.asarray(diffs, dtype=float)
    if len(d) == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def permutation_p(diffs: Sequence[float], n_perm: int = 20000, seed: int = 0) -> float:
    """Two-sided paired permutation p-value: the share of sign flips of the differences whose
    mean is at least as far from 0 as the observed one (exact enumeration up to 16 sessions)."""
    d = np.asarray(diffs, dtype=float)
    if len(d) == 0:
        return math.nan
    observed = abs(d.mean())
    if len(d) <= EXACT_PERMUTATION_MAX:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=len(d))))
        return float(np.mean(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12))
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(n_perm, len(d)))
    hits = int(np.sum(np.abs((signs * d).mean(axis=1)) >= observed - 1e-12))
    return (hits + 1) / (n_perm + 1)


def mcnemar_p(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Two-sided exact McNemar p-value for paired pass/fail outcomes (binomial on the
    discordant pairs: a passed and b failed vs the reverse)."""
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    n = only_a + only_b
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, k) for k in range(min(only_a, only_b) + 1)) / 2**n
    return min(1.0, 2 * tail)


@dataclass(frozen=True)
class PairedResult:
    """One metric compared between run a and run b on their shared sessions (points)."""

    metric: str
    n_shared: int
    a: float
    b: float
    diff: float  # a - b
    ci_low: float
    ci_high: float
    p_value: float
    test: str  # "permutation" or "mcnemar"
    sd_diff: float  # standard deviation of the per-session differences

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def paired(a: pd.Series, b: pd.Series, metric: str, n_boot: int = 2000, seed: int = 0) -> PairedResult:
    """Compare per-session values of two runs on the sessions where both have a value."""
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1, join="inner").dropna()
    d = (both["a"] - both["b"]).to_numpy(float)
    binary = bool(len(both)) and both.isin([0.0, RATE_SCALE]).all().all()
    if binary:
        p, test = mcnemar_p(both["a"] == RATE_SCALE, both["b"] == RATE_SCALE), "mcnemar"
    else:
        p, test = permutation_p(d, seed=seed), "permutation"
    low, high = paired_bootstrap(d, n_boot, seed)
    return PairedResult(
        metric=metric,
        n_shared=len(both),
        a=float(both["a"].mean()) if len(both) else math.nan,
        b=float(both["b"].mean()) if len(both) else math.nan,
        diff=float(d.mean()) if len(d) else math.nan,
        ci_low=low,
        ci_high=high,
        p_value=p,
        test=test,
        sd_diff=float(np.std(d, ddof=1)) if len(d) > 1 else math.nan,
    )


def _z(alpha: float, power: float) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(power)


def sessions_needed(sd_diff: float, delta: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Sessions a paired comparison needs to detect a true mean difference ``delta`` (same
    units as ``sd_diff``, the standard deviation of the per-session differences)."""
    if delta <= 0 or not sd_diff >= 0:
        raise ValueError(f"sessions_needed: need delta > 0 and sd_diff >= 0, got {delta}, {sd_diff}")
    return max(2, math.ceil((_z(alpha, power) * sd_diff / delta) ** 2))


def epochs_needed(
    var_between: float,
    var_within: float,
    n_sessions: int,
    delta: float,
    alpha: float = 0.05,
    power: float = 0.8,
    max_epochs: int = 64,
) -> int | None:
    """Epochs per session for ``n_sessions`` sessions to detect ``delta``: the variance of a
    session's difference is ``var_between + var_within / k`` after k epochs. None when even
    ``max_epochs`` epochs are not enough (the session-to-session variance alone is too big)."""
    if delta <= 0 or n_sessions < 1:
        raise ValueError(f"epochs_needed: need delta > 0 and n_sessions >= 1, got {delta}, {n_sessions}")
    allowed = n_sessions * (delta / _z(alpha, power)) ** 2  # the largest per-session variance
    for k in range(1, max_epochs + 1):
        if var_between + var_within / k <= allowed:
            return k
    return None
