"""A session's answers grounded turn by turn, each against what the assistant had received by
then.

Turn ``t``'s evidence is the opening message, the questions of turns ``0..t`` and the tool
results the assistant received: with the model's own history (``free``) its calls of turns
``0..t``; from the gold history (``gold``) the gold calls of turns ``0..t-1`` as executed for
that history, then its own calls of turn ``t``. A result received is evidence from then on,
also when the ``observations`` option later drops it from the conversation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from physassist.grounding import Grounding, Source, ground
from physassist.grounding.evidence import Record

__all__ = ["Call", "Turn", "ground_session"]


@dataclass(frozen=True)
class Call:
    """One executed tool call as the check reads it: its name, the text the model saw, the raw
    result (an object or its JSON text)."""

    name: str
    text: str
    raw: Any = None


@dataclass(frozen=True)
class Turn:
    """One turn: the question asked, the answer given, the calls the model made; ``history``
    the conversation it started from, ``gold_calls`` this turn's gold calls as executed for
    the gold history of the turns after it (``history=gold``)."""

    turn: int
    question: str
    answer: str
    calls: Sequence[Call] = ()
    history: Literal["free", "gold"] = "free"
    gold_calls: Sequence[Call] = ()


def _tools(calls: Sequence[Call], turn: int, gold: bool = False) -> list[Source]:
    return [
        Source("tool", c.text, turn=turn, call=i, tool=c.name, gold=gold, raw=c.raw)
        for i, c in enumerate(calls, start=1)
    ]


def ground_session(opening: str, turns: Sequence[Turn]) -> list[Grounding]:
    """The grounding of every turn's answer, in the order of ``turns``."""
    questions = {t.turn: Source("question", t.question, turn=t.turn) for t in turns}
    own = {t.turn: _tools(t.calls, t.turn) for t in turns}
    gold = {t.turn: _tools(t.gold_calls, t.turn, gold=True) for t in turns}
    start = [Source("opening", opening)] if opening else []
    every = [
        *start,
        *questions.values(),
        *(s for c in own.values() for s in c),
        *(s for c in gold.values() for s in c),
    ]
    record = Record(every)
    out = []
    for t in turns:
        earlier = sorted(n for n in questions if n < t.turn)
        received = gold if t.history == "gold" else own
        sources = [
            *start,
            *(questions[n] for n in [*earlier, t.turn]),
            *(s for n in earlier for s in received[n]),
            *own[t.turn],
        ]
        out.append(ground(t.answer, record.evidence(sources)))
    return out
