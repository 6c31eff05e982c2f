"""The LLM rubric judge (``judge=llm``): one grader model judges every item of a turn pass/fail
with a reason (``scorers.grader``: one call, asked again on an invalid verdict); Write/Update
turns go to ``write_judge``.

Judge context (`context`):
- `gold_answer`: the reference behaviour: the gold answer is the verification material and
  the gold conversation is the history.
- `evidence`: the gold tool observations of the turn plus the observations the assistant
  actually retrieved, and the assistant's own earlier answers as history.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from physassist.options import check
from scorers import write_judge
from scorers.grader import NAME, Grader, format_history, history_for, numbered, prompt
from scorers.judgement import Judge, TurnInput, TurnJudgement

MAX_OBSERVATION_CHARS = 4000
MAX_EVIDENCE_CHARS = 40000


def render_observation(raw: Any) -> str:
    """Full text rendering of a tool result (the EHR layer's `full` renderer for a dict)."""
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, dict):
        from physassist.ehr.tools import render as render_result  # DuckDB's tools: not for the CLI

        try:
            text = render_result(raw, "full")
        except Exception:  # a renderer bug must not lose the evidence: fall back to JSON
            text = json.dumps(raw, ensure_ascii=False, default=str)
    else:
        text = json.dumps(raw, ensure_ascii=False, default=str)
    if len(text) > MAX_OBSERVATION_CHARS:
        text = (
            text[:MAX_OBSERVATION_CHARS]
            + f"\n... ({len(text) - MAX_OBSERVATION_CHARS} more characters)"
        )
    return text


def _call_line(name: str, arguments: dict[str, Any]) -> str:
    args = {k: v for k, v in (arguments or {}).items() if k not in ("subject_id", "hadm_id")}
    return f"{name}({json.dumps(args, ensure_ascii=False, default=str)})"


def evidence_block(ti: TurnInput) -> str:
    """Gold observations of the turn, then what the assistant retrieved, capped in length.

    A retrieved result identical to a reference one is listed by its call only, so the
    grader does not read the same data twice.
    """
    parts = ["### Reference observations (retrieved when the question was written)"]
    gold = ti.session.gold_calls(ti.turn, ti.language)
    gold_texts = set()
    for c in gold:
        text = render_observation(c["observation"])
        gold_texts.add(text)
        parts.append(f"- {_call_line(c['name'], c['arguments'])}\n{text}")
    if not gold:
        parts.append("(none)")
    parts.append("### Observations the assistant retrieved")
    mine = ti.calls  # everything the assistant saw, including OperationOutcomes
    for call in mine:
        line = _call_line(call.name, call.arguments)
        text = render_observation(call.raw)
        if text in gold_texts:
            parts.append(f"- {line}\n(same result as a reference observation above)")
        else:
            parts.append(f"- {line}\n{text}")
    if not mine:
        parts.append("(the assistant retrieved nothing in this turn)")
    text = "\n".join(parts)
    if len(text) > MAX_EVIDENCE_CHARS:
        text = text[:MAX_EVIDENCE_CHARS] + "\n... (evidence truncated)"
    return text


def rubric_prompt(ti: TurnInput, context: str) -> tuple[str, str]:
    """(system, user) messages for a non-write turn."""
    if context == "gold_answer":
        title = "Reference answer (for checking facts)"
        material = ti.session.gold_answer(ti.turn, ti.language) or "(no reference answer available)"
    elif context == "evidence":
        title = "EHR and patient evidence (for checking facts)"
        material = evidence_block(ti)
    else:
        check("judge_context", context)  # raises: not a judge context
    user = prompt("rubric_user").substitute(
        question=ti.question,
        history=format_history(history_for(ti, context)),
        context_title=title,
        context=material,
        answer=ti.answer.strip() or "(empty reply)",
        n_items=len(ti.items),
        items=numbered(ti.items),
    )
    return prompt("rubric_system").template, user


async def judge_turn(ti: TurnInput, grader: Grader, context: str = "gold_answer") -> TurnJudgement:
    """Judge a non-write turn with the grader model."""
    return await grader.grade(ti, *rubric_prompt(ti, context))


async def grade_turn(ti: TurnInput, grader: Grader, context: str = "gold_answer") -> TurnJudgement:
    """One grader's judgement of any turn: the write judge on Write/Update turns, else this one."""
    if ti.is_write:
        return await write_judge.judge_turn(ti, grader, context)
    return await judge_turn(ti, grader, context)


async def _judge_turn(ti: TurnInput, graders: Sequence[Grader], context: str) -> TurnJudgement:
    return await grade_turn(ti, graders[0], context)


JUDGE = Judge(NAME, "one grader model judges every rubric item pass/fail with a reason (the paper's judge: openai/gpt-5.4-mini); `judge.context`: `gold_answer` or `evidence`", "one", _judge_turn)
