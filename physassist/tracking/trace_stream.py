"""Sessions written as MLflow traces while the eval runs, each as it ends (issue 25).

The command's process feeds them (``Feed``: Inspect's sample-end hook, each session as a
``views.SampleView``) to its tracking agent (``physassist.tracking.agent``), where a
``TraceStream`` writes them.

Written after the eval, the traces were ~1 s of CPU on the run's critical path (36 sessions,
~760 verdicts: a ``start_trace`` transaction per session, the spans in batches). A session is
final when Inspect hands it to its sample-end hook, and the run exists (claimed RUNNING) before
the eval starts, so each finished session is queued there and a worker thread writes the queue
in batches while the eval goes on: with a real model the process mostly waits for replies, and
the writes take that time instead of the user's.

Every guarantee of the write after the eval holds: the run's stale traces (an earlier attempt's)
are deleted first; ``write_traces`` afterwards writes what the stream did not (a resumed
``eval_set``'s earlier samples), counts the run's traces back and raises on a shortfall. A write
that fails stops the stream and ``finish`` raises it, so the run ends FAILED with the error
named and the command exits 3, as a failure after the eval did. On Ctrl-C or an error the
stream stops (``stop``: what is queued is dropped) and the run is ended KILLED or FAILED as
before. Writes take the store lock (``store_lock``) batch by batch, between the other writers.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from functools import cache
from typing import Any, Protocol

from physassist.tracking.mlflow_store import store_lock
from physassist.tracking.traces import (
    Streamed,
    build_traces,
    delete_run_traces,
    sample_key,
    scored,
    store_traces,
)

#: How long ``stop`` waits for a batch being written to end (the worker is a daemon thread).
STOP_WAIT_S = 10.0

_END = object()  # queued by finish/stop: the worker ends after what is before it
_STREAMS: list[Feed] = []  # what the hook feeds (one per active ``streaming``)


class TraceStream:
    """A worker thread writing finished sessions as the traces of run ``run_id``."""

    def __init__(self, uri: str, experiment_id: str, run_id: str, raw_chars: int) -> None:
        self.uri, self.experiment_id, self.run_id, self.raw_chars = uri, experiment_id, run_id, raw_chars
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._spec: Any = None  # the eval's EvalSpec (grader, start), from the task-start hook
        self._keys: set[tuple[str, int]] = set()
        self._assessments = 0
        self._busy = 0.0  # seconds spent writing
        self._stopping = False
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._work, name=f"physassist-traces-{run_id[:8]}", daemon=True)
        self._thread.start()

    def started(self, spec: Any) -> None:
        self._queue.put(("spec", spec))

    def add(self, sample: Any) -> None:
        """Queue a finished sample (``EvalSample``); returns at once."""
        self._queue.put(("sample", sample))

    def _work(self) -> None:
        try:
            with store_lock(self.uri):
                delete_run_traces(self.uri, self.experiment_id, self.run_id)
            ended = False
            while not ended:
                batch = [self._queue.get()]
                with contextlib.suppress(queue.Empty):  # everything queued by now: one batch
                    while batch[-1] is not _END:
                        batch.append(self._queue.get_nowait())
                ended = batch[-1] is _END
                if self._stopping:
                    return
                self._write([item for item in batch if item is not _END])
        except Exception as exc:  # noqa: BLE001 - raised by finish(), on the run's thread
            self.error = exc

    def _write(self, items: list[tuple[str, Any]]) -> None:
        started = time.perf_counter()
        samples = []
        for kind, value in items:
            if kind == "spec":
                self._spec = value
            else:
                samples.append(value)
        todo = [(s, md) for s, md in scored(samples) if sample_key(s) not in self._keys]
        if not todo:
            return
        traces = build_traces(todo, self._spec, experiment_id=self.experiment_id, run_id=self.run_id,
                              raw_chars=self.raw_chars)
        with store_lock(self.uri):
            store_traces(self.uri, self.experiment_id, self.run_id, traces)
        self._keys.update(sample_key(s) for s, _ in todo)
        self._assessments += sum(len(t.info.assessments) for t in traces)
        self._busy += time.perf_counter() - started

    def finish(self) -> Streamed:
        """Wait for the queue to be written; what was written (raises the first failed write)."""
        self._queue.put(_END)
        self._thread.join()
        if self.error is not None:
            raise self.error
        return Streamed(frozenset(self._keys), self._assessments, self._busy)

    def stop(self) -> None:
        """Drop what is queued and end the worker (Ctrl-C, a failed eval, a failed log)."""
        self._stopping = True
        self._queue.put(_END)
        self._thread.join(STOP_WAIT_S)


class Poster(Protocol):
    """The side of ``agent.Agent`` a ``Feed`` uses (the agent imports this module)."""

    def post(self, operation: str, *args: Any) -> None: ...


class Feed:
    """The command's side of the stream: the eval's spec and each finished session, handed to
    the tracking agent as views. A failure to hand one over must not fail the eval: a session
    not handed over is written after the eval (``write_traces`` writes what the stream did not),
    and an agent that is gone fails the run's logging, which is reported (exit 3)."""

    def __init__(self, agent: Poster) -> None:
        self.agent = agent

    def started(self, spec: Any) -> None:
        from physassist.tracking.views import spec_view

        with contextlib.suppress(Exception):
            self.agent.post("started", spec_view(spec))

    def add(self, sample: Any) -> None:
        from physassist.tracking.views import sample_view

        if any(scored([sample])):
            with contextlib.suppress(Exception):
                self.agent.post("add", sample_view(sample))

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.agent.post("stop_stream")


@cache
def _feed_streams() -> None:
    """Register, once per process, the Inspect hook that hands the eval's spec and each finished
    sample to the active streams (disabled while there is none)."""
    from inspect_ai.hooks import Hooks, SampleEnd, TaskStart, hooks
    from inspect_ai.hooks._startup import init_hooks

    init_hooks()  # Inspect's once-per-process hook load first: it would print a banner naming ours

    @hooks(name="physassist_traces", description="writes each finished session as an MLflow trace")
    class FeedStreams(Hooks):
        def enabled(self) -> bool:
            return bool(_STREAMS)

        async def on_task_start(self, data: TaskStart) -> None:
            for stream in _STREAMS:
                stream.started(data.spec)

        async def on_sample_end(self, data: SampleEnd) -> None:
            for stream in _STREAMS:
                stream.add(data.sample)


@contextlib.contextmanager
def stopped(stream: Feed | None) -> Iterator[None]:
    """Stop ``stream`` when the block ends, however it ends (after ``finish``: nothing to do)."""
    try:
        yield
    finally:
        if stream is not None:
            stream.stop()


@contextlib.contextmanager
def streaming(stream: Feed | None) -> Iterator[None]:
    """Feed ``stream`` the samples an eval finishes inside this block (None: nothing)."""
    if stream is None:
        yield
        return
    _feed_streams()
    _STREAMS.append(stream)
    try:
        yield
    finally:
        _STREAMS.remove(stream)
