"""The Session model on released-format fixtures: lossless round trip and the accessors."""

from __future__ import annotations

import json

import pytest
from fixtures_sessions import (
    DIAGNOSTIC,
    DISCHARGE,
    MED_SAFETY,
    TREATMENT,
    fixture_lines,
    session_dict,
)
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from physassist.data import (
    SEPARATOR,
    ConceptCheck,
    Session,
    SessionFormatError,
    ValueCheck,
    WriteArgCheck,
    WriteCallCheck,
)


def _session(session_id: str) -> Session:
    return Session.model_validate(session_dict(session_id))


@pytest.mark.parametrize("name", sorted(fixture_lines()))
def test_round_trip_is_lossless_on_every_fixture_line(name: str) -> None:
    for line in fixture_lines()[name]:
        original = json.loads(line)
        dumped = Session.model_validate(original).to_json()
        assert json.loads(dumped) == original
        assert list(json.loads(dumped)) == list(original)  # top-level key order kept


def test_nested_key_order_and_unknown_keys_survive() -> None:
    data = session_dict(MED_SAFETY)
    item = data["answer_list"][0][0]
    reordered = {
        "idx": item["idx"],
        "observation": item["observation"],
        "action": item["action"],
        "dependency_list": item["dependency_list"],
        "reviewer": "x",
    }
    data["answer_list"][0][0] = reordered
    data["some_future_key"] = {"a": [1, 2]}
    dumped = Session.model_validate(data).to_dict()
    assert list(dumped["answer_list"][0][0]) == [
        "idx",
        "observation",
        "action",
        "dependency_list",
        "reviewer",
    ]
    assert dumped["some_future_key"] == {"a": [1, 2]}
    assert dumped == data


def test_absent_optional_keys_stay_absent() -> None:
    data = session_dict(TREATMENT)
    dumped = Session.model_validate(data).to_dict()
    for key in (
        "current_date",
        "difficulty_level",
        "clinical_scenario",
        "tasks_en",
        "tools_en",
        "rubrics_zh",
        "rubric_checks",
        "persona_config",
        "tool_sources",
    ):
        assert key not in dumped
    assert dumped["annotator_note"].startswith("project-made")


def test_fallbacks_for_missing_optional_keys() -> None:
    session = _session(TREATMENT)
    assert session.effective_date == "2190-07-03"  # parsed from env_info
    assert session.tier == 1  # from the _L1 suffix
    assert session.scenario == "treatment_response"  # from the id
    assert session.question(0) == "Blood cultures back?"  # tasks_en -> tasks
    assert session.tools_for("en") == session.tools  # tools_en -> tools
    assert session.tools_for("zh") == session.tools  # tools_zh is never released
    assert session.rubric_checks(2) == [None] * 5
    with pytest.raises(SessionFormatError, match="turn 1, field tasks_en_explicit"):
        session.question(1, explicit=True)
    with pytest.raises(SessionFormatError, match="field tasks_zh"):
        session.question(1, "zh")
    assert not session.has_language("zh")


def test_string_observations_are_kept_and_answers_come_from_prepare_to_answer() -> None:
    session = _session(TREATMENT)
    first = session.gold_actions(0)[0]
    assert isinstance(first["observation"], str)
    assert session.gold_tool_names(2) == ["Observation.search", "MedicationAdministration.search"]
    assert session.gold_answer(0).startswith("No blood culture results")


def test_discharge_planning_pipeline_shape() -> None:
    session = _session(DISCHARGE)
    assert session.session_id is None and session.persona_config is None
    assert session.scenario == "discharge_planning" and session.tier == 1
    assert session.note_grounding["chief_complaint"] == "Shortness of breath"
    assert session.write_gold_params[0]["tool"] == "ServiceRequest.create"
    assert session.health_literacy == "low"
    assert session.gold_tool_names(3) == ["ServiceRequest.create"]
    assert "workup_modes" not in session.to_dict()


def test_questions_explicit_and_zh() -> None:
    session = _session(MED_SAFETY)
    assert session.question(1) == "And potassium?"
    assert session.question(1, explicit=True) == "What's her latest potassium?"
    assert session.question(1, "zh") == "那血钾呢？"
    assert session.question(1, "zh", explicit=True) == "她最近的血钾是多少？"
    with pytest.raises(ValueError, match="language"):
        session.question(0, "fr")


def test_gold_history_excludes_separators_and_stops_before_the_turn() -> None:
    session = _session(MED_SAFETY)
    assert SEPARATOR in session.messages
    history = session.gold_history(2)
    assert [m["role"] for m in history] == ["user", "assistant", "user", "assistant"]
    assert history[2]["content"] == "And potassium?"
    assert all(isinstance(m, dict) for m in history)
    assert session.gold_history(0) == []
    assert session.gold_history(1, "zh")[0]["content"] == "她的肌酐是多少？"


def test_gold_answer_language_and_fallback_to_messages() -> None:
    data = session_dict(MED_SAFETY)
    session = Session.model_validate(data)
    assert session.gold_answer(0).startswith("Creatinine: 1.1 mg/dL")
    assert session.gold_answer(0, "zh").startswith("肌酐")  # from messages_zh
    data["answer_list"][1][-1]["observation"] = {"status": "ready"}
    assert Session.model_validate(data).gold_answer(1) == data["messages_en"][4]["content"]


