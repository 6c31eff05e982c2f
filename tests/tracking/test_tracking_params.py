"""Flattened params, MLflow-safe metric names, deterministic sweep/job keys."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from fixtures_tracking import compose

from physassist.cli.config import resolve
from physassist.tracking.params import experiment_params, flatten_config, format_value
from physassist.tracking.runs import (
    clean_metrics,
    job_key,
    metric_name,
    sweep_key,
    write_turn_tables,
)


def test_flatten_collapses_group_identity_to_short_keys() -> None:
    params = flatten_config(resolve(compose(["model=baseline", "query=explicit", "language=zh"])))
    assert params["model"] == "physassist/baseline"
    assert params["query"] == "explicit"
    assert params["language"] == "zh"
    assert params["menu"] == "on"
    assert params["ehr"] == "strict"
    assert params["terminal"] == "prepare_to_answer" and params["terminal.budget"] == "16"
    assert params["terminal.nudge"] == "true"
    assert params["taus"] == "[0.6,0.75]"
    assert params["scenarios"] == "null"
    assert params["ehr.source"] == "sample"  # interpolation resolved
    assert not any(k.startswith("hydra") for k in params)
    assert all(len(v) <= 6000 for v in params.values())


def test_format_value_and_long_values() -> None:
    assert format_value(None) == "null" and format_value(True) == "true"
    assert format_value({"a": [1, 2]}) == '{"a":[1,2]}'
    assert len(format_value("x" * 10000)) == 6000


def test_execution_params_are_not_experiment_identity() -> None:
    params = flatten_config(resolve(compose()))
    ident = experiment_params(params)
    assert "model" in ident and "query" in ident
    assert not any(k.startswith("tracking.") for k in ident)
    assert "inspect.log_dir" not in ident and "inspect.limit" in ident


def test_metric_names_are_mlflow_safe() -> None:
    assert metric_name("pass_turn@0.6") == "pass_turn_at_0.6"
    assert metric_name("mrs.task_type_x_implicitness.CR_AE") == "mrs.task_type_x_implicitness.CR_AE"
    assert metric_name("a(b)") == "a_b_"
    cleaned = clean_metrics(
        {"mrs": 50, "flag": True, "text": "x", "nan": math.nan, "inf": math.inf, "none": None}
    )
    assert cleaned.keys() == {"mrs", "nan"} and math.isnan(cleaned["nan"])


def test_sweep_and_job_keys_are_deterministic_and_order_free() -> None:
    base = resolve(compose())
    a = sweep_key(["model=oracle,baseline", "query=implicit,explicit"], base)
    b = sweep_key(["query=implicit,explicit", "model=oracle,baseline"], base)
    assert a == b
    assert a != sweep_key(["model=oracle,baseline"], base)
    assert a != sweep_key(
        ["model=oracle,baseline", "query=implicit,explicit"], resolve(compose(["language=zh"]))
    )
    assert job_key(["model=oracle", "query=explicit"]) == job_key(
        ["query=explicit", "model=oracle"]
    )
    assert job_key(["model=oracle"]) != job_key(["model=baseline"])


def test_sweep_parent_params_leave_out_what_the_jobs_vary() -> None:
    from physassist.staging import shared_params

    params = flatten_config(resolve(compose()))
    shared = shared_params(
        params, ["model=oracle,baseline", "terminal.budget=4,16", "hydra.launcher.n_jobs=2"]
    )
    assert "model" not in shared and "model.temperature" not in shared
    assert "terminal.budget" not in shared and shared["terminal"] == "prepare_to_answer"
    assert shared["language"] == "en" and shared["query"] == "implicit"
    assert "model" not in shared_params(params, ["model.name=a,b"])


def test_turn_table_without_a_parquet_form_is_written_as_csv_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    table = pd.DataFrame({"session_id": ["s1", "s2"], "score": [0.5, "n/a"]})  # mixed: no Parquet
    with caplog.at_level("WARNING", logger="physassist.tracking.runs"):
        paths = write_turn_tables(table, tmp_path)
    assert [p.name for p in paths] == ["turns.csv"] and not (tmp_path / "turns.parquet").exists()
    assert "turn table: Parquet copy skipped, CSV only (ArrowInvalid" in caplog.text
