"""A run's MLflow work in a process of its own: the tracking agent (issue 25).

Importing MLflow and opening its SQL store cost ~2.5 s of CPU, writing the sessions as traces
~1 s and drawing the plots ~0.7 s, and in the run's own process all of it was on the user's
critical path (the default run's eval is ~6 s of CPU). ``physassist-eval`` starts its agent as
soon as the experiment is checked: the agent imports MLflow and opens the store on the other
core while the command builds the task; it claims the run when asked (before the eval, exactly
once, as before), writes each finished session as a trace while the eval runs, and logs the run
after it. The command's process never imports MLflow. The run's figures are drawn by a process
the agent starts as the eval starts (its ``plots`` role), beside the agent's writes after the eval.

What holds as before: the run's owner is the command's process (its pid is in the owner tag and
the claim), so the dead-owner check of later commands is unchanged; the command ends the run
KILLED on a signal and FAILED on an error (``claims.holding``) through the agent. What is new:
the agent refreshes the heartbeat, and when the command's process ends without ending its run
(``kill -9``, a crash, an orphaned sweep job's exit) the agent sees its pipe close, ends the run
KILLED and exits. It ignores SIGINT, SIGTERM and SIGHUP: a signal to the terminal's process group
is the command's to handle, and the pipe ends the agent.

The protocol is pickled ``(id, operation, args)`` frames on the agent's stdin and ``(id, ok,
value)`` replies on a pipe of its own (its stdout is sent to stderr, so nothing MLflow prints
can break a frame). Operations are ``Session`` methods; a failure comes back as a
``TrackingError`` with the store's one-line message (``mlflow_store.error_line``).
"""

from __future__ import annotations

import contextlib
import copyreg
import importlib
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import types
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Protocol

from physassist import redaction
from physassist.tracking.mlflow_store import TrackingError

if TYPE_CHECKING:  # the command's process never imports MLflow: these are for the checker only
    import pandas as pd

    from physassist.experiment import Experiment, TrackingSettings
    from physassist.tracking.claims import Claim
    from physassist.tracking.runs import JobRun, SweepInfo


def _proxy(mapping: dict[str, Any]) -> types.MappingProxyType[str, Any]:
    return types.MappingProxyType(mapping)


copyreg.pickle(
    types.MappingProxyType, lambda m: (_proxy, (dict(m),))
)  # the experiment's frozen mappings

_HEADER = struct.Struct("!I")
_GONE = object()  # the reader's sentinel: the other end closed its pipe
#: How long ``close`` waits for the agent to end (it has written everything by then).
CLOSE_WAIT_S = 30.0
#: Imported by the agent before they are needed, on its own core: MLflow and its SQL store as it
#: starts (the command is still composing its config), then, once the eval runs, what logging
#: the run imports (the inputs' MLflow datasets, the table's Parquet writer, the EHR store):
#: ~2.5 s and ~0.5 s of imports taken off the command's wait.
WARM_AT_START = ("mlflow", "mlflow.store.tracking.sqlalchemy_store")
WARM_FOR_LOGGING = (
    "physassist.tracking.inputs",
    "mlflow.data.pandas_dataset",
    "mlflow.data.dataset_source_registry",
    "pyarrow.parquet",
    "physassist.ehr.store",
)
#: The run's figures are drawn by a process of their own (the ``plots`` role, ``Drawing``), started
#: by the agent as the eval starts: after the eval it draws them (~0.5 s) while the agent writes the
#: rest of the run (~0.55 s), on the two cores the command's wait leaves idle.
WARM_FOR_PLOTS = (
    "physassist.tracking.plots",
    "matplotlib.backends.backend_agg",
    "PIL.PngImagePlugin",
)
_spare: Agent | None = None  # started by ``prestart``, for the command's first run
#: The operation that hands the agent the command's secret values (``redaction.remember``), so
#: what it writes (tags, a run's end reason, its log records, its one-line errors) masks them.
REMEMBER = "remember"

#: How a run's figures are drawn: (turns, out_dir, taus, title) -> the wait for their files.
Draw = Callable[["pd.DataFrame", Path, Sequence[float], str], Callable[[], list[Path]]]


class RunRequest(Protocol):
    """What ``Session.log`` is handed (``staging.RunLog``, which imports this module)."""

    @property
    def run_id(self) -> str: ...

    def write(self, tracker: Any, stream: Any, draw: Draw) -> tuple[str | None, str | None]: ...


