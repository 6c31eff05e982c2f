"""Report pairs: formed within a sweep (or explicit runs), refused across comparability keys,
compared on shared sessions."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from fixtures_tracking import store_uri, synthetic_turns

from physassist import comparability
from physassist.paired import paired, session_values
from physassist.report.pairs import comparisons, refusals, run_pairs
from physassist.report.tables import table3

BASE = {"model": "physassist/baseline", "language": "en", "query": "implicit", "menu": "on", "judge": "rules", "terminal": "prepare_to_answer", "terminal.budget": "16", "dataset": "sample"}
TAGS = {"physassist.dataset_fingerprint": "d1", "physassist.ehr_fingerprint": "e1"}


def run(run_id: str, sweep: str | None = None, tags: dict | None = None, **params: str) -> dict:
    p = {**BASE, **params, "inspect.log_dir": f"logs/{run_id}"}  # an execution param: ignored
    t = {**TAGS, **(tags or {})}
    row = {"run_id": run_id, "tags.mlflow.runName": run_id, **{f"params.{k}": v for k, v in p.items()}}
    row.update({f"tags.{k}": v for k, v in {**t, **comparability.tags_for(p, t)}.items()})
    if sweep:
        row["tags.physassist.sweep_id"] = sweep
    return row


def test_pairs_only_within_a_sweep_or_explicit_runs():
    runs = pd.DataFrame(
        [
            run("imp1", "s1"),
            run("exp1", "s1", query="explicit"),
            run("exp2", "s2", query="explicit"),  # another sweep: never paired with s1's runs
            run("imp3", "s2", model="physassist/oracle"),  # differs in two groups from exp2
        ]
    )
    pairs = run_pairs(runs)
    assert [(p.a["run_id"], p.b["run_id"], p.factor) for p in pairs if not p.refused] == [("imp1", "exp1", "query")]
    # the pairs no sweep holds together are listed, not dropped without a word
    apart = {(p.a["run_id"], p.b["run_id"], p.factor): p.refused for p in pairs if p.refused}
    assert set(apart) == {("imp1", "exp2", "query"), ("imp3", "imp1", "model")}
    assert apart[("imp1", "exp2", "query")].startswith("not in one sweep (sweep s1 vs sweep s2)")
    assert len(refusals(pairs)) == 2 and len(table3(runs).frame["pair"].unique()) == 1
    explicit = {(p.a["run_id"], p.b["run_id"], p.factor) for p in run_pairs(runs, explicit=True)}
    assert explicit == {("imp1", "exp1", "query"), ("imp1", "exp2", "query"), ("imp3", "imp1", "model")}


def test_pairs_across_comparability_keys_are_refused_naming_the_part():
    runs = pd.DataFrame(
        [
            run("imp", "s1"),
            run("exp", "s1", tags={"physassist.dataset_fingerprint": "d2"}, query="explicit"),
            run("natural", "s1", tags={"physassist.ehr_fingerprint": "e2"}, terminal="natural"),
        ]
    )
    pairs = {(p.a["run_id"], p.b["run_id"]): p for p in run_pairs(runs)}
    assert "dataset" in pairs[("imp", "exp")].refused and "query" in pairs[("imp", "exp")].refused
    assert pairs[("natural", "imp")].refused.startswith("comparability key differs in ehr")
    assert table3(runs).frame.empty
    assert set(refusals(list(pairs.values()))["factor"]) == {"query", "terminal"}
    # the factor's own parts may differ: terminal owns budget and terminal
    runs = pd.DataFrame([run("b16", "s1"), run("b4", "s1", **{"terminal.budget": "4"})])
    [pair] = run_pairs(runs)
    assert pair.factor == "terminal" and pair.refused is None


def test_differing_names_parts_outside_the_factor():
    a = comparability.parts({**BASE}, TAGS)
    b = comparability.parts({**BASE, "judge": "llm", "judge.model": "m"}, TAGS)
    assert comparability.differing(a, b) == ["judge"]
    assert comparability.differing(a, b, factor="judge") == []
    assert comparability.differing(a, b, factor="query") == ["judge"]


def test_comparisons_on_shared_sessions():
    turns = {"imp": synthetic_turns(12, seed=1), "exp": synthetic_turns(10, seed=2, query="explicit")}
    runs = pd.DataFrame([run("imp", "s1"), run("exp", "s1", query="explicit")])
    frame = comparisons(run_pairs(runs), turns.get, [0.6])
    row = frame[frame["metric"] == "mrs"].iloc[0]
    va, vb = session_values(turns["imp"], [0.6]), session_values(turns["exp"], [0.6])
    shared = va.index.intersection(vb.index)
    assert row["n_shared"] == len(shared) == 10
    assert row["diff"] == pytest.approx((va.loc[shared, "mrs"] - vb.loc[shared, "mrs"]).mean())
    assert row["ci_low"] <= row["diff"] <= row["ci_high"]
    assert row["p_value"] == pytest.approx(paired(va["mrs"], vb["mrs"], "mrs").p_value)
    assert set(frame["metric"]) == {"mrs", "pass_session_0.60"}
    missing = comparisons(run_pairs(runs), {"imp": turns["imp"]}.get, [0.6])
    assert missing["note"].iloc[0] == "no per-turn table logged for exp"


def test_identical_runs_give_no_detectable_difference_figure():
    """Zero spread in the paired differences and no repeats estimate no variance: the MDE and
    the designs are empty, not 0 or 2 sessions; with spread, a difference below the MDE says so."""
    turns = synthetic_turns(12, seed=1)
    runs = pd.DataFrame([run("a", "s1"), run("b", "s1", query="explicit")])
    frame = comparisons(run_pairs(runs), {"a": turns, "b": turns}.get, [0.6])
    assert len(frame) == 2 and (frame["diff"] == 0).all()
    assert frame["mde"].isna().all() and frame["to_detect_2pt"].isna().all() and frame["note"].isna().all()
    spread = comparisons(run_pairs(runs), {"a": turns, "b": synthetic_turns(12, seed=2)}.get, [0.6])
    row = spread[spread["metric"] == "mrs"].iloc[0]
    sd = (session_values(turns, [0.6])["mrs"] - session_values(synthetic_turns(12, seed=2), [0.6])["mrs"]).std(ddof=1)
    assert row["mde"] == pytest.approx(2.8016 * sd / math.sqrt(12), rel=1e-3)  # one pass each: no residual
    assert row["to_detect_5pt"].startswith(f"{math.ceil(2.8016**2 * sd**2 / 25)} sessions x 1 epoch x 1 judging")
    assert abs(row["diff"]) >= row["mde"] or row["note"] == f"within noise: this design detects >= {row['mde']:.1f} points"


def test_a_rescoring_pairs_with_its_source_on_judge():
    runs = pd.DataFrame([run("src", "s1"), {**run("llm", None, judge="llm", **{"judge.model": "m"}), "tags.physassist.rescore_of": "src"}])
    [pair] = run_pairs(runs)
    assert (pair.a["run_id"], pair.b["run_id"], pair.factor, pair.refused) == ("llm", "src", "judge", None)


def test_each_sweep_keeps_its_default_arm_when_a_newer_sweep_repeats_it(tmp_path: Path, capsys) -> None:
    """Two sweeps through a real MLflow store, the newer one repeating the older one's default
    arm (observations=keep): the older sweep keeps its within-sweep pair (removed vs keep), no
    run is left out as a repeat, and every pair not made is listed with its reason."""
    from physassist.cli import report as report_cli
    from physassist.metrics import summarize
    from physassist.tracking.runs import Tracker, write_turn_tables

    tracker = Tracker(store_uri(tmp_path), "physassist")
    ids = {}
    for sweep, arm, params, seed in [
        ("s1", "s1 keep", {}, 1),
        ("s1", "s1 removed", {"observations": "removed"}, 2),
        ("s2", "s2 keep", {}, 3),  # the newest default run: another sweep
        ("s2", "s2 menu off", {"menu": "off"}, 4),
    ]:
        p = {**BASE, "observations": "keep", **params}
        tags = {**TAGS, **comparability.tags_for(p, TAGS), "physassist.sweep_id": sweep}
        turns = synthetic_turns(seed=seed)
        files = [(f, "tables") for f in write_turn_tables(turns, tmp_path / arm)]
        ids[arm] = tracker.log_run(run_name=arm, params=p, tags=tags, metrics=summarize(turns, n_boot=20), files=files)
    out = tmp_path / "report"
    assert report_cli.main(["--tracking-uri", store_uri(tmp_path), "--out", str(out), "--no-log"]) == 0
    assert "repeat the configuration" not in capsys.readouterr().err
    assert len(pd.read_csv(out / "runs.csv")) == 4
    made = pd.read_csv(out / "comparisons.csv").drop_duplicates(["a_run_id", "b_run_id"])
    assert set(zip(made["factor"], made["a_run_id"], made["b_run_id"], strict=True)) == {
        ("observations", ids["s1 removed"], ids["s1 keep"]),
        ("menu", ids["s2 menu off"], ids["s2 keep"]),
    }
    not_made = pd.read_csv(out / "refused_pairs.csv")
    assert set(zip(not_made["a_run_id"], not_made["b_run_id"], strict=True)) == {
        (ids["s1 removed"], ids["s2 keep"]),
        (ids["s2 menu off"], ids["s1 keep"]),
    }
    assert not_made["reason"].str.startswith("not in one sweep (sweep s").all()
