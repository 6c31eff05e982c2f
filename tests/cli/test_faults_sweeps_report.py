"""``physassist-report --sweep`` on duplicate runs (a job logged twice, two runs with one name)
and a failure half-way: it de-duplicates with a warning, and writes a report only whole."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fixtures_tracking import store_uri, synthetic_turns

from physassist.cli import report as report_cli
from physassist.metrics import summarize
from physassist.report import figures
from physassist.tracking.runs import Tracker


def _log(tracker: Tracker, name: str, query: str, budget: str, seed: int) -> str:
    params = {
        "model": "physassist/oracle",
        "language": "en",
        "query": query,
        "terminal.budget": budget,
    }
    metrics = summarize(synthetic_turns(seed=seed, query=query), n_boot=20)
    return tracker.log_run(
        run_name=name, params=params, tags={"physassist.sweep_id": "s1"}, metrics=metrics
    )


@pytest.fixture
def duplicated(tmp_path: Path) -> tuple[str, list[str]]:
    """implicit x2 (the same job logged twice) + explicit, and a second budget under the same
    run names: two pairs whose label is the same."""
    uri = store_uri(tmp_path)
    tracker = Tracker(uri, "physassist")
    ids = [
        _log(tracker, "oracle en implicit", "implicit", "16", 1),
        _log(tracker, "oracle en implicit", "implicit", "16", 1),  # duplicate of the first
        _log(tracker, "oracle en explicit", "explicit", "16", 2),
        _log(tracker, "oracle en implicit", "implicit", "4", 3),
        _log(tracker, "oracle en explicit", "explicit", "4", 4),
    ]
    return uri, ids


def test_duplicates_are_left_out_with_a_warning(duplicated, tmp_path: Path, capsys) -> None:
    uri, ids = duplicated
    out = tmp_path / "report"
    assert (
        report_cli.main(["--tracking-uri", uri, "--sweep", "s1", "--out", str(out), "--no-log"])
        == 0
    )
    err = capsys.readouterr().err
    assert "1 run(s) repeat the configuration" in err and ids[0] in err  # the older copy
    runs = pd.read_csv(out / "runs.csv")
    assert sorted(runs["run_id"]) == sorted([ids[1], *ids[2:]])
    t3 = pd.read_csv(out / "table3.csv")
    assert set(t3["implicit_run_id"]) == {ids[1], ids[3]}  # two pairs, same label
    assert (out / "fig_table3_deltas.png").stat().st_size > 0


def test_a_failure_half_way_leaves_no_partial_report(
    duplicated, tmp_path: Path, monkeypatch, capsys
) -> None:
    uri, _ = duplicated
    out = tmp_path / "report"
    assert (
        report_cli.main(["--tracking-uri", uri, "--sweep", "s1", "--out", str(out), "--no-log"])
        == 0
    )
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    def broken(*args, **kwargs):
        raise ValueError("figure failed")

    monkeypatch.setattr(figures, "delta_bars", broken)
    assert (
        report_cli.main(["--tracking-uri", uri, "--sweep", "s1", "--out", str(out), "--no-log"])
        == 1
    )
    assert "figure failed" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the previous report, intact
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name or ".old" in p.name] == []

    fresh = tmp_path / "fresh"
    assert (
        report_cli.main(["--tracking-uri", uri, "--sweep", "s1", "--out", str(fresh), "--no-log"])
        == 1
    )
    assert not fresh.exists()
