"""Report figures stay readable with many runs: nothing drawn outside the canvas (no cut
titles or labels), no legend inside the axes, one colour per series."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from fixtures_tracking import synthetic_turns
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer

from physassist.metrics import summarize
from physassist.report import figures
from physassist.report.tables import table3


def _runs(n_models: int = 6) -> pd.DataFrame:
    rows = []
    for k in range(n_models):
        for q in ("implicit", "explicit"):
            m = summarize(synthetic_turns(8, seed=k * 2 + (q == "explicit"), query=q), n_boot=20)
            name = (
                f"model-{k}-with-a-long-name en {q} [model=provider/model-{k} language=en "
                f"query={q}]"
            )
            rows.append(
                {
                    "run_id": f"{k}{q}",
                    "tags.mlflow.runName": name,
                    "tags.physassist.sweep_id": "s",
                    "params.model": f"provider/model-{k}",
                    "params.query": q,
                    "params.language": "en",
                    **{f"metrics.{a}": b for a, b in m.items()},
                }
            )
    rows += [
        {
            "run_id": f,
            "tags.mlflow.runName": f,
            "params.model": f"physassist/{f}",
            "params.query": "implicit",
            "metrics.mrs": v,
        }
        for f, v in (("empty", 0.0), ("no_tools", 7.4))
    ]
    return pd.DataFrame(rows)


def _drawn_texts(fig) -> list:
    """Titles, axis labels, legend entries and the tick labels inside the axes' limits."""
    texts = [t for t in fig.texts if t.get_text()]
    for ax in fig.axes:
        texts += [ax.title, ax.xaxis.label, ax.yaxis.label]
        if ax.get_legend() is not None:
            texts += list(ax.get_legend().get_texts())
        for axis, (low, high) in (
            (ax.xaxis, sorted(ax.get_xlim())),
            (ax.yaxis, sorted(ax.get_ylim())),
        ):
            texts += [
                t.label1
                for t in axis.get_major_ticks()
                if low <= t.get_loc() <= high and t.label1.get_visible()
            ]
    return [t for t in texts if t.get_text()]


def _inside(fig) -> None:
    """Every drawn text of the figure lies inside the canvas."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    box = fig.bbox
    for text in _drawn_texts(fig):
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
        assert extent.y0 >= box.y0 - 1 and extent.y1 <= box.y1 + 1, text.get_text()


@pytest.fixture()
def captured(monkeypatch):
    made = []
    real = figures._figure

    def keep(*args):
        fig = real(*args)
        made.append(fig)
        return fig

    monkeypatch.setattr(figures, "_figure", keep)
    return made


def test_figures_fit_the_canvas_with_many_runs(tmp_path: Path, captured) -> None:
    runs = _runs()
    figures.mrs_bars(runs, tmp_path / "mrs.png")
    figures.channel_bars(runs, tmp_path / "channel.png")
    figures.delta_bars(table3(runs), tmp_path / "delta.png")
    for fig in captured:
        _inside(fig)
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is not None:  # legends sit above the axes, never over the bars
                canvas = FigureCanvasAgg(fig)
                canvas.draw()
                assert (
                    legend.get_window_extent(canvas.get_renderer()).y0
                    >= ax.get_window_extent().y1 - 1
                )
    mrs, channel, delta = captured
    assert {t.get_text() for t in mrs.axes[0].get_legend().get_texts()} == {
        "floor empty (0.0)",
        "floor no_tools (7.4)",
    }
    assert len(mrs.axes[0].patches) == 12  # the floors are lines, not bars
    colours = {tuple(p.get_facecolor()) for p in channel.axes[0].patches}
    assert len(colours) == 2  # one colour per series, never repeated across series
    assert len(delta.axes) == 4 and all(ax.get_legend() is None for ax in delta.axes)


def _tick_labels_apart(fig) -> None:
    """No two run names on the y axis overlap."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    boxes = sorted(
        (
            t.label1.get_window_extent(renderer)
            for t in ax.yaxis.get_major_ticks()
            if t.label1.get_text()
        ),
        key=lambda b: b.y0,
    )
    for low, high in itertools.pairwise(boxes):
        assert low.y1 <= high.y0 + 1, (low, high)


