"""MLflow metric names and values: the headline alone at the top of a run's page, the rest in
sections by the prefix MLflow groups charts by, values rounded to what their intervals support;
readers get summarize's names back."""

from __future__ import annotations

import math

import pandas as pd
from fixtures_tracking import synthetic_turns

from physassist.metrics import summarize
from physassist.tracking.metric_names import for_mlflow, section, summary_name, with_summary_names


def test_the_headline_is_few_names_and_every_other_metric_has_a_section() -> None:
    metrics = {**summarize(synthetic_turns(), n_boot=20), "tokens.assistant.input": 1200.0, "cost_usd": 0.0012345678}
    logged = for_mlflow(metrics)
    top = [k for k in logged if "/" not in k]  # logged first, each rate before its interval
    assert top[:5] == ["mrs", "mrs_ci_low", "mrs_ci_high", "pass_turn_0.60", "pass_turn_0.60_ci_low"]
    assert len(top) <= 22 and len(metrics) > 200 and all("/" in k for k in list(logged)[len(top):])
    assert logged["tier/mrs.tier.2"] == round(metrics["mrs.tier.2"], 1)
    assert "task_type/pass_turn_0.60.task_type.CR" in logged
    assert "task_type_x_implicitness/mrs.task_type_x_implicitness.CR_AE" in logged
    assert {"counts/end.budget", "counts/unscored_turns.failed", "tools/tool_recall", "tokens/tokens.assistant.input"} <= set(logged)
    assert logged["cost_usd"] == 0.001235 and logged["mrs"] == round(metrics["mrs"], 1)
    assert section("agreement.vs_source.kappa") is None and section("unscored_turns.tier.1") == "tier"
    assert {summary_name(k) for k in logged} == set(metrics)  # nothing lost, nothing renamed twice


def test_readers_see_summarize_names_for_old_and_new_runs() -> None:
    runs = pd.DataFrame({"metrics.mrs": [50.0, 40.0], "metrics.tier/mrs.tier.2": [math.nan, 41.0], "metrics.mrs.tier.2": [52.0, math.nan]})
    read = with_summary_names(runs)
    assert sorted(read.columns) == ["metrics.mrs", "metrics.mrs.tier.2"]
    assert read["metrics.mrs.tier.2"].tolist() == [52.0, 41.0]


def test_noise_and_calibration_are_headline_and_plans_have_their_section() -> None:
    metrics = {"mrs": 43.8, "noise.mrs": 2.04, "mde.mrs": 2.87, "share.mrs.agent": 31.0, "share.mrs.agent_ci_low": 16.8,
               "var.mrs.agent": 54.4, "repeats.agent": 3.0, "mrs_calibrated": 24.3, "mrs_calibrated_ci_low": 10.6,
               "judge_bias": 20.8, "n_labelled": 24.0, "plan.mrs.2pt.sessions": 36.0, "plan.mrs.2pt.cost_usd": 1.23456789,
               "labels_unused": 0.0, "strata": 12.0}
    logged = for_mlflow(metrics)
    assert {"noise.mrs", "mde.mrs", "share.mrs.agent", "share.mrs.agent_ci_low", "var.mrs.agent", "repeats.agent", "mrs_calibrated",
            "mrs_calibrated_ci_low", "judge_bias", "n_labelled"} <= set(logged)
    assert {"noise/plan.mrs.2pt.sessions", "noise/labels_unused", "noise/strata"} <= set(logged)
    assert logged["noise/plan.mrs.2pt.cost_usd"] == 1.234568 and logged["mde.mrs"] == 2.9
