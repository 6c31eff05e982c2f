"""Token usage per role and estimated cost, from a real eval with scripted usage."""

from __future__ import annotations

import math

import pytest
from fixtures_scoring import gold_records, make_session, sample_metadata, scripted, verdict
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, TaskState, solver

from physassist.usage import session_usage, usage_metrics
from scorers import physassist_scorer

GRADER_IN, GRADER_OUT = 50, 20  # fixtures_scoring.USAGE of every scripted grader reply
PRICES = {"mockllm/model": {"input": 2.0, "output": 8.0}}


@solver
def assistant_calls():
    """Two assistant calls per sample (usage 10/5 each), then the gold records."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        for _ in range(2):
            await model.generate("hello")
        state.store.set("physassist:turns", gold_records(make_session(str(state.sample_id))))
        return state

    return solve


@pytest.fixture(scope="module")
def log(tmp_path_factory):
    sessions = [make_session("a"), make_session("b")]
    samples = [Sample(id=s["id"], input="opening", metadata=sample_metadata(s)) for s in sessions]
    assistant = get_model(
        "mockllm/model",
        custom_outputs=lambda *_: scripted("hi").model_copy(update={"usage": _usage(10, 5)}),
        memoize=False,
    )
    grader = get_model(
        "mockllm/model/grader",
        custom_outputs=lambda m, *_: scripted(verdict([True] * _n(m))),
        memoize=False,
    )
    [result] = eval(
        Task(dataset=samples, solver=assistant_calls(), scorer=physassist_scorer(judge="llm")),
        model=assistant,
        model_roles={"grader": grader},
        log_dir=str(tmp_path_factory.mktemp("logs")),
        display="none",
    )
    assert result.status == "success", result.error
    return result


def _usage(tin: int, tout: int):
    from inspect_ai.model import ModelUsage

    return ModelUsage(input_tokens=tin, output_tokens=tout, total_tokens=tin + tout)


def _n(messages) -> int:
    import re

    return int(re.search(r"## Rubric items \((\d+)\)", messages[-1].text).group(1))


def test_tokens_per_role_and_cost(log) -> None:
    m = usage_metrics(log, {**PRICES, "mockllm/model/grader": {"input": 1.0, "output": 1.0}})
    assert (m["tokens.assistant.input"], m["tokens.assistant.output"]) == (2 * 2 * 10, 2 * 2 * 5)
    grader_calls = 2 * 4  # one grader call per turn, 4 turns, 2 sessions
    assert (m["tokens.grader.input"], m["tokens.grader.output"]) == (
        grader_calls * GRADER_IN,
        grader_calls * GRADER_OUT,
    )
    assistant_cost = (40 * 2.0 + 20 * 8.0) / 1e6
    grader_cost = grader_calls * (GRADER_IN + GRADER_OUT) / 1e6
    assert m["cost_usd.assistant"] == pytest.approx(assistant_cost)
    assert m["cost_usd"] == pytest.approx(assistant_cost + grader_cost)
    assert m["cost_usd_per_session"] == pytest.approx((assistant_cost + grader_cost) / 2)


def test_a_model_without_price_gets_no_cost_not_zero(log) -> None:
    m = usage_metrics(log, PRICES)  # the grader's model has no price
    assert "cost_usd" not in m and "cost_usd.grader" not in m and m["cost_usd.assistant"] > 0
    assert not any(k.startswith("cost") for k in usage_metrics(log, None))


def test_session_usage_table(log) -> None:
    df = session_usage(log, PRICES)
    assert sorted(df["session_id"].unique()) == ["a", "b"] and set(df["role"]) == {
        "assistant",
        "grader",
    }
    a = df[(df.session_id == "a") & (df.role == "assistant")].iloc[0]
    assert (a.input_tokens, a.output_tokens) == (20, 10)
    assert a.cost_usd == pytest.approx((20 * 2.0 + 10 * 8.0) / 1e6)
    assert df[df.role == "grader"]["cost_usd"].map(math.isnan).all()
