"""One experiment end to end in-process (a throwaway Inspect task): what gets logged, what a
tracking failure does, how sweep jobs attach, skip and resume, and the sessions written as
traces while the eval runs (each as it ends, none twice; a failed write fails the run)."""

from __future__ import annotations

import logging
import math
import sqlite3
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import compose, search_runs, store_uri, tiny_task

import physassist.cli.eval as ev
from physassist.metrics import summarize
from physassist.results import turn_table
from physassist.tracking import trace_stream, traces
from physassist.tracking.mlflow_store import sqlite_path
from physassist.tracking.runs import SweepInfo, Tracker


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setattr(ev, "build_task", lambda args: tiny_task())


def _cfg(tmp_path: Path, *extra: str):
    return compose(
        [
            "model=mockllm",
            f"tracking.uri={store_uri(tmp_path)}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            "inspect.display=none",
            *extra,
        ]
    )


def test_run_logs_params_tags_metrics_artifacts(tmp_path: Path, tiny, capsys) -> None:
    cfg = _cfg(tmp_path)
    out = ev.run_experiment(
        cfg, ev.JobContext(overrides=["model=mockllm"], choices={"model": "mockllm"})
    )
    assert out.status == "FINISHED" and out.tracking_error is None
    assert Path(out.log_path).is_file()
    runs = search_runs(store_uri(tmp_path))
    assert len(runs) == 1
    run = runs.iloc[0]
    assert run["run_id"] == out.run_id and run["status"] == "FINISHED"
    # params: the flattened resolved config, short keys
    assert run["params.model"] == "mockllm/model" and run["params.query"] == "implicit"
    assert run["params.terminal.budget"] == "16" and run["params.judge"] == "rules"
    # tags: provenance
    assert run["tags.physassist.inspect_log"] == out.log_path
    assert len(run["tags.physassist.git_commit"]) == 40 and run["tags.physassist.git_dirty"] in {
        "true",
        "false",
    }
    assert run["tags.version.inspect_ai"] and run["tags.version.mlflow"] == mlflow.__version__
    assert len(run["tags.physassist.ehr_fingerprint"]) == 20  # the tiny task carries no sessions
    assert run["tags.choice.model"] == "mockllm"
    # metrics: every metric of summarize on the turn table of the log, sectioned and rounded
    from physassist.tracking.metric_names import mlflow_name, rounded

    expected = summarize(turn_table(out.log_path), taus=[0.6, 0.75])
    for key, value in expected.items():
        logged = run[f"metrics.{mlflow_name(key)}"]
        assert (math.isnan(value) and math.isnan(logged)) or logged == rounded(key, value), key
    # artifacts: config, the .eval log, the turn table (files + log_table), plots
    client = mlflow.MlflowClient(store_uri(tmp_path))
    listed = {
        a.path
        for d in ("config", "inspect", "tables", "plots")
        for a in client.list_artifacts(out.run_id, d)
    }
    assert "config/resolved.yaml" in listed
    assert f"inspect/{Path(out.log_path).name}" in listed
    assert {"tables/turns.csv", "tables/turns.parquet", "tables/turns.json"} <= listed
    assert {
        "plots/task_implicitness_heatmap.png",
        "plots/pass_vs_tau.png",
        "plots/ehr_vs_patient.png",
    } <= listed
    table = client.load_table(run["experiment_id"], "tables/turns.json", run_ids=[out.run_id])
    assert len(table) == 12
    # artifacts live beside the database, inside the store directory
    assert (tmp_path / "mlruns" / "artifacts").is_dir()
    ev.report(out)
    printed = capsys.readouterr().out
    assert "mrs" in printed and out.log_path in printed and out.run_id in printed


def test_tracking_none_logs_nothing(tmp_path: Path, tiny) -> None:
    out = ev.run_experiment(_cfg(tmp_path, "tracking=none"), ev.JobContext())
    assert out.status == "FINISHED" and out.run_id is None and Path(out.log_path).is_file()
    assert not (tmp_path / "mlruns").exists()