def _write(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read(stream: IO[bytes]) -> Any:
    """The next frame, or ``_GONE`` at the end of the stream."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return _GONE
    data = stream.read(_HEADER.unpack(head)[0])
    return pickle.loads(data)


class Agent:
    """The command's side: starts the agent process and calls its ``Session``'s operations."""

    def __init__(self, proc: subprocess.Popen[bytes], replies: IO[bytes]) -> None:
        assert proc.stdin is not None, "the agent process is started with stdin=PIPE"
        self._proc, self._requests, self._replies = proc, proc.stdin, replies
        self._lock = threading.Lock()  # one frame at a time on the pipe
        self._answers: dict[int, tuple[bool, Any]] = {}
        self._answered = threading.Condition()
        self._next = 0
        self._gone = False
        self._told: frozenset[str] = frozenset()  # the secrets it was given (``REMEMBER``)
        threading.Thread(target=self._collect, name="physassist-agent-replies", daemon=True).start()

    @classmethod
    def start(cls) -> Agent:
        """This process's agent: the one ``prestart`` started if it is alive, else a new one."""
        global _spare
        spare, _spare = _spare, None
        if spare is not None and spare._proc.poll() is None:
            return spare
        return cls._spawn()

    @classmethod
    def prestart(cls) -> None:
        """Start an agent before the command knows it will track a run (``physassist-eval``, as
        it starts: Hydra's composition and the task build take ~2 s, MLflow's import as long).
        Not taken, it ends with the command (its pipe closes) or ``discard``."""
        global _spare
        cls.discard()
        _spare = cls._spawn()

    @staticmethod
    def discard() -> None:
        """End the agent ``prestart`` started, if no run took it (the run is not tracked)."""
        global _spare
        spare, _spare = _spare, None
        if spare is not None:
            spare.close()

    @classmethod
    def _spawn(cls, role: str = "tracking") -> Agent:
        """Start an agent process of ``role`` (``ROLES``; it begins its imports at once)."""
        reply_r, reply_w = os.pipe()
        root = str(Path(__file__).resolve().parents[2])  # the physassist this process runs
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "physassist.tracking", str(reply_w), role],
            stdin=subprocess.PIPE,
            pass_fds=(reply_w,),
            env=env,
        )
        os.close(reply_w)
        return cls(proc, os.fdopen(reply_r, "rb"))

    def _collect(self) -> None:
        while (frame := _read(self._replies)) is not _GONE:
            number, ok, value = frame
            with self._answered:
                self._answers[number] = (ok, value)
                self._answered.notify_all()
        with self._answered:
            self._gone = True
            self._answered.notify_all()

    def _send(self, operation: str, args: tuple[Any, ...], number: int = -1) -> None:
        try:
            with self._lock:
                secrets = redaction.remembered()
                if secrets - self._told:  # learnt after it started: before what it writes next
                    _write(self._requests, (-1, REMEMBER, (sorted(secrets - self._told),)))
                    self._told = secrets
                _write(self._requests, (number, operation, args))
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise TrackingError(f"the tracking process ended (exit {self._proc.poll()})") from exc

    @property
    def alive(self) -> bool:
        """Its process runs and its reply pipe is open."""
        return self._proc.poll() is None and not self._gone

    def post(self, operation: str, *args: Any) -> None:
        """Ask for ``operation`` and go on (its failure is the next call's)."""
        self._send(operation, args)

    def request(self, operation: str, *args: Any) -> Callable[[float | None], Any]:
        """Ask for ``operation``; returns the function that waits for its answer (raises
        ``TrackingError``: its failure, the agent gone, or no answer in time)."""
        with self._lock:
            self._next += 1
            number = self._next
        self._send(operation, args, number)

        def answer(timeout: float | None = None) -> Any:
            with self._answered:
                if not self._answered.wait_for(
                    lambda: number in self._answers or self._gone, timeout
                ):
                    raise TrackingError(
                        f"the tracking process did not answer {operation} in {timeout:.0f} s"
                    )
                if number not in self._answers:
                    raise TrackingError(
                        f"the tracking process ended (exit {self._proc.poll()}) during {operation}"
                    )
                ok, value = self._answers.pop(number)
            if not ok:
                raise TrackingError(value)
            return value

        return answer

    def call(self, operation: str, *args: Any, timeout: float | None = None) -> Any:
        return self.request(operation, *args)(timeout)

    def close(self) -> None:
        """End the agent: it ends what it still holds (nothing, after a logged run) and exits."""
        with contextlib.suppress(OSError, ValueError), self._lock:
            self._requests.close()
        try:
            self._proc.wait(CLOSE_WAIT_S)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


