"""``submit``: the answer is the ``answer`` argument of a ``submit`` tool call.

A ``submit`` call with an empty or missing answer leads to the nudge; a plain reply without
tool calls ends the turn with its text (as in the other strategies).
"""

from __future__ import annotations

from inspect_ai.model import ChatMessageAssistant

from .base import ControlTool, Decision, TerminalStrategy, _text


class Submit(TerminalStrategy):
    name = "submit"
    control = ControlTool(
        "submit",
        "Submit your final answer to the physician's current question. "
        "The argument is the complete answer the physician will read.",
        {
            "type": "object",
            "properties": {
                "answer": {
                    "type": "string",
                    "description": "The complete final answer to the physician.",
                }
            },
            "required": ["answer"],
        },
        reply="Answer received.",
    )

    def decide(self, message: ChatMessageAssistant) -> Decision:
        calls = message.tool_calls or []
        if not calls:
            return Decision(True, _text(message))
        for call in calls:
            if call.function == self.control.name:
                answer = (call.arguments or {}).get("answer")
                if isinstance(answer, str) and answer.strip():
                    return Decision(True, answer.strip())
                return Decision(True, None)
        return Decision(False)
