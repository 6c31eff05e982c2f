"""physassist-eval as a user runs it: bad input fails cleanly; a new ablation is only a YAML
file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures_tracking import REPO, cli, search_runs, store_uri

SAMPLE = REPO / "data" / "sample" / "sessions"


def _common(tmp_path: Path) -> list[str]:
    return [
        f"tracking.uri={store_uri(tmp_path)}",
        f"inspect.log_dir={tmp_path / 'logs'}",
        "inspect.display=none",
        f"hydra.run.dir={tmp_path / 'outputs'}",
    ]


def _no_runs(tmp_path: Path) -> None:
    db = tmp_path / "mlruns" / "mlflow.db"
    if db.exists():
        assert len(search_runs(store_uri(tmp_path))) == 0
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").rglob("*.eval"))


def _console_table(stdout: str) -> dict[str, tuple[str, str, str]]:
    """``{metric: (value, ci low, ci high)}`` for the rate rows of the printed result table."""
    rows = {}
    for line in stdout.splitlines():
        cells = line.replace("[", " ").replace("]", " ").replace(",", " ").split()
        if cells and cells[0].startswith(("mrs", "pass_")):
            rows[cells[0]] = (cells[1], *(cells[2:4] if len(cells) >= 4 else ("", "")))
    return rows


def test_unknown_option_lists_valid_ones(tmp_path: Path) -> None:
    proc = cli(["physassist-eval", "menu=foo", *_common(tmp_path)], cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "physassist-eval: error: menu=foo: no such option in group menu (choices: gold, off, on, "
        "scenario)"
    )
    _no_runs(tmp_path)


def test_misspelled_group_is_named(tmp_path: Path) -> None:
    proc = cli(["physassist-eval", "modle=oracle", *_common(tmp_path)], cwd=tmp_path, timeout=60)
    assert proc.returncode != 0 and "modle" in proc.stderr
    _no_runs(tmp_path)


def test_typo_in_a_users_group_file_is_one_line(tmp_path: Path) -> None:
    user = tmp_path / "user_conf" / "terminal"
    user.mkdir(parents=True)
    (user / "mine.yaml").write_text("mode: natural\nbudget: 16\nnudge: true\nnudg: false\n")
    proc = cli(
        ["physassist-eval", "--config-dir", str(user.parent), "terminal=mine", *_common(tmp_path)],
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "physassist-eval: error: terminal.nudg (terminal/mine.yaml): no such key; terminal has "
        "mode, budget, nudge; did you mean terminal.nudge?"
    )
    _no_runs(tmp_path)


def test_missing_data_directory_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "released" / "physassistbench"
    proc = cli(
        [
            "physassist-eval",
            "dataset=physassistbench",
            f"dataset.source={missing}",
            "dataset.ehr_source=sample",
            *_common(tmp_path),
        ],
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 2
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and str(missing) in lines[0] and "dataset.source" in lines[0]
    _no_runs(tmp_path)


def test_mandatory_path_not_given_is_named(tmp_path: Path) -> None:
    proc = cli(
        ["physassist-eval", "dataset=physassistbench", *_common(tmp_path)], cwd=tmp_path, timeout=60
    )
    assert proc.returncode == 2 and "dataset.source is required" in proc.stderr
    _no_runs(tmp_path)


def test_malformed_session_file_is_named(tmp_path: Path) -> None:
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    bad = tmp_path / "released"
    bad.mkdir()
    line = json.loads((SAMPLE / "med_safety.jsonl").read_text().splitlines()[0])
    del line["rubrics"]
    (bad / "med_safety.jsonl").write_text(json.dumps(line) + "\n")
    proc = cli(
        [
            "physassist-eval",
            "dataset=physassistbench",
            f"dataset.source={bad}",
            "dataset.ehr_source=sample",
            *_common(tmp_path),
        ],
        cwd=tmp_path,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        "med_safety.jsonl" in proc.stderr and "rubrics" in proc.stderr and line["id"] in proc.stderr
    )
    _no_runs(tmp_path)


def test_new_ablation_is_only_a_yaml_file(tmp_path: Path) -> None:
    """A new option in a temporary config dir runs end to end and is logged to MLflow."""
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    conf = tmp_path / "myconf" / "terminal"
    conf.mkdir(parents=True)
    (conf / "tight.yaml").write_text(
        "# four tool calls per turn, no final-answer nudge\nmode: prepare_to_answer\nbudget: 4\n"
        "nudge: false\n"
    )
    proc = cli(
        [
            "physassist-eval",
            "--config-dir",
            str(tmp_path / "myconf"),
            "terminal=tight",
            "inspect.limit=1",
            *_common(tmp_path),
        ],
        cwd=tmp_path,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "MLflow run:" in proc.stdout and "Inspect log:" in proc.stdout and "mrs" in proc.stdout
    runs = search_runs(store_uri(tmp_path))
    assert len(runs) == 1
    run = runs.iloc[0]
    assert run["status"] == "FINISHED"
    assert run["params.terminal.budget"] == "4" and run["params.terminal.nudge"] == "false"
    assert run["tags.choice.terminal"] == "tight"
    assert run["metrics.n_sessions"] == 1.0 and 0.0 <= run["metrics.mrs"] <= 100.0
    # one scale: every number of the console table is the MLflow metric as logged (points)
    printed = _console_table(proc.stdout)
    assert {"mrs", "pass_turn_0.60", "pass_session_0.75"} <= set(printed)
    from physassist.tracking.metric_names import mlflow_name

    for name, (value, low, high) in printed.items():
        assert value == f"{run[f'metrics.{mlflow_name(name)}']:.1f}", name
        if low:
            assert (low, high) == (
                f"{run[f'metrics.{name}_ci_low']:.1f}",
                f"{run[f'metrics.{name}_ci_high']:.1f}",
            ), name
    log = Path(run["tags.physassist.inspect_log"])
    assert log.is_file() and log.suffix == ".eval" and str(log) in proc.stdout
