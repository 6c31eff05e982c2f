"""A panel of graders: every grader judges the turn, each item takes the majority verdict.

For users who want a steadier judge than one model (HealthBench-style judges disagree by tens
of points on some categories). Per item, the verdicts of the graders that decided it are
counted; a strict majority decides, a tie leaves the item undecided (so the turn is unscored,
never guessed). A grader that failed on the turn (no valid verdict) casts no vote; when every
grader failed the turn is failed with their errors. A grader whose calls failed (a system
fault) makes the turn a fault: a panel missing a member is not the panel.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from physassist.faults import ERROR_STATUS
from scorers.grader import Grader
from scorers.judgement import ErrorKind, ItemResult, Judge, TurnInput, TurnJudgement
from scorers.llm_judge import grade_turn

NAME = "panel"


def combine(judgements: Sequence[TurnJudgement], n_items: int) -> TurnJudgement:
    """The panel's judgement from its graders' judgements of one turn (majority per item)."""
    faults = [j for j in judgements if j.status == ERROR_STATUS]
    if faults:
        errors = "; ".join(dict.fromkeys(j.error or "system fault" for j in faults))
        return TurnJudgement.fault(n_items, NAME, f"a panel grader failed: {errors}", "provider")
    voting = [j for j in judgements if j.status != "failed"]
    if not voting:
        errors = "; ".join(dict.fromkeys(j.error or "no verdict" for j in judgements))
        kinds = {j.error_kind for j in judgements}
        kind: ErrorKind | None = "unparseable" if kinds == {"unparseable"} else "provider" if kinds == {"provider"} else None
        return TurnJudgement.failed(n_items, NAME, f"every panel grader failed: {errors}", kind)
    items = []
    for index in range(n_items):
        votes = [p for p in (j.items[index].passed for j in voting) if p is not None]
        yes, no = sum(votes), len(votes) - sum(votes)
        passed = True if yes > no else False if no > yes else None
        tally = f"panel {yes} pass / {no} fail of {len(judgements)} graders"
        items.append(ItemResult(passed, tally if passed is not None else f"tie: {tally}"))
    return TurnJudgement.from_items(items, NAME)


async def judge_turn(ti: TurnInput, graders: Sequence[Grader], context: str = "gold_answer") -> TurnJudgement:
    """Judge the turn with every grader (the write judge on Write/Update turns), then combine."""
    judgements = await asyncio.gather(*(grade_turn(ti, g, context) for g in graders))
    return combine(judgements, len(ti.items))


JUDGE = Judge(NAME, "several grader models judge every item as `llm` does; each item takes the majority verdict, a tie leaves it undecided (the turn unscored, never guessed)", "many", judge_turn)
