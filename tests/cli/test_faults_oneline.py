"""Where the docs promise one line, one line: a Hydra output dir that cannot be written, an unset
``${oc.env:...}``, Ctrl-C to ``physassist-report`` / ``physassist-rescore`` / ``physassist-data
build`` while they work, SIGTERM to ``physassist-eval`` (its whole process group, as a terminal,
``timeout --foreground`` or a batch system sends it) during a model call to a real server on
127.0.0.1. Each ends with its documented exit status, no traceback, nothing left behind (no
output dir, no half-written folder, no MLflow run left RUNNING)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy
from fixtures_tracking import VENV_BIN, cli, search_runs, store_uri

from physassist.agents.oracle import OracleAgent

BOUND_S = 60.0  # a moment that never comes is a hang


def _start(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen:
    full = {**os.environ, "PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "0", **(env or {})}
    return subprocess.Popen(
        [str(VENV_BIN / args[0]), *args[1:]],
        cwd=cwd,
        env=full,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def _when(ready: Callable[[], bool], proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + BOUND_S
    while not ready():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.02)


def _opened(proc: subprocess.Popen, part: str) -> Callable[[], bool]:
    """The process (or a child) holds a file whose path contains ``part`` open: it is at work."""

    def check() -> bool:
        import psutil

        try:
            procs = [psutil.Process(proc.pid), *psutil.Process(proc.pid).children(recursive=True)]
            return any(part in f.path for p in procs for f in p.open_files())
        except psutil.Error:
            return False

    return check


def _signal(proc: subprocess.Popen, signum: int, group: bool = False) -> tuple[int, list[str], str]:
    (os.killpg if group else os.kill)(proc.pid, signum)
    out, err = proc.communicate(timeout=90)
    return proc.returncode, err.strip().splitlines(), out


def test_a_hydra_output_dir_that_cannot_be_written_is_one_line_and_exit_2(tmp_path) -> None:
    proc = cli(["physassist-eval", "hydra.run.dir=/proc"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "physassist-eval: error: Hydra's output dir: cannot write /proc/eval.log: no such file or "
        "directory (nothing ran)"
    ]
    assert list(tmp_path.iterdir()) == []


def test_an_unset_environment_variable_is_one_line_and_leaves_nothing(tmp_path) -> None:
    assert "NOPE_NOT_SET" not in os.environ
    proc = cli(["physassist-eval", "tracking.run_name=${oc.env:NOPE_NOT_SET}"], cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        "physassist-eval: error: tracking.run_name: the environment variable NOPE_NOT_SET is not "
        "set (read by ${oc.env:NOPE_NOT_SET})"
    ]
    assert list(tmp_path.iterdir()) == []  # no .hydra dir, no store


@pytest.fixture(scope="module")
def finished_log(tmp_path_factory) -> tuple[Path, str]:
    """A finished run (the sample's first session, the oracle) in a store: the Inspect log, the
    URI."""
    root = tmp_path_factory.mktemp("finished")
    proc = cli(
        [
            "physassist-eval",
            "inspect.limit=1",
            f"inspect.log_dir={root / 'logs'}",
            f"tracking.uri={store_uri(root)}",
            f"hydra.run.dir={root / 'out'}",
        ],
        cwd=root,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    [log] = (root / "logs").glob("*.eval")
    return log, store_uri(root)


def test_ctrl_c_to_report_while_it_reads_the_store_is_one_line(tmp_path, finished_log) -> None:
    _, uri = finished_log
    proc = _start(
        ["physassist-report", "--tracking-uri", uri, "--out", str(tmp_path / "report")], tmp_path
    )
    _when(_opened(proc, "mlflow.db"), proc)
    code, lines, _ = _signal(proc, signal.SIGINT)
    assert (code, lines) == (130, ["physassist-report: interrupted (Ctrl-C)"])
    assert not [
        p for p in tmp_path.iterdir() if p.name.startswith((".report", "report"))
    ]  # no half report
    assert "RUNNING" not in set(search_runs(uri)["status"])


def test_ctrl_c_to_rescore_while_it_works_is_one_line_and_its_run_is_not_left_running(
    tmp_path, finished_log
) -> None:
    log, uri = finished_log
    proc = _start(
        [
            "physassist-rescore",
            f"source={log}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"tracking.uri={uri}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        tmp_path,
    )
    _when(_opened(proc, "mlflow.db"), proc)
    code, lines, _ = _signal(proc, signal.SIGINT)
    assert (code, lines) == (130, ["physassist-rescore: interrupted (Ctrl-C)"])
    assert "RUNNING" not in set(search_runs(uri)["status"])


def test_ctrl_c_to_a_data_build_is_one_line_and_leaves_no_folder(tmp_path) -> None:
    proc = _start(
        [
            "physassist-data",
            "build",
            "--store",
            "sample",
            "--out",
            str(tmp_path / "built"),
            "--per-slot",
            "1",
        ],
        tmp_path,
    )
    _when(_opened(proc, ".duckdb"), proc)  # building: the EHR store is open
    code, lines, _ = _signal(proc, signal.SIGINT)
    assert (code, lines) == (130, ["physassist-data: interrupted (Ctrl-C)"])
    assert list(tmp_path.iterdir()) == []


def test_sigterm_to_an_eval_during_a_model_call_is_one_line_and_the_run_killed(tmp_path) -> None:
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=30) as server:
        proc = _start(
            [
                "physassist-eval",
                "model=openai_compatible",
                "model.name=oracle",
                f"model.base_url={server.base_url}",
                "inspect.limit=2",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"tracking.uri={store_uri(tmp_path)}",
                f"hydra.run.dir={tmp_path / 'out'}",
            ],
            tmp_path,
            env={"OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
        )
        _when(lambda: len(server.log) >= 2, proc)  # both sessions wait on their first answer
        code, lines, _ = _signal(proc, signal.SIGTERM, group=True)
    assert code == 143, lines
    assert lines == ["physassist-eval: interrupted (SIGTERM)"], "\n".join(lines[:40])
    [run] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert run["status"] == "KILLED"
