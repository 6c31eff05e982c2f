"""`turn_table` and the Inspect metrics on real EvalLogs from a trivial task + our scorer."""

from __future__ import annotations

import copy
import math
import re

import pytest
from fixtures_scoring import gold_records, make_session, sample_metadata, scripted, verdict
from inspect_ai import Epochs, Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, TaskState, solver

from physassist.metrics import is_headline, summarize
from physassist.results import TURN_COLUMNS, turn_table
from scorers import physassist_scorer, session_epochs

EMPTY = "(empty reply)"


@solver
def replay_records(records_by_id: dict[str, list[dict]]):
    """Stand-in for the assistant loop: writes prepared turn records into the store."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.store.set("physassist:turns", copy.deepcopy(records_by_id[str(state.sample_id)]))
        return state

    return solve


def _sessions():
    good = make_session("good", scenario="med_safety", tier=1)
    weak = make_session("weak", scenario="diagnostic_workup", tier=3)
    for s in (good, weak):
        s["rubric_checks"][0][2] = {"kind": "concept", "any": {"en": ["2150-05-24"]}}
        s["rubric_checks"][1][3] = {"kind": "concept", "any": {"en": ["mmol/L"]}}
        s["rubric_checks"][2][4] = {"kind": "concept", "any": {"en": ["dose"]}}
    undecided = make_session("undecided", scenario="med_safety", tier=2)  # T0 item 3 has no check
    records = {"good": gold_records(good), "undecided": gold_records(undecided)}
    weak_records = gold_records(weak)
    weak_records[0]["answer"] = ""  # empty reply: every T0 item fails
    weak_records[3]["calls"] = []  # no order placed
    weak_records[3]["end"] = "budget"
    records["weak"] = weak_records
    return [good, weak, undecided], records


def _task(scorer, epochs=None):
    sessions, records = _sessions()
    samples = [Sample(id=s["id"], input="opening", metadata=sample_metadata(s)) for s in sessions]
    return Task(dataset=samples, solver=replay_records(records), scorer=scorer, epochs=epochs)


@pytest.fixture(scope="module")
def rules_log(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("logs")
    [log] = eval(
        _task(physassist_scorer(judge="rules")),
        model="mockllm/model",
        log_dir=str(log_dir),
        display="none",
    )
    assert log.status == "success", log.error
    return log


def test_turn_table_has_one_row_per_session_turn(rules_log):
    df = turn_table(rules_log)
    assert list(df.columns) == TURN_COLUMNS
    assert len(df) == 12 and set(df["session_id"]) == {"good", "weak", "undecided"}
    good = df[df.session_id == "good"].set_index("turn")
    assert good["score"].tolist() == [1.0, 1.0, 1.0, 1.0]
    assert good["task_type"].tolist() == ["IL", "DG", "CR", "WU"]
    assert good["subtype"].tolist() == ["none", "PE", "AE", "none"]
    assert good.loc[0, "tier"] == 1 and good.loc[0, "scenario"] == "med_safety"
    assert good.loc[1, "gold_tools"] == ["Observation.search", "Condition.search"]
    assert (
        good.loc[1, "tools"] == ["Observation.search", "Condition.search"]
        and good.loc[1, "n_calls"] == 2
    )
    assert good.loc[2, "tokens_in"] == 102 and good.loc[2, "seconds"] == 0.5
    assert good.loc[0, "question"] == "Creatinine?"


def test_turn_table_reports_failures_and_unscored(rules_log):
    df = turn_table(rules_log).set_index(["session_id", "turn"])
    assert df.loc[("weak", 0), "score"] == 0.0 and df.loc[("weak", 0), "n_passed"] == 0
    assert df.loc[("weak", 3), "score"] == 0.0 and df.loc[("weak", 3), "end"] == "budget"
    row = df.loc[("undecided", 0)]
    assert row["status"] == "undecided" and math.isnan(row["score"]) and row["n_undecided"] == 1


def test_turn_table_reads_log_file_and_matches_inspect_metrics(rules_log):
    df = turn_table(rules_log.location)
    summary = summarize(df)
    metrics = rules_log.results.scores[0].metrics
    assert metrics["mrs"].value == pytest.approx(summary["mrs"])
    assert metrics["pass_session_0.60"].value == pytest.approx(summary["pass_session_0.60"])
    assert metrics["pass_turn_0.75_ci_low"].value == pytest.approx(summary["pass_turn_0.75_ci_low"])
    assert metrics["unscored_turns"].value == 3 and summary["unscored_turns"] == 3
    # Inspect is shown the headline; breakdowns and the other counts come from the turn table
    assert {k for k in metrics if not is_headline(k)} == set()
    assert "mrs.scenario.med_safety" in summary and summary["end.budget"] == 1
    assert summary["mrs"] < 100 and summary["pass_session_excluded"] == 1


def test_inspect_view_shows_each_turns_answer_and_each_items_verdict(rules_log):
    """What ``turns: Array(4)`` of the metadata hid: the answers and the per-item verdicts."""
    score = next(s for s in rules_log.samples if s.id == "weak").scores["physassist_scorer"]
    assert score.answer.startswith("T0: ") and "\n\nT3: " in score.answer
    turns = score.metadata["turns"]
    assert score.explanation.startswith(f"**T0** {turns[0]['score']:.2f} (")
    verdicts = [line for line in score.explanation.splitlines() if line.startswith("- ")]
    assert len(verdicts) == sum(len(t["items"]) for t in turns)
    assert any(line.startswith("- 1. fail: ") for line in verdicts) and all(
        ": " in line for line in verdicts
    )


def test_sample_score_value_is_session_mean(rules_log):
    by_id = {s.id: s.scores["physassist_scorer"] for s in rules_log.samples}
    assert by_id["good"].value == 1.0
    assert by_id["undecided"].value == pytest.approx(1.0)  # mean over its only scored turn (T3)
    statuses = [t["status"] for t in by_id["undecided"].metadata["turns"]]
    assert statuses == ["undecided", "undecided", "undecided", "scored"]
    assert by_id["weak"].value == pytest.approx((0 + 1 + 1 + 0) / 4)


def test_llm_judge_through_grader_role_with_epochs(tmp_path):
    """Grader bound to the `grader` role; 2 epochs reduced by session_epochs -> pass^k in
    results."""

    def grade(messages, tools, tool_choice, config):
        # Reads the prompt, so concurrent turns get matching verdicts in any order:
        # every item passes unless the reply was empty.
        prompt = messages[-1].text
        n = int(re.search(r"## Rubric items \((\d+)\)", prompt).group(1))
        return scripted(verdict([EMPTY not in prompt] * n))

    grader = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    task = _task(physassist_scorer(judge="llm"), epochs=Epochs(2, session_epochs()))
    [log] = eval(
        task,
        model="mockllm/model",
        model_roles={"grader": grader},
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    df = turn_table(log)
    assert len(df) == 24 and set(df["epoch"]) == {1, 2} and set(df["judge"]) == {"llm"}
    # the weak session placed no order: its write items fail without a grader call
    weak_wu = df[(df.session_id == "weak") & (df.turn == 3)]
    assert (weak_wu["score"] == 0.0).all()
    summary = summarize(df)
    assert summary["pass_hat_2_0.60"] == pytest.approx(
        100 * 2 / 3
    )  # good and undecided pass, weak fails T0
    metrics = log.results.scores[0].metrics
    assert metrics["mrs"].value == pytest.approx(summary["mrs"])


def test_llm_judge_requires_a_grader(tmp_path):
    [log] = eval(
        _task(physassist_scorer(judge="llm")),
        model="mockllm/model",
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "error" and "grader" in str(log.error)


def test_bad_scorer_option_is_named():
    with pytest.raises(
        ValueError,
        match=r"^judge_context='vibes' is not valid; valid options: gold_answer, evidence$",
    ):
        physassist_scorer(context="vibes")
    with pytest.raises(
        ValueError, match=r"^judge='gpt' is not valid; valid options: rules, llm, panel$"
    ):
        physassist_scorer(judge="gpt")


def test_task_level_reducer_survives_eval_level_epoch_count(tmp_path):
    """A task declaring Epochs(1, session_epochs()) keeps the reducer under `--epochs 2`."""
    task = _task(physassist_scorer(judge="rules"), epochs=Epochs(1, session_epochs()))
    [log] = eval(task, model="mockllm/model", epochs=2, log_dir=str(tmp_path), display="none")
    assert log.status == "success", log.error
    summary = summarize(turn_table(log))  # the reducer kept both epochs' turns
    # identical epochs: pass^2 equals the single-trial pass rate over eligible sessions
    assert summary["pass_hat_2_0.60"] == pytest.approx(summary["pass_hat_1_0.60"])
    assert summary["session_score_sd"] == 0.0


def test_turn_rows_read_the_session_json_string_when_other_metadata_is_missing():
    """New logs keep the session as one JSON string; the fallbacks must still read it."""
    import json

    from physassist.results import turn_rows

    session = make_session()
    md = {"session": json.dumps(session)}  # no scenario / tier / task_types keys
    turns = [{"turn": t, "score": 1.0, "status": "scored", "items": []} for t in range(4)]
    rows = turn_rows(session["id"], 1, md, turns)
    assert [r["task_type"] for r in rows] == ["IL", "DG", "CR", "WU"]
    assert [r["gold_tools"] for r in rows][0] == ["Observation.search"]
    assert {r["scenario"] for r in rows} == {session["clinical_scenario"]}
    assert {r["tier"] for r in rows} == {session["difficulty_level"]}
