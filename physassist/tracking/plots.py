"""Paper-style figures from a per-turn table (one row per session, epoch and turn).

* ``task_implicitness_heatmap``: mean turn score by task type x implicitness (paper Fig. 3);
* ``pass_curves``: Pass@Turn and Pass@Session against the threshold tau (paper Fig. I1);
* ``source_bars``: mean turn score of EHR-only vs patient-interview turns (paper Fig. 4).

Figures are drawn on bare ``matplotlib.figure.Figure`` objects (Agg canvas, no pyplot global
state), so they are safe in worker processes and without a display. Titles (the run's name) are
wrapped to the figure's width and the layout engine keeps them inside the canvas. A run without
a scored turn gets no figures (each would be empty): ``run_plots`` says so in one warning.
"""

from __future__ import annotations

import logging
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from physassist.metrics import pass_rates
from physassist.vocab import SUBTYPES, TASK_ABBREVIATIONS, TOOL_SOURCES

log = logging.getLogger(__name__)

TASK_TYPE_ORDER = tuple(TASK_ABBREVIATIONS.values())
IMPLICITNESS_ORDER = ("none", *SUBTYPES)
SOURCE_ORDER = TOOL_SOURCES

# Column names of physassist.results.turn_table (`implicitness` is metrics' name for `subtype`).
COLUMNS: dict[str, tuple[str, ...]] = {
    "score": ("score",),
    "task_type": ("task_type",),
    "implicitness": ("implicitness", "subtype"),
    "source": ("tool_source",),
}


def column(turns: pd.DataFrame, role: str) -> str | None:
    """The column of ``turns`` playing ``role`` (see COLUMNS), or None."""
    for name in COLUMNS[role]:
        if name in turns.columns:
            return name
    return None


def task_type_label(value: object) -> str:
    """IL / DG / CR / WU for either the abbreviation or the released long form."""
    text = str(value).strip()
    return TASK_ABBREVIATIONS.get(text, text)


def implicitness_label(value: object) -> str:
    """NA / PE / AE, or ``none`` for turns without a subtype (T0 and Write/Update)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "none"
    text = str(value).strip()
    return "none" if text.lower() in {"", "none", "null", "explicit", "nan"} else text


def _ordered(values: Sequence[str], order: Sequence[str]) -> list[str]:
    known = [v for v in order if v in values]
    return known + sorted(v for v in values if v not in order)


def _figure(width: float, height: float) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _title(fig: Figure, ax: Axes, text: str) -> None:
    """The title wrapped to the figure's width (~7 pt per character at the default 12 pt)."""
    ax.set_title(textwrap.fill(text, max(20, int(fig.get_figwidth() * 72 / 7))))


def _scores(turns: pd.DataFrame) -> pd.Series:
    col = column(turns, "score")
    if col is None:
        raise ValueError(f"turn table has no score column (looked for {COLUMNS['score']})")
    return pd.to_numeric(turns[col], errors="coerce")


