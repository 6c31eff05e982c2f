"""What the offline agents share: reading the conversation, building replies, token counts.

The agents see only what any model sees (messages, offered tools, tool choice). They find
the session through the ``session_id: <key>`` line of the opening environment message
(the loop writes ``session_id``, or the entry ``id`` for released entries without one),
and the turn as the number of physician questions asked so far. A request with
``tool_choice="none"`` is the loop's final-answer nudge, whose temporary user message is
not a physician question.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.tool import ToolCall, ToolChoice, ToolInfo

from physassist.data import Session
from physassist.ehr.tools import from_api_name, tool_group

_KEY_LINE = re.compile(r"^\s*session_id:\s*(\S+)\s*$", re.MULTILINE)
_INT_LINE = r"^\s*{name}:\s*(\d+)\s*$"
_CJK = re.compile(r"[\u4e00-\u9fff]")


def estimate_tokens(text: str) -> int:
    """A local token estimate (about 4 characters per token; CJK one per character), so
    nothing reaches for a tokenizer download."""
    cjk = len(_CJK.findall(text))
    return max(1, cjk + (len(text) - cjk) // 4)


@lru_cache(maxsize=8)
def sessions_by_key(dataset: str) -> dict[str, Session]:
    """Sessions of ``dataset`` indexed by ``session_id`` and by entry ``id``: parsed, not
    validated again (the task validated what it asks about; the turn table and its pandera
    checks were ~0.2 s of CPU per run, done twice)."""
    from physassist.data.loader import parse_records, read_records

    index: dict[str, Session] = {}
    for session in parse_records(read_records(dataset)[0])[0]:
        index[session.id] = session
        if session.session_id:
            index.setdefault(session.session_id, session)
    return index


@dataclass
class Conversation:
    """What an offline agent reads from one ``generate`` request."""

    opening: str
    questions: list[str]  # physician questions so far (the last is the current turn)
    since_question: list[ChatMessage]  # assistant/tool messages after the current question
    nudged: bool

    @property
    def turn(self) -> int:
        return len(self.questions) - 1

    @property
    def question(self) -> str:
        return self.questions[-1] if self.questions else ""

    @property
    def language(self) -> str:
        return "zh" if _CJK.search(self.question) else "en"

    def value(self, name: str) -> int | None:
        match = re.search(_INT_LINE.format(name=name), self.opening, re.MULTILINE)
        return int(match.group(1)) if match else None

    @property
    def session_key(self) -> str | None:
        match = _KEY_LINE.search(self.opening)
        return match.group(1) if match else None

    def tool_results(self) -> list[str]:
        return [m.text for m in self.since_question if isinstance(m, ChatMessageTool)]

    def acted(self) -> bool:
        """Whether the agent already made tool calls in this turn."""
        return any(
            isinstance(m, ChatMessageAssistant) and m.tool_calls for m in self.since_question
        )


def read_conversation(messages: list[ChatMessage], tool_choice: ToolChoice) -> Conversation:
    users = [i for i, m in enumerate(messages) if isinstance(m, ChatMessageUser)]
    nudged = tool_choice == "none"
    if nudged and users:
        users = users[:-1]
    if not users:
        raise ValueError("offline agent: no user message in the conversation")
    opening = messages[users[0]].text
    question_idx = users[1:]
    questions = [messages[i].text for i in question_idx]
    last = question_idx[-1] if question_idx else users[0]
    end = len(messages) - (1 if nudged else 0)
    return Conversation(opening, questions, list(messages[last + 1 : end]), nudged)


def control_tools(tools: list[ToolInfo]) -> list[ToolInfo]:
    """The offered tools that are not data tools (read, patient, write): the terminal
    strategy's control tool."""
    return [t for t in tools if tool_group(from_api_name(t.name)) in (None, "control")]


def offered(tools: list[ToolInfo]) -> set[str]:
    return {t.name for t in tools}


def reply(
    model: str,
    text: str,
    calls: list[tuple[str, dict[str, Any]]],
    input_messages: list[ChatMessage],
) -> ModelOutput:
    """A ModelOutput with ``text`` and ``calls`` (API names), with usage always set."""
    tool_calls = [
        ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", function=name, arguments=args)
        for name, args in calls
    ]
    message = ChatMessageAssistant(content=text, tool_calls=tool_calls or None, model=model)
    tokens_in = sum(estimate_tokens(m.text) for m in input_messages)
    tokens_out = estimate_tokens(text + "".join(str(a) for _, a in calls))
    return ModelOutput(
        model=model,
        choices=[
            ChatCompletionChoice(
                message=message, stop_reason="tool_calls" if tool_calls else "stop"
            )
        ],
        usage=ModelUsage(
            input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out
        ),
    )


def finish(
    model: str, answer: str, tools: list[ToolInfo], conv: Conversation, messages: list[ChatMessage]
) -> ModelOutput:
    """Answer the turn the way the offered control tool asks for, read from its schema as a
    model would: a tool with an ``answer`` parameter takes the answer, any other control tool
    is called beside the answer text; without one the answer is plain text."""
    control = control_tools(tools)
    if conv.nudged or not control:
        return reply(model, answer, [], messages)
    tool = control[0]
    if "answer" in tool.parameters.properties:
        return reply(model, "", [(tool.name, {"answer": answer})], messages)
    arguments = {"answer_type": "tool"} if "answer_type" in tool.parameters.properties else {}
    return reply(model, answer, [(tool.name, arguments)], messages)
