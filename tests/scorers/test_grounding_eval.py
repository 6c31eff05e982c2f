"""The grounding check and the gold history in an evaluation: through Inspect's task (``-T``
parameters), the turn table and metrics, the MLflow traces, rescoring a stored log, and the
report's free-vs-gold table."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log, resolve_sample_attachments

from physassist.agents import provider  # noqa: F401  (registers the offline agents)
from physassist.cli.printing import result_table
from physassist.experiment import JudgeSettings
from physassist.metrics import summarize
from physassist.report.history import history_table
from physassist.report.pairs import Pair
from physassist.results import GROUNDING_SCORER, SCORER_NAME, turn_table
from physassist.turn_records import TURNS_KEY, stored_turns
from scorers.rescoring import rescore_log
from tasks.physassistbench import physassistbench


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    """Two sessions of the perturbing agent, grounding on (shared: an eval is the cost)."""
    return _eval(tmp_path_factory.mktemp("perturbed"), "physassist/perturbed")


@pytest.fixture(scope="module")
def gold_explorer(tmp_path_factory):
    return _eval(tmp_path_factory.mktemp("gold"), "physassist/explorer", limit=1, history="gold")


def _eval(tmp_path: Path, model: str, limit: int = 2, **task_args: object):
    [log] = inspect_eval(
        physassistbench(**task_args),
        model=model,
        limit=limit,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success"
    return read_eval_log(log.location)


def test_the_oracle_is_grounded_turn_by_turn_in_the_log(tmp_path: Path) -> None:
    log = _eval(tmp_path, "physassist/oracle")
    names = [s.name for s in log.results.scores]
    assert names == [SCORER_NAME, GROUNDING_SCORER]
    metrics = {k: v.value for k, v in log.results.scores[1].metrics.items()}
    assert (
        metrics["grounded_pct"] == 100.0 and metrics["facts"] > 0 and metrics["contradicted"] == 0
    )
    sample = log.samples[0]
    score = sample.scores[GROUNDING_SCORER]
    assert score.value == 1.0
    turns = score.metadata["turns"]
    assert [t["turn"] for t in turns] == [0, 1, 2, 3]
    assert all(
        v["status"] == "grounded" and v["where"] and v["line"] for t in turns for v in t["verdicts"]
    )
    assert score.explanation.splitlines()[0].startswith("T0: ")
    table = turn_table(log)
    assert table["facts"].sum() == metrics["facts"] and (table["history"] == "free").all()
    summary = summarize(table)
    assert (
        summary["grounding.grounded_pct"] == 100.0
        and summary["grounding.facts"] == metrics["facts"]
    )
    assert "grounded_pct       100.0  of " in result_table(summary, [0.6, 0.75])


def test_the_perturbing_agent_shows_its_contradictions(perturbed) -> None:
    log = perturbed
    metrics = {k: v.value for k, v in log.results.scores[1].metrics.items()}
    assert metrics["grounded_pct"] < 30 and metrics["contradicted"] > 0
    explained = "\n".join(s.scores[GROUNDING_SCORER].explanation for s in log.samples)
    assert "contradicted: the record holds" in explained


@pytest.mark.parametrize("off", ["off", False])  # -T grounding=off arrives as False (YAML 1.1)
def test_grounding_off_runs_the_judge_alone(tmp_path: Path, off: object) -> None:
    log = _eval(tmp_path, "physassist/oracle", limit=1, grounding=off)
    assert [s.name for s in log.results.scores] == [SCORER_NAME]
    assert log.eval.task_args["grounding"] == off and turn_table(log)["facts"].isna().all()
    assert "grounding.facts" not in summarize(turn_table(log))


def test_rescoring_grounds_a_stored_log_without_the_model(perturbed) -> None:
    log = perturbed.model_copy(deep=True)
    for sample in log.samples:  # a log written without the check (grounding=off, or before it)
        del sample.scores[GROUNDING_SCORER]
    new = rescore_log(log, JudgeSettings("rules"), [0.6, 0.75])
    assert [s.name for s in new.results.scores] == [SCORER_NAME, GROUNDING_SCORER]
    assert new.samples[0].scores[GROUNDING_SCORER].metadata["turns"]
    assert turn_table(new)["contradicted"].sum() > 0
    assert (
        rescore_log(log, JudgeSettings("rules"), [0.6, 0.75], grounding="off")
        .results.scores[-1]
        .name
        == SCORER_NAME
    )


def test_gold_history_gives_each_turn_the_gold_conversation(gold_explorer, tmp_path: Path) -> None:
    """Turn t's request holds the gold answers and gold tool results of turns < t, never the
    model's own; the log says which history each turn was given."""
    gold = gold_explorer
    free = _eval(tmp_path / "free", "physassist/explorer", limit=1)
    session = read_session(gold)
    g, f = (resolve_sample_attachments(log.samples[0]) for log in (gold, free))
    records = g.store[TURNS_KEY]
    assert [r["history"] for r in records] == ["gold"] * 4 and all(
        r["history"] == "free" for r in f.store[TURNS_KEY]
    )
    assert all(r["gold_calls"] for r in records[:3]) and records[3]["gold_calls"] == []
    assert records[0]["gold_calls"][0]["name"] == session.gold_actions(0, "en")[0]["action"]["name"]
    spans = [
        e.name
        for e in g.events
        if getattr(e, "event", "") == "span_begin" and e.name.startswith("turn")
    ]
    assert spans == [
        "turn 0",
        "turn 1 (gold history)",
        "turn 2 (gold history)",
        "turn 3 (gold history)",
    ]
    notes = [
        e.data
        for e in g.events
        if getattr(e, "event", "") == "info" and "gold history" in str(e.data)
    ]
    assert len(notes) == 3 and "turns 0-2" in notes[-1]
    asked = max(i for i, m in enumerate(g.messages) if m.role == "user")
    given = [m.text for m in g.messages[:asked]]  # the history the last turn was given
    assert session.gold_answer(0, "en") in given and session.gold_answer(2, "en") in given
    assert records[0]["answer"] not in given  # never the model's own turn-0 answer
    assert f.store[TURNS_KEY][0]["answer"] in [m.text for m in f.messages]
    assert turn_table(gold)["history"].tolist() == ["gold"] * 4
    grounding = g.scores[GROUNDING_SCORER].metadata["turns"]
    assert all(
        t["facts"] == t["grounded"] for t in grounding
    )  # the gold calls it received ground it


