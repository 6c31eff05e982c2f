"""The texts the assistant and the simulated patient see, in EN and ZH.

The wording lives in ``solvers/prompts/*.txt|json`` and, for the simulated patient,
``solvers/patient/prompts/`` (our own words, not the reference's); this module only loads and
fills them, so that prompt edits never touch code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"


@cache
def prompt_text(name: str, language: str, folder: Path = PROMPTS_DIR) -> str:
    """The raw text of ``<folder>/<name>_<language>.txt`` (trailing whitespace stripped)."""
    path = folder / f"{name}_{language}.txt"
    return path.read_text(encoding="utf-8").rstrip()


@cache
def prompt_json(name: str, language: str, folder: Path = PROMPTS_DIR) -> dict[str, Any]:
    """The parsed ``<folder>/<name>_<language>.json``."""
    path = folder / f"{name}_{language}.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def system_prompt(language: str, terminal_rule: str) -> str:
    """System prompt for the assistant; the last rule (the terminal strategy's) says how to
    finish a turn."""
    return prompt_text("system", language).format(terminal_rule=terminal_rule)


def opening_message(session: dict[str, Any], language: str) -> str:
    """First user message: the session's environment (ids, date, env_info)."""
    return prompt_text("opening", language).format(
        env_info=str(session.get("env_info") or "").strip(),
        subject_id=session.get("subject_id"),
        hadm_id=session.get("hadm_id"),
        session_id=session_key(session),
        current_date=session.get("current_date") or "",
    )


def session_key(session: dict[str, Any]) -> str:
    """The session id shown to the model: ``session_id`` or, when the released entry has
    none (discharge-planning pipeline), the entry ``id``. Offline agents look sessions up
    by this key, and patient tools receive it as their ``session_id`` argument."""
    return str(session.get("session_id") or session.get("id"))


def nudge_message(language: str) -> str:
    """Temporary tool-free request for a final answer (never kept in the history)."""
    return prompt_text("nudge", language)
