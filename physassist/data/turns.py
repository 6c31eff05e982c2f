"""Flatten sessions into the turn table: one row per (session, turn), the unit everything counts.

Flattening is deliberately forgiving: a per-turn list that is too short leaves holes (None)
that the pandera schema then reports per turn and field. Only problems that make a row
impossible to build (a list longer than the number of turns, an unparseable rubric check)
are returned here as structural problems.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from physassist.data.checks import parse_check
from physassist.data.models import Problem, Session, SessionFormatError, tool_source_of
from physassist.vocab import PREPARE_TO_ANSWER, SCENARIOS

STRING_COLUMNS: tuple[str, ...] = (
    "session_id",
    "file",
    "language",
    "scenario",
    "task_type",
    "subtype",
    "tool_source",
    "question_en",
    "question_en_explicit",
    "question_zh",
    "question_zh_explicit",
    "gold_answer",
)
INT_COLUMNS: tuple[str, ...] = ("line", "tier", "n_checks")
COLUMNS: tuple[str, ...] = (
    "session_id",
    "file",
    "line",
    "language",
    "scenario",
    "tier",
    "turn",
    "task_type",
    "subtype",
    "tool_source",
    "question_en",
    "question_en_explicit",
    "question_zh",
    "question_zh_explicit",
    "gold_tools",
    "n_gold_calls",
    "gold_answer",
    "rubric",
    "n_items",
    "n_items_en",
    "n_checks",
    "has_checks",
    "ends_with_prepare",
)

# per-turn lists that must exist; a short one leaves holes for the schema to report
_REQUIRED_PER_TURN = ("task_types", "answer_list", "rubrics")
# per-turn lists that may be absent; when present they must have one entry per turn
_OPTIONAL_PER_TURN = (
    "tasks_en_explicit",
    "tasks_explicit",
    "tasks_zh",
    "tasks_zh_explicit",
    "rubrics_zh",
    "answer_list_zh",
    "turn_subtypes",
    "tool_sources",
    "workup_modes",
    "rubric_checks",
)


def _at(values: list[Any] | None, turn: int) -> Any:
    return values[turn] if values is not None and turn < len(values) else None


def _structural_problems(session: Session, n_turns: int) -> list[Problem]:
    file, line = session.origin
    problems = []
    for key in _REQUIRED_PER_TURN + _OPTIONAL_PER_TURN:
        values = session.key_value(key)
        if values is None:
            continue
        too_long = len(values) > n_turns
        too_short = key in _OPTIONAL_PER_TURN and len(values) < n_turns
        if too_long or too_short:
            problems.append(
                Problem(
                    file,
                    line,
                    session.id,
                    None,
                    key,
                    f"has {len(values)} entries, expected {n_turns} (one per turn, as in tasks)",
                )
            )
    for key in ("answer_list_en", "answer_list", "answer_list_zh"):
        for turn, actions in enumerate(session.key_value(key) or []):
            last = actions[-1] if actions else None
            if (
                last is not None
                and last.name == PREPARE_TO_ANSWER
                and isinstance(last.observation, str)
                and not last.observation.strip()
            ):
                problems.append(
                    Problem(
                        file,
                        line,
                        session.id,
                        turn,
                        key,
                        "empty gold answer (the prepare_to_answer observation)",
                    )
                )
    for turn, per_turn in enumerate(session.checks_data or []):
        for item_idx, check in enumerate(per_turn or []):
            try:
                parse_check(check)
            except ValidationError as err:
                first = err.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                problems.append(
                    Problem(
                        file,
                        line,
                        session.id,
                        turn,
                        f"rubric_checks[{turn}][{item_idx}]",
                        f"invalid check ({where}: {first['msg']})"
                        if where
                        else f"invalid check ({first['msg']})",
                    )
                )
    return problems


def resolved_scenario(session: Session) -> str | None:
    """The session's scenario, else the scenario its file is named after (released layout)."""
    scenario = session.scenario
    file = session.origin[0]
    if scenario is None and file is not None and Path(file).stem in SCENARIOS:
        return Path(file).stem
    return scenario


