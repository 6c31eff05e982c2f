"""What a judge sees of one turn, what it returns, and what a judge is (``Judge``).

The judges are plain functions of a `TurnInput`, so they are testable without an eval.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from physassist.faults import ERROR_STATUS
from physassist.turn_records import CallRecord, TurnRecord
from scorers.session_view import WRITE_TASK, WRITE_TOOLS, SessionView

#: `error`: a system fault ended the turn or the grader's calls (`physassist.faults`); `failed`:
#: the grader never gave a valid verdict; `undecided`: a rule could not decide.
Status = Literal["scored", "undecided", "failed", "error"]
#: Why a judge failed: its replies never parsed as a verdict, or the grader call itself failed.
ErrorKind = Literal["unparseable", "provider"]
#: What the model role ``grader`` must be bound to for a judge: nothing, one model (the judge
#: config's ``model``), or a list of at least two (its ``models``).
Graders = Literal["none", "one", "many"]


@dataclass(frozen=True)
class TurnInput:
    """One physician turn as the judges need it: the loop's record of it (a turn the loop
    never reached: an empty reply, end ``missing``), the session, the rubric."""

    session: SessionView
    language: str
    record: TurnRecord
    items: list[str]
    checks: list[dict[str, Any] | None]
    history: list[dict[str, str]] = field(
        default_factory=list
    )  # the earlier turns it was given (own, or gold)

    @property
    def turn(self) -> int:
        return self.record.turn

    @property
    def question(self) -> str:
        return self.record.question

    @property
    def answer(self) -> str:
        return self.record.answer

    @property
    def calls(self) -> tuple[CallRecord, ...]:
        return self.record.calls

    @property
    def end(self) -> str:
        return self.record.end

    @property
    def error(self) -> str | None:
        """The system fault that ended the turn (end ``error``)."""
        return self.record.error

    @property
    def task_type(self) -> str:
        return self.session.task_type(self.turn)

    @property
    def is_write(self) -> bool:
        return self.task_type == WRITE_TASK

    def executed_calls(self) -> list[CallRecord]:
        """Calls that ran: refused or malformed calls come back as an OperationOutcome or error."""
        return [c for c in self.calls if not c.refused]

    def write_calls(self) -> list[CallRecord]:
        return [c for c in self.executed_calls() if c.name in WRITE_TOOLS]


@dataclass(frozen=True)
class ItemResult:
    passed: bool | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "reason": self.reason}


@dataclass(frozen=True)
class TurnJudgement:
    """A judged turn. `score` is None unless every item was decided and judging succeeded."""

    items: list[ItemResult]
    judge: str
    status: Status
    error: str | None = None
    error_kind: ErrorKind | None = None
    #: With ``judge.repeats`` > 1, each judging's score: the turn's score is their mean.
    repeat_scores: tuple[float, ...] = ()

    @property
    def score(self) -> float | None:
        if self.status != "scored" or not self.items:
            return None
        if self.repeat_scores:
            return sum(self.repeat_scores) / len(self.repeat_scores)
        return sum(1 for i in self.items if i.passed) / len(self.items)

    @classmethod
    def from_items(cls, items: list[ItemResult], judge: str) -> TurnJudgement:
        status: Status = "undecided" if any(i.passed is None for i in items) else "scored"
        return cls(items=items, judge=judge, status=status)

    @classmethod
    def failed(
        cls, n_items: int, judge: str, error: str, kind: ErrorKind | None = None
    ) -> TurnJudgement:
        return cls(
            items=[ItemResult(None, f"judge failed: {error}")] * n_items,
            judge=judge,
            status="failed",
            error=error,
            error_kind=kind,
        )

    @classmethod
    def fault(
        cls, n_items: int, judge: str, error: str, kind: ErrorKind | None = None
    ) -> TurnJudgement:
        """Unscored because the system failed (not the model, not the judge's verdict)."""
        return cls(
            items=[ItemResult(None, f"system fault: {error}")] * n_items,
            judge=judge,
            status=ERROR_STATUS,
            error=error,
            error_kind=kind,
        )


#: Which unscored status a turn judged several times keeps: the gravest of its judgings'.
_GRAVITY: dict[Status, int] = {"scored": 0, "undecided": 1, "failed": 2, "error": 3}


def combined(judgements: Sequence[TurnJudgement]) -> TurnJudgement:
    """One turn judged several times (``judge.repeats``) as one judgement.

    Scored only when every judging is: one that failed, erred or left an item undecided leaves
    the turn unscored with that status and its error (a repeat never turns a fault into a
    score). A scored turn's score is the judgings' mean (``repeat_scores``); each item keeps
    the majority verdict (a tie is undecided), for the traces and agreement."""
    if len(judgements) == 1:
        return judgements[0]
    worst = max(judgements, key=lambda j: _GRAVITY[j.status])
    if worst.status != "scored":
        return worst
    items = []
    for verdicts in zip(*(j.items for j in judgements), strict=True):
        passed = sum(1 for v in verdicts if v.passed)
        failed = len(verdicts) - passed
        verdict = None if passed == failed else passed > failed
        items.append(
            ItemResult(
                verdict,
                f"{passed} of {len(verdicts)} judgings pass it; first: {verdicts[0].reason}",
            )
        )
    scores = tuple(float(j.score) for j in judgements if j.score is not None)
    return TurnJudgement(items=items, judge=worst.judge, status="scored", repeat_scores=scores)


@dataclass(frozen=True)
class Judge:
    """One value of the ``judge`` option, declared by its module in ``scorers/`` as ``JUDGE``
    (``scorers.judges`` registers it): the scorer calls ``judge_turn(turn, graders, context)``
    on every turn a fault did not end, with the ``scorers.grader.Grader`` s its ``graders``
    asks for (none, one, or a list); the CLI binds the role ``grader`` from the same field."""

    name: str
    summary: str  # one line of the judges table (docs/config.md) (``python -m scorers.judges``)
    graders: Graders
    judge_turn: Callable[[TurnInput, Sequence[Any], str], Awaitable[TurnJudgement]]