def task_implicitness_heatmap(turns: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Mean turn score (x100) per task type x implicitness, each cell annotated with n."""
    tt, im = column(turns, "task_type"), column(turns, "implicitness")
    if tt is None or im is None:
        raise ValueError("turn table needs task type and implicitness columns for the heatmap")
    frame = pd.DataFrame(
        {
            "task_type": turns[tt].map(task_type_label),
            "implicitness": turns[im].map(implicitness_label),
            "score": _scores(turns) * 100.0,
        }
    )
    mean = frame.pivot_table(index="task_type", columns="implicitness", values="score", aggfunc="mean")
    count = frame.pivot_table(index="task_type", columns="implicitness", values="score", aggfunc="count")
    if mean.empty:
        raise ValueError(f"no scored turn to draw (0 of {len(frame)})")
    rows = _ordered(list(mean.index), TASK_TYPE_ORDER)
    cols = _ordered(list(mean.columns), IMPLICITNESS_ORDER)
    mean = mean.reindex(index=rows, columns=cols)
    count = count.reindex(index=rows, columns=cols).fillna(0).astype(int)

    fig = _figure(1.4 * len(cols) + 2, 0.8 * len(rows) + 1.6)
    ax = fig.add_subplot()
    image = ax.imshow(mean.to_numpy(dtype=float), vmin=0, vmax=100, cmap="RdYlGn", aspect="auto")
    ax.set_xticks(range(len(cols)), labels=[c if c != "none" else "none (T0, WU)" for c in cols])
    ax.set_yticks(range(len(rows)), labels=rows)
    ax.set_xlabel("implicitness")
    ax.set_ylabel("task type")
    for i, row in enumerate(rows):
        for j, col in enumerate(cols):
            value = mean.loc[row, col]
            text = "-" if pd.isna(value) else f"{value:.1f}\nn={count.loc[row, col]}"
            ax.text(j, i, text, ha="center", va="center", fontsize=8)
    fig.colorbar(image, ax=ax, label="mean turn score x100")
    _title(fig, ax, title or "Turn score by task type and implicitness")
    fig.savefig(path, dpi=120)
    return path


def pass_curves(
    turns: pd.DataFrame, path: Path, marked: Sequence[float] = (0.6, 0.75), title: str = ""
) -> Path:
    """Pass@Turn and Pass@Session (points) against tau in [0, 1], the paper's taus marked.

    The rates come from ``physassist.metrics.pass_rates``, so the curve agrees with the
    logged ``pass_turn_<tau>`` / ``pass_session_<tau>`` metrics.
    """
    rates = pass_rates(turns, list(np.round(np.linspace(0.0, 1.0, 41), 4)))
    fig = _figure(6, 4)
    ax = fig.add_subplot()
    ax.plot(rates["tau"], rates["pass_turn"], label="Pass@Turn", marker=".")
    ax.plot(rates["tau"], rates["pass_session"], label="Pass@Session", marker=".")
    for tau in marked:
        ax.axvline(tau, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel("threshold tau")
    ax.set_ylabel("pass rate (%)")
    ax.set_ylim(-2, 102)
    ax.legend()
    _title(fig, ax, title or "Pass@Turn / Pass@Session vs tau")
    fig.savefig(path, dpi=120)
    return path


def source_bars(turns: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Mean turn score (x100) per tool source (EHR-only vs patient-interview turns)."""
    src = column(turns, "source")
    if src is None:
        raise ValueError("turn table needs a tool source column for the EHR/patient bars")
    frame = pd.DataFrame({"source": turns[src].astype(str), "score": _scores(turns) * 100.0})
    stats = frame.groupby("source")["score"].agg(["mean", "count"])
    stats = stats.reindex(_ordered(list(stats.index), SOURCE_ORDER))
    fig = _figure(5, 4)
    ax = fig.add_subplot()
    bars = ax.bar(stats.index, stats["mean"].fillna(0), color="#4c72b0")
    for bar, (mean, n) in zip(bars, stats.itertuples(index=False), strict=True):
        label = "-" if pd.isna(mean) else f"{mean:.1f}\nn={n}"
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=8)
    ax.set_ylim(0, 110)
    ax.set_ylabel("mean turn score x100")
    ax.set_xlabel("tool source")
    _title(fig, ax, title or "EHR vs patient turns")
    fig.savefig(path, dpi=120)
    return path


def run_plots(turns: pd.DataFrame, out_dir: Path, *, taus: Sequence[float], title: str = "") -> list[Path]:
    """Every per-run figure that the turn table supports; a figure the table lacks the
    columns for is skipped with a warning naming it, not an error. Without a scored turn
    there is nothing to draw: no figure, one warning with the count."""
    scored = _scores(turns).notna() & (turns["status"] == "scored") if "status" in turns else _scores(turns).notna()
    if not scored.any():
        log.warning("figures skipped: none of the run's %d turns was scored", len(turns))
        return []
    from physassist.gc_freeze import frozen_heap

    out_dir.mkdir(parents=True, exist_ok=True)
    made: list[Path] = []
    makers: tuple[tuple[str, Callable[[Path], Path]], ...] = (
        ("task_implicitness_heatmap.png", lambda p: task_implicitness_heatmap(turns, p, title)),
        ("pass_vs_tau.png", lambda p: pass_curves(turns, p, taus, title)),
        ("ehr_vs_patient.png", lambda p: source_bars(turns, p, title)),
    )
    with frozen_heap():  # matplotlib's import and figures: no full collections over the eval's heap
        for name, make in makers:
            try:
                made.append(make(out_dir / name))
            except ValueError as exc:
                log.warning("figure %s skipped: %s", name, exc)
    return made
