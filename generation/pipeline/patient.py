"""The patient agent: interview replies in the patient's voice, grounded in the cohort PHM."""

from __future__ import annotations

from typing import Any

from .llm import Caller, need_str


async def patient_reply(
    caller: Caller, phm: dict[str, Any], literacy: str, tool: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    """The observation of one patient.* call: ``{"patient_response": ...}``."""
    payload = {
        "patient_model": phm,
        "health_literacy": literacy,
        "tool": tool,
        "arguments": {k: v for k, v in arguments.items() if k not in ("subject_id", "session_id")},
    }
    reply = await caller.ask("patient", "patient", payload, temperature=0.7)
    return {
        "patient_response": need_str(reply, "patient_response", "patient"),
        "health_literacy": literacy,
    }
