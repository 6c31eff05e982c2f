"""Paired comparisons and the sample-size helpers against hand-computed cases."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from physassist.paired import (
    epochs_needed,
    mcnemar_p,
    paired,
    paired_bootstrap,
    permutation_p,
    session_values,
    sessions_needed,
)


def test_permutation_p_exact_enumeration():
    # sign flips of (1, 2, 3): sums +-1 +-2 +-3; only +6 and -6 reach |6| -> 2 of 8
    assert permutation_p([1, 2, 3]) == pytest.approx(0.25)
    # (2, -1, 3, 0): sums of +-2 +-1 +-3 are 6 0 4 -2 2 -4 0 -6; |sum| >= 4 in 4 of 8
    # (0's sign is free)
    assert permutation_p([2, -1, 3, 0]) == pytest.approx(0.5)
    assert permutation_p([0, 0]) == 1.0


def test_permutation_p_monte_carlo_is_seeded_and_bounded():
    diffs = [5.0] * 20 + [-1.0] * 5
    p = permutation_p(diffs, n_perm=2000, seed=1)
    assert p == permutation_p(diffs, n_perm=2000, seed=1) and 0 < p < 0.01


def test_mcnemar_exact():
    a = [True, True, True, True, True, False, False]
    b = [False, False, False, False, True, False, True]
    # discordant: 4 (a only) vs 1 (b only); 2 * P(X <= 1 | n=5, 1/2) = 2 * 6/32
    assert mcnemar_p(a, b) == pytest.approx(0.375)
    assert mcnemar_p([True, False], [True, False]) == 1.0


def test_paired_bootstrap_hand_cases():
    assert paired_bootstrap([2.0, 2.0, 2.0]) == (2.0, 2.0)
    # two sessions 0 and 10: resampled means are 0, 5, 10 with probability 1/4, 1/2, 1/4
    assert paired_bootstrap([0.0, 10.0], n_boot=4000) == (0.0, 10.0)


def test_paired_uses_shared_sessions_and_picks_the_test():
    a = pd.Series({"s1": 100.0, "s2": 100.0, "s3": 0.0, "s4": 100.0})
    b = pd.Series({"s1": 0.0, "s2": 100.0, "s3": 0.0, "s5": 100.0})
    r = paired(a, b, "pass_session_0.60")
    assert r.n_shared == 3 and r.test == "mcnemar" and r.diff == pytest.approx(100 / 3)
    assert r.p_value == 1.0  # one discordant pair: 2 * 1/2
    m = paired(
        pd.Series({"s1": 50.0, "s2": 70.0, "s3": 80.0}),
        pd.Series({"s1": 49.0, "s2": 68.0, "s3": 77.0}),
        "mrs",
    )
    assert (
        m.test == "permutation"
        and m.diff == pytest.approx(2.0)
        and m.p_value == pytest.approx(0.25)
    )
    assert m.sd_diff == pytest.approx(1.0)


def test_session_values_points_and_eligibility():
    turns = pd.DataFrame(
        {
            "session_id": ["a"] * 4 + ["b"] * 4,
            "epoch": [1, 1, 2, 2, 1, 1, 2, 2],
            "turn": [0, 1] * 4,
            "score": [1.0, 0.5, 1.0, 1.0, 0.8, math.nan, 0.2, 0.4],
            "status": ["scored"] * 5 + ["failed", "scored", "scored"],
        }
    )
    v = session_values(turns, [0.6])
    # a: trial means .75 and 1 -> 87.5; passes in epoch 2 only -> 50
    assert v.loc["a", "mrs"] == pytest.approx(87.5) and v.loc[
        "a", "pass_session_0.60"
    ] == pytest.approx(50)
    # b: trial means .8 and .3 -> 55; epoch 1 not eligible (a failed turn), epoch 2 fails -> 0
    assert v.loc["b", "mrs"] == pytest.approx(55) and v.loc["b", "pass_session_0.60"] == 0


def test_sessions_and_epochs_needed():
    # (z_.975 + z_.8) = 2.8016; (2.8016 * 10 / 5)^2 = 31.4 -> 32 sessions
    assert sessions_needed(10.0, 5.0) == 32
    assert sessions_needed(10.0, 10.0) == 8
    # 32 sessions allow a per-session variance of 32 * (5 / 2.8016)^2 = 101.9: between 50 +
    # within 200/k needs k >= 4
    assert epochs_needed(50.0, 200.0, 32, 5.0) == 4
    assert (
        epochs_needed(150.0, 10.0, 32, 5.0) is None
    )  # the between-session spread alone is too big
    with pytest.raises(ValueError):
        sessions_needed(10.0, 0.0)
