"""The variance split and the smallest detectable difference (physassist/noise.py).

Facts, not descriptions: data are drawn from the model the split assumes with planted
components, and the estimates, the noise between identical runs and the MDE's power are
checked against what the draws do.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from physassist import noise
from physassist.noise import Cost, compared, plan, replicates, run_metrics, split

PLANTED = {"session": 100.0, "patient": 16.0, "agent": 36.0, "judge": 9.0, "residual": 4.0}


def drawn(
    rng: np.random.Generator,
    n: int,
    design: tuple[int, int, int],
    var: dict[str, float],
    sessions: np.ndarray | None = None,
) -> np.ndarray:
    """Sessions x patient seeds x epochs x judgings drawn from the nested model."""
    p, a, j = design
    s_eff = sessions if sessions is not None else rng.normal(50, math.sqrt(var["session"]), n)
    return (
        s_eff[:, None, None, None]
        + rng.normal(0, math.sqrt(var["patient"]), (n, p, 1, 1))
        + rng.normal(0, math.sqrt(var["agent"]), (n, p, a, 1))
        + rng.normal(0, math.sqrt(var["judge"]), (n, p, a, j))
        + rng.normal(0, math.sqrt(var["residual"]), (1, p, a, j))
    )


def planted(
    rng: np.random.Generator,
    n: int = 120,
    design: tuple[int, int, int] = (3, 3, 3),
    sd: dict[str, float] | None = None,
) -> pd.DataFrame:
    """``replicates`` rows drawn from the nested model (variances ``PLANTED``)."""
    p, a, j = design
    y = drawn(rng, n, design, sd or PLANTED)
    index = pd.MultiIndex.from_product(
        [
            [f"s{k:03d}" for k in range(n)],
            [str(x) for x in range(p)],
            range(1, a + 1),
            range(1, j + 1),
        ],
        names=noise.KEYS,
    )
    return pd.DataFrame({"mrs": y.ravel()}, index=index).reset_index()


def test_the_split_recovers_planted_components() -> None:
    rng = np.random.default_rng(0)
    estimates = pd.DataFrame(
        [{c.axis: c.variance for c in split(planted(rng), n_boot=0).components} for _ in range(12)]
    )
    for axis, true in PLANTED.items():
        assert estimates[axis].mean() == pytest.approx(true, rel=0.25), axis


def test_every_share_has_an_interval_that_holds_the_planted_share() -> None:
    parts = split(planted(np.random.default_rng(1), n=150), n_boot=400, seed=1)
    total = sum(PLANTED.values())
    assert sum(c.share for c in parts.components) == pytest.approx(100.0)
    for c in parts.components:
        assert c.measured and c.share_low <= PLANTED[c.axis] / total * 100 <= c.share_high, c
    assert parts.repeats == {"patient": 3, "agent": 3, "judge": 3}


def test_an_axis_without_repeats_is_unmeasured_and_what_it_leaves_says_so() -> None:
    values = planted(np.random.default_rng(2), design=(1, 3, 1))
    parts = split(values, n_boot=50)
    by = {c.axis: c for c in parts.components}
    assert not by["patient"].measured and not by["judge"].measured
    assert "judge.repeats" in by["judge"].note and "patient.seed" in by["patient"].note
    assert by["agent"].measured and by["agent"].note == "includes judge (not repeated)"
    # agent holds the judge's noise now: agent + judge of the model
    assert by["agent"].variance == pytest.approx(PLANTED["agent"] + PLANTED["judge"], rel=0.35)
    assert parts.unmeasured == ["patient", "judge"] and parts.measured_noise
    one = split(planted(np.random.default_rng(2), design=(1, 1, 1)), n_boot=20)
    assert not one.measured_noise and one.unmeasured == ["patient", "agent", "judge", "residual"]


def test_noise_between_identical_runs_and_the_mde_are_what_repeated_runs_show() -> None:
    """Two identical runs of 40 sessions x 2 epochs x 1 judging: their scores differ by less
    than ``noise`` 95% of the time, and a true difference of ``mde`` is found (two-sided 5%,
    the run's standard error) 80% of the time; the variances are the planted ones."""
    rng = np.random.default_rng(3)
    design = (1, 2, 1)
    known = noise.Split(
        "mrs",
        40,
        tuple(noise.Component(a, v, 0, 0, 0, 1) for a, v in PLANTED.items()),
        dict(zip(("patient", "agent", "judge"), design, strict=True)),
    )
    diffs, found = [], 0
    for _ in range(2000):
        sessions = rng.normal(50, 10, 40)
        a, b, c = (drawn(rng, 40, design, PLANTED, sessions).mean() for _ in range(3))
        diffs.append(a - b)
        found += abs(c + known.mde - b) > known.noise  # noise: 1.96 standard errors of a - b
    within = np.mean(np.abs(diffs) <= known.noise)
    assert 0.93 <= within <= 0.97 and known.mde == pytest.approx(
        known.noise * noise.Z_MDE / noise.Z_95
    )
    assert 0.77 <= found / 2000 <= 0.83


def test_replicates_read_the_judgings_of_each_turn() -> None:
    """``judge_scores`` (a list in memory, JSON text in turns.csv) give one row per judging;
    an unscored turn gives none, and its trial has no Pass@Session."""
    turns = pd.DataFrame(
        {
            "session_id": ["a"] * 4 + ["b"] * 2,
            "epoch": [1, 1, 2, 2, 1, 1],
            "turn": [0, 1, 0, 1, 0, 1],
            "score": [0.5, 1.0, 0.75, np.nan, 1.0, 0.5],
            "status": ["scored", "scored", "scored", "failed", "scored", "scored"],
            "judge_scores": [
                [0.5, 0.5],
                json.dumps([1.0, 1.0]),
                [0.5, 1.0],
                None,
                "[1.0, 1.0]",
                [0.0, 1.0],
            ],
        }
    )
    rows = replicates(turns, [0.75]).set_index(["session_id", "epoch", "judging"])
    assert rows.loc[("a", 1, 1), "mrs"] == 75.0 and rows.loc[("a", 2, 2), "mrs"] == 100.0
    assert (
        rows.loc[("b", 1, 1), "pass_turn_0.75"] == 50.0
        and rows.loc[("b", 1, 2), "pass_session_0.75"] == 100.0
    )
    assert math.isnan(rows.loc[("a", 2, 1), "pass_session_0.75"])  # its second turn is unscored
    assert len(rows) == 6


def test_a_deterministic_design_has_no_noise() -> None:
    """Epochs and judgings that all agree: every noise axis is measured at 0, so nothing
    separates identical runs and the MDE is 0 (a comparison's own spread decides then)."""
    values = planted(
        np.random.default_rng(4),
        design=(1, 3, 2),
        sd={**{a: 0.0 for a in PLANTED}, "session": 100.0},
    )
    parts = split(values, n_boot=50)
    assert (
        parts.measured_noise
        and parts.noise == pytest.approx(0.0, abs=1e-6)
        and parts.mde == pytest.approx(0.0, abs=1e-6)
    )
    assert all(
        c.variance == pytest.approx(0.0, abs=1e-9)
        for c in parts.components
        if c.axis in ("agent", "judge", "residual")
    )
    assert plan(parts, 2.0, Cost(1000, 0)) is None or plan(parts, 2.0, Cost(1000, 0)).sessions == 2


def test_plan_is_the_cheapest_design_that_reaches_the_difference() -> None:
    parts = split(planted(np.random.default_rng(5), n=60, design=(1, 3, 3)), n_boot=0)
    cost = Cost(
        tokens_trajectory=10_000, tokens_judging=2_000, usd_trajectory=0.01, usd_judging=0.002
    )
    best = plan(parts, 2.0, cost)
    assert best is not None
    design = {"patients": 1, "epochs": best.epochs, "judgings": best.judgings}
    mde = lambda n: noise.Z_MDE * math.sqrt(2 * parts.run_noise(n, **design))  # noqa: E731
    assert mde(best.sessions) <= 2.0 < mde(best.sessions - 1)
    assert best.tokens == best.sessions * best.epochs * (10_000 + best.judgings * 2_000)
    assert best.usd == pytest.approx(best.sessions * best.epochs * (0.01 + best.judgings * 0.002))
    for n_a in range(1, noise.MAX_EPOCHS + 1):  # no other design reaching 2 points is cheaper
        for n_j in range(1, noise.MAX_JUDGINGS + 1):
            d = {"patients": 1, "epochs": n_a, "judgings": n_j}
            room = 4 / noise.Z_MDE**2 - 2 * parts.shift_noise(**d)
            if room > 0:
                n = max(2, math.ceil(2 * parts.session_noise(**d) / room))
                assert n * n_a * (10_000 + n_j * 2_000) >= best.tokens
    assert best.text(available=10).endswith(
        "(the dataset has 10)"
    ) and "(the dataset" not in best.text(available=100)


def test_a_deterministic_judge_gets_no_judgings_the_plan_spends_on_epochs_and_sessions() -> None:
    """A judge whose judgings agree (variance 0: the rules judge, judge.repeats=3) costs no
    token, but its judgings are copies: they average neither its 0 nor the residual away, so
    the plan asks for one judging and reaches the difference with epochs and sessions."""
    variances = {"session": 100.0, "patient": math.nan, "agent": 36.0, "judge": 0.0}
    parts = noise.Split(
        "mrs",
        36,
        tuple(noise.Component(a, v, 0, 0, 0, 1) for a, v in {**variances, "residual": 4.0}.items()),
        {"patient": 1, "agent": 3, "judge": 3},
    )
    assert parts.judge_deterministic and parts.shift_noise(1, 3, 5) == parts.shift_noise(1, 3, 1)
    best = plan(parts, 3.0, Cost(tokens_trajectory=10_000, tokens_judging=0))
    assert best is not None and best.judgings == 1 and best.epochs > 3
    d = {"patients": 1, "epochs": best.epochs, "judgings": 1}
    mde = lambda n: noise.Z_MDE * math.sqrt(2 * parts.run_noise(n, **d))  # noqa: E731
    assert mde(best.sessions) <= 3.0 < mde(best.sessions - 1)
    varying = noise.Split(  # the same judge with some variance: judgings do buy something
        "mrs",
        36,
        tuple(
            noise.Component(a, 9.0 if a == "judge" else c.variance, 0, 0, 0, 1)
            for a, c in ((c.axis, c) for c in parts.components)
        ),
        parts.repeats,
    )
    judged = plan(varying, 3.0, Cost(10_000, 0))
    assert not varying.judge_deterministic and judged is not None and judged.judgings > 1


def test_a_comparison_within_noise_and_its_interaction() -> None:
    parts = split(planted(np.random.default_rng(6), n=36, design=(1, 3, 1)), n_boot=0)
    found = compared(sd_diff=6.0, n_shared=36, a=parts, b=parts)
    assert found.mde > noise.Z_MDE * 6.0 / 6  # the residual of both arms adds to the paired spread
    noise_both = 2 * parts.session_noise(1, 3, 1)
    assert found.interaction == pytest.approx(36.0 - noise_both) and found.unshared == 1.0
    # a spread below both arms' noise: they drew in common (the same seeds), and part cancelled
    common = compared(sd_diff=math.sqrt(noise_both / 4), n_shared=36, a=parts, b=parts)
    assert common.interaction == 0.0 and common.unshared == pytest.approx(0.25)
    cost = Cost(1000, 0)
    sharp = plan(parts, 2.0, cost, common.interaction, unshared=common.unshared)
    assert (
        sharp is not None
        and sharp.sessions * sharp.epochs
        < plan(parts, 2.0, cost).sessions * plan(parts, 2.0, cost).epochs
    )
    assert math.isnan(compared(6.0, 1, parts, parts).mde)


def test_run_metrics_name_the_noise_of_mrs_and_pass_turn() -> None:
    rng = np.random.default_rng(7)
    rows = []
    for s in range(12):
        for epoch in (1, 2, 3):
            for turn in range(4):
                scores = [float(rng.choice([0.25, 0.5, 0.75, 1.0])) for _ in range(2)]
                rows.append(
                    {
                        "session_id": f"s{s}",
                        "epoch": epoch,
                        "turn": turn,
                        "score": float(np.mean(scores)),
                        "status": "scored",
                        "judge_scores": scores,
                    }
                )
    m = run_metrics(
        pd.DataFrame(rows),
        [0.6],
        {"n_trials": 36, "tokens.assistant.input": 36_000.0, "tokens.assistant.output": 3_600.0},
        n_boot=100,
    )
    assert m["repeats.agent"] == 3 and m["repeats.judge"] == 2 and m["repeats.patient"] == 1
    for metric in ("mrs", "pass_turn_0.60"):
        assert m[f"noise.{metric}"] > 0 and m[f"mde.{metric}"] == pytest.approx(
            m[f"noise.{metric}"] * noise.Z_MDE / noise.Z_95
        )
        assert f"share.{metric}.agent_ci_low" in m and f"share.{metric}.patient" not in m
    assert m["plan.mrs.5pt.sessions"] >= 2 and m["plan.mrs.5pt.tokens"] > 0
