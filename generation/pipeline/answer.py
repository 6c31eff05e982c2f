"""The answer agent, and the evidence it (and the checker and rubric agents) read.

Evidence is the rendered tool result plus the exact lab values as strings (decimal-safe:
``1.40`` stays ``1.40``; nothing is split on "."), so numbers reach the agents as written.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from generation.builder import facts as F
from generation.builder.arcs import CR, DG, IL, WU
from generation.builder.encode import sentences
from physassist.ehr.tools import render

from .llm import AgentOutputError, Caller, need_str
from .planner import PlanTurn
from .tool_planner import Action

FORMATS: dict[str, str] = {
    IL: "At most 2 lines, each '<item>: <value> <unit> (high/low/normal)'.",
    "IL_report": "At most 4 short bullets summarising the report's findings.",
    DG: "At most 3 bullets, one per item gathered, values with units and flags.",
    CR: "Exactly 2 sentences: the judgement, then the evidence it rests on.",
    "patient": "At most 3 bullets with what the patient reported.",
    WU: "At most 3 bullets: what was ordered or flagged, with its key fields, and why.",
}
MAX_LINES = {IL: 2, "IL_report": 4, DG: 3, "patient": 3, WU: 3}
MAX_SENTENCES = {CR: 2}


def lab_values(observation: Any) -> list[dict[str, str]]:
    """(label, value, unit, time) of each Observation with a numeric value, as strings."""
    out = []
    for r in F.resources(observation, "Observation"):
        q = r.get("valueQuantity") or {}
        value = q.get("value")
        if value is None or isinstance(value, bool):
            continue
        try:
            exact = str(Decimal(str(value)))
        except InvalidOperation:
            continue
        label = (r.get("code") or {}).get("text") or ""
        out.append({"label": str(label), "value": exact, "unit": str(q.get("unit") or ""),
                    "time": str(r.get("effectiveDateTime") or "")})
    return out


def evidence(actions: list[Action], observations: list[Any]) -> list[dict[str, Any]]:
    return [{"tool": a.name, "arguments": a.arguments, "result": render(o, "full")[:4000],
             "values": lab_values(o)} for a, o in zip(actions, observations, strict=True)]


def answer_format(plan: PlanTurn, actions: list[Action]) -> str:
    if plan.source == "patient":
        return "patient"
    if plan.task_type == IL and any(a.name in ("DiagnosticReport.search", "DocumentReference.search")
                                    for a in actions):
        return "IL_report"
    return plan.task_type


def check_format(text: str, fmt: str) -> None:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if fmt in MAX_LINES and len(lines) > MAX_LINES[fmt]:
        raise AgentOutputError(f"answer: {len(lines)} lines, format {fmt!r} allows {MAX_LINES[fmt]}")
    if fmt in MAX_SENTENCES and len(sentences(text)) > MAX_SENTENCES[fmt]:
        raise AgentOutputError(f"answer: more than {MAX_SENTENCES[fmt]} sentences for {fmt!r}")


async def write_answer(caller: Caller, plan: PlanTurn, question: str, actions: list[Action],
                       ev: list[dict[str, Any]], history: list[dict[str, str]]) -> str:
    fmt = answer_format(plan, actions)
    payload = {"question": question, "task_type": plan.task_type, "format": FORMATS[fmt],
               "evidence": ev, "history": history}
    text = need_str(await caller.ask("answer", "answer", payload, temperature=0.2), "answer", "answer")
    check_format(text, fmt)
    return text
