"""Select experiment runs from MLflow and write the paper's tables and figures for them.

The selection is: the FINISHED experiment runs (``physassist.kind=job``, never sweep parents or
earlier reports) of one or more MLflow experiments, narrowed by an MLflow filter string and/or
a sweep id. Output: ``<table>.md`` and ``<table>.csv`` per table, ``report.md`` with all of
them (ending with the "Noise and calibration" section: ``physassist.report.trust``), PNG
figures, ``runs.csv`` (what was selected); optionally logged as a report run.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from physassist.report import figures, trust
from physassist.report.history import history_table
from physassist.report.pairs import (
    RESCORE_OF,
    TurnsLoader,
    comparisons,
    pairing_context,
    refusals,
    run_pairs,
)
from physassist.report.tables import Table, agreement_table, all_tables, taus_of
from physassist.tracking.metric_names import with_summary_names
from physassist.tracking.mlflow_store import http_quiet, resolve_tracking_uri, with_retries
from physassist.tracking.params import experiment_params
from physassist.tracking.runs import KIND_TAG, RUN_NAME_TAG, SWEEP_TAG, Tracker


class ReportError(ValueError):
    """No runs match, or the store cannot be read."""


@dataclass
class Report:
    out_dir: Path
    runs: pd.DataFrame
    tables: list[Table]
    figures: list[Path] = field(default_factory=list)
    run_id: str | None = None


def resolve_ids(
    tracking_uri: str | None,
    experiments: Sequence[str],
    sweep_id: str | None,
    run_ids: Sequence[str] | None,
) -> tuple[str | None, list[str] | None]:
    """The whole sweep id and run ids for what the user typed (``physassist.tracking.ids``: a
    unique prefix of >= 6 characters, as the tables print them); ``ReportError`` otherwise."""
    if not sweep_id and not run_ids:
        return sweep_id, None
    import mlflow

    from physassist.tracking import ids

    http_quiet()
    uri = resolve_tracking_uri(tracking_uri)
    client = mlflow.MlflowClient(uri)
    try:
        found = [
            with_retries(functools.partial(client.get_experiment_by_name, name))
            for name in experiments
        ]
    except Exception as exc:  # noqa: BLE001
        raise ReportError(f"cannot read runs from {uri}: {str(exc).splitlines()[0]}") from exc
    experiment_ids = [e.experiment_id for e in found if e is not None]
    if not experiment_ids:
        raise ReportError(f"no experiment {', '.join(experiments)} in {uri}")
    try:
        sweep = ids.resolve(client, experiment_ids, sweep_id, ("sweep",)).id if sweep_id else None
        # Only experiment runs are reported: a report run is no rival.
        where = f"tags.`{KIND_TAG}` = 'job'"
        runs = [
            ids.resolve(client, experiment_ids, r, ("run",), where=where).id for r in run_ids or ()
        ]
    except ids.IdError as exc:
        raise ReportError(f"{exc} (experiment(s) {', '.join(experiments)} of {uri})") from exc
    return sweep, runs or None


#: What makes two runs repeats of one another: their experiment params (sorted items), identity
#: tags and pairing context (``select_runs``).
RunIdentity = tuple[tuple[str, str] | str, ...]


def select_runs(
    tracking_uri: str | None,
    experiments: Sequence[str] = ("physassist",),
    filter_string: str = "",
    sweep_id: str | None = None,
    run_ids: Sequence[str] | None = None,
) -> pd.DataFrame:
    """FINISHED experiment runs matching the selection (and, if given, exactly ``run_ids``),
    newest first."""
    import mlflow

    http_quiet()
    uri = resolve_tracking_uri(tracking_uri)
    clauses = [f"tags.`{KIND_TAG}` = 'job'", "attributes.status = 'FINISHED'"]
    if sweep_id:
        clauses.append(f"tags.`{SWEEP_TAG}` = '{sweep_id}'")
    if filter_string:
        clauses.append(f"({filter_string})" if " or " in filter_string.lower() else filter_string)
    if run_ids:
        clauses.append("attributes.run_id IN (" + ", ".join(f"'{r}'" for r in run_ids) + ")")
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
    missing = sorted(set(run_ids or ()) - set(runs["run_id"] if not runs.empty else ()))
    if missing:
        raise ReportError(
            f"run(s) {', '.join(missing)} are not FINISHED experiment runs of "
            f"{', '.join(experiments)} in {uri}"
        )
    if runs.empty:
        what = f"experiment(s) {', '.join(experiments)}" + (
            f", sweep {sweep_id}" if sweep_id else ""
        )
        what += f", filter {filter_string!r}" if filter_string else ""
        raise ReportError(f"no FINISHED runs in {what} of {uri}")
    return with_summary_names(_plain_names(runs)).reset_index(drop=True)


def _plain_names(runs: pd.DataFrame) -> pd.DataFrame:
    """Run names as made (``RUN_NAME_TAG``), without the headline a finished run's MLflow name
    carries, so the tables label runs by what they are."""
    tag = f"tags.{RUN_NAME_TAG}"
    if tag not in runs.columns:
        return runs
    out = runs.copy()
    out["tags.mlflow.runName"] = out[tag].where(out[tag].notna(), out.get("tags.mlflow.runName"))
    return out


def artifact_turns(tracking_uri: str | None) -> TurnsLoader:
    """Reads a run's per-turn table (artifact ``tables/turns.csv``); None when it has none."""
    import mlflow

    os.environ.setdefault(
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"
    )  # one bar per run otherwise
    client = mlflow.MlflowClient(resolve_tracking_uri(tracking_uri))
    scratch = Path(tempfile.mkdtemp(prefix="physassist-report-"))

    def load(run_id: str) -> pd.DataFrame | None:
        names = [f.path for f in with_retries(lambda: client.list_artifacts(run_id, "tables"))]
        if "tables/turns.csv" not in names:
            return None
        path = with_retries(
            lambda: client.download_artifacts(run_id, "tables/turns.csv", str(scratch / run_id))
        )
        return pd.read_csv(path, dtype={"session_id": str})

    return load


