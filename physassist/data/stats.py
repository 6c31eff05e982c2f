"""Descriptive statistics of a session set, comparable with the paper's Tables G1–G3.

A library function (not CLI code) so that tests, the sample builder's report and the
`physassist-data stats` command all compute the same numbers.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from physassist.data.loader import SessionSet
from physassist.data.models import Session
from physassist.data.turns import flatten_sessions
from physassist.vocab import LANGUAGES, SCENARIOS, SUBTYPES, TASK_TYPES, TOOL_SOURCES

NO_SUBTYPE = "none"


def _is_empty(observation: Any) -> bool:
    if observation is None:
        return True
    if isinstance(observation, str):
        return not observation.strip()
    if isinstance(observation, dict | list):
        return len(observation) == 0
    return False


def _nested(
    frame: pd.DataFrame, rows: str, cols: str, row_order: Iterable[Any], col_order: Iterable[Any]
) -> dict[str, dict[str, int]]:
    """Counts as {row: {col: n}} over the given orders (zeros kept, extra values appended)."""
    table = pd.crosstab(frame[rows], frame[cols]) if len(frame) else pd.DataFrame()
    row_keys = list(row_order) + [r for r in table.index if r not in list(row_order)]
    col_keys = list(col_order) + [c for c in table.columns if c not in list(col_order)]
    return {
        str(r): {
            str(c): int(table.at[r, c]) if r in table.index and c in table.columns else 0
            for c in col_keys
        }
        for r in row_keys
    }


def session_stats(data: SessionSet | Iterable[Session], language: str = "en") -> dict[str, Any]:
    """Counts by scenario x tier, task type x turn, implicitness x turn, tool source, languages,
    rubric sizes, and every empty gold observation (which should be none)."""
    if isinstance(data, SessionSet):
        sessions, turns = data.sessions, data.turns
    else:
        sessions = list(data)
        turns, _ = flatten_sessions(sessions, language)
    per_session = turns.drop_duplicates("session_id")
    turns = turns.assign(subtype=turns["subtype"].fillna(NO_SUBTYPE))
    empty = [
        {"session_id": s.id, "list": key, "turn": t, "idx": i, "tool": item.name}
        for s in sessions
        for key in ("answer_list", "answer_list_zh")
        for t, actions in enumerate(s.key_value(key) or [])
        for i, item in enumerate(actions)
        if _is_empty(item.observation)
    ]
    n_observations = sum(len(actions) for s in sessions for actions in s.answer_list)
    turn_order = sorted(turns["turn"].unique()) if len(turns) else [0, 1, 2, 3]
    return {
        "n_sessions": len(sessions),
        "n_turns": int(len(turns)),
        "scenario_x_tier": _nested(per_session, "scenario", "tier", SCENARIOS, [1, 2, 3]),
        "task_type_x_turn": _nested(turns, "task_type", "turn", TASK_TYPES, turn_order),
        "subtype_x_turn": _nested(turns, "subtype", "turn", (*SUBTYPES, NO_SUBTYPE), turn_order),
        "tool_source": {
            src: int((turns["tool_source"] == src).sum())
            for src in (
                *TOOL_SOURCES,
                *sorted(set(turns["tool_source"].dropna()) - set(TOOL_SOURCES)),
            )
        },
        "rubric_items_x_task_type": _nested(turns, "task_type", "n_items_en", TASK_TYPES, []),
        "languages": {
            **{lang: sum(s.has_language(lang) for s in sessions) for lang in LANGUAGES},
            "en_explicit": sum(
                s.first_value("tasks_en_explicit", "tasks_explicit") is not None for s in sessions
            ),
            "zh_explicit": sum(s.tasks_zh_explicit is not None for s in sessions),
        },
        "sessions_with_rubric_checks": sum(s.checks_data is not None for s in sessions),
        "n_gold_observations": n_observations,
        "empty_gold_observations": empty,
        "all_gold_observations_non_empty": not empty,
    }


def _table(title: str, counts: dict[str, dict[str, int]], row_label: str, col_label: str) -> str:
    frame = pd.DataFrame.from_dict(counts, orient="index")
    frame.index.name = f"{row_label} \\ {col_label}"
    if frame.empty:
        return f"{title}\n  (none)"
    frame["total"] = frame.sum(axis=1)
    return f"{title}\n{frame.to_string()}"


def format_stats(stats: dict[str, Any]) -> str:
    """Human-readable tables of `session_stats` output."""
    parts = [
        f"{stats['n_sessions']} sessions, {stats['n_turns']} turns",
        _table("Sessions by scenario x tier", stats["scenario_x_tier"], "scenario", "tier"),
        _table("Turns by task type x turn", stats["task_type_x_turn"], "task type", "turn"),
        _table("Turns by implicitness x turn", stats["subtype_x_turn"], "subtype", "turn"),
        _table(
            "Turns by task type x rubric size",
            stats["rubric_items_x_task_type"],
            "task type",
            "items",
        ),
        "Turns by tool source: " + ", ".join(f"{k} {v}" for k, v in stats["tool_source"].items()),
        "Languages (sessions): " + ", ".join(f"{k} {v}" for k, v in stats["languages"].items()),
        f"Sessions with rubric checks: {stats['sessions_with_rubric_checks']}",
    ]
    empty = stats["empty_gold_observations"]
    if empty:
        listed = "".join(
            f"\n  - session {e['session_id']}, {e['list']} turn {e['turn']} "
            f"item {e['idx']} ({e['tool']})"
            for e in empty
        )
        parts.append(
            f"Empty gold observations: {len(empty)} of {stats['n_gold_observations']}" + listed
        )
    else:
        parts.append(f"Every gold observation is non-empty ({stats['n_gold_observations']}).")
    return "\n\n".join(parts)
