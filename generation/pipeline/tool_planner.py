"""Tool planner: the JSON action list that answers a turn's question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from physassist.ehr.tools import EHR_READ_TOOLS, tool_schemas
from physassist.vocab import PATIENT_TOOLS, WRITE_TOOLS

from .llm import AgentOutputError, Caller
from .planner import PlanTurn


@dataclass(frozen=True)
class Action:
    name: str
    arguments: dict[str, Any]


def offered_tools(source: str) -> tuple[str, ...]:
    """The tools a turn may use, by its tool source."""
    reads = tuple(EHR_READ_TOOLS)
    return {
        "write": WRITE_TOOLS,
        "ehr": reads,
        "patient": PATIENT_TOOLS,
        "mixed": reads + PATIENT_TOOLS,
    }[source]


def parse_actions(obj: dict[str, Any]) -> list[Action]:
    actions = obj.get("actions")
    if not isinstance(actions, list) or not actions:
        raise AgentOutputError(
            f"tool_planner: 'actions' must be a non-empty list, got {actions!r:.80}"
        )
    out = []
    for i, a in enumerate(actions):
        if not isinstance(a, dict) or not isinstance(a.get("name"), str):
            raise AgentOutputError(f"tool_planner: action {i} needs a string 'name'")
        args = a.get("arguments", {})
        if not isinstance(args, dict):
            raise AgentOutputError(f"tool_planner: action {i} 'arguments' must be an object")
        if a["name"] == "prepare_to_answer":
            continue
        out.append(Action(a["name"], dict(args)))
    return out


async def plan_tools(
    caller: Caller,
    plan: PlanTurn,
    question: str,
    subject_id: int,
    hadm_id: int | None,
    session_id: str,
    current_date: str,
    attempt: int,
) -> list[Action]:
    offered = offered_tools(plan.source)
    payload = {
        "question": question,
        "task_type": plan.task_type,
        "tool_source": plan.source,
        "tool_hint": plan.tool_hint,
        "subject_id": subject_id,
        "hadm_id": hadm_id,
        "session_id": session_id,
        "current_date": current_date,
        "offered": tool_schemas(list(offered)),
    }
    reply = await caller.ask(
        "planner", "tool_planner", payload, temperature=0.4 if attempt else 0.0
    )
    return parse_actions(reply)
