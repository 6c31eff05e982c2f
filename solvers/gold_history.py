"""The gold history (``history=gold``): turn t starts from the gold conversation of turns < t.

After each turn the model played, the loop adds that turn's gold exchange to the history the
next turn starts from: the physician's question (as this run asks it: implicit or explicit,
in its language), the gold tool calls executed against the store through the session's
toolbox (so their results are real, rendered and filtered by ``observations`` as the model's
own would be; the patient tools answer through the session's patient), then the gold answer.
The model's own earlier turns never reach a later one: what a turn scores is that turn's skill,
not errors carried over (paired with ``history=free``, the difference is the carry-over cost).
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, ChatMessageUser
from inspect_ai.tool import ToolCall

from physassist.data import Session
from physassist.ehr.tools import to_api_name
from physassist.turn_records import CallRecord
from physassist.vocab import PREPARE_TO_ANSWER

from .tools import SessionToolbox

__all__ = ["GoldHistory"]


class GoldHistory:
    """The gold conversation of the turns played so far, built turn by turn (``add``)."""

    def __init__(
        self,
        session: Session,
        language: str,
        explicit: bool,
        toolbox: SessionToolbox,
        set_allowed: Any,
    ) -> None:
        self.session = session
        self.language = language
        self.explicit = explicit
        self.toolbox = toolbox
        self._set_allowed = set_allowed
        self.messages: list[ChatMessage] = []
        self.calls = 0

    async def add(self, turn: int) -> list[CallRecord]:
        """Append turn ``turn``'s gold exchange, executing its gold tool calls (offered for the
        time of the calls: the menu of the turn the model played may not hold them); returns
        the call records (``gold_calls`` of the turn record)."""
        actions = [
            item.get("action") or {}
            for item in self.session.gold_actions(turn, self.language)
            if (item.get("action") or {}).get("name") not in (None, PREPARE_TO_ANSWER)
        ]
        names = [str(a["name"]) for a in actions]
        self._set_allowed(frozenset(names))
        records = [
            await self.toolbox.call(str(a["name"]), dict(a.get("arguments") or {})) for a in actions
        ]
        question = self.session.question(turn, self.language, explicit=self.explicit)
        exchange: list[ChatMessage] = [ChatMessageUser(content=question)]
        if records:
            calls = [
                ToolCall(
                    id=f"gold_{turn}_{i}", function=to_api_name(r.name), arguments=dict(r.arguments)
                )
                for i, r in enumerate(records)
            ]
            exchange.append(ChatMessageAssistant(content="", tool_calls=calls))
            exchange += [
                ChatMessageTool(content=r.text, tool_call_id=c.id, function=c.function)
                for c, r in zip(calls, records, strict=True)
            ]
        exchange.append(ChatMessageAssistant(content=self.session.gold_answer(turn, self.language)))
        self.messages += exchange
        self.calls += len(records)
        return records

    def notice(self, turn: int) -> str:
        """What the transcript says at the start of a turn given the gold history."""
        return (
            f"Turn {turn} starts from the gold history (history=gold): the gold questions and "
            f"answers of turns 0-{turn - 1} and their {self.calls} gold tool call(s), executed "
            "against the store; not the model's own earlier turns."
        )
