"""``physassist-report``: the paper's tables and figures from MLflow runs.

    physassist-report                                  # every finished run of experiment physassist
    physassist-report --sweep 3f2a9c1b0d4e             # the runs of one sweep
    physassist-report --filter "params.language = 'en'" --out outputs/reports/en
    physassist-report --tracking-uri http://127.0.0.1:5000 --experiment physassist --no-log

Writes Markdown + CSV tables and PNG figures into ``--out`` and logs them to MLflow as a run
tagged ``physassist.kind=report`` (unless ``--no-log``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from physassist.gc_freeze import command_start
from physassist.tracking.mlflow_store import DEFAULT_URI


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="physassist-report", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--tracking-uri", default=DEFAULT_URI, help=f"MLflow tracking URI (default {DEFAULT_URI})"
    )
    p.add_argument(
        "--experiment",
        action="append",
        help="MLflow experiment name (repeatable; default physassist)",
    )
    p.add_argument(
        "--filter",
        default="",
        help="MLflow filter string, e.g. \"params.model = 'physassist/oracle'\"",
    )
    p.add_argument(
        "--sweep",
        default=None,
        help="only the runs of this sweep id (tag physassist.sweep_id; a unique prefix of >= 6 "
        "characters will do)",
    )
    p.add_argument(
        "--runs",
        default=None,
        help="comma-separated run ids (unique prefixes of >= 6 characters, as tables print them): "
        "exactly these runs, any two of which may be paired",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default outputs/reports/<sweep|experiment>)",
    )
    p.add_argument("--no-log", action="store_true", help="do not log the report to MLflow")
    return p


def _end_abandoned(uri: str | None, experiments: list[str]) -> None:
    """Runs a dead process left RUNNING are ended KILLED before they are reported on."""
    from physassist.staging import end_abandoned
    from physassist.tracking.mlflow_store import open_client, resolve_tracking_uri
    from physassist.tracking.runs import Tracker

    for experiment in experiments:
        try:
            if (
                open_client(resolve_tracking_uri(uri), retries=0).get_experiment_by_name(experiment)
                is None
            ):
                continue  # never create one here: select_runs says it does not exist
            end_abandoned(Tracker(uri, experiment))
        except Exception:  # noqa: BLE001 - select_runs names the store's problem
            continue


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``physassist-report``; returns the exit status."""
    from physassist.cli import entry

    return entry.run("physassist-report", lambda: _report(argv))


def _report(argv: list[str] | None) -> int:
    command_start()
    args = parser().parse_args(argv)  # before the imports: --help and usage errors answer at once
    from physassist.report.build import (
        ReportError,
        artifact_turns,
        deduplicate,
        log_report,
        resolve_ids,
        select_runs,
        write_report,
    )

    experiments = args.experiment or ["physassist"]
    run_ids = [r.strip() for r in args.runs.split(",") if r.strip()] if args.runs else None
    _end_abandoned(args.tracking_uri, experiments)
    try:
        sweep_id, run_ids = resolve_ids(args.tracking_uri, experiments, args.sweep, run_ids)
        out = args.out or Path("outputs") / "reports" / (sweep_id or "-".join(experiments))
        runs = select_runs(args.tracking_uri, experiments, args.filter, sweep_id, run_ids)
    except ReportError as exc:
        print(f"physassist-report: error: {exc}", file=sys.stderr)
        return 2
    runs, dropped = deduplicate(runs)
    if dropped:
        repeats = ", ".join(f"{old} (repeats {newer})" for old, newer in dropped)
        print(
            f"physassist-report: warning: {len(dropped)} run(s) repeat the configuration of a "
            "newer run of their own sweep (or, outside sweeps, of a newer single run) and are left "
            f"out: {repeats}",
            file=sys.stderr,
        )
    try:
        report = write_report(runs, out, artifact_turns(args.tracking_uri), explicit=bool(run_ids))
    except Exception as exc:  # noqa: BLE001 - nothing half-written is left behind
        print(
            f"physassist-report: error: writing the report failed, nothing written to {out}: {exc}",
            file=sys.stderr,
        )
        return 1
    for table in report.tables:
        print(table.markdown())
    print(f"{len(report.runs)} run(s); tables and figures in {out.resolve()}")
    if not args.no_log:
        try:
            run_id = log_report(report, args.tracking_uri, experiments[0], sweep_id)
            print(f"MLflow report run: {run_id}")
        except Exception as exc:  # noqa: BLE001 - the files are written already
            print(f"physassist-report: logging the report failed: {exc}", file=sys.stderr)
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
