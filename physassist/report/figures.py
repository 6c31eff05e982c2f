"""Report figures across runs, from logged metrics (no pyplot global state; Agg canvas).

* ``mrs_bars``: mRS with its 95% interval per run (Table 2 at a glance), the validity floors
  (``physassist/empty``, ``physassist/no_tools``) drawn as labelled reference lines;
* ``channel_bars``: EHR-only vs patient-interview turns per run (paper Fig. 4);
* ``delta_bars``: implicit - explicit per subtype for each query pair (Table 3), one panel per
  subtype; the overall panel shows the paired difference with its 95% interval when the
  comparisons have it;
* ``variance_shares``: each axis' share of the mRS variance (session, patient, agent, judge,
  residual) with its 95% interval, per replicate group; an unmeasured axis is marked, not 0.

Readable at any number of runs: run names are wrapped and get the room they need, legends sit
outside the axes, each series has its own colour, titles are wrapped to the figure width and
the layout engine keeps everything inside the canvas.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from physassist.report.tables import Table, run_labels
from physassist.vocab import SUBTYPES

LABEL_WIDTH = 34  # characters per line of a run name
EHR_COLOUR, PATIENT_COLOUR = "#4c72b0", "#dd8452"
COST_COLOUR, GAIN_COLOUR = "#c44e52", "#55a868"  # implicit costs points / gains points
FLOOR_STYLES = {"physassist/empty": ("#7f7f7f", ":"), "physassist/no_tools": ("#8172b3", "--")}


def _wrap(text: str, width: int = LABEL_WIDTH) -> str:
    return "\n".join(textwrap.wrap(str(text), width)) or str(text)


def _labels(runs: pd.DataFrame) -> list[str]:
    return [_wrap(n) for n in run_labels(runs)]


def _col(runs: pd.DataFrame, name: str) -> np.ndarray:
    col = f"metrics.{name}"
    return runs[col].astype(float).to_numpy() if col in runs.columns else np.full(len(runs), np.nan)


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _errors(point: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Error bar lengths below and above each point (0 where unknown). A percentile bootstrap
    interval need not hold its own point estimate (a skewed resample distribution, or rounding:
    the point and the resamples are summed in different orders), and matplotlib refuses a
    negative length: the side the point lies beyond is drawn as 0."""
    return np.vstack([np.nan_to_num(point - low).clip(0), np.nan_to_num(high - point).clip(0)])


def _rows_height(labels: list[str], gap: float) -> float:
    """Inches for one row per label: rows are evenly spaced, so each gets the room of the
    longest label (the sum of the lines let a tall name overlap its neighbours)."""
    lines = max((label.count("\n") + 1 for label in labels), default=1)
    return len(labels) * (0.17 * lines + gap)


def mrs_bars(runs: pd.DataFrame, path: Path) -> Path:
    """Horizontal bars of mRS per run with the bootstrap interval; floors as reference lines."""
    model = (
        runs["params.model"]
        if "params.model" in runs.columns
        else pd.Series(None, index=runs.index)
    )
    # a floor is a reference line when it was run once next to other runs; else it is a bar
    lines = [
        m
        for m in FLOOR_STYLES
        if (model == m).sum() == 1 and (~model.isin(list(FLOOR_STYLES))).any()
    ]
    floors, shown = runs[model.isin(lines)], runs[~model.isin(lines)]
    mrs = _col(shown, "mrs")
    low, high = _col(shown, "mrs_ci_low"), _col(shown, "mrs_ci_high")
    err = _errors(mrs, low, high)
    labels = _labels(shown)
    fig = _figure(8, _rows_height(labels, 0.12) + 1.6)
    ax = fig.add_subplot()
    y = np.arange(len(shown))
    ax.barh(y, np.nan_to_num(mrs), xerr=err, color=EHR_COLOUR, capsize=3)
    ax.set_yticks(y, labels=labels, fontsize=8)
    ax.invert_yaxis()
    for name in lines:
        colour, style = FLOOR_STYLES[name]
        value = float(_col(floors[floors["params.model"] == name], "mrs")[0])
        ax.axvline(
            value, color=colour, linestyle=style, label=f"floor {name.split('/')[-1]} ({value:.1f})"
        )
    ax.set_xlim(0, 100)
    ax.set_xlabel("mRS (points, 95% CI)")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=8, frameon=False)
    fig.suptitle("Mean rubric score per run", fontsize=11)
    fig.savefig(path, dpi=120)
    return path