def test_unwritable_store_keeps_the_inspect_log(tmp_path: Path, tiny) -> None:
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the store directory should be")
    cfg = _cfg(tmp_path, f"tracking.uri=sqlite:///{blocked}/mlruns/mlflow.db", "tracking.retries=0")
    out = ev.run_experiment(cfg, ev.JobContext())
    assert out.status == "FINISHED" and out.run_id is None
    assert out.tracking_error and str(blocked) in out.tracking_error
    assert Path(out.log_path).is_file() and out.metrics["n_sessions"] == 3


def test_sweep_job_attaches_skips_and_resumes(tmp_path: Path, tiny) -> None:
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    parent = tracker.start_sweep("sweep1", ["query=implicit,explicit"], "sweep sweep1")
    sweep_dir = tmp_path / "multirun"
    SweepInfo("sweep1", parent, ("query=implicit,explicit",)).write(sweep_dir)
    job = ev.JobContext(
        overrides=["query=explicit"], choices={"query": "explicit"}, sweep_dir=sweep_dir
    )
    cfg = _cfg(tmp_path, "query=explicit")

    first = ev.run_experiment(cfg, job)
    assert first.status == "FINISHED"
    child = mlflow.MlflowClient(uri).get_run(first.run_id)
    assert child.data.tags["mlflow.parentRunId"] == parent
    assert child.data.tags["physassist.sweep_id"] == "sweep1"
    assert "sweeps/sweep1/" in first.log_path
    # Inspect View tells a sweep's jobs apart: the run name (its swept values first), its tags
    from inspect_ai.log import read_eval_log

    spec = read_eval_log(first.log_path, header_only=True).eval
    assert spec.task_display_name == child.data.tags["physassist.run_name"]
    assert spec.task_display_name.startswith("query=explicit") and {
        "query=explicit",
        "sweep=sweep1",
    } <= set(spec.tags)

    again = ev.run_experiment(cfg, job)  # finished: skipped, nothing logged
    assert again.status == "SKIPPED" and again.run_id == first.run_id
    assert len(search_runs(uri)) == 2  # parent + one child

    # an interrupted job: its run is not FINISHED -> re-run resumes the same run and log
    mlflow.MlflowClient(uri).set_terminated(first.run_id, "FAILED")
    resumed = ev.run_experiment(cfg, job)
    assert resumed.status == "FINISHED" and resumed.run_id == first.run_id
    assert resumed.log_path == first.log_path  # eval_set found the complete log: not recomputed
    assert len(search_runs(uri)) == 2
    assert tracker.end_sweep(parent, "sweep1") == "FINISHED"


def test_failed_eval_is_a_failed_run_with_its_log(tmp_path: Path, monkeypatch, capfd) -> None:
    """With no display Inspect runs its ``log`` one (no results panel drawn for nobody), whose
    records, a failed task's traceback among them, stay held back like ``none``'s panel."""
    from inspect_ai.util import display_type

    monkeypatch.setattr(ev, "build_task", lambda args: tiny_task(fail=True))
    out = ev.run_experiment(_cfg(tmp_path), ev.JobContext())
    assert display_type() == "log"
    logging.getLogger("physassist.later").warning(
        "logged after the eval"
    )  # Inspect's handler is silenced
    captured = capfd.readouterr()
    assert (
        "Traceback" not in captured.err + captured.out and "tiny task failure" not in captured.err
    )
    assert "logged after the eval" not in captured.out
    assert out.status == "FAILED" and Path(out.log_path).is_file()
    run = search_runs(store_uri(tmp_path)).iloc[0]
    assert run["run_id"] == out.run_id and run["status"] == "FAILED"
    assert "tiny task failure" in run["tags.physassist.error"]
    assert run["tags.physassist.inspect_status"] == "error"


