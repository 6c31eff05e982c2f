"""Per-run figures from a turn table; the tau curve agrees with the logged metrics."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures_tracking import synthetic_turns

from physassist.metrics import pass_rates, summarize
from physassist.tracking import plots


def test_run_plots_write_three_pngs(tmp_path: Path) -> None:
    made = plots.run_plots(synthetic_turns(), tmp_path, taus=(0.6, 0.75), title="t")
    assert sorted(p.name for p in made) == [
        "ehr_vs_patient.png",
        "pass_vs_tau.png",
        "task_implicitness_heatmap.png",
    ]
    for path in made:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_pass_rates_match_summarize(seed: int) -> None:
    turns = synthetic_turns(seed=seed)
    grid = [0.0, 0.25, 0.5, 0.6, 0.75, 0.8, 1.0]
    metrics = summarize(turns, taus=grid, n_boot=0, breakdowns=False)
    rates = pass_rates(turns, grid).set_index("tau")
    for tau in grid:
        assert rates.loc[tau, "pass_turn"] == pytest.approx(metrics[f"pass_turn_{tau:.2f}"])
        assert rates.loc[tau, "pass_session"] == pytest.approx(metrics[f"pass_session_{tau:.2f}"])
    assert rates["pass_turn"].is_monotonic_decreasing


def test_missing_columns_skip_only_that_figure_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    turns = synthetic_turns().drop(columns=["tool_source"])
    with caplog.at_level("WARNING", logger="physassist.tracking.plots"):
        made = plots.run_plots(turns, tmp_path, taus=(0.6,))
    assert "ehr_vs_patient.png" not in {p.name for p in made} and len(made) == 2
    assert "figure ehr_vs_patient.png skipped: turn table needs a tool source column" in caplog.text


def test_labels() -> None:
    assert plots.task_type_label("Clinical Reasoning") == "CR"
    assert plots.implicitness_label(None) == "none" and plots.implicitness_label("PE") == "PE"


def test_a_run_without_scored_turns_gets_no_empty_figures(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    turns = synthetic_turns().assign(score=float("nan"), status="error")
    with caplog.at_level("WARNING", logger="physassist.tracking.plots"):
        assert plots.run_plots(turns, tmp_path, taus=(0.6,)) == []
    assert "figures skipped: none of the run's 48 turns was scored" in caplog.text and not list(
        tmp_path.iterdir()
    )
    with pytest.raises(ValueError, match="no scored turn to draw"):
        plots.task_implicitness_heatmap(turns, tmp_path / "h.png")


def test_a_long_run_name_is_wrapped_inside_the_figure(tmp_path: Path, monkeypatch) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    made = []
    real = plots._figure
    monkeypatch.setattr(plots, "_figure", lambda *a: made.append(real(*a)) or made[-1])
    name = (
        "explorer | observations=history_removed | terminal=natural | terminal.budget=4 | "
        "inspect.limit=8"
    )
    plots.run_plots(synthetic_turns(), tmp_path, taus=(0.6,), title=name)
    assert len(made) == 3
    for fig in made:
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        title = fig.axes[0].title
        extent = title.get_window_extent(canvas.get_renderer())
        assert "\n" in title.get_text() and fig.bbox.x0 <= extent.x0 and extent.x1 <= fig.bbox.x1, (
            title.get_text()
        )
        assert extent.y1 <= fig.bbox.y1
