"""The table a ``physassist-eval -m`` sweep ends with: its jobs side by side.

Each job prints one line when it ends and appends its headline numbers to ``JOBS_FILE`` in the
sweep directory (jobs may run in other processes: joblib, submitit, Ray); the sweep's callback
reads them back after the last job and prints one table, a row per job, the swept values as
columns, then mRS with its 95% interval (and, when repeats measured it, the noise between
identical runs and the smallest difference the job's design detects: ``physassist.noise``),
Pass@Turn at each threshold and the unscored turns.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

JOBS_FILE = "physassist_jobs.jsonl"


def _points(value: Any) -> str:
    return "-" if value is None or value != value else f"{float(value):.1f}"


def headline(metrics: Mapping[str, float], taus: Sequence[float]) -> dict[str, Any]:
    """What a job contributes to the sweep's table (rates in points, counts)."""
    from physassist.metrics import tau_key

    keep = ["mrs", "mrs_ci_low", "mrs_ci_high", "n_turns", "unscored_turns", "error_turns", "noise.mrs", "mde.mrs"]
    keep += [f"pass_turn_{tau_key(t)}" for t in taus]
    return {k: metrics[k] for k in keep if k in metrics}


def mrs_text(metrics: Mapping[str, Any]) -> str:
    """``40.9 [30.0, 51.9]``."""
    ci = f" [{_points(metrics.get('mrs_ci_low'))}, {_points(metrics.get('mrs_ci_high'))}]"
    return _points(metrics.get("mrs")) + (ci if "mrs_ci_low" in metrics else "")


def unscored_text(metrics: Mapping[str, Any]) -> str:
    if "n_turns" not in metrics:
        return "-"
    return f"{metrics.get('unscored_turns', 0):.0f} of {metrics['n_turns']:.0f}"


def record(sweep_dir: Path, job: Mapping[str, Any]) -> None:
    """Append one job's row (``num``, ``overrides``, ``status``, ``run_id``, ``metrics``,
    ``taus``, ``note``) for the sweep's table."""
    with open(sweep_dir / JOBS_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(dict(job), default=str) + "\n")


def record_outcome(sweep_dir: Path, number: int, overrides: list[str], outcome: Any, taus: Sequence[float] | None) -> None:
    """Record a job's ``printing.Outcome``: its headline numbers and what to note about it."""
    taus = [float(t) for t in taus or (0.6, 0.75)]
    note = {"SKIPPED": "done before", "BUSY": "running elsewhere", "FAILED": "failed"}.get(outcome.status, "")
    if outcome.faults:
        note = "system faults"
    elif outcome.degenerate:
        note = "degenerate: " + outcome.degenerate.split(":")[0]
    record(sweep_dir, {"num": number, "overrides": overrides, "status": outcome.status, "run_id": outcome.run_id,
                       "metrics": headline(outcome.metrics, taus), "taus": taus, "note": note})


def read(sweep_dir: Path) -> list[dict[str, Any]]:
    """The jobs recorded in the sweep directory, in job order (the last record of a job wins)."""
    path = sweep_dir / JOBS_FILE
    if not path.is_file():
        return []
    jobs: dict[int, dict[str, Any]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            job = json.loads(line)
            jobs[int(job.get("num", len(jobs)))] = job
    return [jobs[n] for n in sorted(jobs)]


def _swept(jobs: list[dict[str, Any]]) -> list[str]:
    """The override keys whose values differ between jobs (all of them for a single job)."""
    values: dict[str, set[str]] = {}
    for job in jobs:
        for override in job.get("overrides") or []:
            key, _, value = override.partition("=")
            values.setdefault(key.lstrip("+~"), set()).add(value)
    varying = [k for k, v in values.items() if len(v) > 1 or len(jobs) == 1]
    return varying or list(values)


def table(jobs: list[dict[str, Any]]) -> str:
    """The side-by-side table of a sweep's jobs (empty string when no job recorded one)."""
    from physassist.metrics import tau_key

    if not jobs:
        return ""
    keys = _swept(jobs)
    taus = [float(t) for t in jobs[0].get("taus") or (0.6, 0.75)]
    noisy = any("mde.mrs" in (job.get("metrics") or {}) for job in jobs)  # repeats measured its noise
    header = [*keys, "mRS [95% CI]", *(["noise", "detects >="] if noisy else []), *(f"Pass@Turn {tau_key(t)}" for t in taus), "unscored", "MLflow run", "note"]
    rows = [header]
    for job in jobs:
        given = dict(o.lstrip("+~").partition("=")[::2] for o in job.get("overrides") or [])
        metrics = job.get("metrics") or {}
        rows.append([
            *(given.get(k, "") for k in keys),
            mrs_text(metrics),
            *([f"+-{_points(metrics.get('noise.mrs'))}", _points(metrics.get("mde.mrs"))] if noisy else []),
            *(_points(metrics.get(f"pass_turn_{tau_key(t)}")) for t in taus),
            unscored_text(metrics),
            (job.get("run_id") or "-")[:8],
            job.get("note") or "",
        ])
    if not any(row[-1] for row in rows[1:]):
        rows = [row[:-1] for row in rows]
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
