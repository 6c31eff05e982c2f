"""MLflow runs of experiments and sweeps: find-or-create, log, finish.

One experiment = one run. A multirun sweep = one parent run (tag ``physassist.kind=sweep``) and
one child run per job (``mlflow.parentRunId``). Sweeps and jobs are identified by deterministic
keys (a hash of the sweep's arguments and base config; a hash of the job's overrides), so a sweep
re-run with the same arguments finds its parent again, skips jobs whose child run FINISHED, and
reuses the child run of an interrupted job instead of logging a duplicate.

All writes go through ``mlflow_store`` (file lock + retries for SQLite). This module works on
plain values; it never reads Hydra config objects.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import math
import random
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pandas as pd

from physassist import redaction
from physassist.tracking.inputs import RunInput
from physassist.tracking.mlflow_store import (
    TrackingError,
    error_line,
    get_or_create_experiment,
    http_quiet,
    open_client,
    resolve_artifact_root,
    resolve_tracking_uri,
    store_lock,
    with_retries,
)
from physassist.tracking.names import with_headline
from physassist.tracking.owner import Owner
from physassist.tracking.traces import TraceRequest, write_traces

if TYPE_CHECKING:
    from mlflow.entities import Metric, Param, Run, RunTag

SWEEP_FILE = "physassist_sweep.json"
KIND_TAG = "physassist.kind"  # "sweep" (a parent), "job" (an experiment run), "report"
SWEEP_TAG = "physassist.sweep_id"
JOB_TAG = "physassist.job_key"
OVERRIDES_TAG = "physassist.overrides"
PENDING_TAG = "physassist.sweep_pending"  # on a new parent until its creator kept it
NOTE_TAG = "mlflow.note.content"  # a run's description, at the top of its page
RUN_NAME_TAG = (
    "physassist.run_name"  # the name as made (names.run_name): mlflow.runName adds the headline
)
TRACES_TAG = (
    "physassist.traces"  # sessions written as traces (+ _assessments, _seconds, _after_eval)
)

log = logging.getLogger(__name__)

SWEEP_WAIT_S = 300.0  # how long opening a sweep may wait for racing identical sweeps

_UNSAFE_METRIC = re.compile(r"[^A-Za-z0-9_\-. /]")

T = TypeVar("T")


def stable_hash(*parts: Any, length: int = 12) -> str:
    """A short sha256 of JSON-serialised parts (key order independent)."""
    text = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def sweep_key(sweep_arguments: Sequence[str], base_config: Mapping[str, Any]) -> str:
    """Deterministic id of a sweep: its command-line arguments (order-free) + base config."""
    return stable_hash(sorted(sweep_arguments), base_config)


def job_key(job_overrides: Sequence[str]) -> str:
    """Deterministic id of one job within a sweep: its overrides (order-free)."""
    return stable_hash(sorted(job_overrides))


def metric_name(name: str) -> str:
    """An MLflow-safe metric name (``pass_turn@0.6`` -> ``pass_turn_at_0.6``)."""
    return _UNSAFE_METRIC.sub("_", name.replace("@", "_at_"))


def clean_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Numeric metrics under MLflow-safe names; non-numbers are dropped, NaN is kept."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or value is None:
            continue
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isinf(number):
            continue
        out[metric_name(str(key))] = number
    return out


def loggable_table(turns: pd.DataFrame) -> pd.DataFrame:
    """A copy whose nested cells (lists, dicts) are JSON strings: Parquet and log_table safe."""
    out = turns.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype).startswith(("string", "str")):
            if out[col].map(lambda v: isinstance(v, list | dict | tuple)).any():
                out[col] = out[col].map(
                    lambda v: (
                        json.dumps(v, ensure_ascii=False, default=str)
                        if isinstance(v, list | dict | tuple)
                        else v
                    )
                )
    return out


@dataclass(frozen=True)
class SweepInfo:
    """What a sweep job needs to attach itself to its parent run."""

    sweep_id: str
    parent_run_id: str | None
    arguments: tuple[str, ...] = ()
    pid: int | None = None  # the sweep process: a job in another process stops when it dies

    def write(self, sweep_dir: Path) -> Path:
        sweep_dir.mkdir(parents=True, exist_ok=True)
        path = sweep_dir / SWEEP_FILE
        path.write_text(
            json.dumps(
                {
                    "sweep_id": self.sweep_id,
                    "parent_run_id": self.parent_run_id,
                    "arguments": list(self.arguments),
                    "pid": self.pid,
                },
                indent=1,
            )
        )
        return path

    @classmethod
    def read(cls, sweep_dir: Path) -> SweepInfo | None:
        path = sweep_dir / SWEEP_FILE
        if not path.is_file():
            return None
        data = json.loads(path.read_text())
        return cls(
            data["sweep_id"],
            data.get("parent_run_id"),
            tuple(data.get("arguments", ())),
            data.get("pid"),
        )


def _chunks(items: list[T], size: int) -> Iterable[list[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


#: MLflow's limits per ``log_batch`` call: params, tags, all entities (metrics included).
BATCH_PARAMS, BATCH_TAGS, BATCH_ENTITIES = 100, 100, 1000


def _batches(
    params: list[Param], tags: list[RunTag], metrics: list[Metric]
) -> list[tuple[list[Param], list[RunTag], list[Metric]]]:
    """(params, tags, metrics) per ``log_batch`` call, as few calls as MLflow's limits allow
    (each call is one transaction of the store)."""
    out: list[tuple[list[Param], list[RunTag], list[Metric]]] = []
    while params or tags or metrics or not out:
        p, params = params[:BATCH_PARAMS], params[BATCH_PARAMS:]
        t, tags = tags[:BATCH_TAGS], tags[BATCH_TAGS:]
        room = BATCH_ENTITIES - len(p) - len(t)
        m, metrics = metrics[:room], metrics[room:]
        out.append((p, t, m))
    return out


@dataclass(frozen=True)
class JobRun:
    """What a sweep job's earlier run says without MLflow's entities: its id, status, Inspect
    log and metrics (``staging.Outcome.skipped``)."""

    run_id: str
    status: str
    log_path: str | None
    metrics: dict[str, float]

    @classmethod
    def of(cls, run: Run) -> JobRun:
        from physassist.tracking.tags import INSPECT_LOG_TAG

        return cls(
            run.info.run_id,
            run.info.status,
            run.data.tags.get(INSPECT_LOG_TAG),
            dict(run.data.metrics),
        )


class Tracker:
    """An MLflow experiment in one tracking store, written to safely from many processes."""

    def __init__(
        self,
        uri: str | None,
        experiment: str,
        *,
        artifact_root: str | None = None,
        retries: int = 8,
    ) -> None:
        from physassist.gc_freeze import frozen_heap

        http_quiet()
        self.uri = resolve_tracking_uri(uri)
        self.retries = retries
        try:
            with frozen_heap():  # importing MLflow and its store: no full collections over the heap
                self.client = open_client(self.uri, retries=retries)
                self.experiment_id = get_or_create_experiment(
                    self.client,
                    experiment,
                    resolve_artifact_root(self.uri, artifact_root),
                    retries=retries,
                )
        except Exception as exc:  # noqa: BLE001 - any store failure is a tracking failure
            raise TrackingError(f"cannot open MLflow store {self.uri}: {error_line(exc)}") from exc
        self.experiment = experiment

    # -- reading ---------------------------------------------------------------------------
    def _call(self, fn: Callable[[], T]) -> T:
        return with_retries(fn, retries=self.retries)

    def _write(self, fn: Callable[[], T]) -> T:
        with store_lock(self.uri):
            return with_retries(fn, retries=self.retries)

    def find_runs(self, tags: Mapping[str, str], *, status: str | None = None) -> list[Run]:
        """Runs of this experiment carrying all ``tags`` (newest first)."""
        clauses = [f"tags.`{k}` = '{v}'" for k, v in tags.items()]
        if status:
            clauses.append(f"attributes.status = '{status}'")
        return self._call(
            lambda: self.client.search_runs(
                [self.experiment_id],
                filter_string=" and ".join(clauses),
                order_by=["attributes.start_time DESC"],
                max_results=1000,
            )
        )

    def find_job(self, sweep_id: str, key: str) -> Run | None:
        """The child run of job ``key`` in sweep ``sweep_id`` (a FINISHED one first), or None."""
        runs = self.find_runs({SWEEP_TAG: sweep_id, JOB_TAG: key, KIND_TAG: "job"})
        finished = [r for r in runs if r.info.status == "FINISHED"]
        return (finished or runs)[0] if runs else None

    # -- sweeps ----------------------------------------------------------------------------
    def start_sweep(
        self,
        sweep_id: str,
        arguments: Sequence[str],
        run_name: str,
        *,
        wait_s: float = SWEEP_WAIT_S,
    ) -> str:
        """Find (re-run) or create the parent run of a sweep; returns its run id.

        Two identical sweeps started at once must share one parent, also through a tracking
        server where no file lock reaches. A new parent is created *pending* (tagged with this
        call's token) and kept only if, searched again after it exists, no other process's
        parent is there; then the tag goes and others adopt it. A pending parent is never
        adopted: its creator may still delete it (adopting one that was deleted next made a
        racer fail with "must be in the 'active' state"). A pending parent whose creator is
        gone (``Owner.alive``: a dead process on this host, or ``LEASE_S`` old elsewhere) is
        deleted, not waited for. Bounded: after ``wait_s`` it raises ``TrackingError`` naming
        the parents it waited for.
        """
        token = f"{Owner.me()}/{random.getrandbits(64):016x}"
        deadline = time.monotonic() + wait_s
        with store_lock(self.uri):
            attempt = 0
            while True:
                found = self.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "sweep"})
                abandoned = [r for r in found if _abandoned(r.data.tags.get(PENDING_TAG))]
                for run in abandoned:
                    self._delete_if_active(run.info.run_id)
                found = [r for r in found if r not in abandoned]
                kept = [r for r in found if PENDING_TAG not in r.data.tags]
                mine: list[str] = [
                    r.info.run_id for r in found if r.data.tags.get(PENDING_TAG) == token
                ]
                others: list[str] = [r.info.run_id for r in found if r.info.run_id not in mine]
                if kept or others:  # (several of mine: an HTTP retry created one twice)
                    for run_id in mine:
                        self._call(functools.partial(self.client.delete_run, run_id))
                if kept:
                    oldest: str = kept[-1].info.run_id  # earlier duplicates stay aside
                    self._call(functools.partial(self.client.update_run, oldest, status="RUNNING"))
                    return oldest
                if not others:
                    if mine:  # created, and still the only one once it exists: keep it
                        for run_id in mine[:-1]:
                            self._call(functools.partial(self.client.delete_run, run_id))
                        self._call(functools.partial(self.client.delete_tag, mine[-1], PENDING_TAG))
                        return mine[-1]
                    self._call(  # under the store lock already: _call, not _write
                        lambda: self.client.create_run(
                            self.experiment_id,
                            run_name=run_name,
                            tags={
                                KIND_TAG: "sweep",
                                SWEEP_TAG: sweep_id,
                                OVERRIDES_TAG: " ".join(arguments)[:5000],
                                PENDING_TAG: token,
                            },
                        )
                    )
                    continue  # search again now that it exists
                if time.monotonic() > deadline:
                    raise TrackingError(
                        f"sweep {sweep_id}: no parent run after {wait_s:.0f} s: other processes"
                        " kept creating one "
                        f"(pending: {', '.join(others)}; a process that stopped while creating it"
                        " leaves it pending: "
                        "delete that run and start again)"
                    )
                attempt += 1
                time.sleep(random.uniform(0.05, 0.3) * min(attempt, 10))

    def _delete_if_active(self, run_id: str) -> None:
        """Delete a run that another process may be deleting at the same moment."""
        try:
            self._call(lambda: self.client.delete_run(run_id))
        except Exception:  # noqa: BLE001 - only "already deleted" is an answer
            if self._call(lambda: self.client.get_run(run_id)).info.lifecycle_stage != "deleted":
                raise

    def create_run(self, run_name: str, tags: Mapping[str, str]) -> str:
        """A new RUNNING run of this experiment; returns its id."""
        run = self._write(
            lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=dict(tags))
        )
        run_id: str = run.info.run_id  # (mlflow's searchable_attribute decorator loses the type)
        return run_id

    def set_tags(self, run_id: str, tags: Mapping[str, str]) -> None:
        from mlflow.entities import RunTag

        batch = [RunTag(k, _tag_value(v)) for k, v in tags.items()]
        self._write(lambda: self.client.log_batch(run_id, tags=batch))

    def terminate(self, run_id: str, status: str) -> None:
        self._write(lambda: self.client.set_terminated(run_id, status))

    def log_params(self, run_id: str, params: Mapping[str, str]) -> None:
        """Add params a run does not have yet (params are immutable in MLflow)."""
        from mlflow.entities import Param

        existing = self._call(lambda: self.client.get_run(run_id)).data.params
        new = [Param(k, v) for k, v in params.items() if k not in existing]
        for chunk in _chunks(new, 100):
            self._write(functools.partial(self.client.log_batch, run_id, params=chunk))

    def log_metrics(self, run_id: str, metrics: Mapping[str, Any]) -> None:
        """Add metrics to an existing run (e.g. agreement computed after its judgings ended)."""
        now = int(time.time() * 1000)
        metric_list = [_metric(k, v, now) for k, v in clean_metrics(metrics).items()]
        for chunk in _chunks(metric_list, 1000):
            self._write(functools.partial(self.client.log_batch, run_id, metrics=chunk))

    def describe_sweep(self, parent_run_id: str) -> None:
        """The parent's description (``mlflow.note.content``) lists each job's mRS so far
        (``metric_names.parent_description``); read and written under the store's lock, so
        jobs ending together do not drop each other's rows."""
        from physassist.tracking.metric_names import parent_description

        with store_lock(self.uri):
            text = parent_description(
                self._call(lambda: self.client.get_run(parent_run_id)).data.metrics
            )
            if text:
                self._call(lambda: self.client.set_tag(parent_run_id, NOTE_TAG, text))

    def end_sweep(self, parent_run_id: str, sweep_id: str, status: str | None = None) -> str:
        """Close the parent: ``status`` if given (KILLED, FAILED), else FINISHED when every
        child finished and FAILED otherwise; returns it."""
        children = self.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "job"})
        ok = bool(children) and all(r.info.status == "FINISHED" for r in children)
        status = status or ("FINISHED" if ok else "FAILED")
        counts = {
            "jobs_total": len(children),
            "jobs_finished": sum(r.info.status == "FINISHED" for r in children),
        }
        self._write(
            lambda: self.client.log_batch(
                parent_run_id,
                metrics=[_metric(k, float(v)) for k, v in counts.items()],
            )
        )
        self.describe_sweep(parent_run_id)  # every job's row, whatever the order they ended in
        self.terminate(parent_run_id, status)
        return status

    # -- one experiment run ----------------------------------------------------------------
    def log_run(
        self,
        *,
        run_name: str,
        params: Mapping[str, str],
        tags: Mapping[str, str],
        metrics: Mapping[str, Any],
        files: Sequence[tuple[Path, str]] = (),
        late_files: Callable[[], Sequence[tuple[Path, str]]] = tuple,
        table: pd.DataFrame | None = None,
        inputs: Sequence[RunInput] = (),
        traces: TraceRequest | None = None,
        status: str = "FINISHED",
        run_id: str | None = None,
        parent_run_id: str | None = None,
    ) -> str:
        """Create (or resume ``run_id``) and log everything about one experiment run.

        ``files`` are (local path, artifact directory) pairs, ``late_files`` the wait for more
        (figures drawn meanwhile), logged before the run ends; ``inputs`` the datasets the run
        read (the run list's Dataset column); ``traces`` the sessions to write as traces
        (``physassist.tracking.traces``), before the run is ended. Returns the run id. The run is
        created first and marked FAILED if logging breaks half-way, so it never stays RUNNING.
        """
        from physassist.gc_freeze import frozen_heap

        with frozen_heap():  # MLflow's ORM allocates much: no full collections over the eval's heap
            return self._log_run(
                run_name,
                params,
                tags,
                metrics,
                files,
                late_files,
                table,
                inputs,
                traces,
                status,
                run_id,
                parent_run_id,
            )

    def _log_run(
        self,
        run_name: str,
        params: Mapping[str, str],
        tags: Mapping[str, str],
        metrics: Mapping[str, Any],
        files: Sequence[tuple[Path, str]],
        late_files: Callable[[], Sequence[tuple[Path, str]]],
        table: pd.DataFrame | None,
        inputs: Sequence[RunInput],
        traces: TraceRequest | None,
        status: str,
        run_id: str | None,
        parent_run_id: str | None,
    ) -> str:
        from mlflow.entities import Param, RunTag

        all_tags = {KIND_TAG: "job", RUN_NAME_TAG: run_name, **tags}
        if parent_run_id:
            all_tags["mlflow.parentRunId"] = parent_run_id
        all_tags = {k: _tag_value(v) for k, v in all_tags.items()}
        if run_id is None:
            run = self._write(
                lambda: self.client.create_run(self.experiment_id, run_name=run_name, tags=all_tags)
            )
            run_id = run.info.run_id
        else:
            self._write(lambda: self.client.update_run(run_id, status="RUNNING", name=run_name))
        try:
            existing = self._call(
                lambda: self.client.get_run(run_id)
            ).data.params  # a resumed run has some
            now = int(time.time() * 1000)
            batches = _batches(
                [Param(k, v) for k, v in params.items() if k not in existing],
                [RunTag(k, v) for k, v in all_tags.items()],
                [_metric(k, v, now) for k, v in clean_metrics(metrics).items()],
            )
            for (
                p,
                t,
                m,
            ) in batches:  # the default run's ~60 params, ~50 tags, ~250 metrics: one call
                self._write(
                    functools.partial(self.client.log_batch, run_id, metrics=m, params=p, tags=t)
                )
            if inputs:
                datasets = [i.dataset_input() for i in inputs]
                self._write(lambda: self.client.log_inputs(run_id, datasets=datasets))
            for path, artifact_dir in files:
                self._call(
                    functools.partial(self.client.log_artifact, run_id, str(path), artifact_dir)
                )
            if table is not None and len(table):
                frame = loggable_table(table)
                self._write(
                    lambda: self.client.log_table(
                        run_id, data=frame, artifact_file="tables/turns.json"
                    )
                )
            if traces is not None:
                streamed = (
                    traces.stream.finish() if traces.stream is not None else None
                )  # its worker takes the lock
                with store_lock(self.uri):
                    traces.summary = write_traces(
                        traces.log,
                        uri=self.uri,
                        experiment_id=self.experiment_id,
                        run_id=run_id,
                        limit=traces.limit,
                        raw_chars=traces.raw_chars,
                        streamed=streamed,
                    )
                done = traces.summary  # tags, not metrics: how the run was logged, not a result
                written = [
                    RunTag(TRACES_TAG, str(done.traces)),
                    RunTag(TRACES_TAG + "_assessments", str(done.assessments)),
                    RunTag(TRACES_TAG + "_seconds", f"{done.seconds:.2f}"),
                    RunTag(TRACES_TAG + "_after_eval", str(done.after_eval)),
                ]
                self._write(lambda: self.client.log_batch(run_id, tags=written))
            for path, artifact_dir in late_files():
                self._call(
                    functools.partial(self.client.log_artifact, run_id, str(path), artifact_dir)
                )
            if (
                status == "FINISHED"
            ):  # the run list shows names, not metrics: the name says the result
                named = with_headline(run_name, clean_metrics(metrics))
                self._write(lambda: self.client.update_run(run_id, name=named))
            self._write(lambda: self.client.set_terminated(run_id, status))
        except BaseException as exc:  # an interrupt too: the run is never left RUNNING
            ended = "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED"
            with contextlib.suppress(Exception):
                self._write(lambda: self.client.set_terminated(run_id, ended))
            raise
        return run_id


