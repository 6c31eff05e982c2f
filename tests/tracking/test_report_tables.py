"""physassist-report on runs logged with hand-made turn tables: numbers == the runs' metrics."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from fixtures_tracking import store_uri, synthetic_turns

from physassist.cli import report as report_cli
from physassist.metrics import summarize
from physassist.report.tables import query_pairs, table2, table3
from physassist.tracking.runs import Tracker


def _params(model: str, language: str, query: str) -> dict[str, str]:
    return {
        "model": model,
        "language": language,
        "query": query,
        "menu": "on",
        "judge": "rules",
        "terminal.budget": "16",
        "inspect.log_dir": f"logs/{model}-{query}",  # execution detail: ignored when pairing
    }


@pytest.fixture(scope="module")
def logged(tmp_path_factory) -> tuple[str, dict[str, dict[str, float]]]:
    """Five runs: two models x (en implicit, en explicit) + one zh run; one unrelated sweep
    parent."""
    tmp = tmp_path_factory.mktemp("report")
    uri = store_uri(tmp)
    tracker = Tracker(uri, "physassist")
    tracker.start_sweep("other-sweep", ["x=1,2"], "a sweep parent, not an experiment run")
    metrics: dict[str, dict[str, float]] = {}
    seed = 0
    for model in ("physassist/oracle", "physassist/baseline"):
        for language, query in (("en", "implicit"), ("en", "explicit"), ("zh", "implicit")):
            if model.endswith("baseline") and language == "zh":
                continue
            seed += 1
            m = summarize(synthetic_turns(seed=seed, language=language, query=query), n_boot=50)
            name = f"{model.split('/')[1]} {language} {query}"
            tracker.log_run(
                run_name=name,
                params=_params(model, language, query),
                tags={"physassist.sweep_id": "s1"},
                metrics=m,
            )
            metrics[name] = m
    return uri, metrics


def test_table2_copies_metrics(logged) -> None:
    uri, metrics = logged
    from physassist.report.build import select_runs

    runs = select_runs(uri)
    assert len(runs) == 5  # the sweep parent is not selected
    t2 = table2(runs, "en").frame.set_index("run")
    assert len(t2) == 4
    for name, row in t2.iterrows():
        m = metrics[name]
        assert row["mRS"] == pytest.approx(m["mrs"])
        assert row["L2"] == pytest.approx(m["mrs.tier.2"])
        assert row["@T.60"] == pytest.approx(
            m["pass_turn_0.60"]
        )  # one scale: copied, never rescaled
        assert row["@S.75"] == pytest.approx(m["pass_session_0.75"])


def test_table3_pairs_runs_differing_only_in_query(logged) -> None:
    uri, metrics = logged
    from physassist.report.build import select_runs

    runs = select_runs(uri)
    pairs = query_pairs(runs)
    assert sorted(p[0]["tags.mlflow.runName"] for p in pairs) == [
        "baseline en implicit",
        "oracle en implicit",
    ]
    frame = table3(runs).frame
    row = frame[(frame["pair"] == "oracle en implicit") & (frame["subtype"] == "AE")].iloc[0]
    imp, exp = metrics["oracle en implicit"], metrics["oracle en explicit"]
    assert row["implicit"] == pytest.approx(imp["mrs.implicitness.AE"])
    assert row["explicit"] == pytest.approx(exp["mrs.implicitness.AE"])
    assert row["delta"] == pytest.approx(imp["mrs.implicitness.AE"] - exp["mrs.implicitness.AE"])


def test_report_cli_writes_tables_figures_and_logs_a_report_run(
    logged, tmp_path: Path, capsys
) -> None:
    uri, metrics = logged
    out = tmp_path / "report"
    code = report_cli.main(["--tracking-uri", uri, "--sweep", "s1", "--out", str(out)])
    assert code == 0
    names = {p.name for p in out.iterdir()}
    for table in ("table2_en", "table2_zh", "table3", "table_i1", "table_i2"):
        assert f"{table}.md" in names and f"{table}.csv" in names
    assert {
        "report.md",
        "runs.csv",
        "fig_mrs.png",
        "fig4_ehr_vs_patient.png",
        "fig_table3_deltas.png",
    } <= names
    i1 = pd.read_csv(out / "table_i1.csv").set_index("run")
    assert i1.loc["oracle zh implicit", "med_safety"] == pytest.approx(
        metrics["oracle zh implicit"]["mrs.scenario.med_safety"]
    )
    i2 = pd.read_csv(out / "table_i2.csv").set_index("run")
    m = metrics["baseline en explicit"]
    assert i2.loc["baseline en explicit", "L3 @T.75"] == pytest.approx(m["pass_turn_0.75.tier.3"])
    assert i2.loc["baseline en explicit", "L1 @S.60"] == pytest.approx(
        m["pass_session_0.60.tier.1"]
    )
    md = (out / "table2_en.md").read_text()
    assert f"{metrics['oracle en implicit']['mrs']:.1f}" in md
    printed = capsys.readouterr().out
    assert "MLflow report run:" in printed
    from fixtures_tracking import search_runs

    reports = search_runs(uri, filter_string="tags.`physassist.kind` = 'report'")
    assert len(reports) == 1 and reports.iloc[0]["status"] == "FINISHED"
    import mlflow

    logged_files = mlflow.MlflowClient(uri).list_artifacts(reports.iloc[0]["run_id"], "report")
    assert {f"report/{name}" for name in names} == {a.path for a in logged_files}


def test_report_selection_errors_are_clear(logged, tmp_path: Path, capsys) -> None:
    uri, _ = logged
    assert report_cli.main(["--tracking-uri", uri, "--sweep", "nope", "--no-log"]) == 2
    assert "nope: no sweep id is that" in capsys.readouterr().err
    assert (
        report_cli.main(
            [
                "--tracking-uri",
                uri,
                "--filter",
                "params.model = 'physassist/oracle'",
                "--no-log",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    assert len(pd.read_csv(tmp_path / "runs.csv")) == 3


def test_report_takes_run_ids_as_the_tables_print_them(logged, tmp_path: Path, capsys) -> None:
    """``--runs a,b`` with 8 characters of each id (a sweep's table prints that many)."""
    from fixtures_tracking import search_runs

    uri, _ = logged
    runs = search_runs(uri, filter_string="tags.`physassist.kind` = 'job'").set_index("run_id")
    pair = [
        rid for rid, name in runs["tags.mlflow.runName"].items() if name.startswith("oracle en")
    ]
    printed = ",".join(rid[:8] for rid in pair)
    assert (
        report_cli.main(
            ["--tracking-uri", uri, "--runs", printed, "--no-log", "--out", str(tmp_path)]
        )
        == 0
    )
    assert sorted(pd.read_csv(tmp_path / "runs.csv")["run_id"]) == sorted(pair)
    assert (
        report_cli.main(
            [
                "--tracking-uri",
                uri,
                "--runs",
                "0123456789",
                "--no-log",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith("physassist-report: error: 0123456789: no run id starts with it")
        and "\n" not in err
    )
