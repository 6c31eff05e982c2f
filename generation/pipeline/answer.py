"""The answer agent, and the evidence it (and the checker and rubric agents) read.

Evidence is the rendered tool result plus the exact lab values as strings (decimal-safe:
``1.40`` stays ``1.40``; nothing is split on "."), so numbers reach the agents as written,
and what the record says at the cutoff (``physassist.timeline``, the same facts the template
builder uses): a lab's values are the lab concept's only (no blood-gas twin beside the
chemistry value), with its latest, first, peak and nadir over the admission; a drug's current
scheduled order or none (stopped, sliding-scale, PRN, one-time); the doses of that order
(given, not given, held at discharge: only dose events, as a nurse counts them), else of the
drug (eMAR and ICU), and whether a dose count may be asked (the timeline's rule: no dose given
in an ICU, which the compat tools cannot show, and the order's doses named as it); the
admission's positive cultures.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from generation.builder import facts as F
from generation.builder.arcs import CR, DG, IL, WU
from generation.builder.encode import sentences
from physassist.ehr.tools import render
from physassist.timeline import Timeline

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


def _exact(value: Any) -> str | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return str(Decimal(str(value)))
    except InvalidOperation:
        return None


def lab_values(observation: Any, itemids: tuple[int, ...] | None = None) -> list[dict[str, str]]:
    """(label, value, unit, time) of each Observation with a numeric value, as strings; only
    the lab concept's items when ``itemids`` is given."""
    wanted = {str(i) for i in itemids} if itemids is not None else None
    out = []
    for r in F.resources(observation, "Observation"):
        q = r.get("valueQuantity") or {}
        exact = _exact(q.get("value"))
        codes = [str(c.get("code")) for c in (r.get("code") or {}).get("coding") or []]
        if exact is None or (wanted is not None and not wanted.intersection(codes)):
            continue
        label = (r.get("code") or {}).get("text") or ""
        out.append({"label": str(label), "value": exact, "unit": str(q.get("unit") or ""),
                    "time": str(r.get("effectiveDateTime") or "")})
    return out


def record_facts(name: str, arguments: dict[str, Any], tl: Timeline) -> dict[str, Any] | None:
    """What the record says at the cutoff about one call's subject (module docstring)."""
    if name == "Observation.search" and arguments.get("code") and (
            arguments.get("category") or "laboratory") == "laboratory":
        series = tl.lab(str(arguments["code"]))
        if series is None:
            return {"lab": arguments["code"], "in_record": False}
        return {"lab": series.label, "n_values": len(series.points), **{
            k: {"value": _exact(p.value), "unit": p.unit, "time": str(p.time)}
            for k, p in (("latest", series.latest), ("first", series.first),
                         ("peak", series.peak), ("nadir", series.nadir))}}
    word = str(arguments.get("medication") or "").strip()
    if name in ("MedicationRequest.search", "MedicationAdministration.search") and word:
        order = tl.current_order(word)
        facts: dict[str, Any] = {"drug": word, "current_scheduled_order": None if order is None
                                 else {"drug": order.drug, "dose": order.dose_text,
                                       "unit": order.unit, "route": order.route,
                                       "frequency": order.frequency, "start": str(order.start)}}
        if name == "MedicationAdministration.search":
            a = tl.order_administrations(order) if order is not None else tl.administrations(word)
            facts.update(doses_of="the current order" if order is not None else "the drug",
                         given=len(a.given), not_given=len(a.not_given),
                         held_at_discharge=a.at_discharge, icu_administrations=a.icu,
                         dose_count_askable=a.countable)
        return facts
    if name == "DiagnosticReport.search":
        return {"positive_cultures": [{"specimen": c.specimen, "time": str(c.time),
                                       "organisms": list(c.organisms)}
                                      for c in tl.positive_cultures]}
    return None


def evidence(actions: list[Action], observations: list[Any],
             tl: Timeline | None = None) -> list[dict[str, Any]]:
    out = []
    for a, o in zip(actions, observations, strict=True):
        facts = record_facts(a.name, a.arguments, tl) if tl is not None else None
        series = tl.lab(str(a.arguments.get("code"))) if (
            tl is not None and a.name == "Observation.search" and a.arguments.get("code")) else None
        entry = {"tool": a.name, "arguments": a.arguments, "result": render(o, "full")[:4000],
                 "values": lab_values(o, series.itemids if series is not None else None)}
        if facts is not None:
            entry["record"] = facts
        out.append(entry)
    return out


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