class StoreSettings(Protocol):
    """What ``open_tracker`` reads of the ``tracking`` settings
    (``experiment.TrackingSettings``)."""

    @property
    def uri(self) -> str | None: ...
    @property
    def experiment(self) -> str | None: ...
    @property
    def artifact_root(self) -> str | None: ...
    @property
    def retries(self) -> int | None: ...


def open_tracker(
    tracking: StoreSettings, retries: int | None = None, experiment: str = "physassist"
) -> Tracker:
    """The MLflow tracker the ``tracking`` settings (``TrackingSettings``) name (raises
    TrackingError)."""
    return Tracker(
        tracking.uri,
        tracking.experiment or experiment,
        artifact_root=tracking.artifact_root,
        retries=int(tracking.retries or 0) if retries is None else retries,
    )


def _tag_value(value: Any) -> str:
    """A tag's value as written: no secret (an end reason or an error may quote one), at most
    MLflow's length."""
    return redaction.scrub(str(value))[:5000]


def _metric(key: str, value: float, timestamp: int | None = None) -> Metric:
    from mlflow.entities import Metric

    return Metric(key, value, timestamp or int(time.time() * 1000), 0)


def write_turn_tables(turns: pd.DataFrame, out_dir: Path) -> list[Path]:
    """The per-turn table as CSV and Parquet (Parquet skipped if pyarrow rejects a column)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    frame = loggable_table(turns)
    paths = [out_dir / "turns.csv"]
    frame.to_csv(paths[0], index=False)
    try:
        frame.to_parquet(out_dir / "turns.parquet", index=False)
        paths.append(out_dir / "turns.parquet")
    except (ValueError, TypeError, ImportError) as exc:
        log.warning("turn table: Parquet copy skipped, CSV only (%s: %s)", type(exc).__name__, exc)
    return paths


def inspect_log_of(run: Any, client: Any) -> Path:
    """A logged run's Inspect log: the path in its tag, else its ``inspect/`` artifact
    (downloaded); ``LookupError`` naming the run when it has neither."""
    from physassist.tracking.tags import INSPECT_LOG_TAG

    tagged = run.data.tags.get(INSPECT_LOG_TAG)
    if tagged and Path(tagged).is_file():
        return Path(tagged)
    run_id = run.info.run_id
    try:
        files = [
            f.path
            for f in client.list_artifacts(run_id, "inspect")
            if f.path.endswith((".eval", ".json"))
        ]
    except Exception as exc:  # noqa: BLE001 - an unreadable artifact store
        raise LookupError(f"run {run_id}: cannot list its artifacts: {exc}") from exc
    if not files:
        raise LookupError(
            f"run {run_id}: its Inspect log {tagged!r} is gone and no inspect/ artifact was logged"
        )
    return Path(
        client.download_artifacts(run_id, files[0], tempfile.mkdtemp(prefix="physassist-log-"))
    )


def staging_dir() -> Path:
    """A fresh temporary directory for files about to be logged as artifacts."""
    return Path(tempfile.mkdtemp(prefix="physassist-run-"))


def remove_dir(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


def _abandoned(pending: str | None) -> bool:
    """A pending parent's creator (its token: ``owner/nonce``) is known to be gone. A token
    that does not name its owner (another version wrote it) is never taken as gone."""
    owner = Owner.parse(pending.split("/", 1)[0]) if pending else None
    return owner is not None and not owner.alive()
