"""The grounding scorer (``grounding=on``): every fact each answer states, judged without a judge.

Beside the rubric judge's ``physassist_scorer``, one ``Score`` per sample: ``value`` = the
session's grounded facts / facts stated (NaN when its answers state none); ``metadata["turns"]``
= per turn ``{turn, facts, grounded, contradicted, unsupported, verdicts: [{kind, fact, status,
where, line, seen}]}`` (``physassist.grounding.Grounding.as_dict``); the explanation lists each
turn's counts and every fact not grounded, with what the record holds instead. It reads only
the sample's input and the loop's turn records, so ``physassist-rescore`` grounds a stored log
without re-running the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from physassist.grounding import Grounding
from physassist.grounding.session import Call, Turn, ground_session
from physassist.metrics import grounding_summary
from physassist.turn_records import CallRecord, TurnRecord, stored_turns

#: Facts listed per turn in the score explanation (the metadata holds them all).
SHOWN = 12


def session_turns(records: Sequence[TurnRecord]) -> list[Turn]:
    """The loop's turn records as the grounding check reads them."""
    return [
        Turn(
            turn=r.turn,
            question=r.question,
            answer=r.answer,
            calls=_calls(r.calls),
            history=r.history,
            gold_calls=_calls(r.gold_calls),
        )
        for r in records
    ]


def _calls(calls: Sequence[CallRecord]) -> tuple[Call, ...]:
    return tuple(Call(c.name, c.text, c.raw_json) for c in calls)


def explanation(turns: Sequence[int], groundings: Sequence[Grounding]) -> str:
    """Per turn its counts, then each fact not grounded (``SHOWN`` at most)."""
    lines = []
    for turn, g in zip(turns, groundings, strict=True):
        lines.append(f"T{turn}: {g.summary()}")
        missed = [v for v in g.verdicts if v.status != "grounded"]
        lines += [f"  - {v.reason()}" for v in missed[:SHOWN]]
        if len(missed) > SHOWN:
            lines.append(f"  - ... {len(missed) - SHOWN} more in the score's metadata")
    return "\n".join(lines)


@metric
def grounding_metrics() -> Metric:
    """Facts stated, grounded % (points), contradicted and unsupported over every turn."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rows = []
        for s in scores:
            md = s.score.metadata or {}
            for turns in md.get("epochs") or [md.get("turns") or []]:
                rows += list(turns)
        summary = grounding_summary(rows)
        return {k.removeprefix("grounding."): v for k, v in summary.items()}

    return compute


@scorer(metrics=[grounding_metrics()])
def physassist_grounding() -> Scorer:
    """The grounding check of every answer of a session (``physassist.grounding``)."""

    async def score(state: TaskState, target: Target) -> Score:
        turns = session_turns(stored_turns(state.store))
        groundings = ground_session(state.input_text, turns)
        per_turn = [{"turn": t.turn, **g.as_dict()} for t, g in zip(turns, groundings, strict=True)]
        facts = sum(g.facts for g in groundings)
        grounded = sum(g.count("grounded") for g in groundings)
        return Score(
            value=grounded / facts if facts else math.nan,
            explanation=explanation([t.turn for t in turns], groundings),
            metadata={"turns": per_turn},
        )

    return score
