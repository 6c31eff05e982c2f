"""The rubric generator: item counts by task type, each item with a machine-checkable form
in the ``rubric_checks`` format (ARCHITECTURE.md §4) when possible, validated against the
evidence: a ``value`` must be a value the tools returned (compared as decimals), a write
check must name a write call that was made and one of its real fields."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from generation.builder.rubrics import Item
from physassist.vocab import CLINICAL_REASONING as CR
from physassist.vocab import DATA_GATHERING as DG
from physassist.vocab import INFORMATION_LOOKUP as IL
from physassist.vocab import WRITE_UPDATE as WU

from .llm import AgentOutputError, Caller, need_str
from .planner import PlanTurn
from .tool_planner import Action

ITEM_COUNTS: dict[str, tuple[int, int]] = {IL: (3, 4), DG: (4, 6), CR: (4, 6), WU: (4, 6)}
KINDS = ("value", "concept", "forbidden", "write_arg", "write_call")


def _dec(x: Any) -> Decimal | None:
    try:
        return Decimal(str(x))
    except (InvalidOperation, ValueError):
        return None


def _terms(spec: Any, where: str) -> dict[str, list[str]]:
    if isinstance(spec, list):
        spec = {"en": spec}
    if not isinstance(spec, dict) or not any(spec.values()):
        raise AgentOutputError(f"{where}: 'any' must be a non-empty list or {{language: [terms]}}")
    out = {}
    for lang, terms in spec.items():
        if not isinstance(terms, list) or not all(isinstance(t, str) and t.strip() for t in terms):
            raise AgentOutputError(f"{where}: 'any.{lang}' must be a list of non-empty strings")
        out[str(lang)] = [t.strip() for t in terms]
    return out


def validate_check(check: Any, ev: list[dict[str, Any]], writes: list[Action], where: str
                   ) -> dict[str, Any] | None:
    """The check in canonical form, or an AgentOutputError naming the problem."""
    if check is None:
        return None
    if not isinstance(check, dict) or check.get("kind") not in KINDS:
        raise AgentOutputError(f"{where}: check kind must be one of {KINDS}, got {check!r:.80}")
    kind = check["kind"]
    if kind == "value":
        value = _dec(check.get("value"))
        label = check.get("label")
        if value is None or not isinstance(label, str) or not label.strip():
            raise AgentOutputError(f"{where}: a value check needs a label and a number")
        seen = [v for e in ev for v in e["values"]]
        if not any(_dec(v["value"]) == value for v in seen):
            raise AgentOutputError(f"{where}: value {value} for {label!r} is not in the tool results")
        unit = check.get("unit")
        out = {"kind": "value", "label": label.strip(), "value": float(value),
               "unit": str(unit) if unit else None}
        if "tolerance" in check:
            out["tolerance"] = float(check["tolerance"])
        return out
    if kind in ("concept", "forbidden"):
        return {"kind": kind, "any": _terms(check.get("any"), where)}
    made = {a.name: a for a in writes}
    tool = check.get("tool")
    if tool not in made:
        raise AgentOutputError(f"{where}: {kind} names {tool!r}, not a write call of this turn")
    if kind == "write_call":
        return {"kind": "write_call", "tool": tool}
    field = check.get("field")
    accepted = check.get("accepted")
    if field not in made[tool].arguments or field in ("subject_id", "hadm_id"):
        raise AgentOutputError(f"{where}: write_arg field {field!r} is not an argument of {tool}")
    if not isinstance(accepted, list) or not accepted or not all(isinstance(a, str) for a in accepted):
        raise AgentOutputError(f"{where}: write_arg 'accepted' must be a non-empty list of strings")
    return {"kind": "write_arg", "tool": tool, "field": field, "accepted": accepted}


def parse_rubric(obj: dict[str, Any], plan: PlanTurn, ev: list[dict[str, Any]],
                 writes: list[Action]) -> list[Item]:
    items = obj.get("items")
    low, high = ITEM_COUNTS[plan.task_type]
    if not isinstance(items, list) or not low <= len(items) <= high:
        n = len(items) if isinstance(items, list) else items
        raise AgentOutputError(f"rubric: {plan.task_type} needs {low}-{high} items, got {n!r:.40}")
    out = []
    for i, row in enumerate(items):
        where = f"rubric item {i}"
        if not isinstance(row, dict):
            raise AgentOutputError(f"{where}: must be an object")
        out.append(Item(need_str(row, "text", where), "",
                        validate_check(row.get("check"), ev, writes, where)))
    if plan.task_type == WU and not any((it.check or {}).get("kind") in ("write_call", "write_arg")
                                        for it in out):
        raise AgentOutputError("rubric: a Write/Update rubric needs a write_call or write_arg item")
    return out


async def write_rubric(caller: Caller, plan: PlanTurn, question: str, answer: str,
                       ev: list[dict[str, Any]], writes: list[Action]) -> list[Item]:
    payload = {"question": question, "answer": answer, "task_type": plan.task_type,
               "item_count": list(ITEM_COUNTS[plan.task_type]), "evidence": ev,
               "write_calls": [{"name": a.name, "arguments": a.arguments} for a in writes]}
    reply = await caller.ask("rubric", "rubric", payload, temperature=0.2)
    return parse_rubric(reply, plan, ev, writes)
