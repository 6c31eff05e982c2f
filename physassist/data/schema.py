"""The pandera schema of the turn table, and its failures turned into readable problems.

Every rule is vectorised (column checks, or boolean Series over the whole frame with
group-wise `transform`), so validating a few hundred turns costs milliseconds. Failures are
collected lazily and mapped back to `<file>:<line>: session <id>, turn <t>, field <f>: ...`,
naming the released key (`task_types`, `rubrics_zh`, ...) rather than the table column.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pandera.pandas as pa
from pandera.typing import Series

from physassist.data.models import Problem
from physassist.vocab import (
    INFORMATION_LOOKUP,
    N_TURNS,
    SCENARIOS,
    SUBTYPES,
    TASK_TYPES,
    TIERS,
    TOOL_SOURCES,
    WRITE_UPDATE,
)

_PATIENT_SOURCES = ("patient", "mixed")


def _is_zh(df: pd.DataFrame) -> pd.Series:
    return df["language"] == "zh"


class TurnTable(pa.DataFrameModel):
    """One row per turn of a session (see `physassist.data.turns.COLUMNS`)."""

    session_id: Series[str]
    file: Series[str] = pa.Field(nullable=True)
    line: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    language: Series[str] = pa.Field(isin=["en", "zh"])
    scenario: Series[str] = pa.Field(isin=list(SCENARIOS))
    tier: Series[pd.Int64Dtype] = pa.Field(isin=list(TIERS))
    turn: Series[int] = pa.Field(in_range={"min_value": 0, "max_value": N_TURNS - 1})
    task_type: Series[str] = pa.Field(isin=list(TASK_TYPES))
    subtype: Series[str] = pa.Field(isin=list(SUBTYPES), nullable=True)
    tool_source: Series[str] = pa.Field(isin=list(TOOL_SOURCES))
    question_en: Series[str]
    question_en_explicit: Series[str] = pa.Field(nullable=True)
    question_zh: Series[str] = pa.Field(nullable=True)
    question_zh_explicit: Series[str] = pa.Field(nullable=True)
    gold_tools: Series[object]
    n_gold_calls: Series[int] = pa.Field(ge=0)
    gold_answer: Series[str] = pa.Field(nullable=True)
    rubric: Series[object] = pa.Field(nullable=True)
    n_items: Series[int]
    n_items_en: Series[int]
    n_checks: Series[pd.Int64Dtype] = pa.Field(nullable=True)
    has_checks: Series[bool]
    ends_with_prepare: Series[bool]

    class Config:
        strict = True
        ordered = False

    @pa.dataframe_check(name="turns_0_to_3")
    def _turns_0_to_3(cls, df: pd.DataFrame) -> pd.Series:
        turns = df.groupby("session_id")["turn"]
        return (
            (turns.transform("size") == N_TURNS)
            & (turns.transform("nunique") == N_TURNS)
            & (turns.transform("min") == 0)
            & (turns.transform("max") == N_TURNS - 1)
        )

    @pa.dataframe_check(name="unique_session_turn")
    def _unique_session_turn(cls, df: pd.DataFrame) -> pd.Series:
        return ~df.duplicated(["session_id", "turn"], keep=False)

    @pa.dataframe_check(name="t0_information_lookup")
    def _t0_information_lookup(cls, df: pd.DataFrame) -> pd.Series:
        return (df["turn"] != 0) | (df["task_type"] == INFORMATION_LOOKUP)

    @pa.dataframe_check(name="t0_no_implicitness")
    def _t0_no_implicitness(cls, df: pd.DataFrame) -> pd.Series:
        return (df["turn"] != 0) | df["subtype"].isna()

    @pa.dataframe_check(name="write_update_only_t3")
    def _write_update_only_t3(cls, df: pd.DataFrame) -> pd.Series:
        return (df["task_type"] != WRITE_UPDATE) | (df["turn"] == N_TURNS - 1)

    @pa.dataframe_check(name="one_patient_turn")
    def _one_patient_turn(cls, df: pd.DataFrame) -> pd.Series:
        patient = df["tool_source"].isin(_PATIENT_SOURCES)
        per_session = patient.groupby(df["session_id"]).transform("sum")
        return ~patient | (per_session <= 1)

    @pa.dataframe_check(name="rubric_non_empty")
    def _rubric_non_empty(cls, df: pd.DataFrame) -> pd.Series:
        return df["n_items"] >= 1

    @pa.dataframe_check(name="zh_rubric_matches_en")
    def _zh_rubric_matches_en(cls, df: pd.DataFrame) -> pd.Series:
        return ~_is_zh(df) | (df["n_items"] == 0) | (df["n_items"] == df["n_items_en"])

    @pa.dataframe_check(name="checks_match_rubric")
    def _checks_match_rubric(cls, df: pd.DataFrame) -> pd.Series:
        return (df["n_checks"].isna() | (df["n_checks"] == df["n_items_en"])).astype(bool)

    @pa.dataframe_check(name="ends_with_prepare")
    def _ends_with_prepare(cls, df: pd.DataFrame) -> pd.Series:
        return df["ends_with_prepare"]

    @pa.dataframe_check(name="gold_answer_present")
    def _gold_answer_present(cls, df: pd.DataFrame) -> pd.Series:
        return df["gold_answer"].fillna("").str.strip().str.len() > 0

    @pa.dataframe_check(name="zh_question_present")
    def _zh_question_present(cls, df: pd.DataFrame) -> pd.Series:
        return ~_is_zh(df) | df["question_zh"].notna()


# what each dataframe-level rule means, the released key it concerns, and whether it is a
# property of the whole session (reported once, without a turn)
_RULES: dict[str, tuple[str, str, bool]] = {
    "turns_0_to_3": ("tasks", "a session must have exactly the turns 0, 1, 2, 3", True),
    "unique_session_turn": (
        "id",
        "duplicate session id (the same id occurs more than once)",
        False,
    ),
    "t0_information_lookup": ("task_types", "turn 0 must be Information Lookup", False),
    "t0_no_implicitness": ("turn_subtypes", "turn 0 must have no implicitness subtype", False),
    "write_update_only_t3": ("task_types", "Write/Update is allowed only at turn 3", False),
    "one_patient_turn": (
        "tool_sources",
        "more than one patient/mixed turn in the session (at most one)",
        False,
    ),
    "rubric_non_empty": ("rubrics", "rubric missing or empty for this turn", False),
    "zh_rubric_matches_en": (
        "rubrics_zh",
        "ZH rubric has a different number of items than EN",
        False,
    ),
    "checks_match_rubric": (
        "rubric_checks",
        "number of checks differs from the number of rubric items",
        False,
    ),
    "ends_with_prepare": (
        "answer_list",
        "gold trajectory is missing or does not end with prepare_to_answer",
        False,
    ),
    "gold_answer_present": (
        "answer_list",
        "no gold answer (prepare_to_answer observation or gold messages)",
        False,
    ),
    "zh_question_present": ("tasks_zh", "ZH question missing (language zh requested)", False),
}

# column -> released key, and what a valid value looks like
_COLUMN_KEYS: dict[str, str] = {
    "scenario": "clinical_scenario",
    "tier": "difficulty_level",
    "turn": "turn",
    "task_type": "task_types",
    "subtype": "turn_subtypes",
    "tool_source": "tool_sources",
    "question_en": "tasks",
    "gold_answer": "answer_list",
}
_EXPECTED: dict[str, str] = {
    "scenario": "one of " + ", ".join(SCENARIOS),
    "tier": "1, 2 or 3 (difficulty_level or an _L<d> id suffix)",
    "turn": f"a turn index in 0..{N_TURNS - 1}",
    "task_type": "one of " + ", ".join(TASK_TYPES),
    "subtype": "null or one of " + ", ".join(SUBTYPES),
    "tool_source": "one of " + ", ".join(TOOL_SOURCES),
}
_ZH_KEYS = {"rubrics": "rubrics_zh", "answer_list": "answer_list_zh"}


def _int_or_none(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def _str_or_none(value: Any) -> str | None:
    return None if value is None or (not isinstance(value, str) and pd.isna(value)) else value


def validate_turns(frame: pd.DataFrame) -> list[Problem]:
    """Validate the turn table lazily; every failure becomes one located Problem."""
    try:
        TurnTable.validate(frame, lazy=True)
    except pa.errors.SchemaErrors as errors:
        return _problems_from_failures(frame, errors.failure_cases)
    return []


def _problems_from_failures(frame: pd.DataFrame, failures: pd.DataFrame) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[Any, ...]] = set()
    for case in failures.itertuples(index=False):
        check = str(case.check)
        index = case.index
        if index is None or pd.isna(index) or index not in frame.index:
            # schema-level failure (wrong dtype, missing column): a bug in flattening
            problems.append(
                Problem(
                    None,
                    None,
                    None,
                    None,
                    str(case.column),
                    f"turn table: {check} ({case.failure_case})",
                )
            )
            continue
        row = frame.loc[index]
        zh = row["language"] == "zh"
        if check in _RULES:
            key, message, _ = _RULES[check]
            if check == "turns_0_to_3":
                turns = sorted(frame.loc[frame["session_id"] == row["session_id"], "turn"])
                message += f"; found turns {turns}"
            turn = None if _RULES[check][2] else int(row["turn"])
        else:
            column = str(case.column)
            key = _COLUMN_KEYS.get(column, column)
            value = case.failure_case
            if (
                check == "not_nullable"
                or value is None
                or (not isinstance(value, str | list) and pd.isna(value))
            ):
                message = "missing"
            else:
                message = f"{value!r} is not {_EXPECTED.get(column, 'valid')} ({check})"
            turn = None if column in ("scenario", "tier") else int(row["turn"])
        if zh:
            key = _ZH_KEYS.get(key, key)
        dedupe = (row["file"], row["line"], row["session_id"], turn, key, message)
        if dedupe in seen:
            continue
        seen.add(dedupe)
        problems.append(
            Problem(
                _str_or_none(row["file"]),
                _int_or_none(row["line"]),
                str(row["session_id"]),
                turn,
                key,
                message,
            )
        )
    return _merge_turns(problems)


def _merge_turns(problems: list[Problem]) -> list[Problem]:
    """One problem per (session, field, message), listing the turns when several are hit."""
    groups: dict[tuple[Any, ...], list[Problem]] = {}
    for p in problems:
        groups.setdefault((p.file, p.line, p.session_id, p.field, p.message), []).append(p)
    merged = []
    for (file, line, sid, key, message), group in groups.items():
        turns = sorted({p.turn for p in group if p.turn is not None})
        if len(turns) > 1:
            listed = ", ".join(str(t) for t in turns)
            merged.append(Problem(file, line, sid, None, key, f"{message} (turns {listed})"))
        else:
            merged.append(group[0])
    merged.sort(
        key=lambda p: (
            p.file or "",
            p.line or 0,
            p.session_id or "",
            -1 if p.turn is None else p.turn,
            p.field or "",
        )
    )
    return merged
