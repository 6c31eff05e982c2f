"""``physassist/oracle``: replays each turn's gold tool calls, then gives the gold answer.

Per turn: the first request gets all gold tool calls of the turn (those offered in the
menu; ``prepare_to_answer`` excluded) as real tool calls in one message, executed by the
loop through the real tools; the next request gets the gold answer, delivered as the
terminal strategy asks (text with ``prepare_to_answer``, the ``submit`` argument, or plain
text). The gold comes from the session found by the ``session_id`` line of the opening
message in the sessions of ``-M dataset=...`` (default ``sample``); see ``_common``.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from physassist.data import Session
from physassist.ehr.tools import to_api_name

from ._common import finish, offered, read_conversation, reply, sessions_by_key

PREPARE = "prepare_to_answer"


class OracleAgent:
    """Gold-trajectory replay (an upper bound for the harness and the judges)."""

    def __init__(self, model_name: str = "oracle", dataset: str = "sample", **_: Any) -> None:
        self.model_name = model_name
        self.dataset = str(dataset)

    async def act(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        key = conv.session_key
        session = sessions_by_key(self.dataset).get(key or "")
        if session is None:
            raise ValueError(
                f"physassist/oracle: session {key!r} (from the opening message) is not in "
                f"dataset {self.dataset!r}; pass -M dataset=<the task's dataset>"
            )
        turn = conv.turn
        if turn < 0:
            return reply(self.model_name, "Ready.", [], input)
        language = conv.language if session.has_language(conv.language) else "en"
        names = offered(tools)
        if not conv.acted() and not conv.nudged:
            calls = []
            for item in session.gold_actions(turn, language):
                action = item.get("action") or {}
                name = to_api_name(str(action.get("name")))
                if action.get("name") != PREPARE and name in names:
                    calls.append((name, dict(action.get("arguments") or {})))
            if calls:
                return reply(self.model_name, "", calls, input)
        return finish(self.model_name, self.answer(session, turn, language), tools, conv, input)

    def answer(self, session: Session, turn: int, language: str) -> str:
        """The turn's final answer: the gold one."""
        return str(session.gold_answer(turn, language))
