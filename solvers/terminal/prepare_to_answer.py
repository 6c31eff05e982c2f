"""``prepare_to_answer`` (the paper): the turn ends when the model calls the control tool.

The answer is the text of the message that calls it; if that message has no text the loop
nudges for one. A plain reply without any tool call also ends the turn (the model has
stopped gathering), so a model that forgets the control tool is not penalised twice.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant

from physassist.ehr.tools import to_api_name

from .base import Decision, TerminalStrategy, _text


class PrepareToAnswer(TerminalStrategy):
    name = "prepare_to_answer"
    control_tool = "prepare_to_answer"

    def decide(self, message: ChatMessageAssistant) -> Decision:
        calls = message.tool_calls or []
        if not calls or any(c.function == to_api_name(self.control_tool) for c in calls):
            return Decision(True, _text(message))
        return Decision(False)
