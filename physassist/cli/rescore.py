"""``physassist-rescore``: judge stored runs again, without re-running the assistant.

    physassist-rescore source=<run id> judge=llm                  # one run, the LLM judge
    physassist-rescore source=logs/<...>.eval judge=rules          # an Inspect log file
    physassist-rescore source=<sweep id> judge=llm judge.context=evidence   # every child run
    physassist-rescore -m source=<run id> judge=rules,llm judge.model=a,b   # several judges

How a rescoring works, what it writes and logs: ``scorers/rescoring.py``. After a ``-m`` sweep
the judgings of each source are compared all together (``agreement.judges.*``, logged on each
of their runs). A rescoring is identified by (source, judge as it scores, taus): running it
again finds the FINISHED run and skips it, so ``judge=rules,llm judge.model=a,b`` judges with
rules once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from physassist.cli.config import conf_dir, rescoring, tracking_settings
from physassist.cli.hydra_errors import reported
from physassist.experiment import ConfigError
from physassist.faults import EXIT_FAULTS
from physassist.staging import end_abandoned

if TYPE_CHECKING:
    from scorers.rescoring import JudgingRecord, Rescored

JOBS_DIR = "rescore_jobs"


def run_rescore(cfg: DictConfig, sweep_dir: Path | None = None) -> list[Rescored]:
    """Rescore every source of the composition; in a sweep, note each result for the callback."""
    from physassist.tracking.runs import open_tracker

    rescore = rescoring(cfg)
    tracker = open_tracker(rescore.tracking) if rescore.tracking.enabled else None
    if tracker is not None:
        end_abandoned(tracker)
    from scorers.rescoring import find_sources, rescore_source

    done = [rescore_source(s, rescore, tracker) for s in find_sources(rescore.source, tracker)]
    if sweep_dir is not None:
        jobs = sweep_dir / JOBS_DIR
        jobs.mkdir(parents=True, exist_ok=True)
        record: list[JudgingRecord] = [
            {
                "source": r.source.key,
                "source_log": str(r.source.log_path),
                "log": r.log_path,
                "run_id": r.run_id,
                "judge": r.label,
            }
            for r in done
        ]
        (jobs / f"{HydraConfig.get().job.num}.json").write_text(json.dumps(record, indent=1))
    return done


def print_results(done: list[Rescored], taus: list[float] | None = None) -> None:
    from physassist.agreement import kappa_text

    rows = [
        (
            "source",
            "judge",
            "mRS",
            "kappa vs source",
            "items agree",
            "unparseable",
            "grounded",
            "run",
        )
    ]
    for r in done:
        m = r.metrics
        rows.append(
            (
                (r.source.run_name or r.source.log_path.name)[:40],
                r.label,
                f"{m.get('mrs', float('nan')):.1f}",
                kappa_text(m),
                f"{m.get('agreement.vs_source.items', float('nan')):.1f}",
                f"{m.get('judge_unparseable_rate', float('nan')):.1f}",
                f"{m['grounding.grounded_pct']:.1f}" if "grounding.grounded_pct" in m else "-",
                (r.run_id or "-") + (" (already done)" if r.skipped else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    for r in done:
        if not r.skipped:
            print(f"Inspect log: {r.log_path}")
    for r in done:
        if r.degenerate:
            print(
                f"physassist-rescore: warning: {r.label} on {r.source.key}: {r.degenerate}",
                file=sys.stderr,
            )


class RescoreSweepCallback(Callback):
    """After ``-m``: the agreement of all judgings of each source, logged on their runs; exit
    ``EXIT_FAULTS`` when a job's judge could not grade (noted by the job, another process)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from physassist.cli.sweep import FAULTS_FILE

        (Path(config.hydra.sweep.dir).resolve() / FAULTS_FILE).unlink(
            missing_ok=True
        )  # an earlier run's

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        # Each job's file is the list run_rescore wrote (json.dumps of its JudgingRecords).
        records = [
            cast("JudgingRecord", rec)
            for path in sorted((sweep_dir / JOBS_DIR).glob("*.json"))
            for rec in json.loads(path.read_text())
        ]
        from scorers.rescoring import judges_agreement

        self._log_agreement(config, judges_agreement(records), records)
        from physassist.cli.sweep import FAULTS_FILE

        if (
            sweep_dir / FAULTS_FILE
        ).is_file():  # a job's judge could not grade: as a single rescore
            raise SystemExit(EXIT_FAULTS)

    @staticmethod
    def _log_agreement(
        config: DictConfig, results: dict[str, dict[str, float]], records: list[JudgingRecord]
    ) -> None:
        if not results:
            return
        node = (
            OmegaConf.to_container(config.tracking, resolve=True) if "tracking" in config else None
        )
        # config.tracking is the tracking group's node (a DictConfig of the schema's string keys),
        # so to_container gives a dict.
        tracking = tracking_settings(cast("dict[str, Any] | None", node))
        from physassist.tracking.metric_names import for_mlflow
        from physassist.tracking.runs import open_tracker

        tracker = open_tracker(tracking) if tracking.enabled else None

        for source, metrics in results.items():
            shown = ", ".join(f"{k.rsplit('.', 1)[-1]}={v:.3f}" for k, v in metrics.items())
            print(f"judges' agreement on {source}: {shown}")
            run_ids = {r["run_id"] for r in records if r["source"] == source and r["run_id"]}
            if tracker is not None:
                for run_id in sorted(run_ids):
                    tracker.log_metrics(run_id, for_mlflow(metrics))


def _fail(message: str, code: int = 2) -> None:
    print(f"physassist-rescore: error: {message}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(config_path=str(conf_dir()), config_name="rescore", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> list[Rescored] | None:
    from physassist.cli import console

    console.setup()  # in every process that runs a job
    hc = HydraConfig.get()
    sweep_dir = Path(hc.sweep.dir).resolve() if hc.mode == RunMode.MULTIRUN else None
    try:
        done = run_rescore(cfg, sweep_dir)
    except ConfigError as exc:
        if sweep_dir is not None:
            raise
        _fail(str(exc))
        return None
    print_results(done)
    faulted = [r for r in done if r.faults]
    for r in faulted:
        print(
            f"physassist-rescore: system faults in {r.source.key} [judge={r.label}]: {r.faults}",
            file=sys.stderr,
        )
    if faulted:
        if sweep_dir is None:
            raise SystemExit(EXIT_FAULTS)
        # A sweep's job: its callback exits EXIT_FAULTS once every job has run.
        from physassist.cli.sweep import record_faults

        for r in faulted:
            record_faults(sweep_dir, f"{r.source.key} [judge={r.label}]: {r.faults}")
    return done


def main() -> int:
    """Console entry point (``physassist-rescore``); a composition error is one line, exit 2."""
    from physassist.cli import console, entry

    console.start()
    return entry.run("physassist-rescore", lambda: reported(_hydra_main, "physassist-rescore"))


if __name__ == "__main__":
    sys.exit(main())
