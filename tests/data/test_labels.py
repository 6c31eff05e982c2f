"""Physicians' labels: the stratified draw, the reviewer's sheet, its import as HUMAN feedback on
the run's traces, and the calibrated mRS it gives (``physassist-label``, ``physassist.labels``).

The round trip runs the offline explorer on the sample into a real MLflow store; the filled
sheet is a stricter physician scripted here: the judge's own verdict on every item, except that
every item of an answer over 800 characters fails (a record dump, not an answer).
"""

from __future__ import annotations

from pathlib import Path

import mlflow
import pandas as pd
import pytest
from fixtures_tracking import REPO, store_uri, synthetic_turns

from physassist.calibration import strata_of
from physassist.labels import SheetError, draw, read_sheet


def test_the_draw_is_stratified_seeded_and_bounded() -> None:
    turns = pd.concat(
        [
            synthetic_turns(24, seed=s).assign(session_id=lambda f, s=s: f["session_id"] + f"-{s}")
            for s in range(3)
        ]
    )
    drawn = draw(turns, 30, seed=0)
    assert (
        len(drawn) == 30
        and drawn.equals(draw(turns, 30, seed=0))
        and not drawn.equals(draw(turns, 30, seed=1))
    )
    assert (drawn["status"] == "scored").all()
    shares = strata_of(drawn).value_counts()
    expected = (
        strata_of(turns[turns["status"] == "scored"]).value_counts()
        / turns["status"].eq("scored").sum()
        * 30
    )
    assert set(shares.index) == set(expected.index)  # every stratum, in proportion
    assert ((shares - expected.reindex(shares.index)).abs() < 1).all()
    with pytest.raises(ValueError, match="size=0: choose 1 to"):
        draw(turns, 0)


def _sheet(tmp_path: Path, rows: list[dict]) -> Path:
    frame = pd.DataFrame(
        [
            {
                "session_id": "s1",
                "epoch": 1,
                "turn": 0,
                "item": k,
                "verdict": "",
                "rationale": "",
                "reviewer": "",
            }
            | r
            for k, r in enumerate(rows, start=1)
        ]
    )
    path = tmp_path / "sheet.csv"
    frame.to_csv(path, index=False)
    return path


def test_a_filled_sheet_reads_back_and_a_bad_one_names_the_row(tmp_path: Path) -> None:
    path = _sheet(
        tmp_path,
        [
            {"verdict": "Pass", "reviewer": "dr.a"},
            {"verdict": "no"},
            {"verdict": ""},
            {"verdict": "1", "rationale": "ok"},
        ],
    )
    verdicts = read_sheet(path, reviewer="dr.b")
    assert verdicts["passed"].tolist() == [True, False, True] and verdicts["item"].tolist() == [
        1,
        2,
        4,
    ]
    assert verdicts["reviewer"].tolist() == ["dr.a", "dr.b", "dr.b"] and verdicts[
        "rationale"
    ].fillna("-").tolist() == ["-", "-", "ok"]
    with pytest.raises(
        SheetError,
        match=r"row 3 \(session s1, turn 0, item 2\): verdict 'maybe' is not pass or fail",
    ):
        read_sheet(_sheet(tmp_path, [{"verdict": "pass"}, {"verdict": "maybe"}]), reviewer="x")
    with pytest.raises(SheetError, match=r"row 2 .*: no reviewer"):
        read_sheet(_sheet(tmp_path, [{"verdict": "fail"}]))
    pd.DataFrame({"session_id": ["s1"]}).to_csv(tmp_path / "bare.csv", index=False)
    with pytest.raises(SheetError, match="no column epoch, turn, item, verdict"):
        read_sheet(tmp_path / "bare.csv")


def test_run_takes_a_unique_prefix_and_names_what_it_cannot_find(tmp_path: Path, capsys) -> None:
    """``--run`` goes through the one id resolver (``physassist.tracking.ids``): a prefix is
    enough, an id of no experiment run is one line naming it, and so is a missing experiment."""
    from physassist.cli import label

    uri = store_uri(tmp_path)
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("physassist")
    run = client.create_run(experiment, tags={"physassist.kind": "job"})
    client.set_terminated(run.info.run_id)
    for argv in (
        ["--run", run.info.run_id[:8], "calibrate"],
        ["calibrate", "--run", run.info.run_id[:8]],
    ):
        args = label.parser().parse_args(argv)  # before or after the command, as documented
        args.tracking_uri = uri
        assert label._run(client, args).info.run_id == run.info.run_id
    capsys.readouterr()  # the store's creation logs
    assert label.main(["--tracking-uri", uri, "--run", "0123456789ab", "draw"]) == 2
    assert capsys.readouterr().err.strip() == (
        "physassist-label: error: --run 0123456789ab: no run id starts with it "
        f"(experiment 'physassist' of {uri})"
    )
    argv = ["--tracking-uri", uri, "--experiment", "nowhere", "--run", "0123456789ab", "draw"]
    assert label.main(argv) == 2
    assert capsys.readouterr().err.strip() == (
        f"physassist-label: error: --run 0123456789ab: no experiment 'nowhere' of {uri}"
    )


