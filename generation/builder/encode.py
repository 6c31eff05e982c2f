"""Assembling a built session into the released PhysAssistBench JSONL shape.

Every key of docs/data.md#keys-of-a-session is written, plus the project's additions
(``rubric_checks``, ``patient_model``). Values that the reference derived with defects are
derived properly here: ``turn_subtypes`` only where a rewrite happened, ``dep_graph`` facts
split without breaking decimals and with real edges, ``generated_at`` from the seed.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from typing import Any

from physassist.ehr.tools import TOOL_NAMES, tool_schemas
from physassist.vocab import TASK_ABBREVIATIONS, WRITE_TOOLS

from .arcs import DG, WU
from .profile import Profile
from .questions import Question
from .rubrics import Item

SEPARATOR = "=" * 60
DOMAINS: dict[str, str] = {
    "diagnostic_workup": "LabInterp",
    "med_safety": "MedRecon",
    "treatment_response": "ICUReasoning",
    "discharge_planning": "MedRecon",
}
_RESOURCE_SHORT = {
    "Observation": "Obs",
    "MedicationRequest": "MedReq",
    "MedicationAdministration": "MedAdmin",
    "Condition": "Condition",
    "DiagnosticReport": "DiagReport",
    "Encounter": "Encounter",
    "CarePlan": "CarePlan",
    "DocumentReference": "DocRef",
    "Patient": "Patient",
}
_EVENT_WORDS = re.compile(
    r"\b(order|ordered|hold|holding|stop|start|continue|recheck|repeat|reduce|adjust|flag|"
    r"broaden|re-culture|narrow)\b|暂停|停用|继续|复查|减量|已下|标记|扩大",
    re.IGNORECASE,
)
# Sentence ends: ". " / "? " / "! " / newline / Chinese full stop; never the "." of a decimal.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+|(?<=[。！？])")


@dataclass
class BuiltTurn:
    """One finished turn: question, gold trajectory, answers and rubric in both languages."""

    task_type: str
    source: str
    topic: str
    entities: list[str]
    question: Question
    actions_en: list[dict[str, Any]]
    actions_zh: list[dict[str, Any]]
    answer_en: str
    answer_zh: str
    items: list[Item]
    tool_hint: str = ""
    annotations: list[dict[str, Any]] = field(default_factory=list)


def sentences(text: str) -> list[str]:
    """Split an answer into sentences/bullets without breaking decimals like 1.4."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def _tools_of(turn: BuiltTurn) -> list[str]:
    return [
        a["action"]["name"] for a in turn.actions_en if a["action"]["name"] != "prepare_to_answer"
    ]


def workup_pattern(tools: list[str]) -> str | None:
    names = [
        _RESOURCE_SHORT.get(t.split(".")[0], "Patient" if t.startswith("patient.") else t)
        for t in tools
    ]
    if len(names) < 2:
        return None
    return "3-tool" if len(names) > 2 else "×".join(names)


def dep_graph(turns: list[BuiltTurn]) -> dict[str, Any]:
    """Turn nodes (entities, facts, events, tools) and edges: entity reuse and anaphora."""
    nodes: dict[str, Any] = {}
    edges: list[dict[str, Any]] = []
    for t, turn in enumerate(turns):
        facts = sentences(turn.answer_en)[:2]
        events = [s for s in sentences(turn.answer_en) if _EVENT_WORDS.search(s)][:3]
        nodes[str(t)] = {
            "task_type": turn.task_type,
            "tool_source": turn.source,
            "subtype": turn.question.subtype,
            "entities": list(turn.entities),
            "facts": facts,
            "events": events,
            "tool_calls": _tools_of(turn),
        }
        for earlier in range(t):
            shared = sorted(set(turns[earlier].entities) & set(turn.entities))
            for entity in shared:
                kind = (
                    "NA"
                    if (turn.question.subtype == "NA" and turn.question.antecedent == entity)
                    else "entity"
                )
                edges.append({"from": earlier, "to": t, "type": kind, "entity": entity})
        if turn.question.subtype == "AE":
            edges += [{"from": earlier, "to": t, "type": "AE"} for earlier in range(t)]
        elif turn.question.subtype == "PE" and t > 0:
            edges.append({"from": t - 1, "to": t, "type": "PE"})
    return {"nodes": nodes, "edges": edges}


def messages(turns: list[BuiltTurn], lang: str) -> list[Any]:
    """The gold conversation; EN carries the 60-'=' separators between turns as released."""
    out: list[Any] = []
    for t, turn in enumerate(turns):
        if t > 0 and lang == "en":
            out.append(SEPARATOR)
        q = turn.question.implicit_en if lang == "en" else turn.question.implicit_zh
        a = turn.answer_en if lang == "en" else turn.answer_zh
        out += [{"role": "user", "content": q}, {"role": "assistant", "content": a}]
    return out


