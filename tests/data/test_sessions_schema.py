"""Every validation rule, each with a broken fixture whose error names session, turn and field."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fixtures_sessions import (
    DIAGNOSTIC,
    DISCHARGE,
    MED_SAFETY,
    TREATMENT,
    Mutation,
    write_fixture_dir,
)

from physassist.data import SessionFormatError, load_sessions


def _error(
    tmp_path: Path,
    session_id: str,
    mutate: Mutation,
    language: str = "en",
    extra_lines: dict[str, list[str]] | None = None,
) -> str:
    source = write_fixture_dir(tmp_path / "data", {session_id: mutate}, extra_lines=extra_lines)
    with pytest.raises(SessionFormatError) as info:
        load_sessions(source, language=language)
    return str(info.value)


def _set(key: str, turn: int, value: Any) -> Mutation:
    def mutate(data: dict[str, Any]) -> None:
        data[key][turn] = value

    return mutate


def _assert_names(message: str, session_id: str, turn: int | None, field: str) -> None:
    """Some line names the session, the field and the turn (alone, or in a merged turn list)."""
    lines = [line for line in message.splitlines() if f"session {session_id}" in line]
    assert lines, message
    if turn is None:
        assert any(f"session {session_id}, field {field}:" in line for line in lines), message
        return
    single = f"session {session_id}, turn {turn}, field {field}:"
    merged = re.compile(
        rf"session {re.escape(session_id)}, field {re.escape(field)}: .*"
        rf"\(turns (\d+, )*{turn}(, \d+)*\)$"
    )
    assert any(single in line or merged.search(line) for line in lines), message


# ---- enums -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "turn", "value"),
    [
        ("task_types", 2, "Chart Review"),
        ("turn_subtypes", 2, "EA"),
        ("tool_sources", 1, "database"),
    ],
)
def test_enum_violation_names_turn_and_field(
    tmp_path: Path, key: str, turn: int, value: str
) -> None:
    message = _error(tmp_path, MED_SAFETY, _set(key, turn, value))
    _assert_names(message, MED_SAFETY, turn, key)
    assert repr(value) in message


def test_unknown_scenario(tmp_path: Path) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["clinical_scenario"] = "lab_trend"

    message = _error(tmp_path, DIAGNOSTIC, mutate)
    _assert_names(message, DIAGNOSTIC, None, "clinical_scenario")
    assert "'lab_trend'" in message


@pytest.mark.parametrize("tier", [0, 4])
def test_tier_out_of_range(tmp_path: Path, tier: int) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["difficulty_level"] = tier

    message = _error(tmp_path, DIAGNOSTIC, mutate)
    _assert_names(message, DIAGNOSTIC, None, "difficulty_level")


def test_tier_missing_without_id_suffix(tmp_path: Path) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["id"] = "physassistbench_ICUReasoning_treatment_response_2"

    message = _error(tmp_path, TREATMENT, mutate)
    _assert_names(
        message, "physassistbench_ICUReasoning_treatment_response_2", None, "difficulty_level"
    )
    assert "missing" in message


# ---- turn structure ----------------------------------------------------------------------------


def test_turns_must_be_exactly_0_to_3(tmp_path: Path) -> None:
    def drop_last_turn(data: dict[str, Any]) -> None:
        for key in (
            "tasks",
            "tasks_en",
            "tasks_explicit",
            "tasks_en_explicit",
            "tasks_zh",
            "tasks_zh_explicit",
            "answer_list",
            "task_types",
            "task_sequence",
            "turn_subtypes",
            "tool_sources",
            "workup_modes",
            "rubrics",
            "rubrics_zh",
            "rubric_checks",
            "turn_types",
        ):
            data[key] = data[key][:3]

    message = _error(tmp_path, MED_SAFETY, drop_last_turn)
    _assert_names(message, MED_SAFETY, None, "tasks")
    assert "found turns [0, 1, 2]" in message


def test_t0_must_be_information_lookup(tmp_path: Path) -> None:
    message = _error(tmp_path, TREATMENT, _set("task_types", 0, "Clinical Reasoning"))
    _assert_names(message, TREATMENT, 0, "task_types")
    assert "turn 0 must be Information Lookup" in message


def test_t0_has_no_implicitness(tmp_path: Path) -> None:
    message = _error(tmp_path, TREATMENT, _set("turn_subtypes", 0, "PE"))
    _assert_names(message, TREATMENT, 0, "turn_subtypes")


def test_write_update_only_at_t3(tmp_path: Path) -> None:
    message = _error(tmp_path, DIAGNOSTIC, _set("task_types", 2, "Write/Update"))
    _assert_names(message, DIAGNOSTIC, 2, "task_types")
    assert "only at turn 3" in message


def test_at_most_one_patient_turn(tmp_path: Path) -> None:
    message = _error(tmp_path, DISCHARGE, _set("tool_sources", 1, "mixed"))
    _assert_names(message, DISCHARGE, 1, "tool_sources")
    _assert_names(message, DISCHARGE, 2, "tool_sources")
    assert "at most one" in message


def test_tool_source_is_derived_only_when_absent_and_never_downgraded(tmp_path: Path) -> None:
    def two_patient_turns(data: dict[str, Any]) -> None:  # TREATMENT has no tool_sources
        patient = {
            "action": {
                "name": "patient.get_pain_assessment",
                "arguments": {"subject_id": data["subject_id"]},
            },
            "observation": {"patient_response": "It hurts a bit."},
            "dependency_list": [],
            "idx": 0,
        }
        for turn in (1, 2):
            data["answer_list"][turn].insert(0, patient)

    message = _error(tmp_path, TREATMENT, two_patient_turns)
    _assert_names(message, TREATMENT, 2, "tool_sources")


# ---- rubrics and checks ----------------------------------------------------------------------


def test_rubric_must_be_non_empty(tmp_path: Path) -> None:
    message = _error(tmp_path, DISCHARGE, _set("rubrics", 2, []))
    _assert_names(message, DISCHARGE, 2, "rubrics")


def test_rubric_missing_for_a_turn(tmp_path: Path) -> None:
    def drop(data: dict[str, Any]) -> None:
        data["rubrics"] = data["rubrics"][:3]

    message = _error(tmp_path, TREATMENT, drop)
    _assert_names(message, TREATMENT, 3, "rubrics")


def test_more_rubric_lists_than_turns_is_structural(tmp_path: Path) -> None:
    def extra(data: dict[str, Any]) -> None:
        data["rubrics"].append(["One more."])

    message = _error(tmp_path, TREATMENT, extra)
    _assert_names(message, TREATMENT, None, "rubrics")
    assert "has 5 entries, expected 4" in message
    assert "treatment_response.jsonl:1:" in message


def test_rubric_checks_must_align_and_parse(tmp_path: Path) -> None:
    def short(data: dict[str, Any]) -> None:
        data["rubric_checks"][2] = data["rubric_checks"][2][:1]

    _assert_names(_error(tmp_path / "a", MED_SAFETY, short), MED_SAFETY, 2, "rubric_checks")

    def bad_kind(data: dict[str, Any]) -> None:
        data["rubric_checks"][1][0] = {"kind": "regex", "pattern": "K"}

    message = _error(tmp_path / "b", MED_SAFETY, bad_kind)
    _assert_names(message, MED_SAFETY, 1, "rubric_checks[1][0]")


# ---- gold trajectories ------------------------------------------------------------------------


def test_gold_trajectory_must_end_with_prepare_to_answer(tmp_path: Path) -> None:
    def drop_prepare(data: dict[str, Any]) -> None:
        data["answer_list"][1] = data["answer_list"][1][:-1]

    message = _error(tmp_path, DIAGNOSTIC, drop_prepare)
    _assert_names(message, DIAGNOSTIC, 1, "answer_list")
    assert "prepare_to_answer" in message


def test_gold_answer_must_exist(tmp_path: Path) -> None:
    def no_answer(data: dict[str, Any]) -> None:
        data["answer_list"][3][-1]["observation"] = ""
        data["messages"] = data["messages"][:-1]

    message = _error(tmp_path, TREATMENT, no_answer)
    _assert_names(message, TREATMENT, 3, "answer_list")
    assert "no gold answer" in message


# ---- languages -------------------------------------------------------------------------------


def test_zh_fields_required_when_zh_is_requested(tmp_path: Path) -> None:
    def drop_zh_question(data: dict[str, Any]) -> None:
        data["tasks_zh"] = data["tasks_zh"][:2] + [None, data["tasks_zh"][3]]

    # None inside tasks_zh is a type error (structural), so drop the whole key instead:
    def drop_key(data: dict[str, Any]) -> None:
        del data["tasks_zh"]
        del data["rubrics_zh"][2][0]

    message = _error(tmp_path, DISCHARGE, drop_key, language="zh", extra_lines=None)
    _assert_names(message, DISCHARGE, None, "tasks_zh")
    _assert_names(message, DISCHARGE, 2, "rubrics_zh")
    assert "different number of items" in message
    assert "turns 0, 1, 2, 3" in message
    # the same data is fine in English
    source = write_fixture_dir(tmp_path / "en", {DISCHARGE: drop_key})
    assert len(load_sessions(source, language="en").sessions) == 5
    with pytest.raises(SessionFormatError, match=r"turn 2, field tasks_zh\[2\]"):
        load_sessions(write_fixture_dir(tmp_path / "none", {DISCHARGE: drop_zh_question}))


# ---- structural problems ---------------------------------------------------------------------


def test_bad_json_and_missing_keys_are_reported_with_line_numbers(tmp_path: Path) -> None:
    def no_rubrics(data: dict[str, Any]) -> None:
        del data["rubrics"]

    message = _error(
        tmp_path,
        MED_SAFETY,
        no_rubrics,
        extra_lines={"treatment_response.jsonl": ['{"id": "broken", ', "[1, 2]"]},
    )
    assert "treatment_response.jsonl:2: session ?: invalid JSON" in message
    assert "treatment_response.jsonl:3: session ?: expected a JSON object, got list" in message
    assert (
        f"med_safety.jsonl:1: session {MED_SAFETY}, field rubrics: missing required key" in message
    )
    assert message.startswith("3 problem(s) in 3 session(s)")


def test_wrong_value_type_names_turn_and_path(tmp_path: Path) -> None:
    message = _error(tmp_path, DIAGNOSTIC, _set("rubrics", 1, "not a list"))
    _assert_names(message, DIAGNOSTIC, 1, "rubrics[1]")


def test_duplicate_session_ids(tmp_path: Path) -> None:
    def same_id(data: dict[str, Any]) -> None:
        data["id"] = MED_SAFETY

    message = _error(tmp_path, "physassistbench_MedRecon_med_safety_3_L1", same_id)
    assert message.count("duplicate session id") == 2  # both lines named


def test_all_problems_are_collected_in_one_message(tmp_path: Path) -> None:
    source = write_fixture_dir(
        tmp_path / "data",
        {
            MED_SAFETY: _set("task_types", 0, "Data Gathering"),
            DISCHARGE: _set("rubrics", 1, []),
            TREATMENT: _set("turn_subtypes", 0, "NA"),
        },
    )
    with pytest.raises(SessionFormatError) as info:
        load_sessions(source)
    assert len(info.value.problems) == 3
    assert {p.session_id for p in info.value.problems} == {MED_SAFETY, DISCHARGE, TREATMENT}
