"""Run staging: open the tracker, claim the run, evaluate, stage what it logs, log, end.

``physassist-eval`` (``EvalRun``), ``physassist-rescore`` and ``physassist-generate`` stage
their runs here (``end_abandoned``, ``stage_artifacts``, ``results``); the
commands parse their arguments and print. An evaluation runs in this order, so that bad input
never leaves a half-made run behind: the command checks the config into an ``Experiment`` and
builds the task (which validates the session files) before anything is evaluated or logged.
Then Inspect writes its log, and only then is the run logged to MLflow, so a tracking failure
can never lose the Inspect log. Sweep jobs attach to the sweep's parent run and resume (see
``physassist.tracking.runs``). The run itself (create, resume, log, finish) is
``physassist.tracking``; this module decides, from the experiment and the Inspect log, what
goes into it.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physassist.experiment import Experiment
from physassist.faults import DiskFull, fault_summary, no_space
from physassist.options import mlflow_names
from physassist.tracking.params import is_execution_param

if TYPE_CHECKING:
    import pandas as pd
    from inspect_ai import Task
    from inspect_ai.log import EvalLog
    from inspect_ai.model import Model

    from physassist.tracking.agent import Agent
    from physassist.tracking.claims import Claim
    from physassist.tracking.runs import JobRun, SweepInfo, Tracker
    from physassist.tracking.trace_stream import Feed, TraceStream


@dataclass
class JobContext:
    """Where a composition runs: alone, or as one job of a sweep."""

    overrides: list[str] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    sweep_dir: Path | None = None  # set for multirun jobs
    number: int = 0  # the job's number in its sweep

    @cached_property
    def sweep(self) -> SweepInfo | None:
        """The sweep this job belongs to (its parent run, arguments, process), as the sweep's
        callback wrote it into the sweep directory."""
        if self.sweep_dir is None:
            return None
        from physassist.tracking import runs

        sweep = runs.SweepInfo.read(self.sweep_dir)
        if sweep is None:  # no callback ran (e.g. hydra.callbacks overridden)
            sweep = runs.SweepInfo(runs.sweep_key([str(self.sweep_dir)], {}), None)
        return sweep

    @property
    def key(self) -> str | None:
        """The job's key in its sweep (None outside a sweep)."""
        from physassist.tracking import runs

        return runs.job_key(identity_overrides(self.overrides)) if self.sweep else None


@dataclass
class Outcome:
    """What one experiment produced."""

    status: str  # FINISHED, FAILED, SKIPPED (done before) or BUSY (another process runs it)
    log_path: str | None = None
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    tracking_error: str | None = None
    faults: str | None = None  # physassist.faults.fault_summary: turns a system fault ended
    holder: str | None = None  # BUSY: the process (host:pid:time) that holds the run
    degenerate: str | None = None  # physassist.degenerate.summary: no turn answered or scored
    experiment: Experiment | None = None  # what ran (its thresholds and tracking, for the report)

    @classmethod
    def skipped(cls, run: JobRun, experiment: Experiment | None = None) -> Outcome:
        """A job whose run FINISHED before (``runs.JobRun``): its log and metrics, nothing
        re-run."""
        return cls("SKIPPED", run.log_path, run.run_id, dict(run.metrics), experiment=experiment)

    @property
    def run_status(self) -> str:
        """The MLflow status: a run in which system faults left turns unscored is no result."""
        return "FAILED" if self.faults else self.status


def identity_overrides(overrides: list[str]) -> list[str]:
    """The overrides that change what is measured: not hydra.*, tracking.*, log dirs, display.

    Sweep and job keys are built from these, so re-running a sweep into another output
    directory, with another launcher or another display still finds its runs.
    """
    kept = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if key.startswith("hydra") or is_execution_param(key + "."):
            continue
        kept.append(override)
    return kept


def view_tags(job: JobContext, sweep_id: str | None) -> list[str]:
    """The Inspect log's tags: what the command set (a sweep job's swept values first), then
    the sweep, then the group choices, so Inspect View's log list tells runs apart."""
    overrides = identity_overrides(list(job.overrides))
    given = {o.split("=", 1)[0].lstrip("+~") for o in overrides}
    choices = [f"{k}={v}" for k, v in sorted(job.choices.items()) if k not in given]
    return [*overrides, *([f"sweep={sweep_id}"] if sweep_id else []), *choices]


