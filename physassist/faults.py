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
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DiskFull", "ERROR_STATUS", "EXIT_FAULTS", "FAULT_TAG", "JUDGE_FAILED_MAX", "SystemFault", "describe", "fault_summary",
]

#: The scorer status (and the loop's ``end``) of a turn that a system fault ended.
ERROR_STATUS: Final = "error"
#: ``physassist-eval``'s exit status when any turn ended in a system fault (after logging).
EXIT_FAULTS = 4
#: MLflow tag of a run in which system faults left turns unscored (its value: ``fault_summary``).
FAULT_TAG = "physassist.faults"
#: Turns a run tolerates that the judge could not grade (its replies never parsed as a verdict,
#: or its calls failed: scorer status ``failed`` with an ``error_kind``) before the run is a
#: system fault like any other: 0, so any such turn makes the run FAILED and exits 4. A judge
#: that cannot grade says nothing about the assistant.
JUDGE_FAILED_MAX = 0


class DiskFull(RuntimeError):
    """A directory we write to has no space left (ENOSPC): the message names it."""


def no_space(exc: BaseException | None, directory: str | None = None) -> bool:
    """Whether ``exc`` (or an error in its chain) is ENOSPC, or, when ``directory`` is given,
    whether a small write there fails with ENOSPC now (Inspect's log writer reports a full
    disk as another error: the file it could not write is missing)."""
    import errno
    import os
    import tempfile

    for _ in range(10):
        if exc is None:
            break
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            return True
        exc = exc.__cause__ or exc.__context__
    if directory is None:
        return False
    try:
        with tempfile.NamedTemporaryFile(dir=directory, prefix=".physassist-space-") as probe:
            probe.write(b"\0" * 65536)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as probe_error:
        return probe_error.errno == errno.ENOSPC
    return False


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
    reasons first), and how many the judge could not grade (above ``JUDGE_FAILED_MAX``), or
    None when there were none. ``turns``: the per-turn table."""
    if not len(turns) or "status" not in turns.columns:
        return None
    parts = []
    faulted = turns[turns["status"] == ERROR_STATUS]
    if not faulted.empty:
        parts.append(
            f"{len(faulted)} of {len(turns)} turns ended in a system fault and are unscored: {_reasons(faulted)}"
        )
    kinds = turns["error_kind"] if "error_kind" in turns.columns else None
    ungraded = turns[(turns["status"] != ERROR_STATUS) & kinds.isin(("unparseable", "provider"))] if kinds is not None else turns[:0]
    if len(ungraded) > JUDGE_FAILED_MAX:
        counts = Counter(str(k) for k in ungraded["error_kind"])
        how = ", ".join(f"{n} {'unparseable replies' if k == 'unparseable' else 'failed calls'}" for k, n in counts.most_common())
        parts.append(f"the judge could not grade {len(ungraded)} of {len(turns)} turns ({how}): {_reasons(ungraded)}")
    return "; ".join(parts) or None


def _reasons(turns: pd.DataFrame) -> str:
    reasons = Counter(" ".join(str(e).split())[:200] for e in turns.get("error", [None] * len(turns)))
    top = "; ".join(f"{n}x {reason}" for reason, n in reasons.most_common(3))
    return top + (f"; and {len(reasons) - 3} other reasons" if len(reasons) > 3 else "")
