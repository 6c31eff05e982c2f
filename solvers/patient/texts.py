"""The patient's own texts (system prompt, rules, question wording, the miss answer) in
``solvers/patient/prompts/``, EN and ZH."""

from __future__ import annotations

from pathlib import Path

from ..prompting import prompt_text

PROMPTS = Path(__file__).resolve().parent / "prompts"


def miss_answer(language: str) -> str:
    """The fixed patient answer to a question the patient has no reply for."""
    return prompt_text("miss", language, PROMPTS)