def generated_at(seed: int, index: int) -> str:
    """A reproducible timestamp: a fixed epoch plus the seed (days) and the entry index (s)."""
    base = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    return (base + dt.timedelta(days=seed % 3650, seconds=index)).isoformat()


def session_id(scenario: str, index: int) -> str:
    """The id of a scenario's ``index``-th session (its tool calls and JSONL entry carry it)."""
    return f"physassistbench_{scenario}_{index}"


def encode(
    *,
    scenario: str,
    tier: int,
    index: int,
    prof: Profile,
    arc_index: int,
    turns: list[BuiltTurn],
    persona: dict[str, Any],
    patient_model: dict[str, Any] | None,
    situation: str,
    seed: int,
    global_index: int,
    cutoff: dt.datetime | None = None,
) -> dict[str, Any]:
    """The session as one released-format JSON object (key order as in the released data).
    A session at an instant inside ``current_date`` (``cutoff``; the in-stay timepoint) says
    its time in ``env_info`` and carries it as ``cutoff``, after ``current_date``."""
    domain = DOMAINS[scenario]
    sid = session_id(scenario, index)
    has_write = any(t.task_type == WU for t in turns)
    names = [n for n in TOOL_NAMES if has_write or n not in WRITE_TOOLS]
    tools = tool_schemas(names)
    tasks_en = [t.question.implicit_en for t in turns]
    tasks_en_explicit = [t.question.explicit_en for t in turns]
    sources = [t.source for t in turns]
    plan_turns = []
    for i, t in enumerate(turns):
        row: dict[str, Any] = {
            "turn": i,
            "task_type": t.task_type,
            "topic": t.topic,
            "tool_hint": t.tool_hint,
            "tool_source": t.source,
        }
        pattern = workup_pattern(_tools_of(t)) if t.task_type == DG else None
        if pattern:
            row["workup_pattern"] = pattern
        plan_turns.append(row)
    time = f"Current time: {cutoff:%H:%M}. " if cutoff is not None else ""
    entry = {
        "id": f"physassistbench_{domain}_{scenario}_{index}_L{tier}",
        "env_info": (
            f"session_id: {sid}\nCurrent date: {prof.current_date}. {time}"
            f"Patient is a {prof.age}-year-old {prof.gender}"
        ),
        "tools": tools,
        "tools_en": tools,
        "tasks": tasks_en,
        "tasks_en": tasks_en,
        "tasks_explicit": tasks_en_explicit,
        "tasks_en_explicit": tasks_en_explicit,
        "tasks_zh": [t.question.implicit_zh for t in turns],
        "tasks_zh_explicit": [t.question.explicit_zh for t in turns],
        "messages": messages(turns, "en"),
        "messages_en": messages(turns, "en"),
        "messages_zh": messages(turns, "zh"),
        "answer_list": [t.actions_en for t in turns],
        "answer_list_zh": [t.actions_zh for t in turns],
        "turn_types": [i != 0 for i in range(len(turns))],
        "task_types": [t.task_type for t in turns],
        "task_sequence": [t.task_type for t in turns],
        "turn_subtypes": [t.question.subtype for t in turns],
        "tool_sources": sources,
        "workup_modes": ["parallel" if t.task_type == DG else None for t in turns],
        "clinical_task_domain": domain,
        "clinical_scenario": scenario,
        "subject_id": prof.subject_id,
        "hadm_id": prof.hadm_id,
        "session_id": sid,
        "sequence_idx": arc_index,
        "dep_graph": dep_graph(turns),
        "session_plan": {
            "clinical_situation": situation,
            "investigation_arc": " -> ".join(
                f"T{i}[{TASK_ABBREVIATIONS[t.task_type]}]" for i, t in enumerate(turns)
            ),
            "turn_intents": [t.topic for t in turns],
            "turns": plan_turns,
        },
        "tool_set": "fhir",
        "difficulty_level": tier,
        "current_date": prof.current_date,
        "generated_at": generated_at(seed, global_index),
        "rubrics": [[item.en for item in t.items] for t in turns],
        "rubrics_zh": [[item.zh for item in t.items] for t in turns],
        "rubric_checks": [[item.check for item in t.items] for t in turns],
        "persona_config": persona,
        "patient_agent_annotations": [a for t in turns for a in t.annotations],
        "patient_model": patient_model,
    }
    if cutoff is None:
        return entry
    keys = list(entry)
    keys.insert(keys.index("current_date") + 1, "cutoff")
    return {k: cutoff.isoformat(timespec="seconds") if k == "cutoff" else entry[k] for k in keys}