class Session:
    """The agent's side: one tracker, the runs held for the command, its trace stream."""

    def __init__(self) -> None:
        self.tracker: Any = None  # runs.Tracker
        self.owner_pid = os.getppid()
        self.stream: Any = None  # trace_stream.TraceStream
        self.held: dict[str, contextlib.ExitStack] = {}  # run id -> its heartbeat
        self.plotter: Agent | None = (
            None  # the ``plots`` process of the run held, once its eval runs
        )

    def open(self, tracking: TrackingSettings) -> int:
        """Open the store (``TrackingSettings``); end the runs dead processes left RUNNING (how
        many)."""
        from physassist.tracking import claims
        from physassist.tracking.runs import open_tracker

        self.tracker = open_tracker(tracking)
        return len(claims.end_abandoned(self.tracker))

    def find_job(self, sweep_id: str, key: str) -> JobRun | None:
        from physassist.tracking.runs import JobRun

        run = self.tracker.find_job(sweep_id, key)
        return JobRun.of(run) if run is not None else None

    def claim(
        self, run_name: str, tags: dict[str, str], sweep: SweepInfo | None, key: str | None
    ) -> Claim:
        from physassist.tracking import claims

        return claims.claim(self.tracker, run_name, tags, sweep, key)

    def hold(self, run_id: str, experiment: Experiment | None = None) -> None:
        """Hold the run while the command evaluates (its heartbeat); meanwhile import what
        logging it will need, read what the eval does not change (``_read_ahead``) and,
        for an ``experiment`` with plots, start the process that will draw them (one that does
        not start leaves them to be drawn here)."""
        from physassist.tracking import claims

        stack = contextlib.ExitStack()
        stack.enter_context(claims.heartbeat(self.tracker, run_id))
        self.held[run_id] = stack
        _warm(WARM_FOR_LOGGING, then=experiment)
        if experiment is not None and experiment.tracking.plots and self.plotter is None:
            with contextlib.suppress(OSError):
                self.plotter = Agent._spawn("plots")

    def end(self, run_id: str, status: str, reason: str) -> None:
        from physassist.tracking import claims

        self._release(run_id)
        if self.stream is not None:
            self.stream.stop()
        claims.end_run(self.tracker, run_id, status, reason)

    def stream_to(self, run_id: str, raw_chars: int) -> None:
        """Write the sessions ``started``/``add`` hand over as the traces of ``run_id``."""
        from physassist.tracking.trace_stream import TraceStream

        self.stream = TraceStream(self.tracker.uri, self.tracker.experiment_id, run_id, raw_chars)

    def started(self, spec: Any) -> None:
        self.stream.started(spec)

    def add(self, sample: Any) -> None:
        self.stream.add(sample)

    def stop_stream(self) -> None:
        if self.stream is not None:
            self.stream.stop()

    def log(self, request: RunRequest) -> tuple[str | None, str | None]:
        """Log the run and end it (``staging.RunLog``); (its id, the tracking error)."""
        try:
            return request.write(self.tracker, self.stream, self._draw)
        finally:
            self._release(request.run_id)

    def _draw(
        self,
        turns: pd.DataFrame,
        out_dir: Path,
        taus: Sequence[float],
        title: str,
    ) -> Callable[[], list[Path]]:
        """Start drawing the run's figures in the plotter; returns the wait for their files. With
        no plotter, or one that is gone, they are drawn here (its own failure is the run's)."""

        def here() -> list[Path]:
            return Drawing().draw(turns, out_dir, taus, title)

        plotter = self.plotter
        if plotter is None:
            return here
        try:
            answer = plotter.request("draw", turns, out_dir, taus, title)
        except TrackingError:
            return here

        def collect() -> list[Path]:
            try:
                paths: list[Path] = answer(CLOSE_WAIT_S)  # the plotter's ``Drawing.draw``
                return paths
            except TrackingError:
                if plotter.alive:
                    raise
                return here()

        return collect

    def _release(self, run_id: str) -> None:
        stack = self.held.pop(run_id, None)
        if stack is not None:
            stack.close()
        if self.plotter is not None:  # it has drawn, or was not asked to (a failed eval, a signal)
            self.plotter.close()
            self.plotter = None

    def abandoned(self) -> None:
        """The command's pipe closed: runs it still held are ended KILLED (``kill -9``)."""
        from physassist.tracking.owner import Owner

        for run_id in list(self.held):
            with contextlib.suppress(Exception):
                self.end(
                    run_id,
                    "KILLED",
                    f"process {self.owner_pid} on {Owner.me().host} stopped without "
                    "finishing (seen by its tracking agent)",
                )


