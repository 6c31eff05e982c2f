"""The parts of a session the judges need, per turn and language.

A thin layer over `physassist.data.models.Session` (the released fallbacks live there):
it adds the judge-specific derived views (gold tool calls without control tools, gold write
parameters) and turns rubric checks into plain dicts for the rules judge.
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from physassist.data.models import Session, SessionFormatError, sample_session
from physassist.vocab import PREPARE_TO_ANSWER, WRITE_TOOLS, WRITE_UPDATE

WRITE_TASK = WRITE_UPDATE

__all__ = ["WRITE_TASK", "WRITE_TOOLS", "SessionDataError", "SessionView"]


class SessionDataError(ValueError):
    """A session cannot be scored; the message names session, turn and field."""


class SessionView:
    """Accessors over one session: the Sample's `metadata["session"]` (its JSON string, or
    the dict form of older logs), or a `Session`."""

    def __init__(self, data: str | dict[str, Any] | Session) -> None:
        if isinstance(data, Session):
            self.model = data
            return
        try:
            self.model = sample_session(data)
        except json.JSONDecodeError as exc:
            raise SessionDataError(f"session metadata is not valid JSON: {exc}") from exc
        except ValidationError as exc:
            raw = json.loads(data) if isinstance(data, str) else data
            sid = raw.get("id", "<no id>") if isinstance(raw, dict) else "<not a dict>"
            raise SessionDataError(f"session {sid!r}: not a valid session: {exc}") from exc

    @property
    def id(self) -> str:
        return self.model.id

    def _error(self, turn: int | None, field: str, problem: str) -> SessionDataError:
        where = f"session {self.id!r}" + (f", turn {turn}" if turn is not None else "")
        return SessionDataError(f"{where}, field {field!r}: {problem}")

    def n_rubric_turns(self) -> int:
        """The turns that have a rubric (the turns the scorer judges)."""
        return len(self.model.rubrics)

    def question(self, turn: int, language: str = "en", explicit: bool = False) -> str:
        return self.model.question(turn, language, explicit)

    def rubric(self, turn: int, language: str = "en") -> list[str]:
        items = self.model.rubric(turn, language)
        if not items:
            raise self._error(turn, "rubrics", "empty rubric")
        return items

    def rubric_checks(self, turn: int) -> list[dict[str, Any] | None]:
        """Validated machine-checkable forms as dicts (None per item without one)."""
        try:
            checks = self.model.rubric_checks(turn)
        except ValidationError as exc:
            raise self._error(turn, "rubric_checks", f"malformed check: {exc}") from exc
        return [None if c is None else c.model_dump() for c in checks]

    def task_type(self, turn: int) -> str:
        """The turn's task type; a session without one for this turn cannot be scored (a
        guessed type would pick the wrong judge and breakdown)."""
        types = self.model.task_types
        if turn >= len(types) or not types[turn]:
            raise self._error(turn, "task_types", "no task type for this turn")
        return str(types[turn])

    def gold_actions(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        return self.model.gold_actions(turn, language)

    def gold_answer(self, turn: int, language: str = "en") -> str:
        """The gold answer text, or "" when the session has none for this turn."""
        try:
            return self.model.gold_answer(turn, language)
        except SessionFormatError:
            return ""

    def gold_history(self, turn: int, language: str = "en") -> list[dict[str, str]]:
        """The gold conversation before `turn` ([] when the language has no gold messages)."""
        try:
            history = self.model.gold_history(turn, language)
        except SessionFormatError:
            return []
        return [{"role": str(m["role"]), "content": str(m["content"] or "")} for m in history]

    def gold_calls(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        """Gold tool calls (without control tools): [{name, arguments, observation}]."""
        out = []
        for item in self.gold_actions(turn, language):
            action = item.get("action") or {}
            name = action.get("name")
            if isinstance(name, str) and name != PREPARE_TO_ANSWER:
                out.append(
                    {
                        "name": name,
                        "arguments": action.get("arguments") or {},
                        "observation": item.get("observation"),
                    }
                )
        return out

    @cached_property
    def _gold_tools(self) -> list[list[str]]:
        return [
            list(dict.fromkeys(n for n in self.model.gold_tool_names(t) if n != PREPARE_TO_ANSWER))
            for t in range(len(self.model.answer_list))
        ]

    def gold_tools(self, turn: int) -> list[str]:
        """Distinct gold tool names of the turn, in first-use order."""
        return self._gold_tools[turn] if turn < len(self._gold_tools) else []

    def gold_write_params(self, turn: int) -> list[dict[str, Any]]:
        """Gold write calls as [{tool, params}] (from the trajectory, else `write_gold_params`)."""
        calls = [
            {"tool": c["name"], "params": _without_ids(c["arguments"])}
            for c in self.gold_calls(turn)
            if c["name"] in WRITE_TOOLS
        ]
        extra = self.model.write_gold_params
        if not calls and isinstance(extra, list):
            calls = [
                {"tool": p.get("tool"), "params": _without_ids(p.get("params") or {})}
                for p in extra
                if isinstance(p, dict)
            ]
        return calls


def _without_ids(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in arguments.items()
        if k not in ("subject_id", "hadm_id") and v not in (None, "", [], {})
    }
