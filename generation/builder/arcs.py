"""The 27 four-turn task arcs, their tier eligibility and the position rules.

Arcs are indexed in the reference product order (T1 x T2 x T3, each iterating IL, DG, CR
and T3 iterating DG, CR, WU fastest), so ``sequence_idx`` in built sessions is comparable
with released data.
"""

from __future__ import annotations

from itertools import product

from physassist.vocab import CLINICAL_REASONING as CR
from physassist.vocab import DATA_GATHERING as DG
from physassist.vocab import INFORMATION_LOOKUP as IL
from physassist.vocab import WRITE_UPDATE as WU

#: Task types allowed at each turn position.
POSITION_TYPES: tuple[tuple[str, ...], ...] = ((IL,), (IL, DG, CR), (IL, DG, CR), (DG, CR, WU))

ARCS: tuple[tuple[str, str, str, str], ...] = tuple(
    (IL, t1, t2, t3)
    for t1, t2, t3 in product(POSITION_TYPES[1], POSITION_TYPES[2], POSITION_TYPES[3])
)


def arc_allowed(arc: tuple[str, ...], tier: int) -> bool:
    """Tier rule (paper Table H1): L2 needs DG or CR in T1/T2, L3 needs CR in T1/T2."""
    if tier not in (1, 2, 3):
        raise ValueError(f"tier must be 1, 2 or 3, got {tier!r}")
    middle = arc[1:3]
    if tier == 1:
        return True
    if tier == 2:
        return DG in middle or CR in middle
    return CR in middle


def eligible_arcs(tier: int) -> list[int]:
    """Indices (into ``ARCS``) usable for a tier: 27 / 24 / 15 arcs for L1 / L2 / L3."""
    return [i for i, arc in enumerate(ARCS) if arc_allowed(arc, tier)]


def check_positions(task_types: list[str] | tuple[str, ...]) -> list[str]:
    """Return the position-rule violations of a four-turn type sequence (empty when valid)."""
    problems: list[str] = []
    if len(task_types) != 4:
        return [f"expected 4 turns, got {len(task_types)}"]
    for t, (kind, allowed) in enumerate(zip(task_types, POSITION_TYPES, strict=True)):
        if kind not in allowed:
            problems.append(f"turn {t}: {kind!r} not allowed (allowed: {', '.join(allowed)})")
    return problems
