"""What the model keeps of tool results (the ``observations`` ablation).

* ``keep``: the rendered tool result stays in the conversation (the paper).
* ``removed``: every data-tool result is replaced by a fixed placeholder, so the model has to
  answer without seeing the data (measures how much answers rely on retrieved evidence).
* ``history_removed``: results are shown within a turn, but when a new turn starts the
  earlier turns' tool calls and tool results are dropped from the context; the physician
  questions and the assistant's answers stay (measures reliance on earlier evidence).

The raw FHIR result is always recorded in the turn record, whatever the model sees.
"""

from __future__ import annotations

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool

PLACEHOLDER = {
    "en": "[Tool result hidden in this experiment.]",
    "zh": "[本实验中隐藏了工具结果。]",
}


def seen_text(mode: str, rendered: str, language: str) -> str:
    """The text the model receives for one data-tool result."""
    return PLACEHOLDER[language] if mode == "removed" else rendered


def drop_tool_traffic(messages: list[ChatMessage]) -> list[ChatMessage]:
    """The conversation without tool calls and tool results (text is kept).

    An assistant message that only carried tool calls disappears; one that also carried
    text (e.g. an answer written alongside ``prepare_to_answer``) keeps its text.
    """
    kept: list[ChatMessage] = []
    for message in messages:
        if isinstance(message, ChatMessageTool):
            continue
        if isinstance(message, ChatMessageAssistant) and message.tool_calls:
            if not message.text.strip():
                continue
            message = message.model_copy(update={"tool_calls": None, "content": message.text})
        kept.append(message)
    return kept
