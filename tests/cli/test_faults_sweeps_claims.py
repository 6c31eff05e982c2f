"""Exactly-once sweep jobs at the claim level: many processes claim one job (or open one sweep)
at the same moment through one store, and exactly one wins; a run whose owner died is taken
over once; a held run ends KILLED on Ctrl-C, FAILED on an error, and its process stops when the
sweep process that launched it dies (no orphans)."""

from __future__ import annotations

import contextlib
import http.server
import multiprocessing as mp
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time
import traceback
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import mlflow_server, store_uri

from physassist.tracking import claims
from physassist.tracking.mlflow_store import TrackingError
from physassist.tracking.runs import KIND_TAG, PENDING_TAG, SWEEP_TAG, Tracker

N_RACERS = 6


def _sweep_and_claim_together(uri: str, start, out, done) -> None:
    try:
        tracker = Tracker(uri, "physassist")
        start.wait(timeout=120)  # every racer is up: they open the sweep at the same moment
        parent = tracker.start_sweep("sw", ["model=a,b"], "sweep sw")
        c = claims.claim_job(tracker, parent, "sw", "job1", "job 1", {})
        out.put((parent, c.state, c.run_id))
    except BaseException:  # noqa: BLE001 - the test reports the racer's own error
        out.put(("error", traceback.format_exc()))
        raise
    done.wait(120)  # stay alive (a live owner) until every racer has looked


@pytest.mark.slow
def test_racing_identical_sweeps_share_one_parent_and_claim_a_job_once(tmp_path: Path) -> None:
    """Six processes open the same sweep and claim the same job at the same moment."""
    uri = store_uri(tmp_path)
    results = _race(uri)
    assert len({parent for parent, _, _ in results}) == 1, results
    assert sorted(state for _, state, _ in results) == ["busy"] * (N_RACERS - 1) + ["mine"], results
    assert len({run_id for _, _, run_id in results}) == 1  # the losers point at the winner's run
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("physassist")
    assert len(client.search_runs([exp.experiment_id], "tags.`physassist.kind` = 'sweep'")) == 1
    children = _children(uri)
    assert len(children) == 1 and children[0].info.run_id == results[0][2]


def _race(uri: str, n: int = N_RACERS, timeout: float = 240) -> list:
    """What each of ``n`` racing processes got; fails with a racer's own error or exit code."""
    ctx = mp.get_context(
        "spawn"
    )  # a fork of this threaded worker can segfault (it did once in CI: exit -11)
    out, start, done = ctx.Queue(), ctx.Barrier(n), ctx.Event()
    procs = [
        ctx.Process(target=_sweep_and_claim_together, args=(uri, start, out, done))
        for _ in range(n)
    ]
    for p in procs:
        p.start()
    results: list = []
    deadline = time.monotonic() + timeout
    try:
        while len(results) < n:
            try:
                results.append(out.get(timeout=1))
            except queue.Empty:
                dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
                assert not dead or not out.empty(), (
                    f"a racer died without reporting: exit codes {dead}"
                )
                assert time.monotonic() < deadline, (
                    f"only {len(results)} of {n} racers reported in {timeout:.0f} s"
                )
            errors = [r[1] for r in results if r[0] == "error"]
            assert not errors, errors[0]
    finally:
        done.set()
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
    return results


@pytest.mark.slow
def test_racing_processes_claim_once_through_a_tracking_server(tmp_path: Path) -> None:
    """The same race through a real ``mlflow server`` over HTTP: no file lock reaches there."""
    with mlflow_server(tmp_path) as base:
        results = _race(base, 3)  # one single-worker server: fewer racers keep it bounded
        assert len({parent for parent, _, _ in results}) == 1, results
        assert sorted(state for _, state, _ in results) == ["busy", "busy", "mine"], results
        client = mlflow.MlflowClient(base)
        exp = client.get_experiment_by_name("physassist")
        assert len(client.search_runs([exp.experiment_id], "tags.`physassist.kind` = 'sweep'")) == 1
        children = client.search_runs([exp.experiment_id], "tags.`physassist.kind` = 'job'")
        assert [c.info.run_id for c in children] == [results[0][2]]


def test_a_parent_left_pending_is_never_adopted_and_opening_the_sweep_fails_bounded(
    tmp_path: Path,
) -> None:
    """A process that stopped between creating a parent and keeping it: no sweep adopts that
    parent (its creator might have deleted it); opening the sweep fails in bounded time, naming
    it."""
    tracker = Tracker(store_uri(tmp_path), "physassist")
    tags = {KIND_TAG: "sweep", SWEEP_TAG: "sw", PENDING_TAG: "another process"}
    pending = tracker.create_run("sweep sw", tags)
    start = time.monotonic()
    with pytest.raises(TrackingError, match=f"no parent run after 2 s.*pending: {pending}"):
        tracker.start_sweep("sw", ["model=a,b"], "sweep sw", wait_s=2)
    assert time.monotonic() - start < 30
    assert [r.info.run_id for r in tracker.find_runs({SWEEP_TAG: "sw"})] == [
        pending
    ]  # nothing created


