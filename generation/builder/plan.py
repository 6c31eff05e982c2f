"""Choosing a session's arc and turn topics under the benchmark's structural rules.

Rules enforced (and re-checkable with :func:`check_session_rules`):

* position rules and tier rules of the arc (:mod:`.arcs`);
* tool diversity: at least two FHIR resource types per session, no resource type in more
  than two turns, at most one patient/mixed turn;
* only topics the patient's data supports (the candidates come from the profile, and a
  topic whose gold call returns nothing is banned and the session replanned).

The search is a seeded depth-first search with a node budget; the candidate order mixes
continuity (a later turn about an entity of an earlier turn, which makes NA rewrites
possible) with variety (kinds not used yet first).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

from .arcs import ARCS, arc_allowed, check_positions
from .profile import Profile
from .topics import Topic, follows, repeats

MAX_TURNS_PER_RESOURCE = 2
MIN_RESOURCE_TYPES = 2
MAX_PATIENT_TURNS = 1
SEARCH_BUDGET = 4000
FOCUS_SHARE = 0.7
LINK_SHARE = 0.7
PLANS_PER_ARC = 4  # independent plan searches per arc; one of the plans found is drawn  # how often a turn prefers a topic about an earlier turn's entity (enables NA)  # how often a turn tries the scenario's signature kinds first

CandidateFn = Callable[[str, str, Profile], list[Topic]]


def resource_types(tools: Sequence[str]) -> set[str]:
    """FHIR resource types named by tool calls (patient tools and control excluded)."""
    return {t.split(".")[0] for t in tools if "." in t and not t.startswith("patient.")}


def check_session_rules(
    task_types: Sequence[str],
    turn_tools: Sequence[Sequence[str]],
    tool_sources: Sequence[str],
    tier: int,
) -> list[str]:
    """Violations of the arc, tier and diversity rules by a built session (empty when valid)."""
    problems = check_positions(list(task_types))
    if not problems and not arc_allowed(tuple(task_types), tier):
        problems.append(f"arc {list(task_types)} not allowed for tier L{tier}")
    per_turn = [resource_types(tools) for tools in turn_tools]
    every = set().union(*per_turn) if per_turn else set()
    if len(every) < MIN_RESOURCE_TYPES:
        problems.append(f"only {len(every)} FHIR resource type(s): {sorted(every)}")
    for rtype in sorted(every):
        n = sum(rtype in turn for turn in per_turn)
        if n > MAX_TURNS_PER_RESOURCE:
            problems.append(
                f"resource type {rtype} used in {n} turns (max {MAX_TURNS_PER_RESOURCE})"
            )
    n_patient = sum(s in ("patient", "mixed") for s in tool_sources)
    if n_patient > MAX_PATIENT_TURNS:
        problems.append(f"{n_patient} patient/mixed turns (max {MAX_PATIENT_TURNS})")
    return problems


def _order(
    pool: list[Topic],
    chosen: list[Topic],
    rng: random.Random,
    prefer_patient: bool = False,
    focus: frozenset[str] = frozenset(),
    ahead: frozenset[str] = frozenset(),
    require: frozenset[Topic] = frozenset(),
) -> list[Topic]:
    """Seeded order of one turn's candidates: shuffled, then a required topic not asked yet,
    then continuity/variety preferences."""
    items = list(pool)
    rng.shuffle(items)
    prior = {e for t in chosen for e in t.entities}
    kinds = {t.kind for t in chosen}
    prefer_link = rng.random() < LINK_SHARE
    prefer_focus = rng.random() < FOCUS_SHARE

    needed = bool(require) and not require & set(chosen)

    def key(t: Topic) -> tuple[int, int, int, int, int]:
        # "Linked": about an earlier turn's entity, or (first turn) one the next turn can
        # pick up again.
        linked = bool(set(t.entities) & (prior or ahead))
        required_first = 0 if (needed and t in require) else 1
        patient_first = 0 if (prefer_patient and t.source in ("patient", "mixed")) else 1
        focus_first = 0 if (prefer_focus and t.kind in focus) else 1
        return (
            required_first,
            patient_first,
            0 if linked == prefer_link else 1,
            focus_first,
            1 if t.kind in kinds else 0,
        )

    return sorted(items, key=key)


def choose_topics(
    arc_index: int,
    pools: list[list[Topic]],
    rng: random.Random,
    patient_ok: bool = True,
    prefer_patient: bool = False,
    focus: frozenset[str] = frozenset(),
    require: frozenset[Topic] | None = None,
) -> list[Topic] | None:
    """Topics for the four turns of an arc satisfying the diversity rules, or None.

    ``prefer_patient`` tries patient-interview topics first (the session then has one
    patient/mixed turn whenever the arc and the data allow it); ``focus`` names the
    scenario's signature kinds, tried first at most turns; ``require`` (when given) holds
    topics one of which the plan must ask (the chart's safety signal). Each turn follows the
    one before it (:func:`.topics.follows`: no flag of an unnamed lab) and asks nothing an
    earlier turn answered (:func:`.topics.repeats`)."""
    if require is not None and not require:
        return None
    arc = ARCS[arc_index]
    budget = [SEARCH_BUDGET]

    def ok_partial(chosen: list[Topic]) -> bool:
        counts: dict[str, int] = {}
        for t in chosen:
            for r in t.resource_types:
                counts[r] = counts.get(r, 0) + 1
        if any(n > MAX_TURNS_PER_RESOURCE for n in counts.values()):
            return False
        n_patient = sum(t.source in ("patient", "mixed") for t in chosen)
        if n_patient > (MAX_PATIENT_TURNS if patient_ok else 0):
            return False
        if not follows(chosen[-2] if len(chosen) > 1 else None, chosen[-1]):
            return False
        if repeats(chosen[:-1], chosen[-1]):
            return False
        if require is not None and len(chosen) == 4 and not require & set(chosen):
            return False
        return len(set(chosen)) == len(chosen)

    def search(chosen: list[Topic]) -> Iterator[list[Topic]]:
        if len(chosen) == 4:
            types = set().union(*(t.resource_types for t in chosen))
            if len(types) >= MIN_RESOURCE_TYPES:
                yield list(chosen)
            return
        t = len(chosen)
        ahead = (
            frozenset(
                e
                for p in (pools[t + 1] if t + 1 < len(pools) else [])
                if p.task_type == arc[t + 1]
                for e in p.entities
            )
            if t == 0
            else frozenset()
        )
        for topic in _order(
            [p for p in pools[t] if p.task_type == arc[t]],
            chosen,
            rng,
            prefer_patient,
            focus,
            ahead,
            require or frozenset(),
        ):
            budget[0] -= 1
            if budget[0] < 0:
                return
            nxt = chosen + [topic]
            if ok_partial(nxt):
                yield from search(nxt)

    found: list[list[Topic]] = []
    for _ in range(PLANS_PER_ARC):  # independent seeded searches give different branches
        budget[0] = SEARCH_BUDGET
        plan = next(search([]), None)
        if plan is None:
            break
        if plan not in found:
            found.append(plan)
    if not found:
        return None
    # Prefer plans whose turns build on earlier turns (shared entities make NA rewrites
    # possible) and that use the scenario's signature kinds, without always taking the best.
    weights = [(1 + links(plan) + sum(t.kind in focus for t in plan)) ** 2 for plan in found]
    return rng.choices(found, weights=weights)[0]


def links(topics: list[Topic]) -> int:
    """Turns that share an entity with an earlier turn."""
    seen: set[str] = set()
    n = 0
    for t in topics:
        if seen & set(t.entities):
            n += 1
        seen |= set(t.entities)
    return n
