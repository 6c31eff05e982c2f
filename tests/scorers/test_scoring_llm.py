"""LLM and write judges with a scripted mockllm grader (usage set, offline, deterministic)."""

from __future__ import annotations

import json

import pytest
from fixtures_scoring import call, gold_records, grader, make_session, scripted, turn_input, verdict

from scorers import llm_judge, write_judge
from scorers.grader import Grader, VerdictError, parse_verdict

# anyio's pytest plugin (installed with inspect-ai) runs the async tests on asyncio.
pytestmark = pytest.mark.anyio


@pytest.fixture()
def anyio_backend():
    return "asyncio"


@pytest.fixture()
def session():
    return make_session()


def test_parse_verdict_accepts_fenced_json_and_orders_by_id():
    text = (
        "```json\n"
        + json.dumps(
            {
                "items": [
                    {"id": 2, "pass": False, "reason": "b"},
                    {"id": 1, "pass": True, "reason": "a"},
                ]
            }
        )
        + "\n```"
    )
    items = parse_verdict(text, 2)
    assert [(i.passed, i.reason) for i in items] == [(True, "a"), (False, "b")]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("not json at all", "no JSON object"),
        ('{"items": [', "no JSON object"),
        ('{"scores": [1, 0, 1]}', '"items" list'),
        (verdict([True, True]), "expected 3 items, got 2"),  # no padding
        (verdict([True, True, True, False]), "expected 3 items, got 4"),  # no truncation
        (verdict([True, "0", True]), "pass must be true or false"),  # "0" is not a pass
        (verdict([True, 1, True]), "pass must be true or false"),
        (
            json.dumps(
                {
                    "items": [
                        {"id": 1, "pass": True},
                        {"id": 1, "pass": True},
                        {"id": 3, "pass": True},
                    ]
                }
            ),
            "appears twice",
        ),
        (
            json.dumps(
                {
                    "items": [
                        {"id": 0, "pass": True},
                        {"id": 2, "pass": True},
                        {"id": 3, "pass": True},
                    ]
                }
            ),
            "id must be",
        ),
    ],
)
def test_parse_verdict_rejects(payload, message):
    with pytest.raises(VerdictError, match=message):
        parse_verdict(payload, 3)


async def test_valid_verdict_scores_turn(session):
    model = grader([verdict([True, False, True])])
    ti = turn_input(session, 0, "Creatinine 1.4 mg/dL on 2150-05-24.")
    result = await llm_judge.judge_turn(ti, Grader(model), "gold_answer")
    assert result.status == "scored" and result.judge == "llm"
    assert result.score == pytest.approx(2 / 3)
    assert [i.reason for i in result.items] == ["reason 1", "reason 2", "reason 3"]


async def test_malformed_then_recovered(session):
    ti = turn_input(session, 0, "Creatinine 1.4")
    model = grader(["Sure! Item 1 passes.", verdict([True, True]), verdict([True, True, False])])
    result = await llm_judge.judge_turn(ti, Grader(model, max_attempts=3), "gold_answer")
    assert result.status == "scored" and result.score == pytest.approx(2 / 3)


async def test_failure_after_retries_is_unscored_not_zero(session):
    model = grader(["nope", verdict([True]), verdict([True, "yes", True])])
    ti = turn_input(session, 0, "Creatinine 1.4")
    result = await llm_judge.judge_turn(ti, Grader(model, max_attempts=3), "gold_answer")
    assert result.status == "failed" and result.score is None
    assert all(i.passed is None for i in result.items)
    assert "pass must be true or false" in (result.error or "")
    assert result.error_kind == "unparseable"


async def test_retry_tells_grader_what_was_wrong(session, monkeypatch):
    model = grader([verdict([True, True]), verdict([True, True, True])])
    sent: list[list] = []
    real_generate = model.generate

    async def recording(messages, **kwargs):
        sent.append(list(messages))
        return await real_generate(messages, **kwargs)

    monkeypatch.setattr(model, "generate", recording)
    items, attempts, error, kind = await Grader(model, max_attempts=2).ask("sys", "user", 3)
    assert attempts == 2 and error is None and kind is None and len(items) == 3
    assert len(sent) == 2 and len(sent[1]) == len(sent[0]) + 2
    assert sent[1][-2].role == "assistant"  # its own invalid verdict, then what was wrong
    with pytest.raises(VerdictError) as wrong:
        parse_verdict(sent[1][-2].text, 3)
    assert sent[1][-1].role == "user" and str(wrong.value) in sent[1][-1].text


