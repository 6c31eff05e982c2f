"""``physassist-eval``: compose an experiment with Hydra, run it with Inspect, track it in MLflow.

    physassist-eval                                   # the offline default experiment
    physassist-eval model=openai language=zh          # change groups
    physassist-eval -m model=oracle,baseline query=implicit,explicit   # a 2x2 sweep
    physassist-eval -m experiment=paper_main model=openai              # a paper table

Order of work, so that bad input never leaves a half-made run behind: the composed config is
checked (mandatory values, option values, data paths, API keys) and the Inspect task is built
(which validates the session files) BEFORE anything is evaluated or logged. Then Inspect writes
its log, and only then is the run logged to MLflow, so a tracking failure can never lose the
Inspect log. Sweep jobs attach to the sweep's parent run and resume (see
``physassist.tracking.runs``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig

from physassist.cli.config import (
    ConfigError,
    ModelSpec,
    build_role,
    check_config,
    conf_dir,
    dataset_path,
    eval_options,
    lookup,
    model_specs,
    resolve,
)
from physassist.cli.mlflow_staging import (
    identity_overrides,
    local_path,
    open_tracker_for,
    parent_metrics,
    prices,
    results,
    run_name,
    stage_artifacts,
)
from physassist.cli.preflight import EndpointError, check_endpoints
from physassist.cli.printing import Outcome, fail, fault, report
from physassist.faults import EXIT_FAULTS, FAULT_TAG, DiskFull, fault_summary, no_space
from physassist.providers import provider_error
from physassist.tracking.params import flatten_config


@dataclass
class JobContext:
    """Where a composition runs: alone, or as one job of a sweep."""

    overrides: list[str] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    sweep_dir: Path | None = None  # set for multirun jobs
    number: int = 0  # the job's number in its sweep

    @classmethod
    def from_hydra(cls) -> JobContext:
        hc = HydraConfig.get()
        multirun = hc.mode == RunMode.MULTIRUN
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if not k.startswith("hydra/")}
        return cls(
            overrides=list(hc.overrides.task),
            choices=choices,
            sweep_dir=Path(hc.sweep.dir).resolve() if multirun else None,
            number=int(hc.job.num or 0) if multirun else 0,
        )


def build_task(args: Mapping[str, Any]):
    """Build the Inspect task; data problems (bad session file, a store that cannot be
    built, ...) become a ConfigError."""
    from physassist.ehr.store import EHRBuildError
    from tasks.physassistbench import physassistbench

    try:
        return physassistbench(**args)
    except (ValueError, FileNotFoundError, OSError, KeyError, EHRBuildError) as exc:
        lines = str(exc).strip().splitlines() or [repr(exc)]
        more = f"\n  ... and {len(lines) - 6} more" if len(lines) > 6 else ""
        raise ConfigError("\n".join(lines[:6]) + more) from exc


def _evaluate(task, assistant, roles, options: dict[str, Any], log_dir: Path, resumable: bool, tags: list[str]):
    """Run Inspect (eval_set in a per-job directory when resumable) and return the log."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai import eval_set

    from physassist.cli.progress import reporting
    from physassist.gc_freeze import frozen_heap
    from physassist.results import samples_in_memory, with_samples

    common = dict(model=assistant, model_roles=roles or None, tags=tags, **options)
    sessions = min(len(task.dataset), options.get("limit") or len(task.dataset))
    with frozen_heap(), samples_in_memory() as kept, reporting(sessions * int(options.get("epochs") or 1)):
        if resumable:
            _, logs = eval_set(task, log_dir=str(log_dir), retry_attempts=1, retry_wait=1, **common)
        else:
            logs = inspect_eval(task, log_dir=str(log_dir), **common)
    if not logs or logs[0].status == "cancelled":  # Ctrl-C: Inspect kept what it had in log_dir
        raise KeyboardInterrupt
    return with_samples(logs[0], kept)  # not read back from the log when all are in memory


def end_abandoned(tracker) -> None:
    """Runs a dead process left RUNNING (``kill -9``) are ended KILLED, with one line."""
    from physassist.tracking import claims
    from physassist.tracking.mlflow_store import error_line

    try:
        ended = claims.end_abandoned(tracker)
    except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
        print(f"tracking: cannot look for runs left RUNNING in {tracker.uri}: {error_line(exc)}", file=sys.stderr)
        return
    if ended:
        print(f"{len(ended)} run(s) whose process is gone (kill -9, a crash) marked KILLED", file=sys.stderr)


