"""The report's "Noise and calibration" section: how far to trust each number.

* ``noise_table``: per run, its noise between identical runs, the smallest difference its
  design detects and the cheapest design that would detect 2 and 5 points (copied from the
  run's metrics, ``physassist.noise``);
* ``variance_table``: where the variance of mRS and Pass@Turn comes from (session, patient,
  agent, judge, residual), each share with its 95% interval, for every *replicate group*: a run,
  or the runs of one configuration that differ only in ``patient.seed`` (the patient's
  repeats), read from their turn tables;
* ``calibration_table``: per run labelled by physicians, the judge's bias on the labelled turns
  and the calibrated mRS / Pass@Turn beside the judge's (copied, ``physassist.calibration``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from physassist import noise
from physassist.report.pairs import TurnsLoader, label, metrics_of, pairing_context
from physassist.report.tables import Table, taus_of
from physassist.tracking.params import experiment_params

PATIENT_SEED = "patient.seed"
TITLE = "## Noise and calibration"


def _plan(metrics: dict[str, float], delta: float, available: int | None) -> str:
    key = f"plan.mrs.{delta:.0f}pt."
    if key + "sessions" not in metrics:
        return ""
    found = noise.Plan(
        delta,
        int(metrics[key + "sessions"]),
        int(metrics[key + "epochs"]),
        int(metrics[key + "judgings"]),
        metrics[key + "tokens"],
        metrics.get(key + "cost_usd", math.nan),
    )
    return found.text(available)


def noise_table(runs: pd.DataFrame) -> Table:
    """Each run's noise and what detecting 2 and 5 points would take (its logged metrics)."""
    rows = []
    for _, run in runs.iterrows():
        m = metrics_of(run)
        repeats = {axis: int(m.get(f"repeats.{axis}", 1)) for axis in ("patient", "agent", "judge")}
        available = int(m["n_sessions"]) if "n_sessions" in m else None
        rows.append(
            {
                "run": label(run),
                "mRS": m.get("mrs", math.nan),
                "noise +-": m.get("noise.mrs", math.nan),
                "detects >=": m.get("mde.mrs", math.nan),
                **{f"to detect {d:.0f} pt": _plan(m, d, available) for d in noise.TARGETS},
                "repeats (patient, epochs, judgings)": ", ".join(str(n) for n in repeats.values()),
                "note": _noise_note(m),
                "run_id": run["run_id"],
            }
        )
    title = "Noise: two identical runs differ by up to +- (points, 95%); the smallest paired mRS difference the design detects (80% power, two-sided 5%); the cheapest design per run that would detect 2 and 5 points"
    return Table("noise", title, pd.DataFrame(rows))


def _noise_note(metrics: dict[str, float]) -> str:
    if "mde.mrs" not in metrics:
        return "unmeasured: one epoch and one judging"
    if metrics["mde.mrs"] < 0.05:
        return "no noise between identical runs: a comparison's own spread (its row in comparisons) sets what it detects"
    return ""


def replicate_groups(runs: pd.DataFrame) -> list[pd.DataFrame]:
    """Runs of one configuration in one pairing context, up to ``patient.seed``: each group's
    runs are the patient's repeats (a run alone is its own group)."""

    def key(row: pd.Series) -> tuple[object, ...]:
        params = {
            c[len("params.") :]: row[c]
            for c in row.index
            if c.startswith("params.") and pd.notna(row[c])
        }
        kept = {k: v for k, v in experiment_params(params).items() if k != PATIENT_SEED}
        return (*sorted(kept.items()), pairing_context(row))

    keys = runs.apply(key, axis=1) if len(runs) else pd.Series(dtype=object)
    return [runs.loc[index] for index in keys.groupby(keys, sort=False).groups.values()]


def _seed(row: pd.Series) -> str:
    value = row.get(f"params.{PATIENT_SEED}")
    return str(value) if isinstance(value, str) and value not in ("", "null") else "-"