def test_a_parent_left_pending_by_a_dead_process_is_deleted_and_the_sweep_opens(
    tmp_path: Path,
) -> None:
    """Its creator was killed between creating and keeping it: nobody will ever keep or delete
    it, so waiting for it (300 s) would only end in an error."""
    tracker = Tracker(store_uri(tmp_path), "physassist")
    dead = claims.Owner(claims.Owner.me().host, _dead_pid(), time.time() - 5)
    tags = {KIND_TAG: "sweep", SWEEP_TAG: "sw", PENDING_TAG: f"{dead}/00"}
    pending = tracker.create_run("sweep sw", tags)
    start = time.monotonic()
    parent = tracker.start_sweep("sw", ["model=a,b"], "sweep sw", wait_s=60)
    assert time.monotonic() - start < 30 and parent != pending
    assert [r.info.run_id for r in tracker.find_runs({SWEEP_TAG: "sw"})] == [parent]
    assert tracker.client.get_run(pending).info.lifecycle_stage == "deleted"
    assert PENDING_TAG not in tracker.client.get_run(parent).data.tags


@contextlib.contextmanager
def _losing_first_create(base: str) -> Iterator[str]:
    """A proxy to ``base`` that forwards the first ``runs/create`` but answers it 503, as a
    connection dropped after the server committed it would: the client sends it again."""
    lost: list[str] = []

    class Proxy(http.server.BaseHTTPRequestHandler):
        def _forward(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            req = urllib.request.Request(base + self.path, body or None, method=self.command)
            req.add_header("Content-Type", self.headers.get("Content-Type", "application/json"))
            try:
                with urllib.request.urlopen(req, timeout=30) as resp:
                    status, data = resp.status, resp.read()
            except urllib.error.HTTPError as exc:
                status, data = exc.code, exc.read()
            if self.path.endswith("/runs/create") and not lost:
                lost.append(self.path)
                status, data = 503, b'{"error_code": "TEMPORARILY_UNAVAILABLE"}'
            self.send_response(status)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _forward

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        assert lost, "the proxy never lost a create"


@pytest.mark.slow
def test_a_create_sent_twice_over_http_leaves_one_run(tmp_path: Path) -> None:
    """The server made the run, the answer was lost, the client retried: one run, not two (the
    other would stay RUNNING forever, a job that looks unfinished)."""
    with mlflow_server(tmp_path) as base, _losing_first_create(base) as proxy:
        tracker = Tracker(proxy, "physassist")
        c = claims.claim(tracker, "single", {}, None, None)
        runs = tracker.find_runs({KIND_TAG: "job"})
        assert [r.info.run_id for r in runs] == [c.run_id]


def test_a_failed_twin_search_keeps_the_created_run(tmp_path: Path, monkeypatch, caplog) -> None:
    """Failing the claim after the create would leave that run RUNNING with nobody to end it."""
    tracker = Tracker(store_uri(tmp_path), "physassist")

    def down(*args, **kwargs):
        raise ConnectionError("tracking server went away")

    monkeypatch.setattr(tracker, "find_runs", down)
    c = claims.claim(tracker, "single", {}, None, None)
    assert c.state == "mine" and tracker.client.get_run(c.run_id).info.status == "RUNNING"
    assert f"run {c.run_id}: cannot look for or delete a twin" in caplog.text


def _children(uri: str) -> list:
    client = mlflow.MlflowClient(uri)
    exp = client.get_experiment_by_name("physassist")
    return client.search_runs([exp.experiment_id], "tags.`physassist.kind` = 'job'")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_run_whose_owner_died_is_taken_over_once(tmp_path: Path) -> None:
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    parent = tracker.start_sweep("sw", ["model=a,b"], "sweep sw")
    first = claims.claim_job(tracker, parent, "sw", "job1", "job 1", {})
    assert first.state == "mine" and first.attempt == 1
    # held by this (live) process: nobody else may take it
    assert claims.claim_job(tracker, parent, "sw", "job1", "job 1", {}).state == "busy"
    # the owner is killed: the run stays RUNNING, owned by a dead pid
    dead = claims.Owner(claims.Owner.me().host, _dead_pid(), time.time() - 5)
    tracker.set_tags(first.run_id, {claims.OWNER_TAG: str(dead)})
    mlflow.MlflowClient(uri).log_param(parent, "physassist.claim.job1.2", str(dead))
    assert [r.info.run_id for r in claims.live_children(tracker, "sw")] == []
    assert claims.mark_stale(tracker, "sw") == [first.run_id]
    assert mlflow.MlflowClient(uri).get_run(first.run_id).info.status == "KILLED"
    second = claims.claim_job(tracker, parent, "sw", "job1", "job 1", {})
    assert second.state == "mine" and second.run_id == first.run_id and second.attempt == 3
    run = mlflow.MlflowClient(uri).get_run(first.run_id)
    assert run.info.status == "RUNNING" and "attempt 2" in run.data.tags[claims.RESUMED_TAG]
    assert claims.END_TAG not in run.data.tags
    assert len(_children(uri)) == 1


def test_held_run_ends_killed_on_ctrl_c_and_failed_on_error(tmp_path: Path) -> None:
    """Through the tracking agent, as ``physassist-eval`` holds its run."""
    from physassist.tracking.agent import Agent

    uri = store_uri(tmp_path)
    client = mlflow.MlflowClient(uri)
    agent = Agent.start()
    try:
        agent.call("open", _settings(uri))
        for exc, status in ((KeyboardInterrupt(), "KILLED"), (ValueError("boom"), "FAILED")):
            run_id = agent.call("claim", "one", {}, None, None).run_id
            assert client.get_run(run_id).data.tags[claims.OWNER_TAG].split(":")[1] == str(
                os.getpid()
            )
            agent.post("hold", run_id)
            with (
                pytest.raises(type(exc)),
                claims.holding(lambda st, why, r=run_id: agent.call("end", r, st, why)),
            ):
                raise exc
            run = client.get_run(run_id)
            assert run.info.status == status, run.data.tags
            assert ("boom" in run.data.tags[claims.END_TAG]) == (status == "FAILED")
    finally:
        agent.close()


def _settings(uri: str):
    from physassist.experiment import TrackingSettings

    return TrackingSettings(enabled=True, uri=uri, experiment="physassist", retries=8)


COMMAND = textwrap.dedent(
    """
    import sys, time
    from physassist.experiment import TrackingSettings
    from physassist.tracking.agent import Agent

    agent = Agent.start()
    agent.call("open", TrackingSettings(enabled=True, uri=sys.argv[1], experiment="physassist",
                                        retries=8))
    run_id = agent.call("claim", "job", {}, None, None).run_id
    agent.post("hold", run_id)
    print(run_id, agent._proc.pid, flush=True)
    time.sleep(120)  # an evaluation, killed
    """
)


def test_agent_ends_the_run_killed_when_its_command_is_killed(tmp_path: Path) -> None:
    """``kill -9`` of the command: its tracking agent sees the pipe close and ends the run."""
    uri = store_uri(tmp_path)
    script = tmp_path / "command.py"
    script.write_text(COMMAND)
    command = subprocess.Popen(
        [sys.executable, str(script), uri], stdout=subprocess.PIPE, text=True
    )
    run_id, agent_pid = command.stdout.readline().split()
    os.kill(command.pid, signal.SIGKILL)
    command.wait(timeout=10)
    deadline = time.time() + 30
    while (
        time.time() < deadline and mlflow.MlflowClient(uri).get_run(run_id).info.status == "RUNNING"
    ):
        time.sleep(0.5)
    run = mlflow.MlflowClient(uri).get_run(run_id)
    assert run.info.status == "KILLED" and str(command.pid) in run.data.tags[claims.END_TAG]
    while time.time() < deadline and Path(f"/proc/{agent_pid}").exists():
        time.sleep(0.2)
    assert (
        not Path(f"/proc/{agent_pid}").exists()
        or "zombie" in Path(f"/proc/{agent_pid}/status").read_text()
    )


ORPHAN = textwrap.dedent(
    """
    import os, sys, time, multiprocessing as mp
    from physassist.experiment import TrackingSettings
    from physassist.tracking import claims
    from physassist.tracking.agent import Agent

    def job(uri, sweep_pid):
        agent = Agent.start()
        agent.call("open", TrackingSettings(enabled=True, uri=uri, experiment="physassist",
                                            retries=8))
        run_id = agent.call("claim", "job", {}, None, None).run_id
        agent.post("hold", run_id)
        print(run_id, os.getpid(), agent._proc.pid, flush=True)
        end = lambda status, why: agent.call("end", run_id, status, why,
                                             timeout=claims.ORPHAN_END_S)
        with claims.holding(end, sweep_pid=sweep_pid):
            time.sleep(120)  # an evaluation that outlives its sweep

    if __name__ == "__main__":
        p = mp.get_context("spawn").Process(target=job, args=(sys.argv[1], os.getpid()))
        p.start()
        p.join()
    """
)


def test_job_process_stops_when_its_sweep_process_is_killed(tmp_path: Path) -> None:
    uri = store_uri(tmp_path)
    script = tmp_path / "sweep.py"
    script.write_text(ORPHAN)
    sweep = subprocess.Popen(
        [sys.executable, str(script), uri], stdout=subprocess.PIPE, text=True, env={**os.environ}
    )
    run_id, *pids = sweep.stdout.readline().split()
    os.kill(sweep.pid, signal.SIGKILL)
    sweep.wait(timeout=10)
    deadline = time.time() + 30
    while time.time() < deadline and any(Path(f"/proc/{pid}").exists() for pid in pids):
        time.sleep(0.5)
    alive = [
        p
        for p in pids
        if Path(f"/proc/{p}").exists() and "zombie" not in Path(f"/proc/{p}/status").read_text()
    ]
    for pid in alive:
        os.kill(int(pid), signal.SIGKILL)
    assert not alive, "the job process or its tracking agent outlived the sweep process"
    run = mlflow.MlflowClient(uri).get_run(run_id)
    assert run.info.status == "KILLED" and "died" in run.data.tags[claims.END_TAG]