def run_experiment(cfg: DictConfig, job: JobContext) -> Outcome:
    """Check, evaluate, track one composition. Raises ConfigError before any run on bad input."""
    config = resolve(cfg)
    args = check_config(config)
    # after the checks: a config error is answered without loading pandas and the tracking layer
    from physassist import comparability
    from physassist.tracking import claims, runs
    from physassist.tracking.inputs import run_inputs
    from physassist.tracking.metric_names import for_mlflow
    from physassist.tracking.mlflow_store import TrackingError, error_line
    from physassist.tracking.tags import provenance_tags
    from physassist.tracking.traces import TraceRequest

    tracking = config.get("tracking") or {}
    tracker: runs.Tracker | None = None
    tracking_error: str | None = None

    def open_tracker() -> None:
        nonlocal tracker, tracking_error
        if not tracking.get("enabled"):
            return
        try:
            tracker = open_tracker_for(tracking)
        except TrackingError as exc:
            tracking_error = str(exc)
            return
        end_abandoned(tracker)

    sweep = runs.SweepInfo.read(job.sweep_dir) if job.sweep_dir else None
    if job.sweep_dir and sweep is None:  # no callback ran (e.g. hydra.callbacks overridden)
        sweep = runs.SweepInfo(runs.sweep_key([str(job.sweep_dir)], {}), None)
    key = runs.job_key(identity_overrides(job.overrides)) if sweep else None
    previous = None
    if sweep and key:  # a finished job is skipped before anything expensive happens
        open_tracker()
        if tracker is not None:
            try:
                previous = tracker.find_job(sweep.sweep_id, key)
            except Exception as exc:  # noqa: BLE001
                tracking_error = f"cannot read MLflow store {tracker.uri}: {error_line(exc)}"
                tracker = None
        if previous is not None and previous.info.status == "FINISHED":
            return Outcome("SKIPPED", previous.data.tags.get("physassist.inspect_log"), previous.info.run_id, dict(previous.data.metrics))

    task = build_task(args)  # validates the session files: bad data stops here, before any run
    assistant_spec, role_specs = model_specs(config)
    role, spec = "model", assistant_spec
    try:
        assistant = assistant_spec.build()
        roles = {}
        for role, spec in role_specs.items():
            roles[role] = build_role(spec)
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing package, bad args
        name = spec.name if isinstance(spec, ModelSpec) else ", ".join(s.name for s in spec)
        raise ConfigError(f"{role}: cannot create {name}: {provider_error(exc)}") from exc
    check_endpoints([("model", assistant_spec), *role_specs.items()])  # EndpointError: before any run
    if not sweep:
        open_tracker()

    name = run_name(config, job.choices, job.overrides, sweep.arguments if sweep else ())
    tags = {f"choice.{k}": v for k, v in job.choices.items()}
    tags[runs.OVERRIDES_TAG] = " ".join(job.overrides)
    if sweep and key:
        tags.update({runs.SWEEP_TAG: sweep.sweep_id, runs.JOB_TAG: key})
    claim = None
    if tracker is not None:  # the run exists (RUNNING) before the eval: claimed exactly once
        try:
            claim = claims.claim(tracker, name, tags, sweep, key)
        except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
            tracking_error = f"cannot create the run in {tracker.uri}: {error_line(exc)}"
            tracker = None
    if claim is not None and claim.state == "finished":
        return Outcome("SKIPPED", None, claim.run_id)
    if claim is not None and claim.state == "busy":
        return Outcome("BUSY", None, claim.run_id, holder=claim.owner)

    log_root = Path(str(lookup(config, "inspect.log_dir"))).expanduser()
    log_dir = (log_root / "sweeps" / sweep.sweep_id / key) if (sweep and key) else log_root
    with claims.holding(tracker, claim.run_id, sweep_pid=sweep.pid if sweep else None) if claim else nullcontext():
        try:
            log = _evaluate(
                task,
                assistant,
                roles,
                eval_options(config),
                log_dir,
                resumable=bool(sweep),
                tags=[f"{k}={v}" for k, v in sorted(job.choices.items())],
            )
        except Exception as exc:  # a full disk: one line naming the directory, the run FAILED
            if no_space(exc, str(log_dir) if log_dir.is_dir() else None):
                raise DiskFull(f"Inspect's log dir {log_dir}: no space left on device") from exc
            raise
        log_path = local_path(log.location)
        status = "FINISHED" if log.status == "success" else "FAILED"
        turns, metrics = None, {}
        if log.status == "success":
            turns, metrics = results(log, args["taus"], prices(config))
        outcome = Outcome(status, log_path, None, metrics, tracking_error)
        if turns is not None:
            from physassist import degenerate

            outcome.faults = fault_summary(turns)
            outcome.degenerate = degenerate.summary(turns)
        if tracker is None or claim is None:
            return outcome

        tags["physassist.inspect_status"] = str(log.status)
        if log.error:
            tags["physassist.error"] = str(log.error.message)[:5000]
        if outcome.faults:  # not a result: the run is FAILED, the reasons in a tag
            tags[FAULT_TAG] = outcome.faults[:5000]
        if outcome.degenerate:  # a result, but not what was meant to be measured
            from physassist.degenerate import DEGENERATE_TAG

            tags[DEGENERATE_TAG] = outcome.degenerate
        staging = runs.staging_dir()
        try:
            inputs = run_inputs(log, args["dataset"], dataset_path(config), args["ehr_source"])
            tags.update(provenance_tags(**{i.kind: (i.fingerprint, i.source) for i in inputs}, inspect_log=log_path))
            params = flatten_config(config)
            tags.update(comparability.tags_for(params, tags))
            files = stage_artifacts(cfg, config, log_path, turns, staging, tracking, name)
            if turns is not None and tracking.get("log_table"):
                from physassist.usage import write_session_usage

                files.append((write_session_usage(log, prices(config), staging / "tables"), "tables"))
            outcome.run_id = tracker.log_run(
                run_name=name,
                params=params,
                tags=tags,
                metrics=for_mlflow(metrics),
                files=files,
                table=turns if tracking.get("log_table") else None,
                inputs=inputs,
                traces=TraceRequest(log, tracking.get("trace_limit"), int(tracking.get("trace_raw_chars") or 2000))
                if tracking.get("traces") and log.status == "success"
                else None,
                status=outcome.run_status,
                run_id=claim.run_id,
                parent_run_id=sweep.parent_run_id if sweep else None,
            )
            if sweep and sweep.parent_run_id and metrics:  # the parent shows its jobs side by side
                tracker.log_metrics(sweep.parent_run_id, parent_metrics(metrics, job.overrides, sweep.arguments))
        except Exception as exc:  # noqa: BLE001 - tracking must never lose the evaluation
            outcome.tracking_error = f"logging to {tracker.uri} failed: {error_line(exc)}"
        finally:
            runs.remove_dir(staging)
    outcome.tracking_error = outcome.tracking_error or tracking_error
    return outcome