def test_long_and_short_run_names_do_not_overlap(tmp_path: Path, captured) -> None:
    parts = [
        "explorer",
        "menu=scenario",
        "observations=history_removed",
        "terminal.budget=4",
        "inspect.limit=8",
        "dataset=physassistbench",
    ]
    runs = _runs(
        8
    )  # 16 runs and 2 floors, names of 1 to 6 parts (3 to 6 lines next to single lines)
    runs["tags.mlflow.runName"] = [
        " | ".join(parts[: 1 + k]) for k in (0, 4, 1, 3, 1, 1, 4, 1, 5, 4, 0, 5, 2, 0, 5, 1, 0, 0)
    ]
    figures.mrs_bars(runs, tmp_path / "mrs.png")
    figures.channel_bars(runs, tmp_path / "channel.png")
    for fig in captured:
        _tick_labels_apart(fig)
        _inside(fig)


def test_the_report_directory_gets_the_users_umask(tmp_path: Path) -> None:
    import os
    import stat

    from physassist.report.build import write_report

    old = os.umask(0o022)
    try:
        report = write_report(_runs(2), tmp_path / "report")
    finally:
        os.umask(old)
    assert stat.S_IMODE(report.out_dir.stat().st_mode) == 0o755  # mkdtemp made it 0700
    assert (report.out_dir / "fig_mrs.png").is_file()


def _error_spans(ax) -> tuple[list[float], list[float]]:
    """The left and the right ends of the error bars drawn on ``ax``."""
    (errors,) = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    segments = errors.lines[2][0].get_segments()
    return [float(s[0][0]) for s in segments], [float(s[1][0]) for s in segments]


def test_the_overall_delta_is_the_estimate_its_interval_is_about(tmp_path: Path, captured) -> None:
    """Table 3's delta compares each run's mRS over its own sessions; the paired interval is
    over the sessions both share. The overall panel draws the paired difference with its
    interval, even where that interval does not hold Table 3's delta (matplotlib refused the
    figure: 'xerr must not contain negative values')."""
    t3 = table3(_runs(2))
    overall = t3.frame[t3.frame["subtype"] == "all"]
    ids = list(zip(overall["implicit_run_id"], overall["explicit_run_id"], strict=True))
    comparisons = pd.DataFrame(
        {
            "factor": "query",
            "metric": "mrs",
            "a_run_id": [a for a, _ in ids],
            "b_run_id": [b for _, b in ids],
            "diff": [d - 20 for d in overall["delta"]],  # far outside [d - 25, d - 15]'s reach
            "ci_low": [d - 25 for d in overall["delta"]],
            "ci_high": [d - 15 for d in overall["delta"]],
        }
    )
    figures.delta_bars(t3, tmp_path / "delta.png", comparisons)
    (fig,) = captured
    panel = fig.axes[-1]
    assert panel.get_title() == "overall (95% CI)"
    widths = [p.get_width() for p in panel.patches]
    assert widths == pytest.approx(list(comparisons["diff"]))
    lows, highs = _error_spans(panel)
    assert lows == pytest.approx(list(comparisons["ci_low"]))
    assert highs == pytest.approx(list(comparisons["ci_high"]))


def test_an_interval_beside_its_point_draws_no_negative_error(tmp_path: Path, captured) -> None:
    """A percentile interval need not hold its point (here one rounding step above it): the
    side the point lies beyond is drawn as 0, not refused."""
    runs = _runs(1)
    runs["metrics.mrs_ci_low"] = np.nextafter(runs["metrics.mrs"], np.inf)
    figures.mrs_bars(runs, tmp_path / "mrs.png")
    (fig,) = captured
    shown = runs[~runs["params.model"].str.startswith("physassist/")]
    assert _error_spans(fig.axes[0])[0] == pytest.approx(list(shown["metrics.mrs"]), abs=1e-9)