def test_gold_actions_zh_and_patient_answers() -> None:
    session = _session(DIAGNOSTIC)
    replies = session.gold_patient_answers()
    assert len(replies) == 1
    assert replies[0]["tool"] == "patient.get_symptom_history" and replies[0]["turn"] == 2
    assert set(replies[0]["variants"]) == {"high", "medium", "low"}
    assert session.gold_patient_answers("zh")[0]["patient_response"].startswith("我咳嗽")
    assert session.gold_answer(0, "zh").startswith("乳酸")  # from answer_list_zh
    assert session.gold_actions(2, "zh")[0]["observation"]["patient_response"].startswith("我")
    assert session.gold_actions(2, "en")[-1]["action"]["name"] == "prepare_to_answer"


def test_rubric_checks_are_typed_and_aligned_with_the_rubric() -> None:
    session = _session(MED_SAFETY)
    t0 = session.rubric_checks(0)
    assert len(t0) == len(session.rubric(0)) == 3
    assert isinstance(t0[0], ValueCheck) and t0[0].value == 1.1 and t0[0].unit == "mg/dL"
    assert isinstance(t0[1], ConceptCheck) and "正常" in t0[1].any["zh"]
    assert t0[2] is None
    t3 = session.rubric_checks(3)
    assert isinstance(t3[0], WriteCallCheck)
    assert isinstance(t3[1], WriteArgCheck) and t3[1].accepted == ["5 mg", "5mg"]
    assert session.to_dict()["rubric_checks"] == session_dict(MED_SAFETY)["rubric_checks"]


def test_rubric_checks_length_mismatch_is_named() -> None:
    data = session_dict(MED_SAFETY)
    data["rubric_checks"][1] = data["rubric_checks"][1][:2]
    with pytest.raises(SessionFormatError, match="turn 1, field rubric_checks"):
        Session.model_validate(data).rubric_checks(1)


def test_required_keys_and_types_are_enforced() -> None:
    data = session_dict(MED_SAFETY)
    del data["answer_list"]
    with pytest.raises(ValidationError, match="answer_list"):
        Session.model_validate(data)
    data = session_dict(MED_SAFETY)
    for key in ("tasks", "tasks_en"):
        del data[key]
    with pytest.raises(ValidationError, match="missing key 'tasks'"):
        Session.model_validate(data)
    data = session_dict(MED_SAFETY)
    data["subject_id"] = "19990001"  # no silent coercion: the dump would differ
    with pytest.raises(ValidationError, match="subject_id"):
        Session.model_validate(data)


def test_zh_history_without_messages_zh_uses_zh_questions_and_answers() -> None:
    data = session_dict(DIAGNOSTIC)
    del data["messages_zh"]
    session = Session.model_validate(data)
    history = session.gold_history(2, "zh")
    assert [m["content"] for m in history] == [
        session.question(0, "zh"),
        session.gold_answer(0, "zh"),
        session.question(1, "zh"),
        session.gold_answer(1, "zh"),
    ]
    assert history[1]["content"].startswith("乳酸")


def test_scenario_from_file_name_when_the_session_does_not_say(tmp_path) -> None:
    from physassist.data import load_sessions

    data = session_dict(TREATMENT)
    data["id"] = "session_without_scenario_L1"
    path = tmp_path / "treatment_response.jsonl"
    path.write_text(json.dumps(data) + "\n", encoding="utf-8")
    loaded = load_sessions(tmp_path, scenarios=["treatment_response"])
    assert loaded.sessions[0].scenario is None
    assert set(loaded.turns["scenario"]) == {"treatment_response"}


_json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.text(max_size=8)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=40, deadline=None)
@given(
    extras=st.dictionaries(
        st.text(min_size=1, max_size=12).filter(
            lambda k: k not in Session.model_fields and k != "rubric_checks"
        ),
        _json_values,
        max_size=4,
    ),
    item_extra=_json_values,
    seed=st.randoms(use_true_random=False),
)
def test_round_trip_keeps_any_unknown_keys_in_any_order(extras, item_extra, seed) -> None:
    data = session_dict(TREATMENT)
    data["answer_list"][0][0]["reviewer_payload"] = item_extra
    data.update(extras)
    keys = list(data)
    seed.shuffle(keys)
    shuffled = {k: data[k] for k in keys}
    dumped = json.loads(Session.model_validate(shuffled).to_json())
    assert dumped == shuffled and list(dumped) == keys


def test_a_cutoff_is_a_local_time_to_the_second_on_the_sessions_date() -> None:
    """A bare date would put the tools' cutoff at its midnight (the whole day hidden) and a
    zone would not compare with the store's times: both are refused, naming the field."""
    data = session_dict(MED_SAFETY)
    day = data["current_date"][:10]
    session = Session.model_validate({**data, "cutoff": f"{day}T08:00:00"})
    assert session.cutoff_time is not None and session.cutoff_time.hour == 8
    for bad in (day, f"{day}T08:00:00+02:00", f"{day} 08:00:00", f"{day}T08:00"):
        with pytest.raises(ValidationError, match="cutoff\n.*must be a time YYYY-MM-DDTHH:MM:SS"):
            Session.model_validate({**data, "cutoff": bad})
    with pytest.raises(ValidationError, match="is not on the session's current_date"):
        Session.model_validate({**data, "cutoff": "2000-01-01T08:00:00"})