def session_rows(
    session: Session, language: str = "en"
) -> tuple[list[dict[str, Any]], list[Problem]]:
    """Rows of one session for the turn table, and the structural problems found."""
    questions = session.first_value("tasks_en", "tasks") or []
    n_turns = len(questions)
    problems = _structural_problems(session, n_turns)
    file, line = session.origin
    scenario = resolved_scenario(session)
    explicit = session.first_value("tasks_en_explicit", "tasks_explicit")
    gold = session.first_value("answer_list_en", "answer_list")
    rubrics = session.first_value("rubrics_en", "rubrics")
    rows = []
    for turn in range(n_turns):
        actions = _at(gold, turn)
        names = [a.name for a in actions or [] if a.name != PREPARE_TO_ANSWER]
        rubric_en = _at(rubrics, turn)
        rubric = rubric_en if language == "en" else _at(session.rubrics_zh, turn)
        checks = session.rubric_checks_raw(turn)
        source = _at(session.tool_sources, turn)
        rows.append(
            {
                "session_id": session.id,
                "file": file,
                "line": line,
                "language": language,
                "scenario": scenario,
                "tier": session.tier,
                "turn": turn,
                "task_type": _at(session.task_types, turn),
                "subtype": _at(session.turn_subtypes, turn),
                "tool_source": source
                if session.tool_sources is not None
                else (tool_source_of(names) if actions is not None else None),
                "question_en": questions[turn],
                "question_en_explicit": _at(explicit, turn),
                "question_zh": _at(session.tasks_zh, turn),
                "question_zh_explicit": _at(session.tasks_zh_explicit, turn),
                "gold_tools": names,
                "n_gold_calls": len(names),
                "gold_answer": _gold_answer(session, turn, language),
                "rubric": list(rubric) if rubric is not None else None,
                "n_items": len(rubric) if rubric is not None else 0,
                "n_items_en": len(rubric_en) if rubric_en is not None else 0,
                "n_checks": len(checks) if checks is not None else None,
                "has_checks": any(c is not None for c in checks or []),
                "ends_with_prepare": bool(actions) and actions[-1].name == PREPARE_TO_ANSWER,
            }
        )
    return rows, problems


def _gold_answer(session: Session, turn: int, language: str) -> str | None:
    try:
        return session.gold_answer(turn, language)
    except SessionFormatError:
        return None


def rows_to_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Build the turn table with stable dtypes (also when empty), ready for the schema."""
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for column in STRING_COLUMNS:
        frame[column] = frame[column].astype("str")
    for column in INT_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    for column in ("turn", "n_gold_calls", "n_items", "n_items_en"):
        frame[column] = frame[column].astype("int64")
    for column in ("has_checks", "ends_with_prepare"):
        frame[column] = frame[column].astype("bool")
    for column in ("gold_tools", "rubric"):
        frame[column] = frame[column].astype("object")
    return frame


def flatten_sessions(
    sessions: Iterable[Session], language: str = "en"
) -> tuple[pd.DataFrame, list[Problem]]:
    """The unvalidated turn table and the structural problems met while building it."""
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []
    for session in sessions:
        session_rows_, session_problems = session_rows(session, language)
        rows.extend(session_rows_)
        problems.extend(session_problems)
    return rows_to_frame(rows), problems


def turns_frame(sessions: Iterable[Session], language: str = "en") -> pd.DataFrame:
    """The validated turn table of `sessions`; raises SessionFormatError listing every problem."""
    from physassist.data.schema import validate_turns

    frame, problems = flatten_sessions(sessions, language)
    problems += validate_turns(frame)
    if problems:
        raise SessionFormatError.from_problems(problems)
    return frame