def read_session(log):
    from physassist.data.models import sample_session

    return sample_session(log.samples[0].metadata["session"])


def test_the_report_puts_free_and_gold_side_by_side_per_turn() -> None:
    def turns(scores: list[float]) -> pd.DataFrame:
        rows = [
            {
                "session_id": f"s{s}",
                "epoch": 1,
                "turn": t,
                "status": "scored",
                "score": scores[t] if s % 2 else 1.0,
            }
            for s in range(6)
            for t in range(4)
        ]
        return pd.DataFrame(rows)

    tables = {"gold": turns([1.0, 1.0, 1.0, 0.5]), "free": turns([1.0, 0.5, 0.0, 0.5])}
    pair = Pair(
        pd.Series({"run_id": "gold", "tags.mlflow.runName": "g"}),
        pd.Series({"run_id": "free"}),
        "history",
    )
    table = history_table([pair], tables.get, [0.6])
    assert table is not None
    frame = table.frame.set_index(["turn", "metric"])
    assert frame.loc[("T0", "mrs"), "carry_over"] == 0.0
    t1 = frame.loc[("T1", "mrs")]
    assert (t1["free"], t1["gold"], t1["carry_over"], t1["n_shared"]) == (75.0, 100.0, 25.0, 6)
    assert t1["ci_low"] > 0 and t1["ci_high"] <= 50
    assert frame.loc[("T2", "pass_turn_0.60"), "carry_over"] == 50.0
    assert frame.loc[("all", "mrs"), "carry_over"] == pytest.approx((0 + 25 + 50 + 0) / 4)
    assert history_table([Pair(pair.a, pair.b, "query")], tables.get, [0.6]) is None
    assert not math.isnan(frame.loc[("T3", "mrs"), "p_value"])


def test_each_turn_of_a_trace_carries_its_grounding(tmp_path: Path) -> None:
    from physassist.tracking.traces import GROUNDING_SOURCE_ID, build_traces, grounding_name, scored

    log = _eval(tmp_path, "physassist/perturbed", limit=1)
    [trace] = build_traces(
        list(scored(log.samples)), log.eval, experiment_id="0", run_id="r", raw_chars=100
    )
    found = {a.name: a for a in trace.info.assessments if a.name.endswith("grounding")}
    assert sorted(found) == [grounding_name(t) for t in range(4)]
    turns = log.samples[0].scores[GROUNDING_SCORER].metadata["turns"]
    for t in turns:
        a = found[grounding_name(t["turn"])]
        assert a.source.source_id == GROUNDING_SOURCE_ID
        assert a.metadata == {
            k: str(t[k]) for k in ("facts", "grounded", "contradicted", "unsupported")
        }
        assert a.value == (t["grounded"] / t["facts"] if t["facts"] else None)
    assert any(
        "contradicted: value" in a.rationale and "the record holds" in a.rationale
        for a in found.values()
    )


def test_the_judges_see_the_history_a_gold_turn_was_given(gold_explorer) -> None:
    from scorers.session_scorer import turn_inputs

    log = gold_explorer
    sample = log.samples[0]
    session = read_session(log)
    inputs = turn_inputs(sample.metadata, stored_turns(sample.store))
    assert [m["content"] for m in inputs[2].history if m["role"] == "assistant"] == [
        session.gold_answer(0, "en"),
        session.gold_answer(1, "en"),
    ]