IDENTITY_TAGS = ("tags.physassist.dataset_fingerprint", "tags.physassist.ehr_fingerprint")


def deduplicate(runs: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """One run per configuration *and pairing context*: the newest of runs with the same
    experiment params and data fingerprints in the same sweep (a job logged twice), or among
    single runs (the same command run again). A run of another sweep, a rescoring's source
    and the rescorings of another source are never repeats: each is the arm of its own
    comparison (``report.pairs``), so a sweep keeps its default arm even when a newer sweep
    ran the same configuration. Returns the kept runs and (left out, the newer twin) ids."""
    params = [c for c in runs.columns if c.startswith("params.")]
    tags = [c for c in IDENTITY_TAGS if c in runs.columns]
    sources = set(runs[RESCORE_OF].dropna().astype(str)) if RESCORE_OF in runs.columns else set()

    def identity(row: pd.Series) -> RunIdentity:
        values = {c[len("params.") :]: row[c] for c in params if pd.notna(row[c])}
        context = str(row["run_id"]) if str(row["run_id"]) in sources else pairing_context(row)
        return (*sorted(experiment_params(values).items()), *(str(row[c]) for c in tags), context)

    ordered = (
        runs.sort_values("start_time", ascending=False, kind="stable")
        if "start_time" in runs
        else runs
    )
    keys = ordered.apply(identity, axis=1)
    newest: dict[RunIdentity, str] = {}
    dropped: list[tuple[str, str]] = []
    for run_id, key in zip(ordered["run_id"].astype(str), keys, strict=True):
        if key in newest:
            dropped.append((run_id, newest[key]))
        else:
            newest[key] = run_id
    left_out = {old for old, _ in dropped}
    return ordered[~ordered["run_id"].astype(str).isin(left_out)].reset_index(drop=True), dropped


def write_report(
    runs: pd.DataFrame, out_dir: Path, turns_of: TurnsLoader | None = None, explicit: bool = False
) -> Report:
    """Write every table (Markdown + CSV), the figures (PNG) and the run list.

    ``turns_of`` reads a run's per-turn table, for the paired comparisons; ``explicit``: the
    runs were named by the user, so any two of them may be paired (else only within a sweep).
    Everything is written into a scratch directory beside ``out_dir`` that replaces it only
    when complete: a failure leaves the previous report (or none), never half of a new one.
    """
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    # mkdir, not mkdtemp: the report gets the user's umask (mkdtemp's 0700 hid it from a group)
    scratch = out_dir.parent / f".{out_dir.name}.partial-{uuid.uuid4().hex[:8]}"
    scratch.mkdir()
    try:
        tables, made = _write_files(runs, scratch, turns_of, explicit)
        if out_dir.exists():
            old = out_dir.with_name(f".{out_dir.name}.old-{scratch.name[-8:]}")
            out_dir.rename(old)
            scratch.rename(out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            scratch.rename(out_dir)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Report(out_dir, runs, tables, [out_dir / p.name for p in made])


def _write_files(
    runs: pd.DataFrame, out_dir: Path, turns_of: TurnsLoader | None, explicit: bool
) -> tuple[list[Table], list[Path]]:
    tables = all_tables(runs, explicit=explicit)
    tables += comparison_tables(runs, turns_of, explicit)
    trusted = trust.section(runs, turns_of)
    chunks = ["# PhysAssistBench report", "", f"{len(runs)} run(s).", ""]
    for table in [*tables, *trusted]:
        table.frame.to_csv(out_dir / f"{table.name}.csv", index=False)
        text = table.markdown()
        (out_dir / f"{table.name}.md").write_text(text)
        chunks += [trust.TITLE, ""] if table is trusted[0] else []
        chunks.append(text)
    tables += trusted
    (out_dir / "report.md").write_text("\n".join(chunks))
    keep = [
        c
        for c in runs.columns
        if c in ("run_id", "status", "start_time")
        or c.startswith(("params.", "tags.mlflow.runName", "tags.physassist."))
    ]
    runs[keep].to_csv(out_dir / "runs.csv", index=False)
    made = [
        figures.mrs_bars(runs, out_dir / "fig_mrs.png"),
        figures.channel_bars(runs, out_dir / "fig4_ehr_vs_patient.png"),
    ]
    variance = next((t for t in tables if t.name == "variance"), None)
    if variance is not None:
        made.append(figures.variance_shares(variance.frame, out_dir / "fig_variance_shares.png"))
    t3 = next((t for t in tables if t.name == "table3"), None)
    if t3 is not None:
        comps = next((t.frame for t in tables if t.name == "comparisons"), None)
        made.append(figures.delta_bars(t3, out_dir / "fig_table3_deltas.png", comps))
    return tables, made


def comparison_tables(
    runs: pd.DataFrame, turns_of: TurnsLoader | None, explicit: bool
) -> list[Table]:
    """Paired comparisons (and free vs gold history per turn), refused pairs and judge
    agreement, for the runs that have them."""
    pairs = run_pairs(runs, explicit)
    out = []
    if turns_of is not None and any(not p.refused for p in pairs):
        taus = [float(t) for t in taus_of(runs)] or [0.6, 0.75]
        frame = comparisons(pairs, turns_of, taus)
        title = (
            "Paired comparisons on the sessions both runs share (diff = a - b, points; 95% "
            "paired bootstrap CI)"
        )
        out.append(Table("comparisons", title, frame, column_decimals={"p_value": 3}))
        history = history_table(pairs, turns_of, taus)
        if history is not None:
            out.append(history)
    refused = refusals(pairs)
    if len(refused):
        out.append(Table("refused_pairs", "Pairs not compared, and why", refused))
    agreement = agreement_table(runs)
    if len(agreement.frame):
        out.append(agreement)
    return out


def log_report(
    report: Report, tracking_uri: str | None, experiment: str, sweep_id: str | None
) -> str:
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
    name = report_name(report.runs, sweep_id, tracker)
    report.run_id = tracker.log_run(run_name=name, params={}, tags=tags, metrics={}, files=files)
    return report.run_id


def report_name(runs: pd.DataFrame, sweep_id: str | None, tracker: Tracker) -> str:
    """What a report compares, as its run's name: ``report on <the sweep parent's name>``
    (``report on paper_explicit: model x query``), else the runs' names joined by ``vs``
    (``report on oracle vs baseline | query=explicit``), else how many runs it holds."""
    if sweep_id:
        parents = tracker.find_runs({SWEEP_TAG: sweep_id, KIND_TAG: "sweep"})
        return f"report on {parents[0].info.run_name if parents else 'sweep ' + sweep_id}"
    names = [str(n) for n in runs.get("tags.mlflow.runName", runs["run_id"]).tolist()]
    joined = " vs ".join(names)
    return (
        f"report on {joined}"
        if len(names) <= 4 and len(joined) <= 200
        else f"report on {len(names)} runs"
    )
