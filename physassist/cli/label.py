"""``physassist-label``: physicians label a random subset of a run's turns; the judge is
calibrated on them.

    physassist-label draw --size 40 --seed 0
        # the newest finished run: labels/<run>/sheet.csv, sheet.md
    physassist-label import labels/<run>/sheet.csv
        # the filled sheet: HUMAN feedback on the traces of the run it was drawn from
    physassist-label calibrate --run <run id>
        # after verdicts added in the MLflow UI

``import`` and ``calibrate`` end by logging the calibrated metrics on the run
(``mrs_calibrated`` with its interval, ``judge_bias``, ...: ``physassist.calibration``), which
``physassist-report`` shows in its "Noise and calibration" section. A rescoring run (a new
judge for a run's answers) is labelled through its source run's traces.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from physassist.gc_freeze import command_start
from physassist.tracking.mlflow_store import DEFAULT_URI

RESCORE_OF = "physassist.rescore_of"


def _where(defaults: bool) -> argparse.ArgumentParser:
    """The run and its store, as options of the program (with their defaults) and of each command
    (without: ``calibrate --run <id>`` works, and a command's parser leaves what came before it
    alone)."""

    def default(value: str | None) -> str | None:
        return value if defaults else argparse.SUPPRESS

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--tracking-uri",
        default=default(DEFAULT_URI),
        help=f"MLflow tracking URI (default {DEFAULT_URI})",
    )
    where.add_argument(
        "--experiment",
        default=default("physassist"),
        help="MLflow experiment of the run (default physassist)",
    )
    where.add_argument(
        "--run",
        default=default(None),
        help="the run: its id or a unique prefix of >= 6 characters (default: for import the "
        "sheet's run, else the newest finished run of the experiment)",
    )
    return where


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="physassist-label", description=__doc__.split("\n\n")[0], parents=[_where(True)]
    )
    where = _where(False)
    sub = p.add_subparsers(dest="command", required=True)
    draw = sub.add_parser(
        "draw",
        parents=[where],
        help="draw turns to label and write the reviewer's sheet (CSV and Markdown)",
    )
    draw.add_argument("--size", type=int, default=40, help="turns to draw (default 40)")
    draw.add_argument("--seed", type=int, default=0, help="the draw's seed (default 0)")
    draw.add_argument(
        "--out",
        type=Path,
        default=None,
        help="directory for sheet.csv and sheet.md (default labels/<run id>)",
    )
    filled = sub.add_parser(
        "import",
        parents=[where],
        help="attach a filled sheet's verdicts to the run's traces, then calibrate",
    )
    filled.add_argument("sheet", type=Path, help="the filled sheet.csv")
    filled.add_argument(
        "--reviewer", default=None, help="who judged, for rows whose reviewer column is empty"
    )
    sub.add_parser(
        "calibrate",
        parents=[where],
        help="calibrate the run's judge on the HUMAN verdicts on its traces",
    )
    return p


class LabelError(ValueError):
    """A run, sheet or store that cannot be used; the message names it."""


def _run(client: Any, args: argparse.Namespace) -> Any:
    """The experiment run named by ``--run`` (its id or a unique prefix: ``tracking.ids``),
    else the newest FINISHED one."""
    from physassist.tracking import ids
    from physassist.tracking.runs import KIND_TAG

    experiment = client.get_experiment_by_name(args.experiment)
    where = f"{args.experiment!r} of {args.tracking_uri}"
    if args.run:
        if experiment is None:
            raise LabelError(f"--run {args.run}: no experiment {where}")
        try:
            found_id = ids.resolve(
                client,
                [experiment.experiment_id],
                args.run,
                ("run",),
                where=f"tags.`{KIND_TAG}` = 'job'",
            ).id
        except ids.IdError as exc:
            raise LabelError(f"--run {exc} (experiment {where})") from exc
        return client.get_run(found_id)
    found = client.search_runs(
        [experiment.experiment_id] if experiment else [],
        filter_string=f"tags.`{KIND_TAG}` = 'job' and attributes.status = 'FINISHED'",
        order_by=["attributes.start_time DESC"],
        max_results=1,
    )
    if not found:
        raise LabelError(f"no finished run in experiment {where}: name one with --run")
    return found[0]


def _turns(run: Any, client: Any) -> tuple[Any, Any]:
    """The run's Inspect log and its turn table (the judge's scores)."""
    from physassist.results import read_log, turn_table
    from physassist.tracking.runs import inspect_log_of

    try:
        log = read_log(inspect_log_of(run, client))
    except LookupError as exc:
        raise LabelError(str(exc)) from exc
    return log, turn_table(log)


def draw(args: argparse.Namespace, client: Any) -> int:
    from physassist import labels

    run = _run(client, args)
    log, turns = _turns(run, client)
    try:
        drawn = labels.draw(turns, args.size, args.seed)
    except ValueError as exc:
        raise LabelError(f"--size: {exc}") from exc
    rows, markdown = labels.sheet(drawn, log, run.info.run_id)
    out = args.out or Path("labels") / run.info.run_id
    out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(out / "sheet.csv", index=False)
    (out / "sheet.md").write_text(markdown, encoding="utf-8")
    strata = drawn[["scenario", "tier"]].drop_duplicates()
    print(
        f"{len(drawn)} turns of run {run.info.run_id} ({len(rows)} rubric items, {len(strata)} "
        f"scenario x tier strata, seed {args.seed})"
    )
    print(
        f"reviewer's sheet: {out / 'sheet.md'}; verdicts go in {out / 'sheet.csv'}, then: "
        f"physassist-label import {out / 'sheet.csv'}"
    )
    return 0


def calibrate(args: argparse.Namespace, client: Any, run: Any | None = None) -> int:
    """Calibrate the run's judge on the HUMAN verdicts on its traces; log and print the result."""
    import pandas as pd

    from physassist.calibration import calibrate as calibrated
    from physassist.tracking.human import human_turns, human_verdicts
    from physassist.tracking.metric_names import for_mlflow

    run = run or _run(client, args)
    _, turns = _turns(run, client)
    traced = (
        run.data.tags.get(RESCORE_OF) or run.info.run_id
    )  # a rescoring's answers are its source's
    verdicts = human_verdicts(args.tracking_uri, traced)
    if verdicts.empty:
        raise LabelError(
            f"run {traced}: no HUMAN verdicts on its traces (physassist-label import a filled "
            "sheet, or add T<turn>.<item> feedback in the MLflow UI)"
        )
    items = pd.DataFrame(
        [
            (r.session_id, r.epoch, r.turn, k)
            for r in turns.itertuples(index=False)
            for k in range(1, int(r.n_items) + 1)
        ],
        columns=["session_id", "epoch", "turn", "item"],
    )
    taus = [float(t) for t in (run.data.params.get("taus") or "0.6,0.75").strip("[]").split(",")]
    metrics = calibrated(turns, human_turns(verdicts, items), taus)
    if not metrics.get("n_labelled"):
        raise LabelError(
            f"run {run.info.run_id}: no turn the judge scored has a human verdict on every rubric "
            "item"
        )
    client.log_batch(run.info.run_id, metrics=_entities(for_mlflow(metrics)))
    judge_mrs = float(run.data.metrics.get("mrs", float("nan")))
    print(
        f"run {run.info.run_id}: {metrics['n_labelled']:.0f} labelled turns; "
        f"judge bias {metrics['judge_bias']:+.1f} points "
        f"[{metrics['judge_bias_ci_low']:.1f}, {metrics['judge_bias_ci_high']:.1f}]; "
        f"mRS judge {judge_mrs:.1f}, calibrated {metrics['mrs_calibrated']:.1f} "
        f"[{metrics['mrs_calibrated_ci_low']:.1f}, {metrics['mrs_calibrated_ci_high']:.1f}]"
    )
    if metrics.get("strata") == 1:
        print(
            "note: the labels miss a scenario x tier stratum: calibrated as one stratum",
            file=sys.stderr,
        )
    return 0


