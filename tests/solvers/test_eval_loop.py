"""The assistant loop with scripted models: terminal strategies, budget and nudge, tool
errors, and the menu / observations / query / language ablations."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fixtures_eval as fe
import fixtures_store as fs
import pytest
from inspect_ai.model import ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall

from physassist.turn_records import TURNS_KEY, TurnRecord
from solvers.observations import PLACEHOLDER
from solvers.prompting import nudge_message

store_cache = fs.store_cache
demo_store = fs.demo_store


@pytest.fixture(scope="module")
def session(demo_store) -> dict[str, Any]:
    return fe.build_session(demo_store, "strict")


@pytest.fixture
def run(session, demo_store, tmp_path: Path):
    def _run(script: fe.Script, **settings: Any):
        sample = fe.run_sample(session, script.model(), demo_store, tmp_path, **settings)
        return sample, fe.turns_of(sample)

    return _run


def ids(session: dict[str, Any]) -> dict[str, Any]:
    return {"subject_id": session["subject_id"], "hadm_id": session["hadm_id"]}


def test_prepare_to_answer_records_calls_and_answer(run, session) -> None:
    script = fe.Script(
        [
            fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})),
            fe.calls(
                ("prepare_to_answer", {"answer_type": "tool"}),
                content="Creatinine 2.9 mg/dL, high.",
            ),
        ]
    )
    sample, turns = run(script)
    assert [t.turn for t in turns] == [0, 1, 2, 3]
    t0 = turns[0]
    assert t0.end == "answered" and t0.answer == "Creatinine 2.9 mg/dL, high."
    assert t0.question == session["tasks"][0]
    [call] = t0.calls
    assert call.name == "Observation.search"
    assert call.raw["resourceType"] == "Bundle" and call.raw["total"] > 0
    assert "Creatinine" in call.text
    assert t0.tokens_in == 20 and t0.tokens_out == 10 and t0.seconds > 0
    stored = sample.store[TURNS_KEY][0]  # the log's shape: what older readers of the log expect
    assert list(stored) == [
        "turn",
        "question",
        "answer",
        "end",
        "calls",
        "tokens_in",
        "tokens_out",
        "started",
        "seconds",
        "error",
        "history",
        "gold_calls",
    ]
    assert list(stored["calls"][0]) == [
        "name",
        "arguments",
        "raw_json",
        "text",
        "started",
        "seconds",
    ]
    assert (
        TurnRecord.from_stored(stored) == t0 and t0.history == "free" and stored["gold_calls"] == []
    )
    assert t0.error is None
    assert t0.started <= call.started <= call.started + call.seconds <= t0.started + t0.seconds
    # API-safe names are offered, with the control tool
    offered = script.requests[0][1]
    assert "Observation__search" in offered and "prepare_to_answer" in offered
    assert all("." not in name for name in offered)
    # later turns answered by the default text, history kept across turns
    assert turns[1].answer == "Done."
    last_request = script.requests[-1][0]
    assert any(isinstance(m, ChatMessageTool) for m in last_request)
    assert [m.text for m in last_request if isinstance(m, ChatMessageUser)][1:] == session["tasks"]


def test_natural_ends_on_first_reply_without_tool_calls(run, session) -> None:
    script = fe.Script(
        [
            fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})),
            fe.text("Creatinine is 2.9 mg/dL."),
        ]
    )
    _, turns = run(script, terminal="natural")
    assert turns[0].end == "answered" and turns[0].answer == "Creatinine is 2.9 mg/dL."
    assert len(turns[0].calls) == 1
    assert "prepare_to_answer" not in script.requests[0][1]
    assert "submit" not in script.requests[0][1]


def test_submit_answer_is_the_argument(run, session) -> None:
    script = fe.Script(
        [
            fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})),
            fe.calls(
                ("submit", {"answer": "Creatinine 2.9 mg/dL (high)."}), content="ignored text"
            ),
        ]
    )
    _, turns = run(script, terminal="submit")
    assert turns[0].answer == "Creatinine 2.9 mg/dL (high)." and turns[0].end == "answered"
    offered = script.requests[0][1]
    assert "submit" in offered and "prepare_to_answer" not in offered


def test_budget_exhaustion_then_nudge_not_kept_in_history(run, session) -> None:
    search = ("Observation.search", {**ids(session), "code": "Creatinine"})
    script = fe.Script([fe.calls(search, search, search), fe.text("Nudged answer.")])
    sample, turns = run(script, tool_budget=2)
    t0 = turns[0]
    assert t0.end == "budget" and t0.answer == "Nudged answer."
    assert len(t0.calls) == 2  # the third call was refused, not executed
    nudge_request = script.requests[1]
    assert nudge_request[2] == "none"
    assert nudge_request[0][-1].text == nudge_message("en")
    refused = [m for m in nudge_request[0] if isinstance(m, ChatMessageTool)][-1]
    assert "budget" in refused.text.lower()
    # the nudge request is not kept; the answer is
    later = script.requests[2][0]
    assert all(m.text != nudge_message("en") for m in later if isinstance(m, ChatMessageUser))
    assert any(m.role == "assistant" and m.text == "Nudged answer." for m in later)


def test_prepare_without_text_is_nudged(run, session) -> None:
    script = fe.Script([fe.calls(("prepare_to_answer", {})), fe.text("Final.")])
    _, turns = run(script)
    assert turns[0].end == "nudged" and turns[0].answer == "Final."


def test_no_nudge_leaves_empty_answer(run, session) -> None:
    search = ("Observation.search", {**ids(session), "code": "Creatinine"})
    script = fe.Script([fe.calls(search, search)])
    _, turns = run(script, tool_budget=1, nudge=False)
    assert turns[0].end == "budget" and turns[0].answer == ""


def test_malformed_and_unknown_calls_get_operation_outcome(run, session) -> None:
    malformed = ToolCall(
        id="bad1",
        function="Observation__search",
        arguments={},
        parse_error="Expecting ',' delimiter: line 1 column 20 " + "x" * 1_000_000,
    )
    unknown = ToolCall(id="bad2", function="Procedure__search", arguments={"subject_id": 1})
    wrong_type = ToolCall(
        id="bad3",
        function="Observation__search",
        arguments={"subject_id": session["subject_id"], "_count": "lots"},
    )
    script = fe.Script(
        [
            fe.calls(malformed, unknown, wrong_type),
            fe.calls(("prepare_to_answer", {}), content="Recovered."),
        ]
    )
    _, turns = run(script)
    t0 = turns[0]
    assert t0.answer == "Recovered." and t0.end == "answered"
    assert [c.raw["resourceType"] for c in t0.calls] == ["OperationOutcome"] * 3
    assert t0.calls[1].name == "Procedure__search"  # unknown: kept as the model spelled it
    parse = t0.calls[0].raw["issue"][0]["diagnostics"]  # a 1 MB parse error is not echoed whole
    assert (
        parse.startswith("Could not parse the arguments of Observation.search")
        and len(parse) < 2_100
    )
    results = [m for m in script.requests[1][0] if isinstance(m, ChatMessageTool)]
    assert len(results) == 3 and all(m.error is None for m in results)
    assert all(m.text for m in results)


def test_menu_off_offers_no_tools(run) -> None:
    script = fe.Script([fe.text("From memory.")])
    sample, turns = run(script, menu="off")
    assert all(names == [] for _, names, _ in script.requests)
    assert turns[0].answer == "From memory." and turns[0].calls == ()
    assert sample.metadata["settings"]["menu"] == "off"


def test_menu_gold_offers_the_turns_gold_tools(run) -> None:
    script = fe.Script([])
    run(script, menu="gold")
    offered = [names for _, names, _ in script.requests]
    assert offered[0] == ["Observation__search", "prepare_to_answer"]
    assert offered[2] == [
        "MedicationRequest__search",
        "patient__get_medication_adherence",
        "prepare_to_answer",
    ]
    assert offered[3] == ["MedicationRequest__create", "prepare_to_answer"]


def test_observations_removed_hides_results_but_keeps_raw(run, session) -> None:
    script = fe.Script(
        [
            fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})),
            fe.calls(("prepare_to_answer", {}), content="Unknown."),
        ]
    )
    _, turns = run(script, observations="removed")
    [call] = turns[0].calls
    assert call.text == PLACEHOLDER["en"] and call.raw["resourceType"] == "Bundle"
    seen = [m for m in script.requests[1][0] if isinstance(m, ChatMessageTool)]
    assert seen[0].text == PLACEHOLDER["en"]


def test_history_removed_drops_earlier_tool_traffic(run, session) -> None:
    script = fe.Script(
        [
            fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})),
            fe.calls(("prepare_to_answer", {}), content="Creatinine 2.9."),
            fe.text("Second."),
        ]
    )
    _, turns = run(script, observations="history_removed")
    first_of_turn1 = script.requests[2][0]
    assert not any(isinstance(m, ChatMessageTool) for m in first_of_turn1)
    assert not any(getattr(m, "tool_calls", None) for m in first_of_turn1)
    assert any(m.role == "assistant" and m.text == "Creatinine 2.9." for m in first_of_turn1)
    assert turns[0].calls  # still recorded


def test_explicit_queries(run, session) -> None:
    script = fe.Script([])
    sample, turns = run(script, query="explicit")
    assert [t.question for t in turns] == session["tasks_en_explicit"]
    assert sample.metadata["query"] == "explicit"


def test_chinese_session(run, session) -> None:
    script = fe.Script([fe.text("肌酐 2.9 mg/dL。")])
    sample, turns = run(script, language="zh")
    assert [t.question for t in turns] == session["tasks_zh"]
    system = script.requests[0][0][0]
    assert system.role == "system" and "临床决策支持" in system.text
    assert turns[0].answer == "肌酐 2.9 mg/dL。"


def test_failed_turn_is_recorded_and_session_continues(run) -> None:
    def boom(_: Any) -> Any:
        raise RuntimeError("provider exploded")

    script = fe.Script([fe.text("First."), boom, fe.text("Third.")])
    sample, turns = run(script)
    assert [t.end for t in turns] == ["answered", "error", "answered", "answered"]
    assert turns[1].answer == "" and turns[2].answer == "Third."
    assert turns[1].error == "RuntimeError: provider exploded"
    assert [t.error for t in turns[2:]] == [None, None]
    assert "provider exploded" in sample.store["physassist:errors"][0]["error"]


def test_fault_after_a_tool_call_keeps_the_calls_and_tokens_spent(run, session) -> None:
    def boom(_: Any) -> Any:
        raise ConnectionError("server went away\n<html>502</html>")

    script = fe.Script(
        [fe.calls(("Observation.search", {**ids(session), "code": "Creatinine"})), boom]
    )
    _, turns = run(script)
    t0 = turns[0]
    assert t0.end == "error" and t0.answer == ""
    assert t0.error == "ConnectionError: server went away <html>502</html>"  # one line
    assert [c.name for c in t0.calls] == ["Observation.search"]
    assert (t0.tokens_in, t0.tokens_out) == (10, 5)  # the one output before the fault


def test_a_gold_history_that_cannot_be_built_leaves_the_later_turns_unscored_errors(
    run, monkeypatch
) -> None:
    """history=gold: a fault while executing turn 0's gold calls ends turns 1-3 as errors
    naming it (counted, never answered from a history the model was not given)."""
    from solvers.gold_history import GoldHistory

    async def broken(self, turn):
        raise RuntimeError("store went away")

    monkeypatch.setattr(GoldHistory, "add", broken)
    sample, turns = run(fe.Script([]), history="gold")
    assert [t.end for t in turns] == ["answered", "error", "error", "error"]
    assert all(
        t.error == "SystemFault: the gold history could not be built: RuntimeError: store went away"
        for t in turns[1:]
    ), [t.error for t in turns]


def test_an_endpoint_given_up_on_while_building_the_gold_history_ends_the_sample(
    session, demo_store, tmp_path, monkeypatch
) -> None:
    """EndpointDown (the run gave up on an endpoint) ends the sample as it does inside a turn,
    instead of being taken for a broken history and leaving three error turns behind."""
    from physassist.calls import EndpointDown
    from solvers.gold_history import GoldHistory

    async def down(self, turn):
        raise EndpointDown("patient endpoint http://127.0.0.1:9/v1: down for 60 s")

    monkeypatch.setattr(GoldHistory, "add", down)
    with pytest.raises(AssertionError, match="EndpointDown"):
        fe.run_sample(session, fe.Script([]).model(), demo_store, tmp_path, history="gold")