def variance_table(runs: pd.DataFrame, turns_of: TurnsLoader, taus: Sequence[float]) -> Table:
    """The variance split of mRS and Pass@Turn for every replicate group with turn tables."""
    rows: list[dict[str, object]] = []
    names: set[str] = set()
    for group in replicate_groups(runs):
        loaded = [(row, turns_of(row["run_id"])) for _, row in group.iterrows()]
        tables = [(row, turns) for row, turns in loaded if turns is not None and len(turns)]
        if not tables:
            continue
        values = pd.concat(
            [noise.replicates(turns, taus, patient=_seed(row)) for row, turns in tables]
        )
        seeds = sorted({_seed(row) for row, _ in tables})
        name = label(tables[0][0]) + (
            f" ({PATIENT_SEED}={','.join(seeds)})" if len(tables) > 1 else ""
        )
        if name in names:  # two runs' names alike (what they differ in is not in them): their ids
            name += f" [{str(tables[0][0]['run_id'])[:8]}]"
        names.add(name)
        for metric in noise.metric_names(taus):
            if not values[metric].notna().any():
                continue
            parts = noise.split(values, metric)
            for c in parts.components:
                rows.append(
                    {
                        "group": name,
                        "metric": metric,
                        "axis": c.axis,
                        "variance": c.variance,
                        "share %": c.share,
                        "ci_low": c.share_low,
                        "ci_high": c.share_high,
                        "repeats": c.repeats,
                        "note": c.note,
                        "runs": len(tables),
                        "run_id": ",".join(str(row["run_id"]) for row, _ in tables),
                    }
                )
    title = "Where the variance comes from (points^2; share % of one session's value in one pass, 95% bootstrap CI over sessions): session is what the benchmark measures, the rest is noise"
    return Table("variance", title, pd.DataFrame(rows), column_decimals={"variance": 1})


def calibration_table(runs: pd.DataFrame) -> Table:
    """The judge calibrated on physicians' labels, beside the judge's own numbers."""
    rows = []
    for _, run in runs.iterrows():
        m = metrics_of(run)
        if "mrs_calibrated" not in m:
            continue
        row = {
            "run": label(run),
            "labelled turns": m.get("n_labelled", math.nan),
            "strata": m.get("strata", math.nan),
            "judge bias": m.get("judge_bias", math.nan),
            "bias ci": _interval(m, "judge_bias"),
            "judge mRS": m.get("mrs", math.nan),
            "judge mRS ci": _interval(m, "mrs"),
            "calibrated mRS": m["mrs_calibrated"],
            "calibrated ci": _interval(m, "mrs_calibrated"),
        }
        for tau in taus_of(runs):
            row[f"judge @T{tau[1:]}"] = m.get(f"pass_turn_{tau}", math.nan)
            row[f"calibrated @T{tau[1:]}"] = m.get(f"pass_turn_{tau}_calibrated", math.nan)
        rows.append({**row, "run_id": run["run_id"]})
    title = "The judge calibrated on physicians (prediction-powered inference: the judge's mean plus the labelled turns' human - judge correction; points, 95% CI)"
    return Table("calibration", title, pd.DataFrame(rows))


def _interval(metrics: dict[str, float], name: str) -> str:
    low, high = metrics.get(f"{name}_ci_low", math.nan), metrics.get(f"{name}_ci_high", math.nan)
    return "" if np.isnan(low) else f"[{low:.1f}, {high:.1f}]"


def section(runs: pd.DataFrame, turns_of: TurnsLoader | None) -> list[Table]:
    """The section's tables the runs support."""
    taus = [float(t) for t in taus_of(runs)] or [0.6, 0.75]
    tables = [noise_table(runs)]
    if turns_of is not None:
        variance = variance_table(runs, turns_of, taus)
        if len(variance.frame):
            tables.append(variance)
    calibration = calibration_table(runs)
    if len(calibration.frame):
        tables.append(calibration)
    return tables