@hydra.main(config_path=str(conf_dir()), config_name="eval", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> Outcome | None:
    from physassist import signals
    from physassist.cli import console, sweep_summary

    signals.install()  # also in a sweep's worker process (joblib), where main() did not run
    console.setup()  # in every process that runs a job (sweep workers too)
    job = JobContext.from_hydra()
    try:
        outcome = run_experiment(cfg, job)
    except ConfigError as exc:
        if job.sweep_dir is not None:  # a sweep job: the launcher reports it with the job
            from physassist.cli.hydra_errors import JobFailed

            raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: {exc}", code=2) from exc
        fail(str(exc))
        return None
    except (EndpointError, DiskFull) as exc:  # a system fault: no run made, or the run FAILED
        if job.sweep_dir is not None:
            from physassist.cli.hydra_errors import JobFailed

            raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: {exc}", code=EXIT_FAULTS) from exc
        fault(str(exc))
    config = resolve(cfg)
    if job.sweep_dir is None:
        report(outcome, config)
    else:  # one line per job; the sweep ends with the table of all its jobs
        overrides = identity_overrides(job.overrides)
        report(outcome, config, job=" ".join(overrides))
        sweep_summary.record_outcome(job.sweep_dir, job.number, overrides, outcome, config.get("taus"))
    if outcome.status == "FAILED":
        if job.sweep_dir is not None:
            from physassist.cli.hydra_errors import JobFailed

            raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: evaluation failed; see the Inspect log {outcome.log_path}")
        fail(f"evaluation failed; see the Inspect log {outcome.log_path}", code=1)
    if outcome.faults:  # the run is marked FAILED in MLflow
        if job.sweep_dir is None:
            raise SystemExit(EXIT_FAULTS)
        from physassist.cli.sweep import record_faults

        record_faults(job.sweep_dir, f"job {' '.join(job.overrides)}: {outcome.faults}")
    if outcome.tracking_error:
        if job.sweep_dir is None:
            raise SystemExit(3)
        from physassist.cli.sweep import record_tracking_error

        record_tracking_error(job.sweep_dir, f"job {' '.join(job.overrides)}: {outcome.tracking_error}")
    return outcome


def main() -> None:
    """Console entry point (``physassist-eval``)."""
    from physassist.cli import console, hydra_errors, sweep

    console.start()
    sweep.run(lambda: hydra_errors.reported(_hydra_main))


if __name__ == "__main__":
    main()
