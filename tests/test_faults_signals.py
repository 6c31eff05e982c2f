"""SIGTERM and SIGHUP (kill, timeout, docker stop, SLURM preemption, a closed terminal) end a
single run, a basic sweep and a joblib sweep like Ctrl-C: afterwards no run is RUNNING, every
KILLED run says why, the exit status is 128 + the signal (143, 129; 130 for Ctrl-C), and running
the sweep again finishes each job exactly once. The model is the scripted HTTP server with a
small latency, so the signal lands while a job evaluates."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy
from fixtures_tracking import VENV_BIN

from physassist.agents.oracle import OracleAgent


def _runs(uri: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(uri)
    experiment = client.get_experiment_by_name("physassist")
    return client.search_runs([experiment.experiment_id]) if experiment else []


def _wait_for(what: Callable[[], bool], proc: subprocess.Popen, timeout: float = 150) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert proc.poll() is None, f"ended first ({proc.returncode}): {proc.stderr.read()[-2000:]}"
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.3)


def _command(tmp_path: Path, url: str, *extra: str) -> list[str]:
    return [
        str(VENV_BIN / "physassist-eval"),
        *extra,
        "model=openai_compatible",
        "model.name=oracle",
        f"model.base_url={url}",
        "inspect.limit=2",
        "inspect.display=none",
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"tracking.uri=sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}",
        f"hydra.run.dir={tmp_path / 'out'}",
        f"hydra.sweep.dir={tmp_path / 'multirun'}",
    ]


def _interrupt(tmp_path: Path, signum: int, *extra: str) -> tuple[int, str, list]:
    """Start the command, send ``signum`` once a job's run evaluates; the exit status, stderr
    and the runs after it ended."""
    uri = f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"
    env = {**os.environ, "OPENAI_COMPATIBLE_API_KEY": "EMPTY", "PYTHONUNBUFFERED": "1"}
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=0.3) as server:
        proc = subprocess.Popen(
            _command(tmp_path, server.base_url, *extra), cwd=tmp_path, env=env, text=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )
        try:
            running = lambda: (tmp_path / "mlruns").exists() and any(  # noqa: E731
                r.info.status == "RUNNING" and r.data.tags.get("physassist.kind") == "job" for r in _runs(uri)
            )
            _wait_for(lambda: running() and bool(server.served()), proc)
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=90)
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.returncode, err, _runs(uri)


def _all_ended(runs: list, reason: str) -> None:
    assert runs and not [r for r in runs if r.info.status == "RUNNING"]
    for run in runs:
        assert run.info.status == "KILLED" and run.info.end_time, run
        if run.data.tags.get("physassist.kind") == "job":
            assert reason in run.data.tags["physassist.end_reason"], run.data.tags


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_ends_a_single_run_killed_with_the_reason(tmp_path, signum) -> None:
    code, err, runs = _interrupt(tmp_path, signum)
    name = signal.Signals(signum).name
    assert code == 128 + signum, err[-2000:]
    assert err.strip().splitlines()[-1] == f"physassist-eval: interrupted ({name})"
    _all_ended(runs, f"interrupted ({name})")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("launcher", "signum"),
    [("basic", signal.SIGTERM), ("joblib", signal.SIGTERM), ("joblib", signal.SIGHUP), ("joblib", signal.SIGINT)],
)
def test_a_signal_ends_a_sweep_and_every_job_run_and_a_rerun_finishes_each_job_once(tmp_path, launcher, signum) -> None:
    sweep = ["-m", f"hydra/launcher={launcher}", "query=implicit,explicit"]
    code, err, runs = _interrupt(tmp_path, signum, *sweep)
    name = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    assert code == 128 + signum, err[-2000:]
    _all_ended(runs, f"interrupted ({name})")
    assert {r.data.tags.get("physassist.kind") for r in runs} == {"sweep", "job"}

    with ScriptedServer({"oracle": agent_policy(OracleAgent())}) as server:
        again = subprocess.run(
            _command(tmp_path, server.base_url, *sweep), cwd=tmp_path, capture_output=True, text=True, timeout=300,
            env={**os.environ, "OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
        )
    assert again.returncode == 0, again.stderr[-2000:]
    runs = _runs(f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}")
    jobs = [r for r in runs if r.data.tags.get("physassist.kind") == "job"]
    assert sorted(r.info.status for r in jobs) == ["FINISHED", "FINISHED"]  # one run per job, resumed
    assert len({r.data.tags["physassist.job_key"] for r in jobs}) == 2
