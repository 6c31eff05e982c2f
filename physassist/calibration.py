"""The judge calibrated on physicians: prediction-powered inference (PPI) over a labelled subset.

Pure numpy/pandas, no MLflow. A run's judge scored every turn (``f``); physicians scored a
random subset of them (``h``, from the HUMAN verdicts on the run's traces:
``physassist.tracking.human``). The calibrated score is what the physicians would give the
whole run: the judge's mean over all turns plus the mean human-minus-judge correction over the
labelled ones (Angelopoulos et al., 2023)::

    theta = sum_i w_i f_i + sum_{i labelled} w_i (h_i - f_i) / pi_i

with ``w_i`` the turn's weight in the metric (mRS: a mean of session means; Pass@Turn: pooled
over turns) and ``pi_i`` the chance the turn was labelled: ``n_h / N_h`` in its stratum
(scenario x tier, as ``physassist-label draw`` samples; a label set that misses a stratum is
taken as one stratum and says so). Both terms are sums over sessions, so ``theta`` is the mean
of a per-session value ``g_s`` (the session's judge value plus its labelled turns' weighted
corrections), and its variance is that of the ``g_s`` over sessions (the sessions' sampling,
what the judge's own interval holds, with the correction's covariance) with the labelling's
part taken as it was drawn: a fixed number of turns per stratum, without replacement (``ppi``). A labelled turn the judge did not score is outside the metric and is counted
(``labels_unused``), never used.

``calibrate`` returns, in points: ``judge_bias`` (judge minus physicians on the labelled turns,
mean and 95% interval), ``n_labelled``, ``mrs_calibrated`` and ``pass_turn_<tau>_calibrated``
with ``_ci_low`` / ``_ci_high``, beside the uncalibrated ``mrs`` of ``physassist.metrics``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
import pandas as pd

from physassist.metrics import RATE_SCALE, tau_key

__all__ = ["STRATA", "calibrate", "ppi", "strata_of"]

STRATA = ("scenario", "tier")
KEYS = ["session_id", "epoch", "turn"]
Z_95 = NormalDist().inv_cdf(0.975)


def strata_of(turns: pd.DataFrame) -> pd.Series:
    """Each turn's stratum (``scenario/tier``), the unit ``physassist-label draw`` samples in."""
    scenario, tier = (
        turns[c].astype(str) if c in turns.columns else pd.Series("-", index=turns.index)
        for c in STRATA
    )
    return scenario + "/" + tier


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float
    high: float


def ppi(
    session: np.ndarray,
    stratum: np.ndarray,
    weight: np.ndarray,
    judge: np.ndarray,
    human: np.ndarray,
    pi: np.ndarray,
) -> Estimate:
    """The PPI estimate of ``sum_i weight_i * human_i`` over the turns the judge scored: per
    turn its session and stratum (integer codes), its weight in the metric (summing to 1), the
    judge's value, the physicians' (NaN: not labelled) and the share of its stratum labelled.

    The variance is the sessions' (the spread of the per-session values ``g_s``, which as
    drawn also holds the labelling's as if each turn were labelled independently) with that
    labelling term exchanged for the labelling actually done: a fixed number per stratum,
    without replacement (``N_h^2 (1 - n_h/N_h) s_h^2 / n_h`` of the weighted corrections)."""
    labelled = ~np.isnan(human)
    y = np.where(labelled, weight * (human - judge), 0.0)  # a labelled turn's correction
    sessions = int(session.max()) + 1
    g = np.bincount(session, weights=weight * judge + y / pi, minlength=sessions) * sessions
    value = float(g.mean())
    if sessions < 2:
        return Estimate(value, math.nan, math.nan)
    as_drawn = float(((y / pi) ** 2 * (1 - pi))[labelled].sum())
    size = np.bincount(stratum).astype(float)
    n = np.bincount(stratum, weights=labelled).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(stratum, weights=y) / n
        spread = np.bincount(stratum, weights=np.where(labelled, (y - mean[stratum]) ** 2, 0.0)) / (
            n - 1
        )
        stratified = np.where(n > 1, size**2 * (1 - n / size) * spread / n, 0.0).sum()
    variance = max(float(g.var(ddof=1)) / sessions - as_drawn + float(stratified), 0.0)
    se = math.sqrt(variance)
    return Estimate(value, value - Z_95 * se, value + Z_95 * se)


