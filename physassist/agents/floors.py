"""Validity floors: offline agents that show what a score is worth without the work.

* ``physassist/empty``: says nothing (an empty answer every turn, through the terminal's
  control tool). Any score above 0 is credit for nothing.
* ``physassist/no_tools``: never calls a tool and answers each question by restating it with a
  hedge. Its score is what the question text alone earns: rubric items a reply can pass
  without reading the record.

A model's mRS means something only as far as it is above these (``experiment=validity_floors``
runs them beside ``baseline`` and ``oracle``; the report puts every model next to them).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from ._common import finish, read_conversation, reply

HEDGE = {
    "en": "Without checking the record I cannot confirm this: {question}",
    "zh": "未查阅病历，无法确认：{question}",
}


class EmptyAgent:
    """An empty answer every turn."""

    def __init__(self, model_name: str = "empty", **_: Any) -> None:
        self.model_name = model_name

    async def act(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        if conv.turn < 0:
            return reply(self.model_name, "", [], input)
        return finish(self.model_name, "", tools, conv, input)


class NoToolsAgent:
    """No tool call ever; the answer restates the question with a hedge."""

    def __init__(self, model_name: str = "no_tools", **_: Any) -> None:
        self.model_name = model_name

    async def act(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        if conv.turn < 0:
            return reply(self.model_name, "Ready.", [], input)
        answer = HEDGE[conv.language].format(question=conv.question.strip())
        return finish(self.model_name, answer, tools, conv, input)
