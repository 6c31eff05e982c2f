"""The life of a ``physassist-eval -m`` sweep around its jobs: check, open, close.

Before the first job runs, every job's composition is checked (unknown options, bad values,
missing data) with the same one-line messages as a single run, then the sweep's parent MLflow
run is found or created, runs left RUNNING by a dead process are marked KILLED (their jobs
resume), and the parent's id is written into the sweep directory, where every job (joblib
worker, submitit or Ray job) reads it. After the sweep the parent is marked FINISHED or FAILED;
it stays RUNNING while another process still evaluates one of its jobs (an identical sweep
started at the same time), and is marked KILLED on Ctrl-C, SIGTERM or SIGHUP (with the runs of
jobs whose worker processes were killed) and FAILED when a job failed. Before the first job,
every job's model endpoints get a pre-flight (``preflight``). A sweep whose every job FINISHED
before is answered here, from MLflow, before the launcher starts any worker (a joblib re-run
otherwise started a process per job only for it to find its job done).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from physassist import redaction
from physassist.cli import secrets, sweep_summary
from physassist.cli.config import check_config, model_specs, resolve, tracking_settings
from physassist.cli.hydra_errors import one_line
from physassist.cli.preflight import EndpointError, check_endpoints
from physassist.cli.printing import fail, fault, report
from physassist.experiment import TrackingSettings
from physassist.faults import EXIT_FAULTS
from physassist.options import ConfigError
from physassist.staging import Outcome, identity_overrides, shared_params
from physassist.tracking.mlflow_store import error_line
from physassist.tracking.owner import Owner
from physassist.tracking.params import experiment_params, flatten_config

if TYPE_CHECKING:
    import psutil
    from mlflow.entities import Run

    from physassist.tracking.runs import Tracker

TRACKING_ERRORS_FILE = "physassist_tracking_errors.txt"
FAULTS_FILE = "physassist_faults.txt"  # jobs whose turns system faults left unscored


@dataclass
class _Open:
    """The sweep this process opened and has not closed yet."""

    tracking: TrackingSettings
    sweep_dir: Path
    sweep_id: str
    parent_run_id: str | None


_open: _Open | None = None


def job_overrides(config: DictConfig) -> list[list[str]]:
    """Every job's overrides, as Hydra's basic sweeper will expand them (command line and
    ``hydra.sweeper.params``)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(sweep_arguments(config))
    batches = BasicSweeper.split_arguments(parsed, max_batch_size=None)
    return [list(job) for batch in batches for job in batch]


def sweep_arguments(config: DictConfig) -> list[str]:
    """The sweep's arguments as written (unresolved): command line and ``hydra.sweeper.params``."""
    task = OmegaConf.to_container(config.hydra.overrides.task)
    node = config.hydra.sweeper.get("params")
    params = OmegaConf.to_container(node) if node else {}
    assert isinstance(task, list) and isinstance(params, dict)  # a ListConfig and a DictConfig
    return [str(o) for o in task] + [f"{k!s}={v}" for k, v in params.items()]


def check_jobs(jobs: list[list[str]]) -> tuple[list[tuple[str, Any]], list[list[float]]]:
    """Compose and check every job before any runs; the first bad one stops the sweep.
    Returns every job's (role, model spec), for the endpoints' pre-flight, and each job's
    Pass@Turn thresholds (its line in the sweep's table)."""
    from hydra import compose

    specs: list[tuple[str, Any]] = []
    taus: list[list[float]] = []
    for number, overrides in enumerate(jobs):
        try:
            config = resolve(compose(config_name="eval", overrides=overrides, return_hydra_config=True))
            taus.append([float(t) for t in check_config(config)["taus"]])
            assistant, roles = model_specs(config)
            specs += [("model", assistant), *roles.items()]
        except ConfigError as exc:
            raise ConfigError(f"job #{number} ({' '.join(identity_overrides(secrets.overrides(overrides)))}): {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - Hydra's composition errors, made one line
            raise ConfigError(f"job #{number} ({' '.join(identity_overrides(secrets.overrides(overrides)))}): {one_line(exc)}") from exc
    return specs, taus


def finished_before(tracker: Tracker, sweep_id: str, jobs: list[list[str]]) -> list[Run] | None:
    """Every job's FINISHED child run, in job order, when all of them finished before; else None."""
    from physassist.tracking.runs import JOB_TAG, KIND_TAG, SWEEP_TAG, job_key

    done = {r.data.tags.get(JOB_TAG): r for r in tracker.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "job"}, status="FINISHED")}
    keys = [job_key(identity_overrides(overrides)) for overrides in jobs]
    return [done[k] for k in keys] if keys and all(k in done for k in keys) else None


