"""Per-sample EHR context: the shared store, the session's ``ToolContext`` and patient.

The store is opened once per process (``cached_store``) and shared read-only by all
samples; each sample gets its own ``ToolContext`` (subject scope, inclusive cutoff at the
end of the session's current date, its own write sandbox and patient responder).
"""

from __future__ import annotations

import datetime as dt
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai.model import get_model

from physassist.data import Session
from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import (
    PatientResponder,
    ToolContext,
    WriteSandbox,
    call_tool,
    open_chart,
)

from .patient_live import LivePatient, derived_patient_model
from .patient_replay import ReplayPatient
from .prompting import session_key


@lru_cache(maxsize=8)
def cached_store(source: str) -> EHRStore:
    """The store for ``source`` ("sample", a MIMIC-IV/cohort directory or a .duckdb file),
    opened (and built if needed) once per process."""
    return open_store(source if source == "sample" else str(Path(source).expanduser()))


def end_of_day(current_date: str | None) -> dt.datetime | None:
    """Inclusive strict cutoff: the last microsecond of the session's current date."""
    if not current_date:
        return None
    return dt.datetime.combine(dt.date.fromisoformat(str(current_date)[:10]), dt.time.max)


def _record_summary(ctx: ToolContext) -> dict[str, Any]:
    """Diagnoses and medicines from the record, to ground a live patient without a PHM."""
    summary: dict[str, Any] = {}
    queries = {
        "diagnoses": ("Condition.search", "code"),
        "medications": ("MedicationRequest.search", "medicationCodeableConcept"),
    }
    for key, (tool, field) in queries.items():
        args: dict[str, Any] = {"subject_id": ctx.subject_id}
        if ctx.hadm_id is not None:
            args["hadm_id"] = ctx.hadm_id
        saved = ctx.allowed
        ctx.allowed = None
        try:
            raw = call_tool(ctx, tool, args)
        finally:
            ctx.allowed = saved
        names: list[str] = []
        for entry in raw.get("entry") or []:
            concept = (entry.get("resource") or {}).get(field) or {}
            text = concept.get("text") if isinstance(concept, dict) else None
            if text and text not in names:
                names.append(text)
        summary[key] = names[:15]
    return summary


def patient_responder(
    session: Session,
    ctx: ToolContext,
    *,
    mode: str,
    language: str,
    literacy: str,
    miss: str,
) -> PatientResponder:
    """The interview responder of one sample (``replay`` or ``live``)."""
    if mode == "replay":
        return ReplayPatient(
            session.gold_patient_answers(language), language=language, literacy=literacy, miss=miss
        )
    model = get_model(role="patient", required=True)
    persona = dict(session.persona_config or {})
    if session.patient_model:
        grounding = dict(session.patient_model)
        persona = {**dict(grounding.get("persona") or {}), **persona}
    else:
        grounding = derived_patient_model(
            persona, session.gold_patient_answers(language), _record_summary(ctx)
        )
    return LivePatient(model, grounding, persona=persona, language=language, literacy=literacy)


def tool_context(session: Session, store: EHRStore, *, semantics: str) -> ToolContext:
    """A fresh ``ToolContext`` for one sample (own sandbox; patient set by the caller)."""
    current_date = session.effective_date
    ctx = ToolContext(
        store=store,
        subject_id=session.subject_id,
        hadm_id=session.hadm_id,
        current_date=current_date,
        cutoff=end_of_day(current_date),
        semantics=semantics,  # type: ignore[arg-type]
        session_id=session_key({"session_id": session.session_id, "id": session.id}),
        sandbox=WriteSandbox(),
    )
    open_chart(ctx)  # loads the patient's rows while the model prepares its first call
    return ctx
