"""`physassist.metrics.summarize` on hand-computed examples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from physassist.metrics import metric_key, summarize

TASKS = ["IL", "DG", "CR", "WU"]


def _rows(
    session,
    scores,
    *,
    epoch=1,
    scenario="med_safety",
    tier=1,
    language="en",
    sources=None,
    subtypes=None,
    ends=None,
    tools=None,
    gold=None,
):
    rows = []
    for t, s in enumerate(scores):
        status = s if isinstance(s, str) else "scored"
        rows.append(
            {
                "session_id": session,
                "epoch": epoch,
                "turn": t,
                "score": math.nan if isinstance(s, str) else s,
                "status": status,
                "scenario": scenario,
                "tier": tier,
                "language": language,
                "query": "implicit",
                "task_type": TASKS[t],
                "subtype": (subtypes or [None, "PE", "AE", None])[t],
                "tool_source": (sources or ["ehr", "ehr", "ehr", "write"])[t],
                "end": (ends or ["answered"] * 4)[t],
                "n_calls": 1,
                "tools": (tools or [["Observation.search"]] * 4)[t],
                "gold_tools": (gold or [["Observation.search"]] * 4)[t],
            }
        )
    return rows


@pytest.fixture()
def table():
    return pd.DataFrame(
        _rows("A", [1.0, 0.5, 1.0, 1.0], sources=["ehr", "patient", "ehr", "write"])
        + _rows(
            "B",
            [1.0, 1.0, 0.8, 0.6],
            scenario="diagnostic_workup",
            tier=2,
            ends=["answered", "nudged", "budget", "answered"],
        )
        + _rows("C", [0.0, 1.0, "undecided", 1.0], tier=2, language="zh")
    )


def test_mrs_is_mean_of_session_means_not_turn_mean(table):
    out = summarize(table, n_boot=0)
    session_means = [0.875, 0.85, 2 / 3]
    assert out["mrs"] == pytest.approx(np.mean(session_means) * 100)
    turn_mean = table["score"].mean() * 100
    assert abs(out["mrs"] - turn_mean) > 1  # the two definitions differ on this table


def test_pass_turn_pools_scored_turns(table):
    out = summarize(table, n_boot=0)
    assert out["pass_turn_0.60"] == pytest.approx(100 * 9 / 11)  # points, like mRS
    assert out["pass_turn_0.75"] == pytest.approx(100 * 8 / 11)


def test_pass_session_needs_all_four_turns_and_excludes_unscored(table):
    out = summarize(table, n_boot=0)
    # A fails (0.5 at T1); B passes at 0.60 but not 0.75 (0.6 at T3); C has an unscored turn:
    # excluded
    assert out["pass_session_0.60"] == pytest.approx(50.0)
    assert out["pass_session_0.75"] == 0.0
    assert out["pass_session_excluded"] == 1


def test_score_exactly_at_tau_passes():
    out = summarize(pd.DataFrame(_rows("A", [0.6, 0.75, 0.75, 1.0])), n_boot=0)
    assert out["pass_session_0.60"] == 100.0 and out["pass_session_0.75"] == 0.0


def test_unscored_turns_are_counted_by_status(table):
    failed = pd.DataFrame(_rows("D", ["failed", "failed", "failed", "failed"]))
    out = summarize(pd.concat([table, failed]), n_boot=0)
    assert out["unscored_turns"] == 5 and out["scored_turns"] == 11
    assert out["unscored_turns.undecided"] == 1 and out["unscored_turns.failed"] == 4
    assert out["sessions_unscored"] == 1 and out["n_sessions"] == 4
    # a fully unscored session changes neither mRS nor Pass@Turn (it is not a zero)
    assert out["mrs"] == pytest.approx(summarize(table, n_boot=0)["mrs"])
    assert out["pass_session_excluded"] == 2


def test_score_of_unscored_row_is_ignored_even_if_present():
    df = pd.DataFrame(_rows("A", [1.0, 1.0, 1.0, 1.0]))
    df.loc[1, "status"] = "failed"  # a stale score on an unscored turn must not count
    out = summarize(df, n_boot=0)
    assert out["scored_turns"] == 3 and math.isnan(out["pass_session_0.60"])


def test_bootstrap_interval_contains_point_and_is_deterministic(table):
    more = pd.concat(
        [table] + [pd.DataFrame(_rows(f"S{i}", [1.0, 0.25 * (i % 5), 0.5, 1.0])) for i in range(20)]
    )
    a = summarize(more, n_boot=500, seed=3, breakdowns=False)
    b = summarize(more, n_boot=500, seed=3, breakdowns=False)
    c = summarize(more, n_boot=500, seed=4, breakdowns=False)
    assert a == b
    assert a["mrs_ci_low"] != c["mrs_ci_low"] or a["mrs_ci_high"] != c["mrs_ci_high"]
    for key in ("mrs", "pass_turn_0.60", "pass_turn_0.75", "pass_session_0.60"):
        assert a[f"{key}_ci_low"] <= a[key] <= a[f"{key}_ci_high"], key
        assert a[f"{key}_ci_low"] < a[f"{key}_ci_high"], key


def test_breakdowns_and_names(table):
    out = summarize(table, n_boot=0)
    assert out["mrs.task_type.IL"] == pytest.approx(100 * (1.0 + 1.0 + 0.0) / 3)
    assert out["mrs.tier.2"] == pytest.approx(100 * (0.85 + 2 / 3) / 2)
    assert out["mrs.language.zh"] == pytest.approx(100 * 2 / 3)
    assert out["pass_session_0.60.scenario.diagnostic_workup"] == 100.0
    assert out["mrs.channel.patient_interview"] == pytest.approx(50.0)
    assert out["n_turns.implicitness.AE"] == 2 and out["unscored_turns.implicitness.AE"] == 1
    assert out["mrs.task_type_x_implicitness.DG_PE"] == pytest.approx(100 * (0.5 + 1.0 + 1.0) / 3)
    assert out["pass_turn_0.75.turn.T3"] == pytest.approx(100 * 2 / 3)
    assert "pass_session_0.60.task_type.IL" not in out  # session pass is not defined per turn group
    allowed = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
    assert all(set(k) <= allowed for k in out), [k for k in out if not set(k) <= allowed]
    assert metric_key("mrs", "task_type", "Write/Update") == "mrs.task_type.Write_Update"


def test_end_reasons_and_tool_metrics():
    df = pd.DataFrame(
        _rows(
            "A",
            [1.0, 1.0, 1.0, 1.0],
            ends=["answered", "nudged", "budget", "error"],
            tools=[
                ["Observation.search"],
                ["Observation.search", "Condition.search"],
                [],
                ["Patient.read"],
            ],
            gold=[
                ["Observation.search"],
                ["Observation.search", "MedicationRequest.search"],
                ["Condition.search"],
                [],
            ],
        )
    )
    out = summarize(df, n_boot=0)
    assert [out[f"end.{r}"] for r in ("answered", "nudged", "budget", "error")] == [1, 1, 1, 1]
    assert out["tool_recall"] == pytest.approx(
        100 * (1 + 0.5 + 0) / 3
    )  # the turn without gold tools is left out
    assert out["tool_exact"] == pytest.approx(100 / 3)
    assert out["tool_extra_per_turn"] == pytest.approx((0 + 1 + 0 + 1) / 4)
    assert out["tool_missed_per_turn"] == pytest.approx((0 + 1 + 1 + 0) / 4)
    assert out["tool_calls_per_turn"] == 1


def test_pass_hat_k_and_session_variance():
    rows = []
    for epoch, x_scores in enumerate([[1, 1, 1, 1], [1, 0.5, 1, 1], [1, 1, 1, 0.75]], start=1):
        rows += _rows("X", x_scores, epoch=epoch)
        rows += _rows("Y", [1, 1, 1, 1], epoch=epoch)
    out = summarize(pd.DataFrame(rows), n_boot=0)
    # at 0.60, X passes 2 of 3 trials, Y 3 of 3
    assert out["epochs"] == 3
    assert out["pass_hat_1_0.60"] == pytest.approx(100 * (2 / 3 + 1) / 2)
    assert out["pass_hat_2_0.60"] == pytest.approx(100 * (1 / 3 + 1) / 2)
    assert out["pass_hat_3_0.60"] == pytest.approx(100 * (0 + 1) / 2)
    # at 0.75, X passes 2 of 3 as well (0.75 >= 0.75)
    assert out["pass_hat_3_0.75"] == pytest.approx(50.0)
    x_means = [1.0, 0.875, 0.9375]  # in points: 100, 87.5, 93.75
    assert out["session_score_var"] == pytest.approx(np.var(np.multiply(x_means, 100)) / 2)
    assert out["session_score_sd"] == pytest.approx(math.sqrt(np.var(x_means) / 2) * 100)
    assert out["n_trials"] == 6


def test_single_epoch_has_no_pass_hat(table):
    assert not any(k.startswith("pass_hat") for k in summarize(table, n_boot=0))


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['status'\]"):
        summarize(pd.DataFrame({"session_id": ["a"], "turn": [0], "score": [1.0]}))
    with pytest.raises(ValueError, match="tau"):
        summarize(pd.DataFrame(_rows("A", [1, 1, 1, 1])), taus=(1.5,))
