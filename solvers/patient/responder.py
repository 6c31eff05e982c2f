"""The patient of one sample: the ``patient`` option's replay or live responder."""

from __future__ import annotations

import dataclasses
from typing import Any

from inspect_ai.model import get_model

from physassist.data import Session
from physassist.ehr.tools import PatientResponder, ToolContext, call_tool

from .live import LivePatient, derived_patient_model
from .replay import ReplayPatient


def record_summary(ctx: ToolContext) -> dict[str, Any]:
    """Diagnoses and medicines from the record, to ground a live patient without a PHM."""
    summary: dict[str, Any] = {}
    unrestricted = dataclasses.replace(ctx, allowed=None)  # the menu limits the model, not the patient
    queries = {
        "diagnoses": ("Condition.search", "code"),
        "medications": ("MedicationRequest.search", "medicationCodeableConcept"),
    }
    for key, (tool, field) in queries.items():
        args: dict[str, Any] = {"subject_id": ctx.subject_id}
        if ctx.hadm_id is not None:
            args["hadm_id"] = ctx.hadm_id
        raw = call_tool(unrestricted, tool, args)
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
    seed: int | None = None,
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
            persona, session.gold_patient_answers(language), record_summary(ctx)
        )
    return LivePatient(model, grounding, persona=persona, language=language, literacy=literacy, seed=seed)
