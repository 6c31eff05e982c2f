"""Report figures across runs, from logged metrics (no pyplot global state; Agg canvas).

* ``mrs_bars``: mRS with its 95% interval per run (Table 2 at a glance);
* ``channel_bars``: EHR-only vs patient-interview turns per run (paper Fig. 4);
* ``delta_bars``: implicit - explicit per subtype for each query pair (Table 3).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from physassist.report.tables import Table, run_labels
from physassist.vocab import SUBTYPES


def _labels(runs: pd.DataFrame) -> list[str]:
    return [str(n) for n in run_labels(runs)]


def _col(runs: pd.DataFrame, name: str) -> np.ndarray:
    col = f"metrics.{name}"
    return runs[col].astype(float).to_numpy() if col in runs.columns else np.full(len(runs), np.nan)


def mrs_bars(runs: pd.DataFrame, path: Path) -> Path:
    """Horizontal bars of mRS per run with the bootstrap interval as error bars."""
    mrs = _col(runs, "mrs")
    low, high = _col(runs, "mrs_ci_low"), _col(runs, "mrs_ci_high")
    err = np.vstack([np.nan_to_num(mrs - low), np.nan_to_num(high - mrs)])
    fig = Figure(figsize=(7, 0.45 * len(runs) + 1.5))
    ax = fig.add_subplot()
    y = np.arange(len(runs))
    ax.barh(y, np.nan_to_num(mrs), xerr=err, color="#4c72b0", capsize=3)
    ax.set_yticks(y, labels=_labels(runs), fontsize=8)
    ax.set_xlim(0, 100)
    ax.set_xlabel("mRS (95% CI)")
    ax.set_title("Mean rubric score per run")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def channel_bars(runs: pd.DataFrame, path: Path) -> Path:
    """Grouped bars: mRS on EHR-only turns vs patient-interview turns, per run."""
    ehr = _col(runs, "mrs.channel.ehr_only")
    patient = _col(runs, "mrs.channel.patient_interview")
    fig = Figure(figsize=(max(5, 1.2 * len(runs) + 2), 4))
    ax = fig.add_subplot()
    x = np.arange(len(runs))
    ax.bar(x - 0.2, np.nan_to_num(ehr), width=0.4, label="EHR-only turns")
    ax.bar(x + 0.2, np.nan_to_num(patient), width=0.4, label="patient-interview turns")
    ax.set_xticks(x, labels=_labels(runs), rotation=30, ha="right", fontsize=8)
    ax.set_ylim(0, 100)
    ax.set_ylabel("mRS")
    ax.legend()
    ax.set_title("EHR vs patient turns")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def delta_bars(table3: Table, path: Path) -> Path:
    """Implicit - explicit mRS per subtype, one group of bars per pair of runs."""
    frame = table3.frame
    pairs = list(dict.fromkeys(frame["pair"]))
    subtypes = [*SUBTYPES, "all"]
    fig = Figure(figsize=(max(5, 1.5 * len(subtypes) + 2), 4))
    ax = fig.add_subplot()
    width = 0.8 / max(1, len(pairs))
    x = np.arange(len(subtypes))
    for i, pair in enumerate(pairs):
        rows = frame[frame["pair"] == pair].set_index("subtype").reindex(subtypes)
        ax.bar(x + i * width - 0.4 + width / 2, np.nan_to_num(rows["delta"].astype(float)), width=width, label=str(pair))
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, labels=subtypes)
    ax.set_ylabel("implicit - explicit (mRS points)")
    ax.legend(fontsize=7)
    ax.set_title("Cost of implicit phrasing by subtype")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path