def _weights(scored: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Each scored turn's weight in mRS (a mean over sessions of the mean over its trials of
    the trial's mean turn score) and in Pass@Turn (pooled over turns)."""
    per_trial = scored.groupby(["session_id", "epoch"])["turn"].transform("size")
    trials = scored.groupby("session_id")["epoch"].transform("nunique")
    sessions = scored["session_id"].nunique()
    return 1.0 / (sessions * trials * per_trial), pd.Series(1.0 / len(scored), index=scored.index)


def _strata_pi(frame: pd.DataFrame, strata: pd.Series) -> tuple[np.ndarray, bool]:
    """Each turn's chance of being labelled: its stratum's labelled share; one share for all
    (``True``) when a stratum has no label, which post-stratifying cannot correct."""
    labelled = frame["human"].notna()
    counts = labelled.groupby(strata).agg(["size", "sum"])
    if (counts["sum"] == 0).any():
        return np.full(len(frame), labelled.mean()), True
    return strata.map(counts["sum"] / counts["size"]).to_numpy(float), False


def calibrate(
    turns: pd.DataFrame, human: pd.DataFrame, taus: Sequence[float] = (0.6, 0.75)
) -> dict[str, float]:
    """The calibrated metrics of a run (points; see the module docstring).

    ``turns``: the run's turn table (the judge's scores); ``human``: the physicians' turn scores
    (``session_id``, ``epoch``, ``turn``, ``score``, ``status``: ``human.human_turns``); only
    their ``scored`` turns are labels. Empty when no label falls on a turn the judge scored."""
    scored = turns[
        (turns["status"] == "scored") & pd.to_numeric(turns["score"], errors="coerce").notna()
    ].copy()
    scored["session_id"] = scored["session_id"].astype(str)
    if "epoch" not in scored.columns:
        scored["epoch"] = 1
    labels = human[human["status"] == "scored"][[*KEYS, "score"]].rename(columns={"score": "human"})
    labels = labels.assign(
        session_id=labels["session_id"].astype(str),
        epoch=labels["epoch"].astype(int),
        turn=labels["turn"].astype(int),
    )
    frame = scored.merge(labels, on=KEYS, how="left")
    n_labelled = int(frame["human"].notna().sum())
    out: dict[str, float] = {
        "n_labelled": float(n_labelled),
        "labels_unused": float(len(labels) - n_labelled),
    }
    if n_labelled == 0:
        return out
    frame["judge"] = frame["score"].astype(float)
    strata = strata_of(frame)
    frame["pi"], pooled = _strata_pi(frame, strata)
    out["strata"] = 1.0 if pooled else float(strata.nunique())
    bias = (frame["judge"] - frame["human"]).dropna() * RATE_SCALE
    half = Z_95 * float(bias.std(ddof=1)) / math.sqrt(len(bias)) if len(bias) > 1 else math.nan
    out.update(
        {
            "judge_bias": float(bias.mean()),
            "judge_bias_ci_low": float(bias.mean()) - half,
            "judge_bias_ci_high": float(bias.mean()) + half,
        }
    )
    mrs_w, turn_w = _weights(frame)
    session = frame["session_id"].factorize()[0]
    stratum = np.zeros(len(frame), dtype=np.int64) if pooled else strata.factorize()[0]
    judge, human_score, pi = (
        frame["judge"].to_numpy(float),
        frame["human"].to_numpy(float),
        frame["pi"].to_numpy(float),
    )
    metrics = [("mrs", mrs_w.to_numpy(float), judge, human_score)]
    for tau in taus:
        at = tau - 1e-12
        metrics.append(
            (
                f"pass_turn_{tau_key(tau)}",
                turn_w.to_numpy(float),
                (judge >= at).astype(float),
                np.where(np.isnan(human_score), np.nan, human_score >= at),
            )
        )
    for name, weight, f, h in metrics:
        estimate = ppi(session, stratum, weight, f, h, pi)
        key = f"{name}_calibrated"
        out.update(
            {
                key: estimate.value * RATE_SCALE,
                f"{key}_ci_low": estimate.low * RATE_SCALE,
                f"{key}_ci_high": estimate.high * RATE_SCALE,
            }
        )
    return out