def _entities(metrics: dict[str, float]) -> list[Any]:
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    return [Metric(key, value, now, 0) for key, value in metrics.items()]


def attach(args: argparse.Namespace, client: Any) -> int:
    from physassist import labels
    from physassist.tracking.human import attach_verdicts

    try:
        drawn_from = labels.sheet_run(args.sheet)
        verdicts = labels.read_sheet(args.sheet, args.reviewer)
    except labels.SheetError as exc:
        raise LabelError(str(exc)) from exc
    if drawn_from is None and not args.run:
        raise LabelError(
            f"{args.sheet}: no run_id (a sheet drawn before the column existed): name its run "
            "with --run"
        )
    run = _run(client, argparse.Namespace(**{**vars(args), "run": args.run or drawn_from}))
    if drawn_from is not None and run.info.run_id != drawn_from:
        raise LabelError(
            f"{args.sheet} was drawn from run {drawn_from}, but --run {args.run} names run "
            f"{run.info.run_id}"
        )
    if verdicts.empty:
        raise LabelError(
            f"{args.sheet}: no verdict filled in (write pass or fail in the verdict column)"
        )
    traced = run.data.tags.get(RESCORE_OF) or run.info.run_id
    try:
        count = attach_verdicts(args.tracking_uri, traced, verdicts)
    except LookupError as exc:
        raise LabelError(str(exc)) from exc
    print(
        f"{count} verdicts by {verdicts['reviewer'].nunique()} reviewer(s) attached to the traces "
        f"of run {traced}"
    )
    return calibrate(args, client, run)


def main(argv: list[str] | None = None) -> int:
    command_start()
    args = parser().parse_args(argv)  # before the imports: --help and usage errors answer at once
    import mlflow

    from physassist.tracking.mlflow_store import http_quiet, resolve_tracking_uri

    http_quiet()
    args.tracking_uri = resolve_tracking_uri(args.tracking_uri)
    mlflow.set_tracking_uri(args.tracking_uri)
    client = mlflow.MlflowClient(args.tracking_uri)
    try:
        return {"draw": draw, "import": attach, "calibrate": calibrate}[args.command](args, client)
    except LabelError as exc:
        print(f"physassist-label: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
