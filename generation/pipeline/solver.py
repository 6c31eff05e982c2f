"""The per-slot solver: plan a session for a candidate patient, then build each turn through
the agent chain and the three gates, with up to ``attempts`` tries per turn; a patient whose
plan or any turn fails is dropped for the next candidate, up to ``patient_limit``.

The finished session is encoded by the deterministic builder's encoder (released JSONL
shape) and left, with the slot's statistics, in ``state.store[RESULT_KEY]``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from pathlib import Path
from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver

from generation.builder.build import answer_list_items, patient_annotations, session_persona
from generation.builder.encode import BuiltTurn, encode, session_id
from generation.builder.profile import Profile, load_profile
from generation.builder.questions import Question
from physassist.ehr.store import EHRStore
from physassist.ehr.tools import ToolContext, call_tool
from physassist.synth import load_phm
from physassist.vocab import PATIENT_TOOLS, WRITE_TOOLS

from .answer import evidence, write_answer
from .gates import GateFailure, GateStats, gate1, gate2, gate3
from .llm import AgentOutputError, Caller
from .patient import patient_reply
from .planner import PlanTurn, SessionPlan, plan_session
from .questions import choose_subtype, explicit_question, implicit_question
from .rubric import write_rubric
from .tool_planner import Action, plan_tools
from .translate import translate_turn

RESULT_KEY = "physassist:generated"


@dataclasses.dataclass
class SlotStats:
    """What one slot cost: patients tried, attempts per turn, gate and stage failures."""

    gates: GateStats = dataclasses.field(default_factory=GateStats)
    patients_tried: int = 0
    turn_attempts: list[int] = dataclasses.field(default_factory=list)
    attempts_total: int = 0
    fallbacks: dict[str, int] = dataclasses.field(default_factory=dict)
    reasons: list[str] = dataclasses.field(default_factory=list)

    def to_dict(self, caller: Caller) -> dict[str, Any]:
        return {
            "patients_tried": self.patients_tried,
            "turn_attempts": self.turn_attempts,
            "attempts_total": self.attempts_total,
            "fallbacks": self.fallbacks,
            **self.gates.to_dict(),
            "tokens": caller.usage.tokens,
            "models": caller.usage.models,
            "reasons": self.reasons[-20:],
        }


class _PatientFailed(Exception):
    pass


@dataclasses.dataclass
class _Slot:
    caller: Caller
    stats: SlotStats
    store: EHRStore
    prof: Profile
    phm: dict[str, Any] | None
    literacy: str
    session_id: str
    attempts: int
    rng: random.Random
    subtype_use: dict[str, int] = dataclasses.field(default_factory=dict)


async def _execute(slot: _Slot, actions: list[Action], allowed: frozenset[str]) -> list[Any]:
    """Record calls against the store (strict, off the event loop: other slots keep their
    model calls going); patient calls are left for the patient agent."""
    ctx = ToolContext(
        store=slot.store,
        subject_id=slot.prof.subject_id,
        hadm_id=slot.prof.hadm_id,
        current_date=slot.prof.current_date,
        semantics="strict",
        session_id=slot.session_id,
        allowed=allowed,
    )
    out: list[Any] = []
    for a in actions:
        if a.name in PATIENT_TOOLS:
            out.append(None)  # answered after gate 2, by the patient agent
        else:
            out.append(await asyncio.to_thread(call_tool, ctx, a.name, a.arguments))
    return out


async def _turn(
    slot: _Slot,
    t: int,
    plan: PlanTurn,
    history: list[dict[str, str]],
    prior_entities: set[str],
    rejected: list[str],
) -> BuiltTurn:
    """One attempt at turn ``t``; raises GateFailure naming the stage that rejected it."""
    caller, stats, prof = slot.caller, slot.stats, slot.prof
    stage, explicit = "question", ""
    try:
        explicit = await explicit_question(caller, plan, t, history, rejected)
        subtype = choose_subtype(t, plan.task_type, prior_entities, slot.subtype_use, slot.rng)
        stage = "rewrite"
        rw = await implicit_question(caller, explicit, subtype, plan, history)
        if rw.fallback:
            stats.fallbacks[rw.fallback] = stats.fallbacks.get(rw.fallback, 0) + 1
        stage = "tool_planner"
        actions = await plan_tools(
            caller,
            plan,
            explicit,
            prof.subject_id,
            prof.hadm_id,
            slot.session_id,
            prof.current_date,
            len(rejected),
        )
        await gate1(caller, plan, explicit, actions, prof.subject_id, stats.gates)
        allowed = frozenset(a.name for a in actions)
        observations = await _execute(slot, actions, allowed)
        record = [(a, o) for a, o in zip(actions, observations, strict=True) if o is not None]
        gate2([a for a, _ in record], [o for _, o in record], stats.gates)
        stage = "patient"
        for i, a in enumerate(actions):
            if a.name in PATIENT_TOOLS:
                if slot.phm is None:
                    raise GateFailure("patient", "no patient model for a patient tool")
                observations[i] = await patient_reply(
                    caller, slot.phm, slot.literacy, a.name, a.arguments
                )
        stage = "answer"
        ev = evidence(actions, observations, prof.timeline)
        answer = await write_answer(caller, plan, explicit, actions, ev, history)
        course = prof.timeline.course if prof.timeline is not None else None
        await gate3(caller, explicit, answer, ev, history, stats.gates, course)
        stage = "rubric"
        writes = [a for a in actions if a.name in WRITE_TOOLS]
        items = await write_rubric(caller, plan, explicit, answer, ev, writes)
        stage = "translate"
        patient_idx = [i for i, a in enumerate(actions) if a.name in PATIENT_TOOLS]
        zh = await translate_turn(
            caller,
            {
                "question": rw.implicit,
                "explicit_question": explicit,
                "answer": answer,
                "rubric": [it.en for it in items],
                "patient_responses": [observations[i]["patient_response"] for i in patient_idx],
            },
        )
    except AgentOutputError as exc:
        raise GateFailure(stage, str(exc), explicit) from exc
    except GateFailure as fail:
        fail.question = fail.question or explicit
        raise
    if rw.subtype:
        slot.subtype_use[rw.subtype] = slot.subtype_use.get(rw.subtype, 0) + 1
    observations_zh = list(observations)
    for i, text in zip(patient_idx, zh["patient_responses"], strict=True):
        observations_zh[i] = {**observations[i], "patient_response": text}
    planned = [(a.name, a.arguments) for a in actions]
    question = Question(
        explicit_en=explicit,
        explicit_zh=zh["explicit_question"],
        implicit_en=rw.implicit,
        implicit_zh=zh["question"] if rw.subtype else zh["explicit_question"],
        subtype=rw.subtype,
    )
    return BuiltTurn(
        task_type=plan.task_type,
        source=plan.source,
        topic=plan.topic,
        entities=list(plan.entities),
        question=question,
        actions_en=answer_list_items(planned, observations, answer),
        actions_zh=answer_list_items(planned, observations_zh, zh["answer"]),
        answer_en=answer,
        answer_zh=zh["answer"],
        items=[dataclasses.replace(it, zh=z) for it, z in zip(items, zh["rubric"], strict=True)],
        tool_hint=plan.tool_hint or ", ".join(a.name for a in actions),
        annotations=patient_annotations(t, planned, observations),
    )


async def _turns(slot: _Slot, plan: SessionPlan) -> list[BuiltTurn]:
    turns: list[BuiltTurn] = []
    history: list[dict[str, str]] = []
    prior: set[str] = set()
    for t, pt in enumerate(plan.turns):
        rejected: list[str] = []
        for attempt in range(slot.attempts):
            slot.stats.attempts_total += 1
            try:
                turn = await _turn(slot, t, pt, history, prior, rejected)
            except GateFailure as fail:
                slot.stats.gates.stage_failed(fail.stage)
                slot.stats.reasons.append(f"{slot.session_id} T{t} try {attempt + 1}: {fail}")
                rejected.append(f"{fail.question!r} ({fail.stage}: {fail.reason[:160]})")
                continue
            slot.stats.turn_attempts.append(attempt + 1)
            break
        else:
            raise _PatientFailed(f"turn {t} failed {slot.attempts} attempts")
        turns.append(turn)
        history += [
            {"role": "physician", "content": turn.question.implicit_en},
            {"role": "assistant", "content": turn.answer_en},
        ]
        prior |= set(pt.entities)
    return turns


async def generate_slot(
    *,
    store: EHRStore,
    cohort: Path | None,
    meta: dict[str, Any],
    caller: Caller,
    stats: SlotStats,
    attempts: int,
    patient_limit: int,
) -> dict[str, Any] | None:
    """The session for one slot (or None when every candidate failed)."""
    scenario, tier, arc_index = meta["scenario"], int(meta["tier"]), int(meta["arc_index"])
    index, seed = int(meta["index"]), int(meta["seed"])
    for cand in meta["candidates"][:patient_limit]:
        stats.patients_tried += 1
        rng = random.Random(f"{seed}:{cand['subject_id']}")
        prof = await asyncio.to_thread(
            load_profile,
            store.cursor(),
            int(cand["subject_id"]),
            int(cand["hadm_id"]),
            str(cand["current_date"]),
        )
        phm = load_phm(cohort, prof.subject_id) if cohort is not None else None
        persona = session_persona(phm, rng)
        slot = _Slot(
            caller,
            stats,
            store,
            prof,
            phm,
            str(persona["health_literacy"]),
            session_id(scenario, index),
            attempts,
            rng,
        )
        try:
            plan = await _plan(slot, scenario, tier, arc_index)
            turns = await _turns(slot, plan)
        except _PatientFailed as exc:
            stats.reasons.append(f"patient {prof.subject_id}: {exc}")
            continue
        return encode(
            scenario=scenario,
            tier=tier,
            index=index,
            prof=prof,
            arc_index=arc_index,
            turns=turns,
            persona=persona,
            patient_model=phm,
            situation=plan.situation,
            seed=seed,
            global_index=int(meta.get("global_index", index)),
        )
    return None


async def _plan(slot: _Slot, scenario: str, tier: int, arc_index: int) -> SessionPlan:
    for attempt in range(slot.attempts):
        try:
            return await plan_session(
                slot.caller, slot.prof, scenario, tier, arc_index, slot.phm is not None
            )
        except AgentOutputError as exc:
            slot.stats.gates.stage_failed("planner")
            slot.stats.reasons.append(f"{slot.session_id} plan try {attempt + 1}: {exc}")
    raise _PatientFailed(f"no valid plan in {slot.attempts} attempts")


@solver
def generation_pipeline(
    store: EHRStore, cohort: str | None = None, attempts: int = 3, patient_limit: int = 5
) -> Solver:
    """Generate one session for the sample's slot; see the module docstring. ``cohort``: a
    synthetic cohort directory whose ``phm/`` grounds the patient agent (None: no PHM)."""
    if attempts < 1 or patient_limit < 1:
        raise ValueError(
            f"attempts and patient_limit must be >= 1, got {attempts}, {patient_limit}"
        )
    cohort_path = Path(cohort) if cohort else None

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        meta = state.metadata
        caller = Caller(seed=int(meta["seed"]))
        stats = SlotStats()
        session = await generate_slot(
            store=store,
            cohort=cohort_path,
            meta=meta,
            caller=caller,
            stats=stats,
            attempts=attempts,
            patient_limit=patient_limit,
        )
        state.store.set(RESULT_KEY, {"session": session, "stats": stats.to_dict(caller)})
        state.completed = True
        return state

    return solve
