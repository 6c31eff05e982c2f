"""The interface a terminal strategy implements."""

from __future__ import annotations

from dataclasses import dataclass

from inspect_ai.model import ChatMessageAssistant


@dataclass(frozen=True)
class Decision:
    """What one assistant reply means for the turn.

    ``finished`` ends the turn's tool loop; ``answer`` is the answer it carries, or
    ``None`` when the turn ended without one (the loop then nudges for a final answer).
    """

    finished: bool
    answer: str | None = None


class TerminalStrategy:
    """Base: a reply without tool calls ends the turn with its text as the answer."""

    name: str = ""
    control_tool: str | None = None  # dotted name of the control tool offered, if any

    def decide(self, message: ChatMessageAssistant) -> Decision:
        if not message.tool_calls:
            return Decision(True, _text(message))
        return Decision(False)


def _text(message: ChatMessageAssistant) -> str | None:
    text = message.text.strip()
    return text or None
