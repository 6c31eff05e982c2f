"""Offline agents and loop helpers without an eval: conversation reading, keyword choice,
menus."""

from __future__ import annotations

import pytest
from inspect_ai.model import (
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
)
from inspect_ai.tool import ToolCall

from physassist.agents._common import estimate_tokens, read_conversation
from physassist.agents.baseline import choose_call
from physassist.ehr.tools import to_api_name, tool_schemas
from solvers.menu import menu_schemas, schema_name

OPENING = "[Environment]\nsubject_id: 42\nhadm_id: 7\nsession_id: s-1\ncurrent_date: 2150-01-02"
ALL = {to_api_name(schema_name(s)) for s in tool_schemas()}


def conversation(*questions: str, nudge: bool = False, acted: bool = False):
    messages = [ChatMessageSystem(content="sys"), ChatMessageUser(content=OPENING)]
    for q in questions:
        messages.append(ChatMessageUser(content=q))
    if acted:
        messages.append(
            ChatMessageAssistant(
                content="",
                tool_calls=[ToolCall(id="1", function="Observation__search", arguments={})],
            )
        )
        messages.append(ChatMessageTool(content="- Creatinine 1.2 mg/dL", tool_call_id="1"))
    if nudge:
        messages.append(ChatMessageUser(content="Answer now."))
    return read_conversation(messages, "none" if nudge else "auto")


def test_conversation_turn_session_and_nudge() -> None:
    conv = conversation("Creatinine?", "And potassium?", nudge=True, acted=True)
    assert conv.turn == 1 and conv.question == "And potassium?" and conv.nudged
    assert (
        conv.session_key == "s-1" and conv.value("subject_id") == 42 and conv.value("hadm_id") == 7
    )
    assert conv.acted() and conv.tool_results() == ["- Creatinine 1.2 mg/dL"]
    assert conversation("肌酐？").language == "zh"


def test_baseline_keyword_choice() -> None:
    name, args = choose_call(conversation("Creatinine?"), ALL)
    assert name == "Observation__search" and args["code"] == "Creatinine" and args["hadm_id"] == 7
    assert choose_call(conversation("那血钾呢？"), ALL)[1]["code"] == "Potassium"
    name, args = choose_call(conversation("Is she taking the Apixaban?"), ALL)
    assert name == "patient__get_medication_adherence" and args["drug"] == "Apixaban"
    assert (
        choose_call(conversation("Apixaban dose?"), {"MedicationRequest__search"})[0]
        == "MedicationRequest__search"
    )
    assert choose_call(conversation("Anything else?"), set()) is None


def test_menus() -> None:
    schemas = tool_schemas()
    on = {schema_name(s) for s in menu_schemas("on", schemas, scenario="med_safety")}
    assert "prepare_to_answer" not in on and len(on) == 17
    scenario = {schema_name(s) for s in menu_schemas("scenario", schemas, scenario="med_safety")}
    assert "MedicationAdministration.search" in scenario and "CarePlan.search" not in scenario
    gold = menu_schemas("gold", schemas, scenario=None, gold_names=["Condition.search"])
    assert [schema_name(s) for s in gold] == ["Condition.search"]
    assert menu_schemas("off", schemas, scenario=None) == []


def test_local_token_estimate() -> None:
    assert estimate_tokens("abcd" * 10) == 10 and estimate_tokens("肌酐") == 2


def _messages(*questions: str, calls: int = 0) -> list:
    messages = [ChatMessageSystem(content="sys"), ChatMessageUser(content=OPENING)]
    messages += [ChatMessageUser(content=q) for q in questions]
    for i in range(calls):
        messages.append(
            ChatMessageAssistant(
                content="",
                tool_calls=[ToolCall(id=str(i), function="Observation__search", arguments={})],
            )
        )
        messages.append(ChatMessageTool(content=f"- result {i}", tool_call_id=str(i)))
    return messages


def _tools(names: set[str]) -> list:
    from inspect_ai.tool import ToolInfo

    return [ToolInfo(name=n, description=n) for n in sorted(names)]


@pytest.fixture()
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_floor_agents_never_call_a_tool_and_say_nothing_or_the_question() -> None:
    from physassist.agents.floors import EmptyAgent, NoToolsAgent

    tools = _tools(ALL | {"prepare_to_answer"})
    empty = await EmptyAgent().act(_messages("Creatinine?"), tools, "auto")
    [call] = empty.message.tool_calls
    assert call.function == "prepare_to_answer" and empty.message.text == ""
    said = await NoToolsAgent().act(_messages("Creatinine?"), tools, "auto")
    assert [c.function for c in said.message.tool_calls] == ["prepare_to_answer"]
    assert "Creatinine?" in said.message.text and "cannot confirm" in said.message.text
    assert (
        "肌酐？"
        in (await NoToolsAgent().act(_messages("肌酐？"), _tools(ALL), "auto")).message.text
    )


@pytest.mark.anyio
async def test_explorer_gathers_until_done_only_with_a_control_tool() -> None:
    from physassist.agents.explorer import MAX_CALLS, ExplorerAgent, planned_calls

    plan = planned_calls(conversation("Creatinine?"), ALL)
    assert plan[0][1]["code"] == "Creatinine" and len(plan) == MAX_CALLS
    # then the generic lab search and the chart overview
    assert [name for name, _ in plan[1:]] == [
        "Observation__search",
        "MedicationRequest__search",
        "Condition__search",
        "Observation__search",
        "DiagnosticReport__search",
    ]
    # a follow-up naming nothing carries the previous question's specific call
    assert (
        planned_calls(conversation("Creatinine?", "And the trend?"), ALL)[0][1]["code"]
        == "Creatinine"
    )
    # the menu removes calls
    assert all(
        name == "Observation__search"
        for name, _ in planned_calls(conversation("Creatinine?"), {"Observation__search"})
    )
    agent = ExplorerAgent()
    with_control = _tools(ALL | {"prepare_to_answer"})
    out = await agent.act(_messages("Creatinine?", calls=2), with_control, "auto")
    assert out.message.tool_calls[0].function == plan[2][0]  # the third call of the plan
    done = await agent.act(_messages("Creatinine?", calls=MAX_CALLS), with_control, "auto")
    assert (
        done.message.tool_calls[0].function == "prepare_to_answer"
        and "result 5" in done.message.text
    )
    natural = await agent.act(
        _messages("Creatinine?", calls=1), _tools(ALL - {"prepare_to_answer", "submit"}), "auto"
    )
    assert (
        not natural.message.tool_calls and "result 0" in natural.message.text
    )  # answers after one
