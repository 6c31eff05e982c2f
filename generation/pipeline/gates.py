"""The three quality gates of a generated turn.

Gate 1: rule checks of the plan (docs/generation.md#gates), then an LLM check.
Gate 2: every executed call returned something usable.
Gate 3: an LLM clinical check of the answer against the tool results and the record at the
cutoff (each result's ``record``, the admission's ``course``: ``physassist.timeline``); a
checker that errors or replies off-format fails the turn (the reference counted that as a pass).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from generation.builder import facts as F
from physassist.vocab import CLINICAL_REASONING as CR
from physassist.vocab import DATA_GATHERING as DG
from physassist.vocab import INFORMATION_LOOKUP as IL
from physassist.vocab import PATIENT_TOOLS, WRITE_TOOLS
from physassist.vocab import WRITE_UPDATE as WU

from .llm import AgentOutputError, Caller
from .planner import PlanTurn
from .tool_planner import Action, offered_tools

GATES = ("gate1_rules", "gate1_llm", "gate2", "gate3")


class GateFailure(Exception):
    """A turn attempt rejected by a gate (or by an agent's malformed output at a stage)."""

    def __init__(self, stage: str, reason: str, question: str = "") -> None:
        super().__init__(f"{stage}: {reason}")
        self.stage = stage
        self.reason = reason
        self.question = question  # the explicit question of the rejected attempt, if any


def plan_rule_problems(plan: PlanTurn, actions: list[Action], subject_id: int) -> list[str]:
    problems: list[str] = []
    n = len(actions)
    need = {IL: (1, 1), DG: (2, None), CR: (1, None), WU: (1, None)}[plan.task_type]
    if n < need[0] or (need[1] is not None and n > need[1]):
        want = "exactly 1" if need[1] == 1 else f">= {need[0]}"
        problems.append(f"{plan.task_type} needs {want} tool call(s), got {n}")
    offered = set(offered_tools(plan.source))
    for a in actions:
        if a.name not in offered:
            problems.append(f"tool {a.name!r} not offered for a {plan.source} turn")
        sid = a.arguments.get("subject_id")
        if sid is None:
            problems.append(f"{a.name}: subject_id missing")
        elif str(sid) != str(subject_id):
            problems.append(f"{a.name}: subject_id {sid!r} is not the session's {subject_id}")
    names = [a.name for a in actions]
    if plan.source == "mixed" and not any(n in PATIENT_TOOLS for n in names):
        problems.append("a mixed turn needs a patient tool")
    if plan.source == "mixed" and all(n in PATIENT_TOOLS for n in names):
        problems.append("a mixed turn needs a record tool")
    if plan.task_type == WU and not any(n in WRITE_TOOLS for n in names):
        problems.append("a Write/Update turn needs a write tool")
    return problems


async def gate1(
    caller: Caller,
    plan: PlanTurn,
    question: str,
    actions: list[Action],
    subject_id: int,
    stats: GateStats,
) -> None:
    problems = plan_rule_problems(plan, actions, subject_id)
    stats.record("gate1_rules", not problems)
    if problems:
        raise GateFailure("gate1_rules", "; ".join(problems))
    payload = {
        "question": question,
        "task_type": plan.task_type,
        "topic": plan.topic,
        "actions": [{"name": a.name, "arguments": a.arguments} for a in actions],
    }
    ok, reason = await _verdict(
        caller, "plan_check", payload, lambda r: r.get("valid") is True, "valid"
    )
    stats.record("gate1_llm", ok)
    if not ok:
        raise GateFailure("gate1_llm", reason)


def gate2(actions: list[Action], observations: list[Any], stats: GateStats) -> None:
    empty = [a.name for a, o in zip(actions, observations, strict=True) if F.is_empty(o)]
    stats.record("gate2", not empty)
    if empty:
        raise GateFailure("gate2", f"no usable result from {', '.join(empty)}")


async def gate3(
    caller: Caller,
    question: str,
    answer: str,
    evidence: list[dict[str, str]],
    history: list[dict[str, str]],
    stats: GateStats,
    course: str | None = None,
) -> None:
    """``course`` is how the admission ended (``physassist.timeline``: died, hospice,
    discharged), so the checker can flag forward-looking advice where none applies."""
    payload = {
        "question": question,
        "answer": answer,
        "evidence": evidence,
        "history": history,
        "course": course,
    }
    flags = ("hallucination", "contradiction", "safety", "incomplete")

    def passes(r: dict[str, Any]) -> bool:
        return r.get("verdict") == "pass" and not any(r.get(f) is True for f in flags)

    ok, reason = await _verdict(caller, "clinical_check", payload, passes, "verdict")
    stats.record("gate3", ok)
    if not ok:
        raise GateFailure("gate3", reason)


async def _verdict(
    caller: Caller,
    kind: str,
    payload: dict[str, Any],
    passes: Callable[[dict[str, Any]], bool],
    key: str,
) -> tuple[bool, str]:
    """(passed, reason); an off-format reply (or a model error) or one without ``key`` is a
    FAIL. A raised call (a provider outage, ``EndpointDown``, our own bug) is a fault, not a
    verdict: it ends the slot, as it does at every other stage."""
    try:
        reply = await caller.ask("checker", kind, payload)
    except AgentOutputError as exc:
        return False, f"checker error: {exc}"
    if key not in reply:
        return False, f"checker reply lacks {key!r}"
    return passes(reply), str(reply.get("reason") or reply)[:300]


#: Rejections by gate or stage (a malformed reply: its stage) as they happen, in this process:
#: ``physassist-generate``'s progress lines (which clear it when a run starts).
rejections: Counter[str] = Counter()


class GateStats:
    """Checks and failures per gate, plus failures per generation stage."""

    def __init__(self) -> None:
        self.checked = dict.fromkeys(GATES, 0)
        self.failed = dict.fromkeys(GATES, 0)
        self.stage_failures: dict[str, int] = {}

    def record(self, gate: str, passed: bool) -> None:
        self.checked[gate] += 1
        self.failed[gate] += 0 if passed else 1

    def stage_failed(self, stage: str) -> None:
        self.stage_failures[stage] = self.stage_failures.get(stage, 0) + 1
        rejections[stage] += 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "checked": dict(self.checked),
            "failed": dict(self.failed),
            "stage_failures": dict(sorted(self.stage_failures.items())),
        }


__all__ = [
    "GATES",
    "AgentOutputError",
    "GateFailure",
    "GateStats",
    "gate1",
    "gate2",
    "gate3",
    "plan_rule_problems",
]
