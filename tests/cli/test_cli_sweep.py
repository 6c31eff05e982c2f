"""A real 2x2 multirun with the joblib launcher (parallel processes, one SQLite store):
1 parent + 4 child runs; re-running the sweep (another output dir) logs nothing twice and
launches no worker process just to skip: every job is answered from MLflow before the
launcher starts; the report agrees."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fixtures_tracking import REPO, cli, search_runs, store_uri

from physassist.cli import report as report_cli

SAMPLE = REPO / "data" / "sample" / "sessions"


def _sweep(tmp_path: Path, sweep_dir: str):
    return cli(
        [
            "physassist-eval",
            "-m",
            "hydra/launcher=joblib",
            "hydra.launcher.n_jobs=2",
            "model=oracle,baseline",
            "query=implicit,explicit",
            "inspect.limit=1",
            "inspect.display=none",
            f"tracking.uri={store_uri(tmp_path)}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"hydra.sweep.dir={tmp_path / 'multirun' / sweep_dir}",
        ],
        cwd=tmp_path,
        timeout=900,
    )


@pytest.mark.slow
def test_joblib_sweep_parent_children_resume_and_report(tmp_path: Path) -> None:
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    first = _sweep(tmp_path, "a")
    assert first.returncode == 0, first.stderr[-3000:]
    runs = search_runs(store_uri(tmp_path))
    parents = runs[runs["tags.physassist.kind"] == "sweep"]
    children = runs[runs["tags.physassist.kind"] == "job"]
    assert len(parents) == 1 and len(children) == 4
    parent = parents.iloc[0]
    assert parent["status"] == "FINISHED" and parent["metrics.jobs_finished"] == 4.0
    assert parent["params.language"] == "en" and parent["params.menu"] == "on"
    assert pd.isna(parent.get("params.model")) and pd.isna(parent.get("params.query"))  # swept
    assert set(children["status"]) == {"FINISHED"}
    assert set(children["tags.mlflow.parentRunId"]) == {parent["run_id"]}
    assert set(children["tags.physassist.sweep_id"]) == {parent["tags.physassist.sweep_id"]}
    assert children["tags.physassist.job_key"].nunique() == 4
    combos = set(zip(children["params.model"], children["params.query"], strict=True))
    assert combos == {
        (m, q)
        for m in ("physassist/oracle", "physassist/baseline")
        for q in ("implicit", "explicit")
    }
    assert (children["metrics.n_sessions"] == 1.0).all() and (
        children["metrics.n_turns"] == 4.0
    ).all()
    assert children["metrics.mrs"].between(0, 100).all()
    # names lead with the swept values; the headline is on top, breakdowns under their section
    made = {
        f"{m} | query={q} | inspect.limit=1"
        for m in ("oracle", "baseline")
        for q in ("implicit", "explicit")
    }
    assert set(children["tags.physassist.run_name"]) == made
    # once finished, MLflow's name also carries the headline: the run list shows names, no metric
    for _, child in children.iterrows():
        interval = f"[{child['metrics.mrs_ci_low']:.1f}, {child['metrics.mrs_ci_high']:.1f}]"
        assert (
            child["tags.mlflow.runName"]
            == f"{child['tags.physassist.run_name']} | mRS {child['metrics.mrs']:.1f} {interval}"
        )
    assert (
        children["metrics.tier/mrs.tier.1"].notna().all() and "metrics.mrs.tier.1" not in children
    )
    # the parent carries each job's headline under the job's swept values
    for _, child in children.iterrows():
        label = f"model-{child['params.model'].split('/')[-1]} query-{child['params.query']}"
        assert parent[f"metrics.mrs/{label}"] == child["metrics.mrs"], label
        assert parent[f"metrics.mrs_ci_low/{label}"] == child["metrics.mrs_ci_low"], label
        # and its description (the top of its run page) names each job's mRS
        shown = (
            f"**model={child['params.model'].split('/')[-1]} query={child['params.query']}** "
            f"{child['metrics.mrs']:.1f} ["
        )
        assert shown in parent["tags.mlflow.note.content"], label
    assert (children["params.inspect.limit"] == "1").all()
    for log in children["tags.physassist.inspect_log"]:
        assert Path(log).is_file()

    # the same sweep again (another output dir): every job is found finished and skipped, none
    # launched
    second = _sweep(tmp_path, "b")
    assert second.returncode == 0, second.stderr[-3000:]
    assert second.stdout.count("skipped") == 4 and second.stdout.count("done before") == 4
    assert (
        "is launching" not in second.stdout + second.stderr
        and not (tmp_path / "multirun" / "b" / "0").exists()
    )
    again = search_runs(store_uri(tmp_path))
    assert sorted(again["run_id"]) == sorted(runs["run_id"])

    # the report on this sweep: numbers are the child runs' metrics
    out = tmp_path / "report"
    sweep_id = parent["tags.physassist.sweep_id"]
    assert (
        report_cli.main(
            [
                "--tracking-uri",
                store_uri(tmp_path),
                "--sweep",
                sweep_id,
                "--out",
                str(out),
                "--no-log",
            ]
        )
        == 0
    )
    table = pd.read_csv(out / "table2_en.csv").set_index("run_id")
    for _, child in children.iterrows():
        assert table.loc[child["run_id"], "mRS"] == pytest.approx(child["metrics.mrs"])
        assert table.loc[child["run_id"], "@T.60"] == pytest.approx(child["metrics.pass_turn_0.60"])
    t3 = pd.read_csv(out / "table3.csv")
    assert set(t3["model"]) == {"physassist/oracle", "physassist/baseline"}