def test_import_goes_to_the_sheets_run_not_the_newest(tmp_path: Path, capsys) -> None:
    """A sheet carries the run it was drawn from: ``import`` goes to that run though another
    finished since, ``--run`` naming another run is one line naming both, and a sheet without a
    run (drawn before the column) needs ``--run``."""
    from physassist.cli import label

    uri = store_uri(tmp_path)
    client = mlflow.MlflowClient(uri)
    experiment = client.create_experiment("physassist")
    drawn, newer = (client.create_run(experiment, tags={"physassist.kind": "job"}) for _ in "ab")
    for run in (drawn, newer):
        client.set_terminated(run.info.run_id)
    path = _sheet(tmp_path, [{"verdict": "pass", "reviewer": "dr.a"}])
    pd.read_csv(path).assign(run_id=drawn.info.run_id).to_csv(path, index=False)
    capsys.readouterr()  # the store's creation logs
    assert label.main(["--tracking-uri", uri, "import", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (  # no traces here: it went to the sheet's run
        f"physassist-label: error: run {drawn.info.run_id} has no trace of session s1 epoch 1 "
        "(written with tracking.trace_limit?)"
    )
    other = newer.info.run_id[:8]
    assert label.main(["--tracking-uri", uri, "import", str(path), "--run", other]) == 2
    assert capsys.readouterr().err.strip() == (
        f"physassist-label: error: {path} was drawn from run {drawn.info.run_id}, but --run "
        f"{other} names run {newer.info.run_id}"
    )
    pd.read_csv(path).drop(columns="run_id").to_csv(path, index=False)
    assert label.main(["--tracking-uri", uri, "import", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"physassist-label: error: {path}: no run_id (a sheet drawn before the column existed): "
        "name its run with --run"
    )
    assert label.main(["--tracking-uri", uri, "import", str(path), "--run", other]) == 2
    assert f"run {newer.info.run_id} has no trace" in capsys.readouterr().err


@pytest.mark.slow
def test_the_label_round_trip_on_the_sample(tmp_path: Path, capsys, monkeypatch) -> None:
    from hydra import compose, initialize_config_dir

    import physassist.cli.eval as ev
    from physassist.cli import label
    from physassist.cli import report as report_cli
    from physassist.results import item_table
    from physassist.tracking.human import human_verdicts

    uri = store_uri(tmp_path)
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(
            "eval",
            [
                f"tracking.uri={uri}",
                f"inspect.log_dir={tmp_path / 'logs'}",
                "model=explorer",
                "inspect.display=none",
                "tracking.plots=false",
            ],
        )
        out = ev.run_experiment(cfg, ev.JobContext())
    monkeypatch.chdir(tmp_path)
    assert label.main(["--tracking-uri", uri, "draw", "--size", "24", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    folder = tmp_path / "labels" / out.run_id
    assert f"24 turns of run {out.run_id}" in printed and "12 scenario x tier strata" in printed
    sheet = pd.read_csv(folder / "sheet.csv", dtype={"session_id": str}, keep_default_na=False)
    markdown = (folder / "sheet.md").read_text()
    assert sheet.groupby(["session_id", "epoch", "turn"]).ngroups == 24
    assert (
        markdown.count("\n## ") == 24
        and "**Tool results the answer used:**" in markdown
        and "Observation.search" in markdown
    )
    assert (sheet["run_id"] == out.run_id).all()  # import finds its run on the sheet
    assert (
        "passed" not in sheet.columns and (sheet["verdict"] == "").all()
    )  # the judge's verdicts are not shown
    # a stricter physician: the judge's verdict, but every recommendation item fails
    judged = item_table(out.log_path).set_index(["session_id", "epoch", "turn", "item"])["passed"]
    strict = sheet["rubric_item"].str.contains("recommend", case=False)
    agree = [judged[(r.session_id, r.epoch, r.turn, r.item - 1)] for r in sheet.itertuples()]
    sheet["verdict"] = [
        "fail" if s else ("pass" if a else "fail") for s, a in zip(strict, agree, strict=True)
    ]
    sheet["reviewer"] = "dr.strict@example.org"
    sheet.to_csv(folder / "sheet.csv", index=False)
    assert label.main(["--tracking-uri", uri, "import", str(folder / "sheet.csv")]) == 0
    printed = capsys.readouterr().out
    assert (
        f"{len(sheet)} verdicts by 1 reviewer(s) attached to the traces of run {out.run_id}"
        in printed
    )
    back = human_verdicts(uri, out.run_id)
    assert len(back) == len(sheet) and set(back["source_id"]) == {"dr.strict@example.org"}
    assert back.sort_values(["session_id", "turn", "item"])["passed"].tolist() == (
        sheet.sort_values(["session_id", "turn", "item"])["verdict"].eq("pass").tolist()
    )
    metrics = mlflow.MlflowClient(uri).get_run(out.run_id).data.metrics
    flipped = sum(strict & pd.Series(agree))
    assert metrics["n_labelled"] == 24 and (metrics["judge_bias"] > 0) == (flipped > 0)
    assert (
        metrics["mrs_calibrated"] <= metrics["mrs"]
        and metrics["mrs_calibrated_ci_low"] < metrics["mrs_calibrated"]
    )
    assert f"calibrated {metrics['mrs_calibrated']:.1f}" in printed
    report = tmp_path / "report"
    assert report_cli.main(["--tracking-uri", uri, "--out", str(report), "--no-log"]) == 0
    text = (report / "report.md").read_text()
    assert "## Noise and calibration" in text and "calibrated mRS" in text
    table = pd.read_csv(report / "calibration.csv")
    assert table["calibrated mRS"].iloc[0] == pytest.approx(metrics["mrs_calibrated"])
    assert (
        label.main(["--tracking-uri", uri, "--run", out.run_id, "calibrate"]) == 0
    )  # verdicts from the UI alike
