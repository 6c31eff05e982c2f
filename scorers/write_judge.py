"""Write/Update turns: the order the assistant actually executed, judged against the rubric.

Follows the reference's design (docs/reference.md#writeupdate-judge) with its bugs fixed: the
configured grader is used (not a generation model), verdicts are parsed strictly (a "0"
string is not a pass; no padding), and when no write call was executed, every item that
carries a `write_arg`/`write_call` check fails without asking the grader. When all items
are decided that way, no grader call is made.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from physassist.turn_records import CallRecord
from scorers.grader import NAME, Grader, format_history, history_for, numbered, prompt
from scorers.judgement import ItemResult, TurnInput, TurnJudgement

_PARAMETER_KINDS = frozenset({"write_arg", "write_call"})
NO_CALL_REASON = "no write call was executed, so the order parameter cannot be satisfied"


def format_write_calls(calls: Sequence[CallRecord]) -> str:
    """Executed write calls as `name` plus their non-empty arguments (ids left out)."""
    if not calls:
        return "(no write tool calls were executed)"
    lines = []
    for i, call in enumerate(calls, start=1):
        args = {
            k: v
            for k, v in call.arguments.items()
            if k not in ("subject_id", "hadm_id") and v not in (None, "", [], {})
        }
        lines.append(f"{i}. {call.name} {json.dumps(args, ensure_ascii=False, default=str)}")
    return "\n".join(lines)


def forced_failures(ti: TurnInput) -> dict[int, ItemResult]:
    """Items decided without the grader: parameter items when no write call was executed."""
    if ti.write_calls():
        return {}
    return {
        i: ItemResult(False, NO_CALL_REASON)
        for i, check in enumerate(ti.checks)
        if check is not None and check.get("kind") in _PARAMETER_KINDS
    }


def write_prompt(ti: TurnInput, context: str) -> tuple[str, str]:
    gold = ti.session.gold_write_params(ti.turn)
    user = prompt("write_user").substitute(
        question=ti.question,
        history=format_history(history_for(ti, context)),
        context=ti.session.gold_answer(ti.turn, ti.language) or "(none)",
        gold_params=json.dumps(gold, ensure_ascii=False, indent=1, default=str)
        if gold
        else "(none recorded)",
        write_calls=format_write_calls(ti.write_calls()),
        n_items=len(ti.items),
        items=numbered(ti.items),
    )
    return prompt("write_system").template, user


async def judge_turn(ti: TurnInput, grader: Grader, context: str = "gold_answer") -> TurnJudgement:
    """Judge a Write/Update turn on its executed write-call arguments."""
    forced = forced_failures(ti)
    if len(forced) == len(ti.items):
        return TurnJudgement.from_items([forced[i] for i in range(len(ti.items))], NAME)
    return await grader.grade(ti, *write_prompt(ti, context), decided=forced)
