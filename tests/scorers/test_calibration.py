"""The judge calibrated on physicians' labels by prediction-powered inference (physassist/calibration.py).

The coverage test plants a judge 12 points too generous on synthetic sessions whose true
(physician) mRS is 50 by construction, labels a stratified random subset, and counts how often
each interval holds 50: the calibrated one at the nominal 95%, the judge's own never.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from physassist.calibration import calibrate, strata_of
from physassist.metrics import summarize

REPETITIONS = 200
TRUE_MRS = 50.0  # session latents are Uniform(0.2, 0.8) and items Binomial(4, q): E[h] = 0.5


def synthetic(
    rng: np.random.Generator, sessions: int = 160, turns: int = 4, bias: float = 0.12
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A judged turn table (12 scenario x tier strata) and the physicians' scores of every turn."""
    q = rng.uniform(0.2, 0.8, sessions)
    human = rng.binomial(4, np.repeat(q, turns)) / 4
    judge = np.clip(human + bias + rng.choice([-0.25, 0.0, 0.0, 0.25], human.size), 0, 1)
    s = np.repeat(np.arange(sessions), turns)
    keys = {
        "session_id": [f"s{k}" for k in s],
        "epoch": 1,
        "turn": np.tile(np.arange(turns), sessions),
    }
    table = pd.DataFrame(
        {
            **keys,
            "scenario": np.array(list("abcd"))[s % 4],
            "tier": 1 + (s // 4) % 3,
            "score": judge,
            "status": "scored",
        }
    )
    return table, pd.DataFrame({**keys, "score": human, "status": "scored"})


def stratified(turns: pd.DataFrame, size: int, rng: np.random.Generator) -> pd.Index:
    """``size`` turns drawn in proportion to each scenario x tier stratum, without replacement."""
    picked: list[int] = []
    for _, group in turns.groupby(strata_of(turns)):
        picked += list(
            rng.choice(group.index, size=round(size * len(group) / len(turns)), replace=False)
        )
    return pd.Index(picked)


def test_the_calibrated_interval_covers_the_physicians_mrs_at_the_nominal_rate() -> None:
    rng = np.random.default_rng(0)
    covered = {"calibrated": 0, "judge": 0}
    for repetition in range(REPETITIONS):
        turns, human = synthetic(rng)
        labels = human.loc[stratified(turns, 120, rng)]
        m = calibrate(turns, labels, taus=(0.6,))
        judge = summarize(turns, taus=(0.6,), n_boot=200, seed=repetition, breakdowns=False)
        covered["calibrated"] += (
            m["mrs_calibrated_ci_low"] <= TRUE_MRS <= m["mrs_calibrated_ci_high"]
        )
        covered["judge"] += judge["mrs_ci_low"] <= TRUE_MRS <= judge["mrs_ci_high"]
        assert m["n_labelled"] == 120 and m["strata"] == 12
    assert 0.93 <= covered["calibrated"] / REPETITIONS <= 0.97, covered
    assert covered["judge"] / REPETITIONS < 0.05, covered  # 12 points off: its interval misses


def test_the_bias_and_a_judge_that_agrees_with_the_physicians() -> None:
    """Where the labels equal the judge, there is nothing to correct: the calibrated mRS is the
    judge's (an exact identity), and the bias is 0."""
    turns, _ = synthetic(np.random.default_rng(1), sessions=40, bias=0.0)
    agree = turns.loc[
        stratified(turns, 48, np.random.default_rng(2)),
        ["session_id", "epoch", "turn", "score", "status"],
    ]
    m = calibrate(turns, agree, taus=(0.6, 0.75))
    judge = summarize(turns, n_boot=0, breakdowns=False)
    assert m["mrs_calibrated"] == pytest.approx(judge["mrs"]) and m["judge_bias"] == 0.0
    assert m["pass_turn_0.75_calibrated"] == pytest.approx(judge["pass_turn_0.75"])
    assert m["mrs_calibrated_ci_low"] < judge["mrs"] < m["mrs_calibrated_ci_high"]


def test_labels_off_the_metric_are_counted_and_a_missed_stratum_pools() -> None:
    turns, human = synthetic(np.random.default_rng(3), sessions=24)
    turns.loc[turns.index[:4], ["score", "status"]] = (math.nan, "failed")  # the judge failed s0
    labels = human[human["session_id"].isin(["s0", "s1", "s2"])]  # 3 of 12 strata
    m = calibrate(turns, labels)
    assert m["n_labelled"] == 8 and m["labels_unused"] == 4 and m["strata"] == 1
    undecided = human.assign(status="undecided").head(8)
    assert calibrate(turns, undecided) == {"n_labelled": 0.0, "labels_unused": 0.0}