class Drawing:
    """The ``plots`` role: a run's figures, drawn while its agent writes the rest of the run."""

    def draw(
        self, turns: pd.DataFrame, out_dir: Path, taus: Sequence[float], title: str
    ) -> list[Path]:
        from physassist.tracking.plots import run_plots  # here: matplotlib only where it draws

        return run_plots(turns, out_dir, taus=taus, title=title)

    def abandoned(self) -> None:
        """Its agent's pipe closed: nothing is held."""


def _tracking() -> Session:
    from physassist.tracking.owner import act_for

    session = Session()
    act_for(session.owner_pid)  # the runs it claims are held by the command's process
    return session


#: What a process of each role serves, and imports as it starts.
ROLES: dict[str, tuple[Callable[[], Any], tuple[str, ...]]] = {
    "tracking": (_tracking, WARM_AT_START),
    "plots": (Drawing, WARM_FOR_PLOTS),
}


def serve(reply_fd: int, role: str = "tracking") -> None:
    """An agent's loop: requests in order from stdin, answers on ``reply_fd``."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    os.dup2(2, 1)  # anything printed goes to stderr, never into a frame
    sys.stdout = sys.stderr
    make, warm = ROLES[role]
    session = make()
    replies = os.fdopen(reply_fd, "wb")
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()

    def receive() -> None:  # always reading: the command's writes never wait for a slow store
        while (frame := _read(sys.stdin.buffer)) is not _GONE:
            inbox.put(frame)
        inbox.put(_GONE)

    threading.Thread(target=receive, name="physassist-agent-inbox", daemon=True).start()
    _warm(warm)
    failed: str | None = None  # a posted operation's failure, for the next call's answer
    while (frame := inbox.get()) is not _GONE:
        number, operation, args = frame
        if operation == REMEMBER:
            redaction.remember(*args)
            continue
        try:
            ok, value = True, getattr(session, operation)(*args)
        except Exception as exc:  # noqa: BLE001 - every failure is answered, in one line
            from physassist.tracking.mlflow_store import error_line

            ok, value = False, redaction.scrub(f"{operation}: {error_line(exc)}")
        if number < 0:
            failed = failed or (None if ok else value)
            continue
        if ok and failed:
            ok, value, failed = False, failed, None
        with contextlib.suppress(OSError):
            _write(replies, (number, ok, value))
    session.abandoned()
    sys.stderr.flush()
    os._exit(0)  # now: a warm-up import may still run (a spare the command did not take)


def _warm(modules: tuple[str, ...], then: Experiment | None = None) -> None:
    """Import ``modules`` in a daemon thread (one that fails is imported, and fails, where used),
    then read ahead what logging ``then`` (an ``Experiment``) will need (read again, and failing,
    where used if this fails)."""

    def run() -> None:
        for name in modules:
            with contextlib.suppress(Exception):
                importlib.import_module(name)
        if then is not None:
            with contextlib.suppress(Exception):
                _read_ahead(then)

    threading.Thread(target=run, name="physassist-agent-warm", daemon=True).start()


def _read_ahead(experiment: Experiment) -> None:
    """Read what ``staging.log_run`` logs that the eval does not change (the EHR store's input,
    the provenance tags, the code versions), each kept where it is read (``inputs.ehr_input``,
    ``tags``, ``comparability``), so that it is there before the eval ends."""
    from physassist.comparability import code_versions
    from physassist.tracking.inputs import ehr_input
    from physassist.tracking.tags import git_tags, package_versions

    git_tags()
    package_versions()
    code_versions()
    ehr_input(experiment.task["ehr_source"])
