"""What ``physassist-eval`` prints: the result table, where the logs went, errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

from physassist.staging import Outcome

HEADLINE = ("mrs", "pass_turn", "pass_session")


def result_table(metrics: Mapping[str, float], taus: list[float]) -> str:
    """The headline metrics (with 95% intervals), the per-tier mRS and the grounding check, as
    a text table."""
    from physassist.metrics import tau_key

    def pct(value: float | None) -> str:  # rates are already points (metrics.RATE_SCALE)
        return "-" if value is None or value != value else f"{value:.1f}"

    rows = [("metric", "value", "95% CI")]
    names = ["mrs"] + [f"{m}_{tau_key(t)}" for t in taus for m in ("pass_turn", "pass_session")]
    for name in names:
        ci = f"[{pct(metrics.get(name + '_ci_low'))}, {pct(metrics.get(name + '_ci_high'))}]"
        rows.append((name, pct(metrics.get(name)), ci))
    for key in sorted(k for k in metrics if k.startswith("mrs.tier.")):
        rows.append((key, pct(metrics[key]), ""))
    for key in ("n_sessions", "n_turns", "unscored_turns", "error_turns"):
        if key in metrics:
            rows.append((key, f"{metrics[key]:.0f}", ""))
    if "grounding.facts" in metrics:  # the grounding check (grounding=on): one line, the budget's
        counts = ", ".join(
            f"{metrics['grounding.' + k]:.0f} {k}" for k in ("facts", "contradicted", "unsupported")
        )
        rows.append(("grounded_pct", pct(metrics.get("grounding.grounded_pct")), f"of {counts}"))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join([*lines, noise_line(metrics)])


def noise_line(metrics: Mapping[str, float]) -> str:
    """How far the mRS would move between identical runs, and the smallest difference the
    design detects (``physassist.noise``), or why that is unknown."""
    repeats = {
        axis: int(metrics.get(f"repeats.{axis}", 1)) for axis in ("patient", "agent", "judge")
    }
    shown = {"patient": "patient seeds", "agent": "epochs", "judge": "judgings"}
    some = ", ".join(f"{n} {shown[a]}" for a, n in repeats.items() if n > 1)
    missing = [a for a, n in repeats.items() if n == 1]
    unrepeated = f"; not repeated: {', '.join(missing)}" if missing else ""
    if "mde.mrs" not in metrics:
        return (
            "noise: unmeasured (one epoch, one judging): inspect.epochs=2 or judge.repeats=2 "
            "measures it"
        )
    if metrics["mde.mrs"] < 0.05:
        return (
            f"noise: none between identical runs ({some} agree{unrepeated}): a difference on "
            "these sessions is no noise"
        )
    return (
        f"noise: +-{metrics['noise.mrs']:.1f} points between identical runs; detects >= "
        f"{metrics['mde.mrs']:.1f} (mRS, 80% power; {some}{unrepeated})"
    )


def run_line(params: Mapping[str, str], metrics: Mapping[str, float]) -> str:
    """What was run, above the table: ``model physassist/oracle | dataset sample: 36 sessions,
    en | ehr strict | judge rules`` (a judge with graders names them). ``params`` are the run's
    MLflow params (``Experiment.params``)."""

    def given(key: str) -> str | None:
        value = params.get(key)
        return None if value in (None, "null", "") else value

    sessions = f"{metrics['n_sessions']:.0f} sessions, " if "n_sessions" in metrics else ""
    graders = given("judge.models") or given("judge.model")
    if graders and graders.startswith("["):  # judge.models, as flatten_config wrote it (JSON)
        graders = ", ".join(str(g) for g in json.loads(graders))
    judge = params.get("judge", "-") + (f" ({graders})" if graders else "")
    return (
        f"model {params.get('model', '-')} | dataset {params.get('dataset', '-')}: "
        f"{sessions}{params.get('language', '-')}"
        f" | ehr {params.get('ehr', '-')} | judge {judge}"
    )


def job_line(job: str, outcome: Outcome) -> str:
    """A sweep job's result in one line (the sweep ends with the table of all its jobs)."""
    from physassist.cli.sweep_summary import mrs_text, unscored_text

    run = f"; MLflow run {outcome.run_id}" if outcome.run_id else ""
    return (
        f"job {job}: mRS {mrs_text(outcome.metrics)}, {unscored_text(outcome.metrics)} turns "
        f"unscored{run}"
    )


def report(outcome: Outcome, job: str | None = None) -> None:
    """Print the result table and where the Inspect log and the MLflow run are; for a sweep's
    job (``job``: its overrides) one line. Then the warnings that matter, on stderr."""
    if outcome.status == "SKIPPED":
        print(f"already finished in MLflow run {outcome.run_id}; skipped (log: {outcome.log_path})")
        return
    if outcome.status == "BUSY":
        print(
            f"MLflow run {outcome.run_id} is being evaluated by {outcome.holder}; skipped (not run "
            "twice)"
        )
        return
    if job is not None:
        print(job_line(job, outcome))
    else:
        _where(outcome)
    whose = f"job {job}: " if job is not None else ""
    if outcome.tracking_error:
        print(
            f"tracking failed: {whose}{outcome.tracking_error}; the Inspect log is complete",
            file=sys.stderr,
        )
    if outcome.faults:
        print(f"physassist-eval: system faults: {whose}{outcome.faults}", file=sys.stderr)
    if outcome.degenerate:
        print(f"physassist-eval: warning: {whose}{outcome.degenerate}", file=sys.stderr)


def _where(outcome: Outcome) -> None:
    exp = outcome.experiment
    if outcome.metrics:
        if exp is not None:
            print(run_line(exp.params, outcome.metrics))
        print(result_table(outcome.metrics, exp.taus if exp is not None else [0.6, 0.75]))
    print(
        f"Inspect log: {outcome.log_path}  (inspect view --log-dir "
        f"{Path(outcome.log_path or '.').parent})"
    )
    if outcome.run_id and exp is not None:
        from physassist.tracking.mlflow_store import resolve_tracking_uri

        uri = resolve_tracking_uri(exp.tracking.uri)
        print(
            f"MLflow run: {outcome.run_id} (experiment {exp.tracking.experiment!r}, status "
            f"{outcome.run_status}) in {uri}"
        )
        print(f"  browse: mlflow ui --backend-store-uri {uri}")


def progress_line(done: int, total: int, mrs: float, unscored: int, tail: str = "") -> None:
    """One short line per finished session, or ``tail`` added: the calls in flight
    (``physassist.cli.progress``, stdout not a TTY)."""
    shown = "-" if mrs != mrs else f"{mrs:.1f}"
    print(
        f"sessions {done}/{total}  mRS so far {shown}  unscored turns {unscored}"
        + (f"  {tail}" if tail else ""),
        flush=True,
    )


def fault(message: str, code: int | None = None) -> None:
    """One line for a system fault that ends the command (exit ``EXIT_FAULTS`` unless ``code``)."""
    from physassist.faults import EXIT_FAULTS

    print(f"physassist-eval: fault: {message}", file=sys.stderr)
    raise SystemExit(EXIT_FAULTS if code is None else code)


def fail(message: str, code: int = 2) -> None:
    print(f"physassist-eval: error: {message}", file=sys.stderr)
    raise SystemExit(code)