def test_interrupted_sweep_job_resumes_its_eval_without_recomputing(
    tmp_path: Path, monkeypatch
) -> None:
    """A job whose eval ended unfinished is re-run: completed samples come from its log."""
    flag, executions = tmp_path / "fail-last-sample", tmp_path / "executions.txt"
    flag.touch()
    monkeypatch.setattr(
        ev, "build_task", lambda args: tiny_task(fail_flag=flag, executions=executions)
    )
    uri = store_uri(tmp_path)
    parent = Tracker(uri, "physassist").start_sweep("sweep2", ["model=mockllm"], "sweep sweep2")
    SweepInfo("sweep2", parent).write(tmp_path / "multirun")
    job = ev.JobContext(overrides=["model=mockllm"], choices={}, sweep_dir=tmp_path / "multirun")

    broken = ev.run_experiment(_cfg(tmp_path), job)
    assert broken.status == "FAILED"
    done_before = executions.read_text().split()
    assert done_before.count("s0") == 1 and done_before.count("s1") == 1

    flag.unlink()
    fixed = ev.run_experiment(_cfg(tmp_path), job)
    assert fixed.status == "FINISHED" and fixed.run_id == broken.run_id  # same child run
    done = executions.read_text().split()
    assert done.count("s0") == 1 and done.count("s1") == 1  # not recomputed
    assert done.count("s2") >= 2
    assert fixed.metrics["n_sessions"] == 3
    children = search_runs(uri, filter_string="tags.`physassist.kind` = 'job'")
    assert len(children) == 1 and children.iloc[0]["status"] == "FINISHED"


def test_log_run_logs_more_than_one_batch_of_each(tmp_path: Path) -> None:
    """Params, tags and metrics share log_batch calls within MLflow's limits (100 params, 100
    tags, 1,000 entities per call): past them every one still arrives, and a resumed run keeps
    the params it has."""
    tracker = Tracker(store_uri(tmp_path), "batches")
    params = {f"p{i}": str(i) for i in range(230)}
    tags = {f"t{i}": str(i) for i in range(130)}
    metrics = {f"m{i}": float(i) for i in range(1900)}
    run_id = tracker.create_run("many", {})
    tracker.log_params(run_id, {"p0": "0"})  # already there: not sent again
    assert (
        tracker.log_run(run_name="many", params=params, tags=tags, metrics=metrics, run_id=run_id)
        == run_id
    )
    data = tracker.client.get_run(run_id).data
    assert data.params == params
    assert {k: data.tags[k] for k in tags} == tags
    assert data.metrics == metrics


# -- traces written while the eval runs (physassist.tracking.trace_stream) ---------------------

STREAMED_SESSIONS = 3  # tiny_task's samples


def _run_traces(uri: str, run_id: str) -> list:
    run = mlflow.MlflowClient(uri).get_run(run_id)
    mlflow.set_tracking_uri(uri)
    return mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run_id, return_type="list"
    )


def test_sessions_are_written_as_they_end_and_not_again_after_the_eval(tmp_path, tiny) -> None:
    out = ev.run_experiment(_cfg(tmp_path, "tracking.plots=false"), ev.JobContext())
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    uri = store_uri(tmp_path)
    found = _run_traces(uri, out.run_id)
    assert len(found) == STREAMED_SESSIONS  # not twice
    tags = mlflow.MlflowClient(uri).get_run(out.run_id).data.tags
    assert tags["physassist.traces"] == str(STREAMED_SESSIONS)
    assert tags["physassist.traces_after_eval"] == "0"  # all written by the agent during the eval
    assert (
        int(tags["physassist.traces_assessments"])
        == sum(len(t.info.assessments) for t in found)
        > 0
    )


def test_a_trace_limit_writes_after_the_eval(tmp_path, tiny) -> None:
    """Which sessions a limit keeps is the log's order, known after the eval."""
    out = ev.run_experiment(
        _cfg(tmp_path, "tracking.plots=false", "tracking.trace_limit=2"), ev.JobContext()
    )
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    uri = store_uri(tmp_path)
    assert len(_run_traces(uri, out.run_id)) == 2
    assert (
        mlflow.MlflowClient(uri).get_run(out.run_id).data.tags["physassist.traces_after_eval"]
        == "2"
    )


