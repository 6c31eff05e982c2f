"""The tracking agent (``physassist.tracking.agent``): the run's MLflow work in a process of its
own. The command's process never imports MLflow; what fails in the agent reaches the command
as a one-line ``TrackingError``, also an operation that was only posted; an agent that dies
mid-run is a tracking failure (exit 3), never a lost evaluation."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import compose, store_uri, tiny_task

import physassist.cli.eval as ev
from physassist import redaction, staging
from physassist.experiment import TrackingSettings
from physassist.redaction import MASK
from physassist.tracking.agent import Agent
from physassist.tracking.claims import END_TAG
from physassist.tracking.mlflow_store import TrackingError


def _settings(uri: str) -> TrackingSettings:
    return TrackingSettings(enabled=True, uri=uri, experiment="physassist", retries=8)


def test_a_default_run_never_imports_mlflow_in_its_own_process(tmp_path: Path) -> None:
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('MLFLOW_IMPORTED', 'mlflow' in sys.modules, 'matplotlib' in "
        "sys.modules))\n"
        "from physassist.cli.eval import main\n"
        "main()\n"
    )
    uri = store_uri(tmp_path)
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "inspect.limit=2",
            f"tracking.uri={uri}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "MLFLOW_IMPORTED False False" in out.stdout
    client = mlflow.MlflowClient(uri)
    [run] = client.search_runs([client.get_experiment_by_name("physassist").experiment_id])
    assert run.info.status == "FINISHED" and run.data.tags["physassist.traces"] == "2"
    assert {a.path for a in client.list_artifacts(run.info.run_id)} >= {
        "config",
        "inspect",
        "plots",
        "tables",
    }


def test_a_posted_operation_that_fails_fails_the_next_call(tmp_path: Path) -> None:
    agent = Agent.start()
    try:
        agent.call("open", _settings(store_uri(tmp_path)))
        agent.post("add", object())  # no stream to add to
        with pytest.raises(TrackingError, match="^add: "):
            agent.call("find_job", "sweep", "job")
        assert agent.call("find_job", "sweep", "job") is None  # said once
    finally:
        agent.close()


def test_an_agent_that_died_is_named_and_ends_calls_at_once(tmp_path: Path) -> None:
    agent = Agent.start()
    agent.call("open", _settings(store_uri(tmp_path)))
    os.kill(agent._proc.pid, signal.SIGKILL)
    with pytest.raises(TrackingError, match="tracking process ended"):
        agent.call("find_job", "sweep", "job", timeout=30)
    agent.close()


def test_an_agent_that_dies_during_the_eval_is_a_tracking_failure(
    tmp_path: Path, monkeypatch
) -> None:
    """The Inspect log and the metrics are kept; the command reports the failure (exit 3)."""
    monkeypatch.setattr(ev, "build_task", lambda args: tiny_task())
    evaluate = staging.evaluate
    killed: list[int] = []

    def agent_dies_first(*args, **kwargs):
        for proc in __import__("psutil").Process().children():
            if "physassist.tracking" in " ".join(proc.cmdline()):
                proc.kill()
                killed.append(proc.pid)
        return evaluate(*args, **kwargs)

    monkeypatch.setattr(staging, "evaluate", agent_dies_first)
    cfg = compose(
        [
            "model=mockllm",
            f"tracking.uri={store_uri(tmp_path)}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            "inspect.display=none",
            "tracking.plots=false",
        ]
    )
    out = ev.run_experiment(cfg, ev.JobContext())
    assert killed
    assert (
        out.status == "FINISHED" and Path(out.log_path).is_file() and out.metrics["n_sessions"] == 3
    )
    assert out.tracking_error and "tracking process ended" in out.tracking_error
    client = mlflow.MlflowClient(store_uri(tmp_path))
    [run] = client.search_runs([client.get_experiment_by_name("physassist").experiment_id])
    assert run.info.status == "FAILED"  # ended by a second agent, not left RUNNING
    assert "tracking process ended" in run.data.tags["physassist.end_reason"]


_FIGURES = ["ehr_vs_patient.png", "pass_vs_tau.png", "task_implicitness_heatmap.png"]


def test_the_figures_are_drawn_by_a_process_of_their_own(tmp_path: Path, monkeypatch) -> None:
    """The agent's plotter draws them while the agent writes the run; drawing them in the agent's
    own process would fail here."""
    from fixtures_tracking import synthetic_turns

    from physassist.tracking import plots
    from physassist.tracking.agent import Session

    session = Session()
    session.plotter = plotter = Agent._spawn("plots")
    monkeypatch.setattr(
        plots, "run_plots", lambda *a, **k: pytest.fail("drawn in the agent's process")
    )
    made = session._draw(synthetic_turns(), tmp_path / "plots", (0.6, 0.75), "a run")()
    assert sorted(p.name for p in made) == _FIGURES and all(p.stat().st_size > 1000 for p in made)
    session._release("the run")  # as the run's logging ends
    assert session.plotter is None and plotter._proc.poll() == 0


def test_figures_are_drawn_in_the_agent_when_its_plotter_is_gone(tmp_path: Path) -> None:
    from fixtures_tracking import synthetic_turns

    from physassist.tracking.agent import Session

    session = Session()
    session.plotter = plotter = Agent._spawn("plots")
    os.kill(plotter._proc.pid, signal.SIGKILL)
    plotter._proc.wait(30)
    made = session._draw(synthetic_turns(), tmp_path / "plots", (0.6, 0.75), "a run")()
    assert sorted(p.name for p in made) == _FIGURES


def test_a_run_held_with_plots_has_a_plotter_until_it_ends(tmp_path: Path) -> None:
    from physassist.tracking.agent import Session

    session = Session()
    session.open(_settings(store_uri(tmp_path)))
    claim = session.claim("a run", {}, None, None)
    session.hold(
        claim.run_id,
        ev.experiment(compose([f"tracking.uri={store_uri(tmp_path)}"]), ev.JobContext()),
    )
    plotter = session.plotter
    assert plotter is not None and plotter.alive
    session.end(claim.run_id, "KILLED", "interrupted (SIGTERM)")  # a signal: nothing drawn
    assert session.plotter is None and plotter._proc.poll() == 0


def test_an_end_reason_that_quotes_a_secret_is_masked_in_the_run(
    tmp_path: Path, monkeypatch
) -> None:
    """The agent starts before the command reads its config: the secrets it learns later reach
    the agent before its next write, so a FAILED run's reason (an exception's text) masks them."""
    secret = "sk-agent-secret-4f2a9c17"
    monkeypatch.setattr(redaction, "_remembered", set())
    uri = store_uri(tmp_path)
    agent = Agent.start()
    try:
        agent.call("open", _settings(uri))
        claim = agent.call("claim", "run", {}, None, None)
        redaction.remember([secret])
        agent.call("end", claim.run_id, "FAILED", f"ValueError: bad header {secret}")
    finally:
        agent.close()
    run = mlflow.MlflowClient(uri).get_run(claim.run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags[END_TAG] == f"ValueError: bad header {MASK}"
