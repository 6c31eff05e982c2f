"""A degenerate run: one in which no turn was answered, or no turn was scored.

Such a run is a result (its mRS may well be 0.0 or missing), but not the one its author meant to
measure: a tool budget no turn fits in with the nudge off (README's first worked example ended
all 144 turns at the budget and reported 0.0 next to 44.2), a judge that decided nothing. The
commands print ``summary`` as one warning line with the counts and tag the run with it
(``DEGENERATE_TAG``); system faults are counted apart (``physassist.faults``).
"""

from __future__ import annotations

from collections import Counter

import pandas as pd

DEGENERATE_TAG = "physassist.degenerate"

#: How a turn that gave no answer ended (``end`` of the turn record), as the warning says it.
_ENDS = {
    "budget": "ended at the budget",
    "error": "ended in a system fault",
    "answered": "ended with an empty reply",
    "nudged": "ended with an empty reply to the nudge",
}
#: Why a turn is unscored (the scorer's ``status``).
_STATUSES = {
    "undecided": "undecided by the judge",
    "failed": "not graded (judge failure)",
    "error": "in a system fault",
}


def _breakdown(values: pd.Series, words: dict[str, str]) -> str:
    """``all ended at the budget``, or ``120 ended at the budget, 24 ended in a system fault``."""
    counts = Counter(str(v) for v in values)
    if len(counts) == 1:
        (only,) = counts
        return "all " + words.get(only, only)
    return ", ".join(f"{n} {words.get(v, v)}" for v, n in counts.most_common())


def summary(turns: pd.DataFrame) -> str | None:
    """``0 of 144 turns answered: all ended at the budget`` (and/or ``0 of 144 turns scored:
    all undecided by the judge``), or None when the run is not degenerate."""
    if turns is None or not len(turns):
        return None
    if "status" in turns.columns and (turns["status"] == "error").all():
        return None  # every turn a system fault: the faults line says it (physassist.faults)
    n = len(turns)
    parts = []
    if (
        "answered" in turns.columns
        and turns["answered"].notna().all()
        and not turns["answered"].astype(bool).any()
    ):
        parts.append(f"0 of {n} turns answered: {_breakdown(turns['end'], _ENDS)}")
    if "score" in turns.columns and turns["score"].isna().all():
        parts.append(f"0 of {n} turns scored: {_breakdown(turns['status'], _STATUSES)}")
    return "; ".join(parts) or None