def record_tracking_error(sweep_dir: Path, message: str) -> None:
    """A job could not log to MLflow: noted in the sweep directory for the sweep's exit code."""
    _note(sweep_dir / TRACKING_ERRORS_FILE, message)


def record_faults(sweep_dir: Path, message: str) -> None:
    """System faults left turns of a job unscored: noted for the sweep's exit code, as a
    single run exits EXIT_FAULTS (the jobs run in other processes, so a file carries it)."""
    _note(sweep_dir / FAULTS_FILE, message)


def _note(path: Path, message: str) -> None:
    with open(path, "a") as handle:
        handle.write(message.replace("\n", " ") + "\n")


def _noted(path: Path) -> list[str]:
    return path.read_text().strip().splitlines() if path.is_file() else []


class SweepCallback(Callback):
    """Hydra callback (conf/eval.yaml): opens the sweep before its jobs, closes it after."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _open
        from physassist import signals
        from physassist.tracking import claims, runs
        from physassist.tracking.names import sweep_name

        try:
            base = resolve(config)
            check_config(base)
            jobs = job_overrides(config)
            specs, taus = check_jobs(jobs)
            check_endpoints(specs)  # a dead endpoint stops the sweep before any run
        except ConfigError as exc:
            signals.interrupt_instead(exc)  # a Ctrl-C a library wrapped is no bad input
            fail(str(exc))
        except EndpointError as exc:
            signals.interrupt_instead(exc)
            fault(str(exc))
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        try:
            sweep_dir.mkdir(parents=True, exist_ok=True)  # before the parent run (Hydra would only warn)
        except OSError as exc:
            from physassist.cli.hydra_errors import output_dir_line

            fail(output_dir_line(exc))
        arguments = secrets.overrides(sweep_arguments(config))  # as recorded: no secret
        jobs = [secrets.overrides(job) for job in jobs]  # each job's key and line, as the job has them
        sweep_id = runs.sweep_key(identity_overrides(arguments), experiment_params(flatten_config(redaction.redact(base))))
        for name in (TRACKING_ERRORS_FILE, FAULTS_FILE, sweep_summary.JOBS_FILE):
            (sweep_dir / name).unlink(missing_ok=True)
        parent = done = None
        tracking = tracking_settings(base.get("tracking"))
        if tracking.enabled:
            try:
                tracker = runs.open_tracker(tracking)
                experiment = config.hydra.runtime.choices.get("experiment")
                name = sweep_name(None if experiment in (None, "null") else str(experiment), identity_overrides(arguments))
                parent = tracker.start_sweep(sweep_id, arguments, name)
                tracker.set_tags(parent, {claims.OWNER_TAG: str(Owner.me())})  # a later command ends it if we die
                ended = claims.end_abandoned(tracker)
                if ended:
                    print(f"{len(ended)} run(s) whose process is gone (kill -9, a crash) marked KILLED")
                tracker.log_params(parent, shared_params(flatten_config(redaction.redact(base)), arguments))
                stale = claims.mark_stale(tracker, sweep_id)
                if stale:
                    print(f"sweep {sweep_id}: {len(stale)} run(s) left RUNNING by a stopped process marked KILLED; their jobs resume")
                done = finished_before(tracker, sweep_id, jobs)
            except Exception as exc:  # noqa: BLE001 - a TrackingError or any store failure
                message = f"tracking failed: {error_line(exc)}"
                print(f"{message}; jobs still run and keep their Inspect logs", file=sys.stderr)
                sweep_dir.mkdir(parents=True, exist_ok=True)
                record_tracking_error(sweep_dir, message)
        runs.SweepInfo(sweep_id, parent, tuple(arguments), os.getpid()).write(sweep_dir)
        _open = _Open(tracking, sweep_dir, sweep_id, parent)
        print(f"sweep {sweep_id}: {len(jobs)} jobs, parent MLflow run {parent}")
        if done is not None:  # nothing to launch: each job's line as its worker would print it, then the end
            for number, (overrides, run) in enumerate(zip(jobs, done, strict=True)):
                skipped = Outcome.skipped(runs.JobRun.of(run))
                report(skipped, job=" ".join(identity_overrides(overrides)))
                sweep_summary.record_outcome(sweep_dir, number, identity_overrides(overrides), skipped, taus[number])
            self.on_multirun_end(config)
            raise SystemExit(0)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global _open
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        tracking = tracking_settings(_plain(config.tracking) if "tracking" in config else None)
        opened, _open = _open, None
        if jobs := sweep_summary.read(sweep_dir):  # the jobs side by side
            print(sweep_summary.table(jobs))
        if opened is not None and opened.parent_run_id and tracking.enabled:
            close(opened, opened.parent_run_id, None)
        errors = sweep_dir / TRACKING_ERRORS_FILE
        if lines := _noted(errors):
            print(f"tracking failed for {len(lines)} part(s) of the sweep ({errors}): {lines[0]}", file=sys.stderr)
            raise SystemExit(3)
        if lines := _noted(sweep_dir / FAULTS_FILE):
            print(f"physassist-eval: system faults in {len(lines)} job(s) of the sweep: {lines[0]}", file=sys.stderr)
            raise SystemExit(EXIT_FAULTS)


def _plain(node: DictConfig) -> dict[str, Any]:
    """A config node as a plain dict, interpolations resolved."""
    data = OmegaConf.to_container(node, resolve=True)
    assert isinstance(data, dict)  # a DictConfig's container
    return {str(k): v for k, v in data.items()}


def close(opened: _Open, parent_run_id: str, status: str | None) -> None:
    """Close the parent run ``parent_run_id`` of ``opened`` (``status``: KILLED/FAILED, or None
    to judge by the children), unless another process still holds one of its jobs."""
    from physassist.tracking import claims, runs

    try:
        tracker = runs.open_tracker(opened.tracking, retries=8)
        live = claims.live_children(tracker, opened.sweep_id)
        if live and status is None:
            owners = ", ".join(sorted({str(r.data.tags.get(claims.OWNER_TAG)) for r in live}))
            print(f"sweep {opened.sweep_id}: {len(live)} job(s) still running in {owners}; the parent stays RUNNING until they end")
            return
        final = tracker.end_sweep(parent_run_id, opened.sweep_id, status)
        print(f"sweep {opened.sweep_id}: parent MLflow run {parent_run_id} {final}")
    except Exception as exc:  # noqa: BLE001
        print(f"tracking failed when closing sweep {opened.sweep_id}: {error_line(exc)}", file=sys.stderr)
        record_tracking_error(opened.sweep_dir, f"closing the sweep: {error_line(exc)}")


JOBS_END_S = 15.0  # how long an interrupted sweep waits for its job processes to be gone


def end_jobs(opened: _Open, reason: str) -> None:
    """Mark KILLED the runs of jobs that ran in other processes (joblib workers: the launcher
    kills them with SIGKILL on an interrupt, so they cannot end their runs themselves), once
    their processes are gone (bounded by ``JOBS_END_S``). A job of another live process (an
    identical sweep running at the same time) is left to it."""
    import time

    from physassist.tracking import claims, runs

    try:
        tracker = runs.open_tracker(opened.tracking, retries=8)
        mine = {os.getpid(), *(p.pid for p in _children())}
        deadline = time.monotonic() + JOBS_END_S
        while time.monotonic() < deadline:
            live = claims.live_children(tracker, opened.sweep_id)
            if not any(_owner_pid(r) in mine for r in live):
                break
            time.sleep(0.5)
        claims.mark_stale(tracker, opened.sweep_id, f": the sweep was {reason}")
    except Exception as exc:  # noqa: BLE001
        print(f"tracking failed when ending the jobs of sweep {opened.sweep_id}: {error_line(exc)}", file=sys.stderr)


def _children() -> list[psutil.Process]:
    import psutil

    try:
        children: list[psutil.Process] = psutil.Process().children(recursive=True)
        return children
    except psutil.Error:
        return []


def _owner_pid(run: Run) -> int | None:
    from physassist.tracking.claims import OWNER_TAG
    from physassist.tracking.owner import Owner

    owner = Owner.parse(run.data.tags.get(OWNER_TAG))
    return owner.pid if owner else None


def run(entry: Callable[[], Any]) -> None:
    """Run the Hydra entry point; a sweep cut short by Ctrl-C or a failed job is closed
    KILLED or FAILED instead of being left RUNNING."""
    global _open
    from physassist import signals

    try:
        entry()
    except KeyboardInterrupt:  # the command's one line follows (``cli.entry``)
        signals.taken()
        opened, _open = _open, None
        if opened is not None and opened.parent_run_id:
            end_jobs(opened, signals.reason())
            close(opened, opened.parent_run_id, "KILLED")
        raise
    except BaseException as exc:  # a failed job, or any error: the parent must not stay RUNNING
        opened, _open = _open, None
        ended_well = isinstance(exc, SystemExit) and exc.code in (0, None)
        if not ended_well and opened is not None and opened.parent_run_id:
            close(opened, opened.parent_run_id, "FAILED")
        raise
