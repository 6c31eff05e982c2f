"""Physician questions: stage 1 explicit, stage 2 implicit rewrite by subtype.

The subtype is recorded only when the rewrite really changed the question (docs/generation.md#subtypes). A
rewrite that drifts off topic (no content word shared with the explicit question) is
replaced by a predicate-ellipsis fragment built from the explicit question's topic words,
or, when none can be built, by the explicit question with no subtype.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from physassist.vocab import INFORMATION_LOOKUP as IL
from physassist.vocab import SUBTYPES
from physassist.vocab import WRITE_UPDATE as WU

from .llm import Caller, need_str
from .planner import PlanTurn

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9\-]+")
STOPWORDS = frozenset(
    """
a an and any are as at be been being but by can could did do does for from had has have he her
here his how i if in into is it its just let me more most my no not now of on or our she should
so some than that the their them then there these they this those to up was we were what when
where which while who why will with would you your yet again still also any all about over
get got give check look pull show tell see want need know please okay ok like latest last
current recent now today anything something
""".split()
)


@dataclass(frozen=True)
class Rewrite:
    implicit: str
    subtype: str | None
    fallback: str | None  # None, "pe_fragment" or "explicit"


def content_words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in STOPWORDS and len(w) > 2}


def choose_subtype(
    turn: int, task_type: str, prior_entities: set[str], used: dict[str, int], rng: random.Random
) -> str | None:
    """T0 and Write/Update stay explicit; NA needs an earlier entity; AE is never on IL and
    needs two earlier turns. The least-used feasible subtype wins (seeded tie-break)."""
    if turn == 0 or task_type == WU:
        return None
    feasible = [
        s
        for s in SUBTYPES
        if (s != "NA" or prior_entities) and (s != "AE" or (task_type != IL and turn >= 2))
    ]
    low = min(used.get(s, 0) for s in feasible)
    return rng.choice([s for s in feasible if used.get(s, 0) == low])


def pe_fragment(explicit: str, plan: PlanTurn) -> str | None:
    """'Creatinine?': the plan's entities that the explicit question names, as a fragment."""
    words = content_words(explicit)
    named = [e for e in plan.entities if content_words(e) and content_words(e) <= words]
    if not named:
        return None
    return " and ".join(named[:2]).capitalize() + "?"


def settle(explicit: str, rewritten: str, subtype: str | None, plan: PlanTurn) -> Rewrite:
    """Apply the drift fallback and record the subtype only for a real rewrite."""
    rewritten = rewritten.strip()
    fallback = None
    if not (content_words(rewritten) & content_words(explicit)):
        fragment = pe_fragment(explicit, plan)
        rewritten, subtype, fallback = (
            (fragment, "PE", "pe_fragment") if fragment else (explicit, None, "explicit")
        )
    if rewritten.strip().lower() == explicit.strip().lower():
        return Rewrite(explicit, None, fallback)
    return Rewrite(rewritten, subtype, fallback)


async def explicit_question(
    caller: Caller, plan: PlanTurn, turn: int, history: list[dict[str, str]], rejected: list[str]
) -> str:
    payload: dict[str, Any] = {
        "turn": turn,
        "task_type": plan.task_type,
        "topic": plan.topic,
        "tool_hint": plan.tool_hint,
        "tool_source": plan.source,
        "entities": list(plan.entities),
        "history": history,
        "rejected": rejected,
    }
    return need_str(
        await caller.ask("user", "question", payload, temperature=0.8), "question", "question"
    )


async def implicit_question(
    caller: Caller,
    explicit: str,
    subtype: str | None,
    plan: PlanTurn,
    history: list[dict[str, str]],
) -> Rewrite:
    if subtype is None:
        return Rewrite(explicit, None, None)
    payload = {
        "question": explicit,
        "subtype": subtype,
        "task_type": plan.task_type,
        "history": history,
    }
    reply = await caller.ask("user", "rewrite", payload, temperature=0.3)
    return settle(explicit, need_str(reply, "question", "rewrite"), subtype, plan)
