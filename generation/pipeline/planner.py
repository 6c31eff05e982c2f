"""Session planner: a four-turn plan (topic, tools, tool source, entities) for one arc."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from generation.builder.arcs import ARCS
from generation.builder.profile import Profile
from physassist.vocab import WRITE_UPDATE as WU

from .llm import AgentOutputError, Caller, need_str

SOURCES = ("ehr", "patient", "mixed", "write")


@dataclass(frozen=True)
class PlanTurn:
    task_type: str
    topic: str
    tool_hint: str
    source: str
    entities: tuple[str, ...]


@dataclass(frozen=True)
class SessionPlan:
    situation: str
    turns: tuple[PlanTurn, ...]


def snapshot(prof: Profile, scenario: str, tier: int) -> dict[str, Any]:
    """What the planner may build on: the admission's labs, drugs and document counts."""
    return {
        "scenario": scenario, "tier": tier, "age": prof.age, "gender": prof.gender,
        "current_date": prof.current_date,
        "labs": [{"label": s.label, "n_results": s.n, "abnormal": s.abnormal}
                 for s in sorted(prof.labs.values(), key=lambda s: (not s.abnormal, s.label))][:30],
        "drugs": [{"drug": d.drug, "dose": f"{d.dose} {d.unit}".strip(), "route": d.route,
                   "administrations": d.n_admin} for d in prof.drugs.values()][:30],
        "n_diagnoses": prof.n_dx, "n_microbiology": prof.n_micro,
        "n_radiology_reports": prof.n_radiology, "n_discharge_notes": prof.n_discharge,
    }


def parse_plan(obj: dict[str, Any], arc_index: int, patient_available: bool) -> SessionPlan:
    """Validate the planner's JSON against the arc and the session rules (one patient turn)."""
    arc = ARCS[arc_index]
    turns = obj.get("turns")
    if not isinstance(turns, list) or len(turns) != len(arc):
        raise AgentOutputError(f"planner: 'turns' must list {len(arc)} turns, got {turns!r:.80}")
    out: list[PlanTurn] = []
    for t, (row, task_type) in enumerate(zip(turns, arc, strict=True)):
        if not isinstance(row, dict):
            raise AgentOutputError(f"planner: turn {t} must be an object")
        source = row.get("tool_source")
        if source not in SOURCES:
            raise AgentOutputError(f"planner: turn {t} tool_source {source!r} not in {SOURCES}")
        if (source == "write") != (task_type == WU):
            raise AgentOutputError(f"planner: turn {t} ({task_type}) cannot use tool_source {source!r}")
        if source in ("patient", "mixed") and not patient_available:
            raise AgentOutputError(f"planner: turn {t} asks the patient but no patient model exists")
        entities = row.get("entities") or []
        if not isinstance(entities, list) or not all(isinstance(e, str) for e in entities):
            raise AgentOutputError(f"planner: turn {t} 'entities' must be a list of strings")
        out.append(PlanTurn(task_type, need_str(row, "topic", f"planner turn {t}"),
                            str(row.get("tool_hint") or ""), source,
                            tuple(e.strip() for e in entities if e.strip())))
    if sum(p.source in ("patient", "mixed") for p in out) > 1:
        raise AgentOutputError("planner: at most one patient/mixed turn per session")
    return SessionPlan(need_str(obj, "clinical_situation", "planner"), tuple(out))


async def plan_session(caller: Caller, prof: Profile, scenario: str, tier: int, arc_index: int,
                       patient_available: bool) -> SessionPlan:
    payload = {"snapshot": snapshot(prof, scenario, tier), "arc": list(ARCS[arc_index]),
               "patient_available": patient_available}
    return parse_plan(await caller.ask("planner", "planner", payload, temperature=0.4),
                      arc_index, patient_available)
