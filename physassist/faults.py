"""System faults: failures of the machinery, never answers of the model.

A provider that still fails after Inspect's retries, a live patient or grader whose model call
fails, a store that cannot be read, a bug of ours: none of these says anything about the
assistant. The assistant loop ends the turn during which one happens with ``end="error"`` and the
message; the scorer leaves such a turn unscored with status ``error`` (counted in
``unscored_turns`` and ``error_turns``, never 0); ``physassist-eval`` flags the run and exits
with ``EXIT_FAULTS``. A wrong or empty answer from a model that did answer is not a fault.

Code below the loop that meets a system fault raises ``SystemFault``: the EHR layer's
``call_tool`` (which answers every *model* mistake with an ``OperationOutcome``) lets it through,
and Inspect's tool executor re-raises it out of ``execute_tools`` to the loop.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ERROR_STATUS", "EXIT_FAULTS", "FAULT_TAG", "SystemFault", "describe", "fault_summary"]

#: The scorer status (and the loop's ``end``) of a turn that a system fault ended.
ERROR_STATUS = "error"
#: ``physassist-eval``'s exit status when any turn ended in a system fault (after logging).
EXIT_FAULTS = 4
#: MLflow tag of a run in which system faults left turns unscored (its value: ``fault_summary``).
FAULT_TAG = "physassist.faults"


class SystemFault(RuntimeError):
    """The system, not the model, failed: end the turn unscored (raise it from a tool, a
    patient responder or any code the assistant loop runs)."""


def root_cause(exc: BaseException) -> BaseException:
    """The exception that says what failed: the last attempt's inside a retry wrapper
    (tenacity's ``RetryError``, which Inspect raises when retries run out), the only one
    inside an exception group."""
    for _ in range(10):  # bounded: wrappers nest a few levels at most
        last = getattr(exc, "last_attempt", None)
        inner = last.exception() if last is not None and hasattr(last, "exception") else None
        if inner is None and isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            inner = exc.exceptions[0]
        if inner is None:
            return exc
        exc = inner
    return exc


def describe(exc: BaseException, limit: int = 500) -> str:
    """``Type: message`` of the root cause on one line, cut at ``limit`` characters (provider
    errors can carry whole HTML pages)."""
    exc = root_cause(exc)
    text = " ".join(str(exc).split()) or repr(exc)
    line = f"{type(exc).__name__}: {text}"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def fault_summary(turns: pd.DataFrame) -> str | None:
    """One line saying how many turns system faults left unscored and why (the most frequent
    reasons first), or None when there were none. ``turns``: the per-turn table."""
    if not len(turns) or "status" not in turns.columns:
        return None
    faulted = turns[turns["status"] == ERROR_STATUS]
    if faulted.empty:
        return None
    reasons = Counter(str(e) for e in faulted.get("error", [None] * len(faulted)))
    top = "; ".join(f"{n}x {reason}" for reason, n in reasons.most_common(3))
    more = f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else ""
    return (
        f"{len(faulted)} of {len(turns)} turns ended in a system fault and are unscored: "
        f"{top}{more}"
    )
