"""The session scorer: judges each physician turn of a sample and returns one Score.

Score (ARCHITECTURE.md §5): `value` = mean over the scored turns (NaN when none was
scored); `metadata["turns"]` = per turn {turn, score (None = unscored), items [{passed,
reason}], judge, status scored|undecided|failed, error, end, n_calls, tools, gold_tools};
`metadata["taus"]`, `["judge"]`, `["graders"]` (the judge's `Judge.graders`), `["context"]` record
the options so metrics and traces can read them.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from inspect_ai.model import Model, get_model, model_roles
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from physassist.faults import ERROR_STATUS
from physassist.options import check
from physassist.turn_records import TurnRecord, stored_turns
from physassist.vocab import PREPARE_TO_ANSWER
from scorers.grader import Grader
from scorers.judgement import Graders, TurnInput, TurnJudgement, combined
from scorers.judges import JUDGES
from scorers.metrics import physassist_metrics
from scorers.session_view import SessionView


def validate_options(
    judge: str, context: str, taus: Sequence[float], max_attempts: int, repeats: int = 1
) -> None:
    """Fail early, naming the option, on a bad scorer configuration (``physassist.options``)."""
    check("judge", judge)
    check("judge_repeats", repeats)
    check("judge_context", context)
    check("taus", list(taus))
    if max_attempts < 1:
        raise ValueError(f"scorer option max_attempts must be >= 1, got {max_attempts}")


def _question(session: SessionView, turn: int, language: str, query: str) -> str:
    """Fallback question text when the loop recorded none (e.g. it never reached the turn)."""
    try:
        return session.question(turn, language, explicit=query == "explicit")
    except ValueError:
        return ""


def turn_inputs(metadata: dict[str, Any], records: Sequence[TurnRecord]) -> list[TurnInput]:
    """Build the judges' view of every turn from sample metadata and the loop's records.

    A turn the loop never recorded is judged as an empty reply with no calls (end "missing"):
    the assistant did not answer it, which is the assistant's failure, not the judge's.
    """
    if "session" not in metadata:
        raise ValueError("sample metadata has no 'session' (see ARCHITECTURE.md §6)")
    session = SessionView(metadata["session"])
    language = str(metadata.get("language", "en"))
    query = str(metadata.get("query", "implicit"))
    by_turn = {r.turn: r for r in records}
    history: list[dict[str, str]] = []
    out = []
    for turn in range(session.n_rubric_turns()):
        rec = by_turn.get(turn)
        if rec is None:
            rec = TurnRecord(turn, _question(session, turn, language, query), end="missing")
        elif not rec.question:
            rec = replace(rec, question=_question(session, turn, language, query))
        out.append(
            TurnInput(
                session=session,
                language=language,
                record=rec,
                items=session.rubric(turn, language),
                checks=session.rubric_checks(turn),
                history=list(history),
            )
        )
        # what the next turn was given: its own answer, or the gold one (history=gold)
        given = session.gold_answer(turn, language) if rec.history == "gold" else rec.answer
        history += [
            {"role": "user", "content": rec.question},
            {"role": "assistant", "content": given},
        ]
    return out


def turn_metadata(ti: TurnInput, judgement: TurnJudgement) -> dict[str, Any]:
    called = [c.name for c in ti.calls if c.name != PREPARE_TO_ANSWER]
    repeats = {"judge_scores": list(judgement.repeat_scores)} if judgement.repeat_scores else {}
    return {
        "turn": ti.turn,
        "score": judgement.score,
        "items": [i.as_dict() for i in judgement.items],
        "judge": judgement.judge,
        "status": judgement.status,
        "error": judgement.error,
        "error_kind": judgement.error_kind,
        "end": ti.end,
        "n_calls": len(called),
        "tools": list(dict.fromkeys(called)),
        "gold_tools": ti.session.gold_tools(ti.turn),
        **repeats,
    }


_VERDICT = {True: "pass", False: "fail", None: "undecided"}


def _explanation(inputs: Sequence[TurnInput], turns: list[dict[str, Any]]) -> str:
    """Each turn's score, then each rubric item's verdict with the judge's reason: what a
    reader of Inspect View wants from a sample (Markdown: a list per turn)."""
    lines = []
    for ti, t in zip(inputs, turns, strict=False):
        passed = sum(1 for i in t["items"] if i["passed"] is True)
        score = "unscored" if t["score"] is None else f"{t['score']:.2f}"
        lines.append(
            f"**T{t['turn']}** {score} ({passed}/{len(t['items'])} items, {t['status']}, "
            f"{t['end']})\n"
        )
        for k, (text, item) in enumerate(zip(ti.items, t["items"], strict=False), start=1):
            reason = f" ({item['reason']})" if item.get("reason") else ""
            lines.append(f"- {k}. {_VERDICT.get(item['passed'], item['passed'])}: {text}{reason}")
        lines.append("")
    return "\n".join(lines).strip()


def _grader_models(
    grader: Sequence[str | Model] | str | Model | None, name: str, graders: Graders
) -> list[Model]:
    """The models a judge grades with (``Judge.graders``): none; one (the given one, else the
    role ``grader``); a list of at least two (the given ones, else every model of the role)."""
    if graders == "none":
        return []
    if graders == "one":
        if grader is None:
            return [get_model(role="grader", required=True)]
        if isinstance(grader, str | Model):
            return [get_model(grader)]
        raise ValueError(f"judge={name} grades with one model, got {len(grader)}")
    if grader is None:
        bound = model_roles().get("grader")
        models = bound if isinstance(bound, list) else [bound] if bound is not None else []
    elif isinstance(grader, str | Model):
        models = [get_model(grader)]
    else:  # a list (or tuple) of them
        models = [get_model(g) for g in grader]
    if len(models) < 2:
        raise ValueError(
            f"judge={name} needs at least two graders (role 'grader' bound to a list), got "
            f"{len(models)}"
        )
    return list(models)


@scorer(metrics=[physassist_metrics()])
def physassist_scorer(
    judge: str = "rules",
    context: str = "gold_answer",
    taus: Sequence[float] = (0.6, 0.75),
    grader: str | Model | Sequence[str | Model] | None = None,
    max_attempts: int = 3,
    max_tokens: int = 2000,
    structured: bool = False,
    repeats: int = 1,
) -> Scorer:
    """Score a PhysAssistBench session turn by turn.

    Args:
        judge: a judge of ``scorers.judges.JUDGES`` (`rules`, `llm`, `panel`; one module
            each, see its ``JUDGE``).
        context: llm judge context, `gold_answer` (reference behaviour) or `evidence`.
        taus: pass thresholds, recorded for the metrics.
        grader: grader model (a list for a judge of several graders); default the model(s)
            bound to role `grader`.
        max_attempts: grader calls per turn before the turn counts as failed.
        max_tokens: grader reply budget.
        structured: request the verdict through structured output (`ResponseSchema`).
        repeats: judgings per turn (``judge.repeats``): the score is their mean, each one is
            kept (``judge_scores``) for the judge's share of the variance
            (``physassist.noise``); one that fails leaves the turn unscored.
    """
    taus = tuple(float(t) for t in taus)
    validate_options(judge, context, taus, max_attempts, repeats)

    def judged(ti: TurnInput) -> TurnJudgement | None:
        """A turn a system fault ended is not judged: unscored with the fault as its reason."""
        if ti.end != ERROR_STATUS:
            return None
        return TurnJudgement.fault(len(ti.items), judge, ti.error or "system fault (no message)")

    async def score(state: TaskState, target: Target) -> Score:
        inputs = turn_inputs(state.metadata, stored_turns(state.store))
        spec = JUDGES[judge]
        graders = [
            Grader(m, max_attempts, max_tokens, structured)
            for m in _grader_models(grader, judge, spec.graders)
        ]

        async def judge_one(ti: TurnInput) -> TurnJudgement:
            fault = judged(ti)
            if fault is not None:
                return fault
            return combined(
                await asyncio.gather(
                    *(spec.judge_turn(ti, graders, context) for _ in range(repeats))
                )
            )

        judgements = list(await asyncio.gather(*(judge_one(ti) for ti in inputs)))
        turns = [turn_metadata(ti, j) for ti, j in zip(inputs, judgements, strict=True)]
        scored = [t["score"] for t in turns if t["score"] is not None]
        value = sum(scored) / len(scored) if scored else math.nan
        statuses = {t["status"] for t in turns}
        return Score(
            value=value,
            answer="\n\n".join(
                f"T{ti.turn}: {ti.answer}" for ti in inputs
            ),  # each turn's final answer
            explanation=_explanation(inputs, turns),
            reason=None
            if scored
            else "system_fault"
            if ERROR_STATUS in statuses
            else "grader_failed"
            if "failed" in statuses
            else "undecided",
            metadata={
                "turns": turns,
                "taus": list(taus),
                "judge": judge,
                "graders": spec.graders,
                "context": context,
                "repeats": repeats,
            },
        )

    return score