def shared_params(params: Mapping[str, str], sweep_arguments: list[str]) -> dict[str, str]:
    """The params every job of a sweep shares: a swept key and its whole group are left out."""
    swept = {a.split("=", 1)[0].lstrip("+~") for a in sweep_arguments}
    swept = {k.replace("/", ".") for k in swept if not k.startswith("hydra")}

    names = mlflow_names()
    exact = {names[tuple(k.split("."))] for k in swept if tuple(k.split(".")) in names}

    def varies(key: str) -> bool:
        return key in exact or any(key == k or key.startswith(k + ".") for k in swept)

    return {k: v for k, v in params.items() if not varies(k)}


def parent_metrics(
    metrics: Mapping[str, float], overrides: Sequence[str], sweep_arguments: Sequence[str]
) -> dict[str, float]:
    """A sweep job's headline for its parent run, named by the job's swept values."""
    from physassist.tracking import metric_names, names

    job = identity_overrides(list(overrides))
    label = metric_names.job_label(
        job, names.swept_factors(identity_overrides(list(sweep_arguments)))
    )
    return metric_names.parent_metrics(metrics, label)


def local_path(location: str | None) -> str | None:
    """Inspect reports re-read logs as ``file://`` URIs; show and log plain paths."""
    if location and location.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(location).path)
    return location


def results(
    log: EvalLog, taus: Sequence[float], prices: Mapping[str, Any] | None = None
) -> tuple[pd.DataFrame, dict[str, float]]:
    """The per-turn table and every metric of the benchmark for an Inspect log (with token
    usage and, given ``prices``, estimated cost per role: ``physassist.usage``; and its noise:
    ``physassist.noise``)."""
    from physassist.metrics import summarize
    from physassist.noise import run_metrics
    from physassist.results import turn_table
    from physassist.usage import usage_metrics

    turns = turn_table(log)
    metrics = summarize(turns, taus=taus)
    for name, value in {**inspect_stats(log), **usage_metrics(log, prices)}.items():
        metrics.setdefault(name, value)
    if len(turns) and (turns["status"] == "scored").any():
        metrics.update(run_metrics(turns, taus, metrics))
    return turns, metrics


def inspect_stats(log: EvalLog) -> dict[str, float]:
    """Counts Inspect knows and the turn table does not: errored samples, token usage."""
    out: dict[str, float] = {}
    samples = log.samples or []
    out["samples_total"] = float(len(samples))
    out["samples_error"] = float(sum(1 for s in samples if s.error))
    usage = getattr(log.stats, "model_usage", None) or {}
    out["tokens_input"] = float(sum(u.input_tokens or 0 for u in usage.values()))
    out["tokens_output"] = float(sum(u.output_tokens or 0 for u in usage.values()))
    return out


def end_abandoned(tracker: Tracker) -> None:
    """Runs a dead process left RUNNING (``kill -9``) are ended KILLED, with one line."""
    from physassist.tracking import claims
    from physassist.tracking.mlflow_store import error_line

    try:
        ended = claims.end_abandoned(tracker)
    except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
        print(
            f"tracking: cannot look for runs left RUNNING in {tracker.uri}: {error_line(exc)}",
            file=sys.stderr,
        )
        return
    if ended:
        print(
            f"{len(ended)} run(s) whose process is gone (kill -9, a crash) marked KILLED",
            file=sys.stderr,
        )


def stage_artifacts(
    experiment: Experiment, log_path: str | None, turns: pd.DataFrame | None, staging: Path
) -> list[tuple[Path, str]]:
    """Write the files to log (config, turn table) and list them with the Inspect log."""
    from physassist.tracking import runs

    tracking = experiment.tracking
    files: list[tuple[Path, str]] = []
    resolved = staging / "resolved.yaml"
    resolved.write_text(experiment.resolved)
    files.append((resolved, "config"))
    if log_path and tracking.log_eval and Path(log_path).is_file():
        files.append((Path(log_path), "inspect"))
    if turns is not None and len(turns) and tracking.log_table:
        files += [(p, "tables") for p in runs.write_turn_tables(turns, staging / "tables")]
    return files


#: Starts drawing a run's figures (turns, directory, taus, title); returns the wait for their files.
Draw = Callable[["pd.DataFrame", Path, Sequence[float], str], Callable[[], list[Path]]]