def test_gold_answer_context_uses_gold_history_and_answer(session):
    ti = turn_input(
        session, 2, "Reduce the dose.", history=[{"role": "user", "content": "MODEL-HISTORY"}]
    )
    _, user = llm_judge.rubric_prompt(ti, "gold_answer")
    assert "Reduce the apixaban dose given renal function" in user  # the gold answer of turn 2
    assert "Potassium 5.1 mmol/L" in user  # gold history (turn 1 answer)
    assert "=" * 60 not in user and "MODEL-HISTORY" not in user
    assert "1. Recommends dose reduction" in user and "5. Clear" in user


def test_evidence_context_uses_observations_and_own_history(session):
    own = [
        {"role": "user", "content": "Creatinine?"},
        {"role": "assistant", "content": "MY-OWN-ANSWER"},
    ]
    egfr = {
        "resourceType": "Observation",
        "code": {"text": "eGFR"},
        "valueQuantity": {"value": 47.25, "unit": "mL/min/1.73m2"},
        "effectiveDateTime": "2150-05-24",
    }
    bundle = {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": 1,
        "entry": [{"resource": egfr}],
    }
    mine = call("Observation.search", {"code": "eGFR"}, bundle)
    ti = turn_input(session, 1, "Potassium 5.1", [mine], history=own)
    _, user = llm_judge.rubric_prompt(ti, "evidence")
    assert "MY-OWN-ANSWER" in user and "Reduce the apixaban" not in user
    assert "eGFR" in user and "47.25" in user  # what the assistant retrieved
    assert "Potassium" in user and "5.1" in user  # the gold observation
    with pytest.raises(ValueError, match="context"):
        llm_judge.rubric_prompt(ti, "vibes")


def test_zh_turn_uses_zh_rubric_and_gold(session):
    ti = turn_input(session, 0, "肌酐 1.4", language="zh")
    _, user = llm_judge.rubric_prompt(ti, "gold_answer")
    assert "(zh) States creatinine" in user and "肌酐：1.4 mg/dL" in user


def _order(**args):
    return call(
        "MedicationRequest.create", {"subject_id": 1, **args}, {"resourceType": "MedicationRequest"}
    )


async def test_write_judge_reads_executed_write_arguments(session):
    calls = [
        _order(medication="Apixaban", dose="2.5 mg", route="oral", frequency="BID"),
        call("Observation.search"),
    ]
    ti = turn_input(session, 3, "free text that must be ignored", calls)
    system, user = write_judge.write_prompt(ti, "gold_answer")
    assert "Judge only the structured arguments" in system
    assert '"dose": "2.5 mg"' in user and "Observation.search" not in user.split("executed")[-1]
    assert "free text that must be ignored" not in user
    assert '"subject_id"' not in user
    result = await write_judge.judge_turn(ti, Grader(grader([verdict([True, True, True, False])])))
    assert result.status == "scored" and result.score == 0.75


async def test_write_judge_without_write_call_fails_parameter_items_without_grader(session):
    ti = turn_input(session, 3, "I have ordered apixaban 2.5 mg BID.")
    model = grader([])  # any grader call would raise: no scripted output left
    result = await write_judge.judge_turn(ti, Grader(model))
    assert result.status == "scored" and result.score == 0.0
    assert all(i.reason == write_judge.NO_CALL_REASON for i in result.items)


async def test_write_judge_without_call_still_asks_grader_for_unchecked_items(session):
    session["rubric_checks"][3][3] = None  # a non-parameter (e.g. safety) item
    ti = turn_input(session, 3, "")
    result = await write_judge.judge_turn(ti, Grader(grader([verdict([True, True, True, True])])))
    assert [i.passed for i in result.items] == [False, False, False, True]


async def test_write_judge_string_zero_is_not_a_pass(session):
    ti = turn_input(session, 3, "", [_order(dose="2.5 mg")])
    result = await write_judge.judge_turn(
        ti, Grader(grader([verdict(["0", "0", "0", "0"])] * 2), max_attempts=2)
    )
    assert result.status == "failed" and result.score is None


def test_gold_records_fixture_is_consistent(session):
    assert [r["turn"] for r in gold_records(session)] == [0, 1, 2, 3]


async def test_structured_output_and_temperature_zero_reach_the_grader(session):
    seen = []

    def grade(messages, tools, tool_choice, config):
        seen.append(config)
        return scripted(verdict([True, True, True]))

    from inspect_ai.model import get_model

    model = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    result = await llm_judge.judge_turn(turn_input(session, 0, "x"), Grader(model, structured=True))
    assert result.status == "scored"
    assert seen[0].temperature == 0.0 and seen[0].response_schema.name == "rubric_verdict"


def test_evidence_lists_a_result_identical_to_the_reference_once(session):
    records = gold_records(session)
    ti = turn_input(session, 1, "Potassium 5.1", records[1]["calls"])
    block = llm_judge.evidence_block(ti)
    assert block.count("Potassium: 5.1") == 1
    assert "same result as a reference observation" in block
