"""Read-only view of a session JSON dict: the parts the judges need, per turn and language.

Reads the released keys directly (official-implementation.md §1) with the released
fallbacks (`*_en` -> base key, `*_zh` -> base key where the reference does so), so the
scorers work on released data and on the project's own sessions alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTROL_TOOLS = frozenset({"prepare_to_answer", "submit"})
WRITE_TOOLS = frozenset({"MedicationRequest.create", "ServiceRequest.create", "Flag.create"})
WRITE_TASK = "Write/Update"
_SEPARATOR_CHARS = frozenset("=")


class SessionDataError(ValueError):
    """A session lacks a key the scorer needs; the message names session, turn and field."""


@dataclass(frozen=True)
class SessionView:
    """Accessors over one session dict (the Sample's `metadata["session"]`)."""

    data: dict[str, Any]

    @property
    def id(self) -> str:
        return str(self.data.get("id", "<no id>"))

    def _error(self, turn: int | None, field: str, problem: str) -> SessionDataError:
        where = f"session {self.id!r}" + (f", turn {turn}" if turn is not None else "")
        return SessionDataError(f"{where}, field {field!r}: {problem}")

    def _per_turn(self, keys: tuple[str, ...], turn: int) -> Any:
        for key in keys:
            value = self.data.get(key)
            if isinstance(value, list) and len(value) > turn:
                return value[turn]
        raise self._error(turn, keys[0], "missing or shorter than the turn index")

    def n_turns(self) -> int:
        rubrics = self.data.get("rubrics")
        if not isinstance(rubrics, list):
            raise self._error(None, "rubrics", "missing or not a list")
        return len(rubrics)

    def rubric(self, turn: int, language: str = "en") -> list[str]:
        keys = ("rubrics_zh", "rubrics") if language == "zh" else ("rubrics_en", "rubrics")
        items = self._per_turn(keys, turn)
        if not isinstance(items, list) or not items or not all(isinstance(i, str) for i in items):
            raise self._error(turn, keys[0], "rubric must be a non-empty list of strings")
        return items

    def rubric_checks(self, turn: int) -> list[dict[str, Any] | None]:
        """Machine-checkable forms for the turn's items (None per item when absent)."""
        n_items = len(self.rubric(turn, "en"))
        checks = self.data.get("rubric_checks")
        if checks is None:
            return [None] * n_items
        if not isinstance(checks, list) or len(checks) <= turn or checks[turn] is None:
            return [None] * n_items
        row = checks[turn]
        if not isinstance(row, list) or len(row) != n_items:
            raise self._error(
                turn, "rubric_checks", f"expected a list of {n_items} items (one per rubric item)"
            )
        for i, check in enumerate(row):
            if check is not None and not (
                isinstance(check, dict) and isinstance(check.get("kind"), str)
            ):
                raise self._error(
                    turn, "rubric_checks", f"item {i + 1} must be null or an object with a 'kind'"
                )
        return row

    def task_type(self, turn: int) -> str:
        types = self.data.get("task_types") or []
        return str(types[turn]) if turn < len(types) else "Information Lookup"

    def gold_actions(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        keys = (
            ("answer_list_zh", "answer_list")
            if language == "zh"
            else ("answer_list_en", "answer_list")
        )
        items = self._per_turn(keys, turn)
        if not isinstance(items, list):
            raise self._error(turn, keys[0], "gold trajectory must be a list")
        return items

    def gold_answer(self, turn: int, language: str = "en") -> str:
        """The gold answer: the final `prepare_to_answer` observation."""
        for item in reversed(self.gold_actions(turn, language)):
            if (item.get("action") or {}).get("name") == "prepare_to_answer":
                obs = item.get("observation")
                return obs if isinstance(obs, str) else ""
        return ""

    def gold_calls(self, turn: int, language: str = "en") -> list[dict[str, Any]]:
        """Gold tool calls (without control tools): [{name, arguments, observation}]."""
        out = []
        for item in self.gold_actions(turn, language):
            action = item.get("action") or {}
            name = action.get("name")
            if isinstance(name, str) and name not in CONTROL_TOOLS:
                out.append(
                    {
                        "name": name,
                        "arguments": action.get("arguments") or {},
                        "observation": item.get("observation"),
                    }
                )
        return out

    def gold_tools(self, turn: int) -> list[str]:
        """Distinct gold tool names of the turn, in first-use order."""
        seen: dict[str, None] = {}
        for call in self.gold_calls(turn):
            seen.setdefault(call["name"], None)
        return list(seen)

    def gold_write_params(self, turn: int) -> list[dict[str, Any]]:
        """Gold write calls as [{tool, params}] (from the trajectory, else `write_gold_params`)."""
        calls = [
            {"tool": c["name"], "params": _without_ids(c["arguments"])}
            for c in self.gold_calls(turn)
            if c["name"] in WRITE_TOOLS
        ]
        if not calls and isinstance(self.data.get("write_gold_params"), list):
            calls = [
                {"tool": p.get("tool"), "params": _without_ids(p.get("params") or {})}
                for p in self.data["write_gold_params"]
                if isinstance(p, dict)
            ]
        return calls

    def gold_history(self, turn: int, language: str = "en") -> list[dict[str, str]]:
        """The gold conversation before `turn`: [{role, content}], separators dropped."""
        keys = ("messages_zh", "messages") if language == "zh" else ("messages_en", "messages")
        for key in keys:
            messages = self.data.get(key)
            if isinstance(messages, list):
                dialogue = [
                    m
                    for m in messages
                    if isinstance(m, dict) and not _is_separator(m.get("content"))
                ]
                return [
                    {"role": str(m.get("role")), "content": str(m.get("content") or "")}
                    for m in dialogue[: 2 * turn]
                ]
        return []


def _is_separator(content: Any) -> bool:
    return isinstance(content, str) and content != "" and set(content.strip()) <= _SEPARATOR_CHARS


def _without_ids(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        k: v
        for k, v in arguments.items()
        if k not in ("subject_id", "hadm_id") and v not in (None, "", [], {})
    }