def stage_plots(
    experiment: Experiment, turns: pd.DataFrame | None, staging: Path, draw: Draw
) -> Callable[[], list[tuple[Path, str]]]:
    """Start the run's figures (``draw``: the tracking agent's, which has them drawn while it
    logs the rest); returns the wait for them as files to log."""
    if turns is None or not len(turns) or not experiment.tracking.plots:
        return list
    done = draw(turns, staging / "plots", experiment.taus or [0.6, 0.75], experiment.run_name)
    return lambda: [(p, "plots") for p in done()]


#: What ``EvalRun.run`` shows while Inspect runs: a context manager given the number of
#: sessions x epochs (the command's progress lines, ``physassist.cli.progress.reporting``).
Progress = Callable[[int], AbstractContextManager[Any]]


def evaluate(
    task: Task,
    assistant: Model,
    roles: Mapping[str, Model | list[Model]],
    options: Mapping[str, Any],
    log_dir: Path,
    resumable: bool,
    tags: list[str],
    progress: Progress = lambda total: nullcontext(),
    traces: Feed | None = None,
) -> EvalLog:
    """Run Inspect (eval_set in a per-job directory when resumable) and return the log.
    ``traces``: a ``trace_stream.TraceStream`` fed each sample as it ends."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai import eval_set

    from physassist.gc_freeze import frozen_heap
    from physassist.results import samples_in_memory, with_samples
    from physassist.tracking.trace_stream import streaming

    sessions = min(len(task.dataset), options.get("limit") or len(task.dataset))
    with (
        quiet_display(options) as options,
        frozen_heap(),
        samples_in_memory() as kept,
        streaming(traces),
        progress(sessions * int(options.get("epochs") or 1)),
    ):
        common = dict(model=assistant, model_roles=roles or None, tags=tags, **options)
        if resumable:
            _, logs = eval_set(task, log_dir=str(log_dir), retry_attempts=1, retry_wait=1, **common)
        else:
            logs = inspect_eval(task, log_dir=str(log_dir), **common)
    if not logs or logs[0].status == "cancelled":  # Ctrl-C: Inspect kept what it had in log_dir
        from physassist import signals

        signals.taken()
        raise KeyboardInterrupt
    error = logs[0].error.message if logs[0].status == "error" and logs[0].error else ""
    if (
        os.strerror(errno.ENOSPC) in error
    ):  # Inspect could not write its log: it says so in the log it could not write
        raise OSError(errno.ENOSPC, error)
    return with_samples(logs[0], kept)  # not read back from the log when all are in memory


@contextmanager
def quiet_display(options: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """``options`` as Inspect should get them. Its ``none`` display still builds the final
    results panel (every metric in nested rich tables) and renders it into a silenced console:
    ~1 s of CPU on the default run, ~3.5 ms a model call. Its ``log`` display says the same
    through the root logger instead, so ``none`` runs as ``log`` with those records held back
    for the eval (progress and result lines; a failed task's traceback, which the command
    reports as a fault and the Inspect log keeps) and Inspect's console silenced for good
    (``eval_set``'s status line; Inspect's log handler writes there), as ``none`` leaves it."""
    if options.get("display") != "none":
        yield options
        return
    import inspect_ai
    import rich

    inspect_dir = str(Path(inspect_ai.__file__).parent)

    def held(record: logging.LogRecord) -> bool:
        # Inspect's display logs on the root logger with a ``stacklevel`` that names its caller:
        # its throttled status line, fired later from the event loop, names asyncio's file, and
        # Hydra's job logging printed it in every sweep ("[root][INFO] - Task: ..."). So every
        # root INFO goes (this code logs on named loggers), and all of Inspect's own
        return not (
            record.name == "root"
            and (record.levelno < logging.WARNING or record.pathname.startswith(inspect_dir))
        )

    rich.get_console().quiet = True
    root = logging.getLogger()
    root.addFilter(held)
    try:
        yield {**options, "display": "log"}
    finally:
        root.removeFilter(held)


@dataclass
class RunLog:
    """What the tracking agent needs to log a run after its eval (``log_run``): plain data."""

    experiment: Experiment
    run_id: str
    sweep: SweepInfo | None
    overrides: list[str]
    tags: dict[str, str]
    log: Any  # views.LogView, read as an EvalLog by inputs.run_inputs and traces.TraceRequest
    outcome: Outcome
    turns: pd.DataFrame | None  # the turn table
    usage: pd.DataFrame | None  # usage.session_usage: the run's cost per session

    def write(
        self, tracker: Tracker, stream: TraceStream | None, draw: Draw
    ) -> tuple[str | None, str | None]:
        """``log_run``: what the agent calls with the request it received."""
        return log_run(tracker, self, stream, draw)


def log_run(
    tracker: Tracker, request: RunLog, stream: TraceStream | None, draw: Draw
) -> tuple[str | None, str | None]:
    """Log the run (params, tags, metrics, artifacts, traces) and end it; ``stream``: the
    traces written as the eval ran (``trace_stream``); ``draw``: where the figures are drawn
    (``stage_plots``). Returns (its id, the tracking error). Run by the tracking agent
    (``RunLog.write``)."""
    from physassist import comparability
    from physassist.tracking import runs
    from physassist.tracking.inputs import run_inputs
    from physassist.tracking.metric_names import for_mlflow
    from physassist.tracking.mlflow_store import error_line
    from physassist.tracking.tags import provenance_tags
    from physassist.tracking.traces import TraceRequest

    exp, sweep, outcome, log = request.experiment, request.sweep, request.outcome, request.log
    tracking, metrics, tags = exp.tracking, outcome.metrics, request.tags
    staging = runs.staging_dir()
    try:
        plotted = stage_plots(
            exp, request.turns, staging, draw
        )  # first: drawn while the rest is written
        inputs = run_inputs(log, exp.task["dataset"], exp.dataset_path, exp.task["ehr_source"])
        read = {i.kind: (i.fingerprint, i.source) for i in inputs}  # kinds: dataset, ehr
        tags.update(
            provenance_tags(
                dataset=read.get("dataset"), ehr=read.get("ehr"), inspect_log=outcome.log_path
            )
        )
        params = exp.params
        tags.update(comparability.tags_for(params, tags))
        files = stage_artifacts(exp, outcome.log_path, request.turns, staging)
        if request.usage is not None:
            from physassist.usage import write_session_usage

            files.append((write_session_usage(request.usage, staging / "tables"), "tables"))
        run_id = tracker.log_run(
            run_name=exp.run_name,
            params=params,
            tags=tags,
            metrics=for_mlflow(metrics),
            files=files,
            late_files=plotted,
            table=request.turns if tracking.log_table else None,
            inputs=inputs,
            traces=TraceRequest(log, tracking.trace_limit, tracking.raw_chars, stream=stream)
            if tracking.traces and log.status == "success"
            else None,
            status=outcome.run_status,
            run_id=request.run_id,
            parent_run_id=sweep.parent_run_id if sweep else None,
        )
        if sweep and sweep.parent_run_id and metrics:  # the parent shows its jobs side by side
            tracker.log_metrics(
                sweep.parent_run_id, parent_metrics(metrics, request.overrides, sweep.arguments)
            )
            tracker.describe_sweep(sweep.parent_run_id)
        return run_id, None
    except Exception as exc:  # noqa: BLE001 - tracking must never lose the evaluation
        return None, f"logging to {tracker.uri} failed: {error_line(exc)}"
    finally:
        runs.remove_dir(staging)


@dataclass
class EvalRun:
    """One evaluation of an experiment in MLflow: found done, claimed, evaluated, logged.

    Its MLflow work is done by a tracking agent (``physassist.tracking.agent``), started when
    the run is made so that MLflow is imported and the store opened while the task is built."""

    experiment: Experiment
    job: JobContext
    tracking_error: str | None = None
    agent: Agent | None = None  # while the run is tracked
    _opened: Callable[[float | None], Any] | None = None  # waits for the agent's answer to "open"

    def __post_init__(self) -> None:
        from physassist.tracking.agent import Agent

        if not self.experiment.tracking.enabled:
            Agent.discard()
            return
        try:
            self.agent = Agent.start()
            self._opened = self.agent.request("open", self.experiment.tracking)
        except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
            self._lost(f"cannot start the tracking process: {exc}")

    def _lost(self, error: str) -> None:
        """Tracking failed: the evaluation goes on untracked, the error is reported (exit 3)."""
        self.tracking_error = self.tracking_error or error
        if self.agent is not None:
            self.agent.close()
            self.agent = None

    def _open(self) -> bool:
        """Wait for the store to be open (once); False when tracking failed."""
        if self._opened is not None:
            opened, self._opened = self._opened, None
            try:
                ended = opened(None)
            except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
                self._lost(str(exc))
                return False
            if ended:
                print(
                    f"{ended} run(s) whose process is gone (kill -9, a crash) marked KILLED",
                    file=sys.stderr,
                )
        return self.agent is not None

    def _tracking(self) -> Agent:
        """The tracking agent; ``TrackingError`` once tracking was lost (its callers report it)."""
        from physassist.tracking.mlflow_store import TrackingError

        if self.agent is None:
            raise TrackingError("the tracking process is gone")
        return self.agent

    def close(self) -> None:
        """End the tracking agent (after the run is logged or ended)."""
        if self.agent is not None:
            self.agent.close()
            self.agent = None

    def __enter__(self) -> EvalRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def finished(self) -> Outcome | None:
        """A sweep job FINISHED before is skipped before anything expensive happens; a single
        run's store is opened while the task and the models are built (``run``)."""
        sweep, key = self.job.sweep, self.job.key
        if not (sweep and key) or not self._open():
            return None
        try:
            previous = self._tracking().call("find_job", sweep.sweep_id, key)
        except Exception as exc:  # noqa: BLE001
            self._lost(f"cannot read the MLflow store: {exc}")
            return None
        if previous is not None and previous.status == "FINISHED":
            self.close()
            return Outcome.skipped(previous, self.experiment)
        return None

    def run(
        self,
        task: Task,
        assistant: Model,
        roles: Mapping[str, Model | list[Model]],
        progress: Progress = lambda total: nullcontext(),
    ) -> Outcome:
        """Claim the run (RUNNING before the eval, exactly once), evaluate, log, end it."""
        from physassist.tracking import claims, runs
        from physassist.tracking.trace_stream import stopped

        exp, job = self.experiment, self.job
        sweep, key = job.sweep, job.key
        tags = {f"choice.{k}": v for k, v in job.choices.items()}
        tags[runs.OVERRIDES_TAG] = " ".join(job.overrides)
        if sweep and key:
            tags.update({runs.SWEEP_TAG: sweep.sweep_id, runs.JOB_TAG: key})
        claim = self._claim(tags)
        if claim is not None and claim.state == "finished":
            return Outcome("SKIPPED", None, claim.run_id, experiment=exp)
        if claim is not None and claim.state == "busy":
            return Outcome("BUSY", None, claim.run_id, holder=claim.owner, experiment=exp)

        log_dir = (
            (exp.log_dir / "sweeps" / sweep.sweep_id / key) if (sweep and key) else exp.log_dir
        )
        feed = None
        if claim is not None:
            try:
                feed = self._stream(claim.run_id)
                self._tracking().post("hold", claim.run_id, exp)
            except Exception as exc:  # noqa: BLE001 - the agent is gone: the eval goes on untracked
                self._lost(str(exc))
                with contextlib.suppress(
                    Exception
                ):  # reported (exit 3); else the next command ends it
                    self._end(claim.run_id, "FAILED", f"tracking failed before the eval: {exc}")
                claim = None
        with (
            claims.holding(
                functools.partial(self._end, claim.run_id), sweep_pid=sweep.pid if sweep else None
            )
            if claim
            else nullcontext(),
            stopped(feed),  # Ctrl-C, an error: the stream stops before the run is ended
        ):
            # Inspect View's name for the log, so a sweep's jobs read apart (the run name leads
            # with the swept values); Task takes display_name only when built, task_with not at all
            task._display_name = exp.run_name
            try:
                log = evaluate(
                    task,
                    assistant,
                    roles,
                    exp.eval_options,
                    log_dir,
                    resumable=bool(sweep),
                    tags=view_tags(job, sweep.sweep_id if sweep else None),
                    progress=progress,
                    traces=feed,
                )
            except Exception as exc:  # a full disk: one line naming the directory, the run FAILED
                if no_space(exc, str(log_dir) if log_dir.is_dir() else None):
                    raise DiskFull(f"Inspect's log dir {log_dir}: no space left on device") from exc
                raise
            outcome, turns = self._outcome(log)
            if claim is not None and self.agent is not None:
                self._log(claim.run_id, log, outcome, turns, tags)
                self.close()  # the agent has logged and ended the run: it exits now
        outcome.tracking_error = outcome.tracking_error or self.tracking_error
        return outcome

    def _claim(self, tags: dict[str, str]) -> Claim | None:
        """The run, made (RUNNING) before the eval: claimed exactly once (None: untracked)."""
        if not self._open():
            return None
        try:
            claim: Claim | None = self._tracking().call(
                "claim", self.experiment.run_name, tags, self.job.sweep, self.job.key
            )
            return claim
        except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
            self._lost(f"cannot create the run: {exc}")
            return None

    def _stream(self, run_id: str) -> Feed | None:
        """The sessions written as traces while the eval runs, as each ends (none with a
        ``trace_limit``: which sessions it keeps is known from the whole log, after the eval)."""
        from physassist.tracking.trace_stream import Feed

        tracking = self.experiment.tracking
        if not tracking.traces or tracking.trace_limit is not None:
            return None
        agent = self._tracking()
        agent.post("stream_to", run_id, tracking.raw_chars)
        return Feed(agent)

    def _outcome(self, log: EvalLog) -> tuple[Outcome, pd.DataFrame | None]:
        """The run's status, metrics, faults and warning from its Inspect log; its turns."""
        log_path = local_path(log.location)
        status = "FINISHED" if log.status == "success" else "FAILED"
        turns: pd.DataFrame | None = None
        metrics: dict[str, float] = {}
        if log.status == "success":
            turns, metrics = results(log, self.experiment.taus, self.experiment.prices)
        outcome = Outcome(
            status, log_path, None, metrics, self.tracking_error, experiment=self.experiment
        )
        if turns is not None:
            from physassist import degenerate

            outcome.faults = fault_summary(turns)
            outcome.degenerate = degenerate.summary(turns)
        from physassist import calls

        if down := calls.down():  # the run gave up on an endpoint: that is its fault, first
            outcome.faults = "; ".join(filter(None, (down, outcome.faults)))
        return outcome, turns

    def _log(
        self,
        run_id: str,
        log: EvalLog,
        outcome: Outcome,
        turns: pd.DataFrame | None,
        tags: dict[str, str],
    ) -> None:
        """Have the agent log the run and end it (``log_run``), from views of the log."""
        from physassist.faults import FAULT_TAG
        from physassist.tracking.views import log_view

        exp, sweep = self.experiment, self.job.sweep
        tags["physassist.inspect_status"] = str(log.status)
        if log.error:
            tags["physassist.error"] = str(log.error.message)[:5000]
        if outcome.faults:  # not a result: the run is FAILED, the reasons in a tag
            tags[FAULT_TAG] = outcome.faults[:5000]
        if outcome.degenerate:  # a result, but not what was meant to be measured
            from physassist.degenerate import DEGENERATE_TAG

            tags[DEGENERATE_TAG] = outcome.degenerate
        usage = None
        if turns is not None and exp.tracking.log_table:
            from physassist.usage import session_usage

            usage = session_usage(log, exp.prices)
        request = RunLog(
            exp, run_id, sweep, list(self.job.overrides), tags, log_view(log), outcome, turns, usage
        )
        try:
            outcome.run_id, outcome.tracking_error = self._tracking().call("log", request)
        except Exception as exc:  # noqa: BLE001 - the agent is gone: a new one ends the run FAILED
            outcome.tracking_error = f"logging the run failed: {exc}"
            self._lost(outcome.tracking_error)
            with contextlib.suppress(Exception):  # reported (exit 3); else the next command ends it
                self._end(run_id, "FAILED", outcome.tracking_error)

    def _end(self, run_id: str, status: str, reason: str) -> None:
        """End the claimed run ``status`` (KILLED on a signal, FAILED): through the agent, or,
        when it is gone, through a new one, so the run does not stay RUNNING until a later
        command finds its owner dead. Each wait is bounded (an agent still busy after
        ``ORPHAN_END_S`` ends the run itself)."""
        from physassist.tracking.agent import CLOSE_WAIT_S, Agent
        from physassist.tracking.claims import ORPHAN_END_S
        from physassist.tracking.mlflow_store import TrackingError

        if self.agent is not None:
            try:
                self.agent.call("end", run_id, status, reason, timeout=ORPHAN_END_S)
                return
            except TrackingError:
                if self.agent.alive:
                    raise
        agent = Agent.start()
        try:
            agent.call("open", self.experiment.tracking, timeout=CLOSE_WAIT_S)
            agent.call("end", run_id, status, reason, timeout=CLOSE_WAIT_S)
        finally:
            agent.close()
