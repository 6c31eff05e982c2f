"""Sweeps actually run by the cluster launchers, in their own job processes: submitit's local
executor (the same pickling, job folders and result collection as on SLURM) and Ray (a local Ray
started for the sweep, jobs as Ray tasks): one parent and a child run per job logged from the job
processes, exactly once; a job killed mid-evaluation is resumed by the re-run, a finished one is
skipped.

Two jobs, not a 2x2 grid: each job is a process that imports the whole stack (~10 s of CPU), and
two already run at once, race for the EHR store and give one job to kill and one to skip."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import REPO, VENV_BIN, cli, store_uri

from physassist.tracking import claims

pytestmark = pytest.mark.slow

SAMPLE = REPO / "data" / "sample" / "sessions"
GRID = ["model=oracle,baseline", "inspect.limit=1"]
JOBS = 2


def _args(tmp_path: Path, *extra: str) -> list[str]:
    return [
        "physassist-eval",
        "-m",
        *extra,
        "inspect.display=none",
        f"tracking.uri={store_uri(tmp_path)}",
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]


def _runs(tmp_path: Path, kind: str) -> list:
    client = mlflow.MlflowClient(store_uri(tmp_path))
    exp = client.get_experiment_by_name("physassist")
    return (
        client.search_runs([exp.experiment_id], f"tags.`physassist.kind` = '{kind}'") if exp else []
    )


def _check_sweep(tmp_path: Path, sweep_pid: int | None = None) -> list:
    parents, children = _runs(tmp_path, "sweep"), _runs(tmp_path, "job")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert len(children) == JOBS and {c.info.status for c in children} == {"FINISHED"}
    assert {c.data.tags["mlflow.parentRunId"] for c in children} == {parents[0].info.run_id}
    owners = [claims.Owner.parse(c.data.tags[claims.OWNER_TAG]) for c in children]
    assert sweep_pid not in {o.pid for o in owners}  # logged from the job processes
    for child in children:
        log = Path(child.data.tags["physassist.inspect_log"])
        assert log.is_file() and (tmp_path / "logs" / "sweeps") in log.parents
    return children


def test_submitit_local_sweep_resumes_a_killed_job(tmp_path: Path) -> None:
    pytest.importorskip(
        "hydra_plugins.hydra_submitit_launcher", reason="pip install -e '.[cluster]'"
    )
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    cache = tmp_path / "cache"  # no EHR store yet: both job processes need it at once
    env = {**os.environ, "PHYSASSIST_CACHE": str(cache)}
    cmd = _args(tmp_path, "hydra/launcher=submitit_local", *GRID, "inspect.epochs=20")
    sweep = subprocess.Popen(
        [str(VENV_BIN / cmd[0]), *cmd[1:]],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline, victim = time.time() + 400, None
    while victim is None and time.time() < deadline and sweep.poll() is None:
        if (tmp_path / "mlruns" / "mlflow.db").exists():  # created by the sweep, never by this poll
            running = [r for r in _runs(tmp_path, "job") if r.info.status == "RUNNING"]
            victim = running[0] if running else None
        time.sleep(1)
    assert victim is not None, "no job ever ran"
    owner = claims.Owner.parse(victim.data.tags[claims.OWNER_TAG])
    assert owner.pid != sweep.pid
    os.kill(owner.pid, signal.SIGKILL)  # a job process dies mid-evaluation (a node lost)
    _, err = sweep.communicate(timeout=600)
    assert sweep.returncode != 0, err[-2000:]  # the sweep says a job failed ...
    assert _runs(tmp_path, "sweep")[0].info.status == "FAILED"  # ... and is not left RUNNING
    assert list((tmp_path / "multirun" / ".submitit").iterdir())  # submitit's job folders
    stores = list(cache.rglob("*.duckdb"))
    assert len(stores) == 1, stores  # built once, under the build lock, not by every job
    built = stores[0].stat().st_mtime_ns

    again = cli(
        _args(tmp_path, "hydra/launcher=submitit_local", *GRID, "inspect.epochs=20"),
        cwd=tmp_path,
        timeout=900,
        env={"PHYSASSIST_CACHE": str(cache)},
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert (
        list(cache.rglob("*.duckdb")) == stores and stores[0].stat().st_mtime_ns == built
    )  # reused
    children = _check_sweep(tmp_path, sweep.pid)
    resumed = [c for c in children if c.info.run_id == victim.info.run_id]
    assert len(resumed) == 1 and "attempt 1" in resumed[0].data.tags[claims.RESUMED_TAG]


def test_ray_local_sweep_logs_each_job_once(tmp_path: Path) -> None:
    pytest.importorskip(
        "ray", reason="Ray is not installed (pip install -e '.[cluster]'); CI installs .[dev] only"
    )
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    cmd = _args(tmp_path, "hydra/launcher=ray", "+hydra.launcher.init.num_cpus=2", *GRID)
    # Ray folds repeated log lines of its workers into one ("[repeated 3x]"): keep every line,
    # so the re-run's "already finished" lines can be counted.
    env = {"RAY_DEDUP_LOGS": "0"}
    first = cli(cmd, cwd=tmp_path, timeout=900, env=env)
    assert first.returncode == 0, first.stderr[-3000:]
    children = _check_sweep(tmp_path)
    again = cli(
        cmd, cwd=tmp_path, timeout=900, env=env
    )  # the same sweep again: every job found finished
    assert again.returncode == 0, again.stderr[-3000:]
    assert (again.stdout + again.stderr).count("already finished") == JOBS
    assert sorted(r.info.run_id for r in _runs(tmp_path, "job")) == sorted(
        c.info.run_id for c in children
    )
