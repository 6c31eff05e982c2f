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
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from physassist.grounding import Grounding
from physassist.grounding.session import Call, Turn, ground_session
from physassist.metrics import grounding_summary
from physassist.results import TURNS_KEY, call_raw_json

#: Facts listed per turn in the score explanation (the metadata holds them all).
SHOWN = 12


def session_turns(records: Sequence[Any]) -> list[Turn]:
    """The loop's turn records (``state.store[TURNS_KEY]``) as the grounding check reads them."""
    out = []
    for r in records or ():
        if not isinstance(r, Mapping) or "turn" not in r:
            continue
        out.append(
            Turn(
                turn=int(r["turn"]),
                question=str(r.get("question") or ""),
                answer=str(r.get("answer") or ""),
                calls=tuple(_calls(r.get("calls"))),
                history="gold" if r.get("history") == "gold" else "free",
                gold_calls=tuple(_calls(r.get("gold_calls"))),
            )
        )
    return out


def _calls(calls: Any) -> list[Call]:
    return [
        Call(str(c.get("name")), str(c.get("text") or ""), call_raw_json(c))
        for c in calls or ()
        if isinstance(c, Mapping)
    ]


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
        turns = session_turns(state.store.get(TURNS_KEY, []) or [])
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
