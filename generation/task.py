"""Session generation as an Inspect task: one Sample per (scenario, tier, arc) slot.

Slots come from the deterministic builder's pre-filter (SQL per scenario x tier, tiers never
merged) and arc rules (an arc eligible for the tier); candidates are the slot's qualified
patients in a seeded order. The solver is the multi-agent pipeline of ``generation.pipeline``
and the scorer hands the session and its statistics to ``physassist-generate`` through the
score metadata. Every agent is a model role (planner, user, answer, checker, patient,
rubric, translator) that defaults to the eval's model, the generator.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import Score, Scorer, Target, mean, scorer
from inspect_ai.solver import TaskState

from physassist.ehr.store import open_store
from physassist.listarg import as_list
from physassist.vocab import SCENARIOS, TIERS

# The builder and the pipeline are imported where a generation runs: Inspect loads this module
# with the project's entry point (``physassist._registry``) in every eval, which uses neither
# (~0.3 s of imports).


def slot_seed(seed: int, key: str) -> int:
    """A stable per-slot seed (Python's hash() is salted per process)."""
    return int.from_bytes(hashlib.sha256(f"{seed}:{key}".encode()).digest()[:4], "big")


def slot_samples(store: Any, scenarios: Sequence[str], tiers: Sequence[int],
                 sessions_per_slot: int, seed: int, candidates: int) -> list[Sample]:
    """One Sample per wanted session; each lists ``candidates`` qualified patients in a
    seeded order (the k-th session of a slot starts k places further along)."""
    from generation.builder.arcs import eligible_arcs
    from generation.builder.prefilter import qualify

    qualified = qualify(store.cursor(), tuple(scenarios), tuple(tiers))
    samples: list[Sample] = []
    for scenario in scenarios:
        index = 0
        for tier in tiers:
            pool = list(qualified[(scenario, tier)])
            rng = random.Random(f"{seed}:{scenario}:L{tier}")
            rng.shuffle(pool)
            arcs = eligible_arcs(tier)
            for k in range(sessions_per_slot):
                if not pool:
                    break
                start = k % len(pool)
                order = pool[start:] + pool[:start]
                sid = f"{scenario}_L{tier}_{k}"
                samples.append(Sample(
                    id=sid, input=f"Generate session {sid}",
                    metadata={"scenario": scenario, "tier": tier, "arc_index": rng.choice(arcs),
                              "index": index, "global_index": len(samples),
                              "seed": slot_seed(seed, sid),
                              "candidates": [{"subject_id": c.subject_id, "hadm_id": c.hadm_id,
                                              "current_date": c.current_date}
                                             for c in order[:candidates]]}))
                index += 1
    return samples


@scorer(metrics=[mean()])
def generation_result() -> Scorer:
    """1 when the slot produced a session; the session and the slot statistics go into the
    score metadata for ``physassist-generate`` to write out."""
    from generation.pipeline.solver import RESULT_KEY


    async def score(state: TaskState, target: Target) -> Score:
        result = state.store.get(RESULT_KEY) or {"session": None, "stats": {}}
        produced = result["session"] is not None
        return Score(value=1.0 if produced else 0.0,
                     answer=(result["session"] or {}).get("id", ""),
                     metadata={"session": result["session"], "stats": result["stats"],
                               "scenario": state.metadata["scenario"],
                               "tier": state.metadata["tier"]})

    return score


@task
def generate(store: str = "sample", scenarios: str | list[str] | None = None,
             tiers: str | list[int] | None = None, sessions_per_slot: int = 1, seed: int = 0,
             attempts: int = 3, patient_limit: int = 5, cache_dir: str | None = None) -> Task:
    """Generate sessions (see module docstring). ``store``: anything ``open_store`` accepts."""
    from generation.pipeline.solver import generation_pipeline

    scen = as_list(scenarios, "scenarios", str) or list(SCENARIOS)
    tier_list = as_list(tiers, "tiers", int) or list(TIERS)
    bad = [s for s in scen if s not in SCENARIOS] + [str(t) for t in tier_list if t not in TIERS]
    if bad:
        raise ValueError(f"generate: unknown scenario/tier {', '.join(bad)}; valid: "
                         f"{', '.join(SCENARIOS)} and tiers {TIERS}")
    if sessions_per_slot < 1:
        raise ValueError(f"generate: sessions_per_slot must be >= 1, got {sessions_per_slot}")
    ehr = open_store(store, cache_dir=cache_dir)
    phm = Path(ehr.source) / "phm"
    samples = slot_samples(ehr, scen, tier_list, sessions_per_slot, seed, patient_limit)
    if not samples:
        raise ValueError(f"generate: no qualified patients in {store!r} for {scen} x {tier_list}")
    return Task(
        dataset=MemoryDataset(samples, name="physassist-generate"),
        solver=generation_pipeline(ehr, str(ehr.source) if phm.is_dir() else None, attempts, patient_limit),
        scorer=generation_result(),
        config=GenerateConfig(seed=seed),
        metadata={"seed": seed, "store": str(store), "store_fingerprint": ehr.fingerprint},
    )