def test_a_trace_write_that_fails_during_the_eval_fails_the_run(tmp_path, tiny) -> None:
    """A fault, not a result: the store refuses every trace (a trigger in the SQLite store the
    tracking agent writes to); the run ends FAILED naming the error (the command exits 3), the
    Inspect log and the metrics are kept."""
    uri = store_uri(tmp_path)
    Tracker(uri, "physassist")  # the store and its schema
    with sqlite3.connect(sqlite_path(uri)) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON trace_info BEGIN SELECT RAISE(ABORT, 'the "
            "trace store said no'); END"
        )
    out = ev.run_experiment(_cfg(tmp_path, "tracking.plots=false"), ev.JobContext())
    assert out.tracking_error and "the trace store said no" in out.tracking_error
    assert Path(out.log_path).is_file() and out.metrics["n_sessions"] == STREAMED_SESSIONS
    [run] = search_runs(uri).itertuples()  # the outcome names no run: logging failed
    assert run.status == "FAILED"


def test_the_stream_replaces_stale_traces_and_write_traces_adds_the_rest(tmp_path, tiny) -> None:
    """A resumed run: an earlier attempt's traces go first; sessions the stream did not see (a
    resumed eval_set's earlier samples) are written after the eval, once each."""
    out = ev.run_experiment(
        _cfg(tmp_path, "tracking.plots=false", "tracking.traces=false"), ev.JobContext()
    )
    from inspect_ai.log import read_eval_log

    log = read_eval_log(out.log_path)
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    run_id = tracker.create_run("resumed", {})
    traces.write_traces(
        log, uri=uri, experiment_id=tracker.experiment_id, run_id=run_id
    )  # attempt 1
    stream = trace_stream.TraceStream(uri, tracker.experiment_id, run_id, 2000)
    stream.started(log.eval)
    stream.add(log.samples[0])
    streamed = stream.finish()
    assert len(streamed.keys) == 1 and len(_run_traces(uri, run_id)) == 1  # attempt 1's are gone
    summary = traces.write_traces(
        log, uri=uri, experiment_id=tracker.experiment_id, run_id=run_id, streamed=streamed
    )
    found = _run_traces(uri, run_id)
    assert summary.traces == len(found) == STREAMED_SESSIONS
    assert summary.assessments == sum(len(t.info.assessments) for t in found)


def test_a_stopped_stream_writes_nothing_more(tmp_path, tiny) -> None:
    """Ctrl-C: what is queued is dropped, the worker ends at once."""
    out = ev.run_experiment(
        _cfg(tmp_path, "tracking.plots=false", "tracking.traces=false"), ev.JobContext()
    )
    from inspect_ai.log import read_eval_log

    log = read_eval_log(out.log_path)
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    run_id = tracker.create_run("stopped", {})
    stream = trace_stream.TraceStream(uri, tracker.experiment_id, run_id, 2000)
    stream.stop()
    stream.started(log.eval)
    for sample in log.samples:
        stream.add(sample)
    assert not stream._thread.is_alive() and stream.error is None
    assert _run_traces(uri, run_id) == []


def test_what_the_agent_reads_ahead_is_what_the_run_logs(tmp_path: Path) -> None:
    """``agent._read_ahead`` (while the eval runs) leaves the EHR store's input and the
    provenance tags where ``log_run`` reads them: the same values, not read again."""
    from physassist.ehr.store import EHRStore, find_store
    from physassist.tracking.agent import _read_ahead
    from physassist.tracking.inputs import ehr_input
    from physassist.tracking.tags import git_tags, package_versions

    exp = ev.experiment(compose([f"tracking.uri={store_uri(tmp_path)}"]), ev.JobContext())
    ev.build_task(exp.task)  # the store is built, as by the time the eval runs
    _read_ahead(exp)
    read = ehr_input(exp.task["ehr_source"])
    assert ehr_input(exp.task["ehr_source"]) is read
    with EHRStore(find_store(exp.task["ehr_source"]), prefetch=False) as store:
        assert read.fingerprint == store.fingerprint
        assert dict(zip(read.rows["table"], read.rows["rows"], strict=True)) == store.row_counts()
    tags, versions = git_tags(), package_versions()
    tags["physassist.git_dirty"], versions["version.python"] = "changed by a caller", "0"
    assert git_tags()["physassist.git_dirty"] in {"true", "false"}  # each caller gets its own copy
    assert package_versions()["version.python"] == __import__("platform").python_version()
