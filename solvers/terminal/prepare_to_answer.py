"""``prepare_to_answer`` (the paper): the turn ends when the model calls the control tool.

The answer is the text of the message that calls it; if that message has no text the loop
nudges for one. A plain reply without any tool call also ends the turn (the model has
stopped gathering), so a model that forgets the control tool is not penalised twice.
"""

from __future__ import annotations

import json

from inspect_ai.model import ChatMessageAssistant

from physassist.ehr.tools import to_api_name
from physassist.vocab import PREPARE_TO_ANSWER

from .base import ControlTool, Decision, TerminalStrategy, _text


class PrepareToAnswer(TerminalStrategy):
    name = "prepare_to_answer"
    control = ControlTool(
        PREPARE_TO_ANSWER,
        "Signal that information gathering for this question is finished; "
        "write the answer to the physician in the same message.",
        {
            "type": "object",
            "properties": {
                "answer_type": {
                    "type": "string",
                    "enum": ["tool", "chat"],
                    "description": "'tool' if tools were used for this answer, else 'chat'.",
                }
            },
            "required": [],
        },
        reply=json.dumps({"status": "ready"}),
    )

    def decide(self, message: ChatMessageAssistant) -> Decision:
        calls = message.tool_calls or []
        if not calls or any(c.function == to_api_name(self.control.name) for c in calls):
            return Decision(True, _text(message))
        return Decision(False)
