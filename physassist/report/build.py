"""Select experiment runs from MLflow and write the paper's tables and figures for them.

The selection is: the FINISHED experiment runs (``physassist.kind=job``, never sweep parents or
earlier reports) of one or more MLflow experiments, narrowed by an MLflow filter string and/or
a sweep id. Output: ``<table>.md`` and ``<table>.csv`` per table, ``report.md`` with all of
them, PNG figures, ``runs.csv`` (what was selected); optionally logged as a report run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from physassist.report import figures
from physassist.report.tables import Table, all_tables
from physassist.tracking.mlflow_store import http_quiet, resolve_tracking_uri, with_retries
from physassist.tracking.runs import KIND_TAG, SWEEP_TAG, Tracker


class ReportError(ValueError):
    """No runs match, or the store cannot be read."""


@dataclass
class Report:
    out_dir: Path
    runs: pd.DataFrame
    tables: list[Table]
    figures: list[Path] = field(default_factory=list)
    run_id: str | None = None


def select_runs(
    tracking_uri: str | None,
    experiments: Sequence[str] = ("physassist",),
    filter_string: str = "",
    sweep_id: str | None = None,
) -> pd.DataFrame:
    """FINISHED experiment runs matching the selection, newest first."""
    import mlflow

    http_quiet()
    uri = resolve_tracking_uri(tracking_uri)
    clauses = [f"tags.`{KIND_TAG}` = 'job'", "attributes.status = 'FINISHED'"]
    if sweep_id:
        clauses.append(f"tags.`{SWEEP_TAG}` = '{sweep_id}'")
    if filter_string:
        clauses.append(f"({filter_string})" if " or " in filter_string.lower() else filter_string)
    mlflow.set_tracking_uri(uri)
    try:
        runs = with_retries(
            lambda: mlflow.search_runs(
                experiment_names=list(experiments),
                filter_string=" and ".join(clauses),
                order_by=["attributes.start_time DESC"],
                output_format="pandas",
            )
        )
    except Exception as exc:  # noqa: BLE001
        raise ReportError(f"cannot read runs from {uri}: {str(exc).splitlines()[0]}") from exc
    if runs.empty:
        what = f"experiment(s) {', '.join(experiments)}" + (f", sweep {sweep_id}" if sweep_id else "")
        what += f", filter {filter_string!r}" if filter_string else ""
        raise ReportError(f"no FINISHED runs in {what} of {uri}")
    return runs.reset_index(drop=True)


def write_report(runs: pd.DataFrame, out_dir: Path) -> Report:
    """Write every table (Markdown + CSV), the figures (PNG) and the run list."""
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = all_tables(runs)
    chunks = ["# PhysAssistBench report", "", f"{len(runs)} run(s).", ""]
    for table in tables:
        table.frame.to_csv(out_dir / f"{table.name}.csv", index=False)
        text = table.markdown()
        (out_dir / f"{table.name}.md").write_text(text)
        chunks.append(text)
    (out_dir / "report.md").write_text("\n".join(chunks))
    keep = [c for c in runs.columns if c in ("run_id", "status", "start_time") or c.startswith(("params.", "tags.mlflow.runName", "tags.physassist."))]
    runs[keep].to_csv(out_dir / "runs.csv", index=False)
    made = [figures.mrs_bars(runs, out_dir / "fig_mrs.png"), figures.channel_bars(runs, out_dir / "fig4_ehr_vs_patient.png")]
    t3 = next((t for t in tables if t.name == "table3"), None)
    if t3 is not None:
        made.append(figures.delta_bars(t3, out_dir / "fig_table3_deltas.png"))
    return Report(out_dir, runs, tables, made)


def log_report(report: Report, tracking_uri: str | None, experiment: str, sweep_id: str | None) -> str:
    """Log the report's files as a run of ``experiment`` (tag ``physassist.kind=report``).

    Goes through ``Tracker.log_run``, so a run whose upload breaks is marked FAILED, never left
    RUNNING.
    """
    tags = {
        KIND_TAG: "report",
        "physassist.report_runs": ",".join(report.runs["run_id"].astype(str))[:5000],
    }
    if sweep_id:
        tags[SWEEP_TAG + "_reported"] = sweep_id
    files = [(path, "report") for path in sorted(report.out_dir.iterdir()) if path.is_file()]
    tracker = Tracker(tracking_uri, experiment)
    report.run_id = tracker.log_run(run_name="report", params={}, tags=tags, metrics={}, files=files)
    return report.run_id
