"""Per-sample EHR context: the shared store and the session's ``ToolContext``.

The store is opened once per process (``cached_store``) and shared read-only by all
samples; each sample gets its own ``ToolContext`` (subject scope, inclusive cutoff at the
end of the session's current date or at its ``cutoff`` instant, its own write sandbox; the
loop sets its patient from ``solvers.patient.responder``).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from physassist.data import Session
from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import ToolContext, WriteSandbox, open_chart

from .prompting import session_key


@lru_cache(maxsize=8)
def cached_store(source: str) -> EHRStore:
    """The store for ``source`` ("sample", a MIMIC-IV/cohort directory or a .duckdb file),
    opened (and built if needed) once per process."""
    return open_store(source if source == "sample" else str(Path(source).expanduser()))


def tool_context(session: Session, store: EHRStore, *, semantics: str) -> ToolContext:
    """A fresh ``ToolContext`` for one sample (own sandbox; patient set by the caller)."""
    current_date = session.effective_date
    ctx = ToolContext(
        store=store,
        subject_id=session.subject_id,
        hadm_id=session.hadm_id,
        current_date=current_date,
        cutoff=session.cutoff_time,  # the end of the current date, or the session's instant
        semantics=semantics,  # type: ignore[arg-type]
        session_id=session_key({"session_id": session.session_id, "id": session.id}),
        sandbox=WriteSandbox(),
    )
    open_chart(ctx)  # loads the patient's rows while the model prepares its first call
    return ctx
