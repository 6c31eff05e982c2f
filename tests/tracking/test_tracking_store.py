"""The SQLite store under parallel writers, retries, URI resolution, and a real MLflow server."""

from __future__ import annotations

import json
import multiprocessing as mp
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from fixtures_tracking import mlflow_server, search_runs, store_uri

from physassist.tracking.mlflow_store import (
    is_transient,
    resolve_artifact_root,
    resolve_tracking_uri,
    sqlite_path,
    with_retries,
)
from physassist.tracking.runs import Tracker
from physassist.tracking.server import free_port


def test_uri_resolution(tmp_path: Path) -> None:
    assert (
        resolve_tracking_uri("sqlite:///mlruns/mlflow.db", tmp_path)
        == f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    )
    assert resolve_tracking_uri("http://127.0.0.1:5000") == "http://127.0.0.1:5000"
    assert sqlite_path("sqlite:////a/b.db") == Path("/a/b.db")
    uri = resolve_tracking_uri(None, tmp_path)
    assert resolve_artifact_root(uri, None) == (tmp_path / "mlruns" / "artifacts").as_uri()
    assert resolve_artifact_root("http://x", None) is None


def test_retries_transient_errors_only() -> None:
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise RuntimeError("(sqlite3.OperationalError) database is locked")
        return "ok"

    assert with_retries(flaky, retries=5, base_delay=0.001) == "ok" and calls["n"] == 3
    assert is_transient(RuntimeError("database is locked")) and not is_transient(KeyError("x"))
    with pytest.raises(ValueError):
        with_retries(lambda: (_ for _ in ()).throw(ValueError("bad")), retries=5, base_delay=0.001)


def _writer(uri: str, worker: int, n_runs: int) -> None:
    tracker = Tracker(uri, "concurrency")
    for i in range(n_runs):
        tracker.log_run(
            run_name=f"w{worker}-{i}",
            params={"worker": str(worker), "i": str(i)},
            tags={"physassist.job_key": f"{worker}-{i}"},
            metrics={f"m{j}": float(j) for j in range(50)},
        )


def test_parallel_processes_lose_no_runs(tmp_path: Path) -> None:
    """3 processes create the store and write runs at once: no lock error, no lost run."""
    uri = store_uri(tmp_path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(uri, w, 4)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    runs = search_runs(uri, "concurrency")
    assert len(runs) == 12 and set(runs["status"]) == {"FINISHED"}
    assert (runs["metrics.m49"] == 49.0).all()
    mode = (
        __import__("sqlite3").connect(sqlite_path(uri)).execute("PRAGMA journal_mode").fetchone()[0]
    )
    assert mode == "wal"


def test_real_mlflow_server_roundtrip(tmp_path: Path) -> None:
    """Start `mlflow server` on 127.0.0.1, log a run through it, read it back over REST, stop."""
    with mlflow_server(tmp_path) as base:
        tracker = Tracker(base, "served")
        run_id = tracker.log_run(
            run_name="over-http",
            params={"model": "physassist/oracle"},
            tags={"k": "v"},
            metrics={"mrs": 61.5},
        )
        with urllib.request.urlopen(
            f"{base}/api/2.0/mlflow/runs/get?run_id={run_id}", timeout=10
        ) as r:
            run = json.load(r)["run"]
        assert run["info"]["status"] == "FINISHED"
        assert {m["key"]: m["value"] for m in run["data"]["metrics"]}["mrs"] == 61.5
        assert {p["key"]: p["value"] for p in run["data"]["params"]}["model"] == "physassist/oracle"


def test_unreachable_server_is_a_tracking_error_fast(monkeypatch) -> None:
    from physassist.tracking.mlflow_store import TrackingError

    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "3")
    start = time.monotonic()
    with pytest.raises(TrackingError, match="cannot open MLflow store"):
        Tracker(f"http://127.0.0.1:{free_port()}", "x", retries=0)
    assert time.monotonic() - start < 30
    assert sys.version_info >= (3, 11)


def test_the_database_file_alone_holds_the_runs_after_the_process_exits(tmp_path: Path) -> None:
    """The heap is frozen at exit, so MLflow's SQLite connections are not closed (and the WAL
    not checkpointed) by the last collection: the store checkpoints it itself."""
    import shutil
    import sqlite3
    import subprocess
    import sys

    db = tmp_path / "mlruns" / "mlflow.db"
    code = (
        "from physassist.gc_freeze import frozen_heap\n"
        "from physassist.tracking.runs import Tracker\n"
        f"t = Tracker('sqlite:///{db}', 'wal')\n"
        "with frozen_heap():\n"
        "    t.create_run('after-exit', {'k': 'v'})\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=tmp_path)
    alone = tmp_path / "copy.db"
    shutil.copyfile(db, alone)  # without mlflow.db-wal
    con = sqlite3.connect(alone)
    try:
        assert con.execute("select name from runs").fetchall() == [("after-exit",)]
    finally:
        con.close()