def channel_bars(runs: pd.DataFrame, path: Path) -> Path:
    """Grouped horizontal bars: mRS on EHR-only vs patient-interview turns, per run."""
    ehr = _col(runs, "mrs.channel.ehr_only")
    patient = _col(runs, "mrs.channel.patient_interview")
    labels = _labels(runs)
    fig = _figure(8, _rows_height(labels, 0.2) + 1.8)
    ax = fig.add_subplot()
    y = np.arange(len(runs))
    ax.barh(y - 0.2, np.nan_to_num(ehr), height=0.4, color=EHR_COLOUR, label="EHR-only turns")
    ax.barh(
        y + 0.2,
        np.nan_to_num(patient),
        height=0.4,
        color=PATIENT_COLOUR,
        label="patient-interview turns",
    )
    ax.set_yticks(y, labels=labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("mRS (points)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=2, fontsize=8, frameon=False)
    fig.suptitle("EHR vs patient turns", fontsize=11)
    fig.savefig(path, dpi=120)
    return path


def delta_bars(table3: Table, path: Path, comparisons: pd.DataFrame | None = None) -> Path:
    """Implicit - explicit mRS, one panel per subtype, one bar per pair of runs.

    Bars are coloured by sign (implicit costs points / gains points), so no legend is needed.
    Given ``comparisons``, the overall panel shows each pair's paired difference with its 95%
    interval: both over the sessions the two runs share (Table 3's delta compares each run's
    mRS over its own sessions, which that interval is not about).
    """
    frame = table3.frame
    # one bar per pair of runs, keyed by their ids (two pairs may carry the same run name)
    ids = ["implicit_run_id", "explicit_run_id"]
    pairs = list(dict.fromkeys(zip(frame[ids[0]], frame[ids[1]], strict=True)))
    names = frame.drop_duplicates(ids).set_index(ids)["pair"]
    subtypes = [*SUBTYPES, "all"]
    labels = [_wrap(names.loc[p]) for p in pairs]
    fig = _figure(10, _rows_height(labels, 0.12) + 1.8)
    axes = fig.subplots(1, len(subtypes), sharey=True, sharex=True)
    y = np.arange(len(pairs))
    intervals = _query_intervals(pairs, comparisons)
    for ax, subtype in zip(axes, subtypes, strict=True):
        rows = frame[frame["subtype"] == subtype].set_index(ids).reindex(pairs)
        delta = rows["delta"].astype(float).to_numpy()
        xerr = None
        if subtype == "all" and intervals is not None:
            diff, low, high = intervals
            # the interval's own estimate (the shared sessions), not the runs' whole-run delta
            delta = np.where(np.isnan(diff), delta, diff)
            xerr = _errors(delta, low, high)
        colours = [COST_COLOUR if d < 0 else GAIN_COLOUR for d in np.nan_to_num(delta)]
        ax.barh(y, np.nan_to_num(delta), color=colours, xerr=xerr, capsize=3)
        ax.axvline(0, color="black", linewidth=0.8)
        ax.set_title(
            "overall (95% CI)" if subtype == "all" and xerr is not None else subtype, fontsize=9
        )
        ax.tick_params(axis="x", labelsize=8)
    axes[0].set_yticks(y, labels=labels, fontsize=8)
    axes[0].invert_yaxis()
    fig.supxlabel(
        "implicit - explicit (mRS points; < 0: implicit phrasing costs points)", fontsize=9
    )
    fig.suptitle("Cost of implicit phrasing by subtype", fontsize=11)
    fig.savefig(path, dpi=120)
    return path


AXIS_COLOURS = {
    "session": "#4c72b0",
    "patient": "#dd8452",
    "agent": "#55a868",
    "judge": "#c44e52",
    "residual": "#8172b3",
}


def variance_shares(variance: pd.DataFrame, path: Path, metric: str = "mrs") -> Path:
    """Grouped horizontal bars: each axis' share (percent) of ``metric``'s variance with its
    bootstrap interval, one cluster per replicate group; an axis without repeats is an ``x``
    at 0 labelled unmeasured."""
    rows = variance[variance["metric"] == metric]
    groups = list(dict.fromkeys(rows["group"]))
    labels = [_wrap(g) for g in groups]
    axes_order = list(AXIS_COLOURS)
    fig = _figure(8, _rows_height(labels, 0.55) + 1.8)
    ax = fig.add_subplot()
    height = 0.8 / len(axes_order)
    marked = False
    for k, axis in enumerate(axes_order):
        part = rows[rows["axis"] == axis].set_index("group").reindex(groups)
        y = np.arange(len(groups)) + (k - (len(axes_order) - 1) / 2) * height
        share = part["share %"].astype(float).to_numpy()
        low, high = (
            part["ci_low"].astype(float).to_numpy(),
            part["ci_high"].astype(float).to_numpy(),
        )
        err = _errors(share, low, high)
        ax.barh(
            y,
            np.nan_to_num(share),
            height=height * 0.9,
            xerr=err,
            color=AXIS_COLOURS[axis],
            capsize=2,
            label=axis,
        )
        missing = np.isnan(share)
        if missing.any():
            ax.scatter(
                np.zeros(missing.sum()),
                y[missing],
                marker="x",
                color="#7f7f7f",
                label=None if marked else "unmeasured (no repeats)",
                zorder=3,
            )
            marked = True
    ax.set_yticks(np.arange(len(groups)), labels=labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel(f"share of the variance of {metric} (%, 95% CI)")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncols=3, fontsize=8, frameon=False)
    fig.suptitle("Where the variance comes from", fontsize=11)
    fig.savefig(path, dpi=120)
    return path


def _query_intervals(
    pairs: list[tuple[str, str]], comparisons: pd.DataFrame | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The paired mRS difference of each (implicit, explicit) pair of run ids and its 95%
    interval, in the pairs' order (NaN for a pair not compared)."""
    if comparisons is None or comparisons.empty or "a_run_id" not in comparisons.columns:
        return None
    mrs = comparisons[(comparisons["factor"] == "query") & (comparisons["metric"] == "mrs")]
    found = mrs.set_index(["a_run_id", "b_run_id"]).reindex(pairs)
    diff, low, high = (found[c].astype(float).to_numpy() for c in ("diff", "ci_low", "ci_high"))
    return diff, low, high
