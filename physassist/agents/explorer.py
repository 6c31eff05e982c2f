"""``physassist/explorer``: the baseline's keyword tools, gathered several per turn.

An offline agent whose score responds to the ablations, so an offline sweep shows their
effect (the one-call baseline scores the same under every tool budget, menu and terminal):

* it makes up to ``MAX_CALLS`` calls per turn, one per request (the question's keyword calls,
  then a generic lab search, then a chart overview: medications, conditions, vitals,
  reports): the tool budget (``terminal.budget``) cuts them short and the menu removes some;
* it answers with the first lines of every result, so ``observations=removed`` leaves it
  nothing to report;
* when the terminal strategy offers a control tool (``prepare_to_answer``, ``submit``) it
  gathers until it has made all its calls, then calls it; without one (``natural``) it answers
  after its first result, as chat models with no explicit "done" tool tend to;
* a follow-up question with no keyword of its own reuses the previous question's specific
  calls (a crude resolution of an implicit reference).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from physassist.ehr.tools import to_api_name

from ._common import Conversation, control_tools, finish, offered, read_conversation, reply
from .baseline import candidate_calls, summarise

MAX_CALLS = 6


def context_calls(conv: Conversation, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """The chart overview it reads after the question's own calls, among the offered tools."""
    ids: dict[str, Any] = {"subject_id": conv.value("subject_id")}
    if conv.value("hadm_id") is not None:
        ids["hadm_id"] = conv.value("hadm_id")
    overview = [
        ("MedicationRequest.search", dict(ids)),
        ("Condition.search", dict(ids)),
        ("Observation.search", {**ids, "category": "vital-signs", "_count": 5}),
        ("DiagnosticReport.search", dict(ids)),
    ]
    return [(to_api_name(t), a) for t, a in overview if to_api_name(t) in names]


def planned_calls(conv: Conversation, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """This turn's calls: the question's own (or, when it names nothing, the previous
    question's specific ones), the generic lab search, then the chart overview."""
    calls = candidate_calls(conv, names)
    if len(calls) <= 1 and conv.turn > 0:
        previous = Conversation(conv.opening, conv.questions[:-1], [], False)
        carried = [c for c in candidate_calls(previous, names)[:-1] if c not in calls]
        calls = carried + calls
    calls += [c for c in context_calls(conv, names) if c not in calls]
    return calls[:MAX_CALLS]


def calls_made(conv: Conversation) -> int:
    return sum(len(m.tool_calls or []) for m in conv.since_question if isinstance(m, ChatMessageAssistant))


class ExplorerAgent:
    """Several keyword-chosen calls per turn, then every result's first lines as the answer."""

    def __init__(self, model_name: str = "explorer", **_: Any) -> None:
        self.model_name = model_name

    async def act(self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        if conv.turn < 0:
            return reply(self.model_name, "Ready.", [], input)
        names = offered(tools)
        made = calls_made(conv)
        wants_more = bool(control_tools(tools)) or made == 0
        if not conv.nudged and wants_more:
            calls = planned_calls(conv, names)
            if made < len(calls):
                return reply(self.model_name, "", [calls[made]], input)
        return finish(self.model_name, summarise(conv.tool_results(), conv.language, per_result=3), tools, conv, input)
