"""A failed model endpoint with the DEFAULT config (docs/faults.md, "What a failed endpoint
looks like"): nothing listening, a server answering 500 to everything, a server that accepts
and never answers, a model the server does not serve. Each ends in under 60 s with one line
naming the URL and the cause, exit status 4, and no run left behind (the pre-flight runs before
any run exists).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy, silent_server
from fixtures_tracking import cli, search_runs, store_uri

from physassist.agents.oracle import OracleAgent
from physassist.faults import EXIT_FAULTS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def _eval_with_defaults(tmp_path: Path, base_url: str, *extra: str):
    """docs/faults.md's failed-endpoint command: the defaults, one session, a store in tmp_path."""
    start = time.monotonic()
    proc = cli(
        [
            "physassist-eval",
            *extra,
            "model=openai_compatible",
            "model.name=oracle",
            f"model.base_url={base_url}",
            "inspect.limit=1",
            f"inspect.log_dir={tmp_path / 'logs'}",
            f"tracking.uri={store_uri(tmp_path)}",
            f"hydra.run.dir={tmp_path / 'out'}",
            f"hydra.sweep.dir={tmp_path / 'multirun'}",
        ],
        cwd=tmp_path,
        timeout=120,
        env={"OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
    )
    return proc, time.monotonic() - start


def _one_fault_line(proc) -> str:
    assert proc.returncode == EXIT_FAULTS, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    return lines[0]


def _no_run(tmp_path: Path) -> None:
    runs = search_runs(store_uri(tmp_path)) if (tmp_path / "mlruns").exists() else []
    assert len(runs) == 0  # checked before any run exists: nothing to clean up
    assert not list((tmp_path / "logs").glob("**/*.eval")) if (tmp_path / "logs").exists() else True


@pytest.mark.parametrize(
    "case",
    ["nothing listens", "500 to everything", "accepts, never answers", "model not served"],
)
def test_a_failed_endpoint_is_one_line_and_exit_4_within_60_s_with_the_defaults(
    tmp_path, case
) -> None:
    if case == "nothing listens":
        url = f"http://127.0.0.1:{_free_port()}/v1"
        proc, seconds = _eval_with_defaults(tmp_path, url)
        cause = "cannot connect ([Errno 111] Connection refused)"
    elif case == "accepts, never answers":
        with silent_server() as url:
            proc, seconds = _eval_with_defaults(tmp_path, url)
        cause = f"no answer to GET {url}/models within 10 s"
    else:
        broken = case == "500 to everything"
        with ScriptedServer({"other-model": agent_policy(OracleAgent())}, broken=broken) as server:
            url = server.base_url
            proc, seconds = _eval_with_defaults(tmp_path, url)
        cause = (
            f"the server answers HTTP 500 (GET {url}/models)"
            if broken
            else "does not serve model.name=oracle (it serves: other-model)"
        )
    line = _one_fault_line(proc)
    assert line.startswith(f"physassist-eval: fault: model endpoint {url}") and line.endswith(
        cause
    ), line
    assert seconds < 60
    _no_run(tmp_path)


@pytest.mark.slow
def test_a_sweep_against_a_dead_endpoint_stops_before_its_first_job(tmp_path) -> None:
    proc, seconds = _eval_with_defaults(
        tmp_path, f"http://127.0.0.1:{_free_port()}/v1", "-m", "query=implicit,explicit"
    )
    line = _one_fault_line(proc)
    assert "model endpoint http://127.0.0.1:" in line and "Connection refused" in line
    assert seconds < 60
    _no_run(tmp_path)
