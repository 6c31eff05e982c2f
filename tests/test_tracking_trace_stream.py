"""Sessions written as MLflow traces while the eval runs (``physassist.tracking.trace_stream``):
each as it ends, none written twice, the rest after the eval; a failed write fails the run."""

from __future__ import annotations

from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import compose, search_runs, store_uri, tiny_task

import physassist.cli.eval as ev
from physassist.tracking import trace_stream, traces
from physassist.tracking.runs import Tracker

SESSIONS = 3  # tiny_task's samples


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
            "tracking.plots=false",
            *extra,
        ]
    )


def _run_traces(uri: str, run_id: str) -> list:
    run = mlflow.MlflowClient(uri).get_run(run_id)
    mlflow.set_tracking_uri(uri)
    return mlflow.search_traces(locations=[run.info.experiment_id], run_id=run_id, return_type="list")


def _spy_write_traces(monkeypatch) -> list:
    """Record what ``write_traces`` is handed after the eval (the sessions streamed)."""
    seen: list = []
    original = traces.write_traces

    def spy(log, **kwargs):
        seen.append(kwargs.get("streamed"))
        return original(log, **kwargs)

    monkeypatch.setattr("physassist.tracking.runs.write_traces", spy)
    return seen


def test_sessions_are_written_as_they_end_and_not_again_after_the_eval(tmp_path, tiny, monkeypatch) -> None:
    seen = _spy_write_traces(monkeypatch)
    out = ev.run_experiment(_cfg(tmp_path), ev.JobContext())
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    [streamed] = seen
    assert streamed is not None and len(streamed.keys) == SESSIONS  # all written during the eval
    uri = store_uri(tmp_path)
    found = _run_traces(uri, out.run_id)
    assert len(found) == SESSIONS  # not twice
    tags = mlflow.MlflowClient(uri).get_run(out.run_id).data.tags
    assert tags["physassist.traces"] == str(SESSIONS)
    assert int(tags["physassist.traces_assessments"]) == streamed.assessments == sum(len(t.info.assessments) for t in found)


def test_a_trace_limit_writes_after_the_eval(tmp_path, tiny, monkeypatch) -> None:
    """Which sessions a limit keeps is the log's order, known after the eval."""
    seen = _spy_write_traces(monkeypatch)
    out = ev.run_experiment(_cfg(tmp_path, "tracking.trace_limit=2"), ev.JobContext())
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    assert seen == [None] and len(_run_traces(store_uri(tmp_path), out.run_id)) == 2


def test_a_trace_write_that_fails_during_the_eval_fails_the_run(tmp_path, tiny, monkeypatch) -> None:
    """A fault, not a result: the run ends FAILED naming the error (the command exits 3), the
    Inspect log and the metrics are kept."""

    def broken(*args, **kwargs):
        raise RuntimeError("the trace store said no")

    monkeypatch.setattr(trace_stream, "store_traces", broken)
    out = ev.run_experiment(_cfg(tmp_path), ev.JobContext())
    assert out.tracking_error and "the trace store said no" in out.tracking_error
    assert Path(out.log_path).is_file() and out.metrics["n_sessions"] == SESSIONS
    [run] = search_runs(store_uri(tmp_path)).itertuples()  # the outcome names no run: logging failed
    assert run.status == "FAILED"


def test_the_stream_replaces_stale_traces_and_write_traces_adds_the_rest(tmp_path, tiny) -> None:
    """A resumed run: an earlier attempt's traces go first; sessions the stream did not see (a
    resumed eval_set's earlier samples) are written after the eval, once each."""
    out = ev.run_experiment(_cfg(tmp_path, "tracking.traces=false"), ev.JobContext())
    from inspect_ai.log import read_eval_log

    log = read_eval_log(out.log_path)
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    run_id = tracker.create_run("resumed", {})
    traces.write_traces(log, uri=uri, experiment_id=tracker.experiment_id, run_id=run_id)  # attempt 1
    stream = trace_stream.TraceStream(uri, tracker.experiment_id, run_id, 2000)
    stream.started(log.eval)
    stream.add(log.samples[0])
    streamed = stream.finish()
    assert len(streamed.keys) == 1 and len(_run_traces(uri, run_id)) == 1  # attempt 1's are gone
    summary = traces.write_traces(log, uri=uri, experiment_id=tracker.experiment_id, run_id=run_id, streamed=streamed)
    found = _run_traces(uri, run_id)
    assert summary.traces == len(found) == SESSIONS
    assert summary.assessments == sum(len(t.info.assessments) for t in found)


def test_a_stopped_stream_writes_nothing_more(tmp_path, tiny) -> None:
    """Ctrl-C: what is queued is dropped, the worker ends at once."""
    out = ev.run_experiment(_cfg(tmp_path, "tracking.traces=false"), ev.JobContext())
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
