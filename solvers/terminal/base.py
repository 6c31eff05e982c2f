"""The interface a terminal strategy implements, and the control tool a strategy owns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from inspect_ai.model import ChatMessageAssistant

from ..prompting import prompt_text


@dataclass(frozen=True)
class ControlTool:
    """A tool that steers the loop instead of reading or writing the record.

    ``schema`` is the OpenAI function object offered when the session's own ``tools`` list has
    none for ``name``; ``reply`` is what the tool returns to the model.
    """

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})
    reply: str = ""

    @property
    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class Decision:
    """What one assistant reply means for the turn.

    ``finished`` ends the turn's tool loop; ``answer`` is the answer it carries, or
    ``None`` when the turn ended without one (the loop then nudges for a final answer).
    """

    finished: bool
    answer: str | None = None


class TerminalStrategy:
    """Base: a reply without tool calls ends the turn with its text as the answer.

    A subclass in its own module of this package is registered under its ``name``.
    """

    name: str = ""
    control: ControlTool | None = None  # the control tool offered, if any

    def rule(self, language: str) -> str:
        """The system prompt's rule for finishing a turn
        (``prompts/terminal_<name>_<lang>.txt``)."""
        return prompt_text(f"terminal_{self.name}", language)

    def decide(self, message: ChatMessageAssistant) -> Decision:
        if not message.tool_calls:
            return Decision(True, _text(message))
        return Decision(False)


def _text(message: ChatMessageAssistant) -> str | None:
    text = message.text.strip()
    return text or None
