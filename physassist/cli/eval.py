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

import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from physassist.cli import secrets
from physassist.cli.config import ConfigError, conf_dir, experiment
from physassist.cli.preflight import EndpointError, check_endpoints
from physassist.cli.printing import fail, fault, report
from physassist.experiment import build_models
from physassist.faults import EXIT_FAULTS, DiskFull
from physassist.staging import EvalRun, JobContext, Outcome, identity_overrides


def job_context() -> JobContext:
    """Where Hydra runs this composition: alone, or as one job of a sweep."""
    hc = HydraConfig.get()
    multirun = hc.mode == RunMode.MULTIRUN
    choices = {k: str(v) for k, v in hc.runtime.choices.items() if not k.startswith("hydra/")}
    return JobContext(
        overrides=secrets.overrides(OmegaConf.to_container(hc.overrides.task)),  # as written: unresolved, redacted
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


def run_experiment(cfg: DictConfig, job: JobContext) -> Outcome:
    """Check, evaluate, track one composition. Raises ConfigError before any run on bad input."""
    exp = experiment(cfg, job)
    with EvalRun(exp, job) as run:  # its tracking agent opens the store while the task is built
        if (done := run.finished()) is not None:  # a finished sweep job: before anything expensive
            return done
        task = build_task(exp.task)  # validates the session files: bad data stops here, before any run
        assistant, roles = build_models(exp.model, exp.roles, exp.inspect.bounds)
        check_endpoints([("model", exp.model), *exp.roles.items()])  # EndpointError: before any run
        from physassist.cli.progress import reporting

        return run.run(task, assistant, roles, progress=functools.partial(reporting, every_s=exp.inspect.progress_s))


def end_job(job: JobContext, message: str, code: int) -> None:
    """End this composition with ``message`` and exit ``code`` (2 bad input, 1 a failed
    evaluation, ``EXIT_FAULTS`` a system fault): a sweep job raises ``JobFailed`` (its launcher
    reports it with the job's overrides), a single run prints one line and exits."""
    if job.sweep_dir is not None:
        from physassist.cli.hydra_errors import JobFailed

        raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: {message}", code=code)
    (fault if code == EXIT_FAULTS else fail)(message, code)


@hydra.main(config_path=str(conf_dir()), config_name="eval", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> Outcome | None:
    from physassist import signals
    from physassist.cli import console, sweep_summary

    signals.install()  # also in a sweep's worker process (joblib), where main() did not run
    console.setup()  # in every process that runs a job (sweep workers too)
    job = job_context()
    try:
        outcome = run_experiment(cfg, job)
    except ConfigError as exc:
        signals.interrupt_instead(exc)  # a Ctrl-C a library wrapped (pydantic: a ValueError) is no bad input
        end_job(job, str(exc), 2)
        return None
    except (EndpointError, DiskFull) as exc:  # a system fault: no run made, or the run FAILED
        signals.interrupt_instead(exc)
        end_job(job, str(exc), EXIT_FAULTS)
    if job.sweep_dir is None:
        report(outcome)
    else:  # one line per job; the sweep ends with the table of all its jobs
        overrides = identity_overrides(job.overrides)
        report(outcome, job=" ".join(overrides))
        sweep_summary.record_outcome(job.sweep_dir, job.number, overrides, outcome, outcome.experiment.taus)
    if outcome.status == "FAILED" and not outcome.faults:  # an endpoint given up on: a fault (4), below
        end_job(job, f"evaluation failed; see the Inspect log {outcome.log_path}", 1)
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


#: Arguments with which no run of this process is tracked: Hydra's flags that print and exit, a
#: sweep (its jobs start their own agents), no tracking.
_UNTRACKED = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i", "--shell-completion", "-sc",
              "--multirun", "-m", "tracking=none")


def main() -> int:
    """Console entry point (``physassist-eval``); returns the exit status of an interrupt (Hydra
    raises ``SystemExit`` for the others)."""
    from physassist.cli import console, entry, hydra_errors, sweep

    console.start()
    from physassist.cli.inspect_habits import HabitError, model_arguments

    try:  # model=openai/gpt-4o, as Inspect names a model
        sys.argv[1:] = model_arguments(sys.argv[1:], conf_dir())
    except HabitError as exc:
        fail(str(exc))

    def work() -> None:
        if not set(sys.argv[1:]) & set(_UNTRACKED):
            from physassist.tracking.agent import Agent

            Agent.prestart()  # MLflow is imported on the other core while Hydra composes
        sweep.run(lambda: hydra_errors.reported(_hydra_main))

    return entry.run("physassist-eval", work)


if __name__ == "__main__":
    sys.exit(main())
