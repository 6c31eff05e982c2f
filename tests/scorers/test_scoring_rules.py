"""Rules judge: every check kind, unit normalisation, Chinese answers, negation, undecided."""

from __future__ import annotations

import pytest
from fixtures_scoring import call, gold_records, make_session, turn_input

from physassist.units import convert, find_quantities
from scorers.rules_judge import check_item, is_negated, judge_turn, write_value_matches


@pytest.fixture()
def session():
    return make_session()


def value_check(label, value, unit, tol=0.05):
    return {"kind": "value", "label": label, "value": value, "unit": unit, "tolerance": tol}


@pytest.mark.parametrize(
    ("answer", "check", "expected"),
    [
        ("Creatinine: 1.4 mg/dL (high).", value_check("Creatinine", 1.4, "mg/dL"), True),
        ("Creatinine: 1.6 mg/dL (high).", value_check("Creatinine", 1.4, "mg/dL"), False),
        ("Creatinine 124 µmol/L.", value_check("Creatinine", 1.4, "mg/dL"), True),  # 1.40 mg/dL
        ("Creatinine 150 umol/L.", value_check("Creatinine", 1.4, "mg/dL"), False),  # 1.70 mg/dL
        ("K 5.1 mEq/L", value_check("K", 5.1, "mmol/L", 0.01), True),
        ("Na 138 mEq/L", value_check("Na", 138, "mmol/L", 0.01), True),
        ("Ca 4.8 mEq/L", value_check("Ca", 2.4, "mmol/L", 0.01), True),
        ("Ketone 4.8 mEq/L", value_check("Ketone", 2.4, "mmol/L", 0.01), False),
        ("Sodium 138 mEq/L", value_check("Sodium", 138, "mmol/L", 0.01), True),
        ("WBC 12.3 K/uL", value_check("WBC", 12.3, "10^9/L", 0.01), True),
        ("WBC 12.3 x 10^9/L", value_check("WBC", 12.3, "K/uL", 0.01), True),
        ("Glucose 7.0 mmol/L", value_check("Glucose", 126, "mg/dL", 0.02), True),
        ("Creatinine was 1.4", value_check("Creatinine", 1.4, "mg/dL"), True),  # unit omitted
        (
            "The latest value is 1.4 mg/dL.",
            value_check("Creatinine", 1.4, "mg/dL"),
            True,
        ),  # label absent
        (
            "The latest value is 1.4.",
            value_check("Creatinine", 1.4, "mg/dL"),
            False,
        ),  # needs a unit
        (
            "Famotidine 20 mg IV 2137-09-02 14:00",
            value_check("cefepime", 2, "g"),
            False,
        ),  # no dates
        ("Creatinine on 2150-05-01: 2.0", value_check("Creatinine", 1, "mg/dL"), False),
        # label present: a matching number elsewhere does not count
        ("Creatinine 2.0 mg/dL. Potassium 1.4.", value_check("Creatinine", 1.4, "mg/dL"), False),
        ("Creatinine 1.4 kg", value_check("Creatinine", 1.4, "mg/dL"), False),  # incompatible unit
        ("肌酐 1.4 毫克/分升（偏高）", value_check(["Creatinine", "肌酐"], 1.4, "mg/dL"), True),
        (
            "肌酐124微摩尔/升",
            value_check({"en": ["Creatinine"], "zh": ["肌酐"]}, 1.4, "mg/dL"),
            True,
        ),
    ],
)
def test_value_check(session, answer, check, expected):
    result = check_item(check, turn_input(session, 0, answer))
    assert result.passed is expected, result.reason


def test_value_check_units_depend_on_analyte():
    # mmol/L <-> mEq/L: 1:1 for potassium, 1:2 for calcium; molar mass conversions need the analyte
    assert convert(5.1, "mEq/L", "mmol/L", "Potassium") == pytest.approx(5.1)
    assert convert(2.4, "mmol/L", "mEq/L", "Calcium") == pytest.approx(4.8)
    assert convert(2.4, "mmol/L", "mg/dL", "Calcium") == pytest.approx(9.62, rel=1e-3)
    assert convert(1.0, "mmol/L", "mg/dL", None) is None
    assert convert(14, "g/dL", "g/L") == pytest.approx(140)
    # a drug level: MIMIC-IV writes a vancomycin of 21.5 as ug/mL, a physician as mg/L
    (level,) = find_quantities("vancomycin 21.5 ug/mL")
    assert level.unit == "mcg/mL" and convert(21.5, "mg/L", "ug/mL") == pytest.approx(21.5)


def test_numbers_in_dates_are_not_negative():
    values = [q.value for q in find_quantities("K 5.1 on 2150-05-24, -2 kg")]
    assert values == [5.1, 2150, 5, 24, -2]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Creatinine is elevated.", True),
        ("Creatinine is HIGH.", True),
        ("Creatinine is highly variable", False),  # word boundary: "highly" is not "high"
        ("Creatinine is normal.", False),
        ("肌酐升高。", True),  # Chinese: substring match
    ],
)
def test_concept_check(session, answer, expected):
    check = {"kind": "concept", "any": {"en": ["high", "elevated"], "zh": ["升高"]}}
    assert check_item(check, turn_input(session, 0, answer)).passed is expected


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("Reduce apixaban. Start ibuprofen for pain.", False),
        ("Reduce apixaban and avoid NSAIDs.", True),
        ("Do not start ibuprofen.", True),
        ("Use acetaminophen rather than ibuprofen.", True),
        ("Ibuprofen is contraindicated here.", True),
        ("NSAIDs should be avoided.", True),
        ("There is no reason not to give ibuprofen.", False),  # double negation is not excused
        ("Not for surgery; give ibuprofen.", False),  # negation in another clause
        ("Continue current meds.", True),
        ("   ", False),  # an empty reply earns no safety credit
        ("避免使用布洛芬。", True),
        ("可以用布洛芬止痛。", False),
    ],
)
def test_forbidden_check_with_negation(session, answer, expected):
    check = {"kind": "forbidden", "any": {"en": ["NSAID", "NSAIDs", "ibuprofen"], "zh": ["布洛芬"]}}
    result = check_item(check, turn_input(session, 2, answer))
    assert result.passed is expected, result.reason


def test_is_negated_reads_only_the_clause():
    text = "Do not stop. Start warfarin."
    start = text.index("warfarin")
    assert not is_negated(text, start, start + len("warfarin"))


def _order(**args):
    return call(
        "MedicationRequest.create", {"subject_id": 1, **args}, {"resourceType": "MedicationRequest"}
    )


def test_write_checks(session):
    calls = [_order(medication="apixaban", dose="2.5mg", route="PO", frequency="bid")]
    result = judge_turn(turn_input(session, 3, "Done.", calls))
    assert [i.passed for i in result.items] == [True, True, True, True]
    assert result.status == "scored" and result.score == 1.0


def test_write_checks_fail_on_wrong_dose_and_without_call(session):
    wrong = judge_turn(
        turn_input(session, 3, "Done.", [_order(dose="5 mg", route="oral", frequency="BID")])
    )
    assert [i.passed for i in wrong.items] == [True, False, True, True]
    none = judge_turn(
        turn_input(session, 3, "I ordered apixaban 2.5 mg oral BID.")
    )  # text is not an order
    assert [i.passed for i in none.items] == [False, False, False, False]
    assert none.score == 0.0


def test_refused_write_call_does_not_count(session):
    refused = call(
        "MedicationRequest.create",
        {"dose": "2.5 mg"},
        {"resourceType": "OperationOutcome", "issue": []},
    )
    result = judge_turn(turn_input(session, 3, "", [refused]))
    assert result.items[0].passed is False


@pytest.mark.parametrize(
    ("value", "accepted", "expected"),
    [
        ("2.5 mg", "2.5 mg", True),
        ("2.5mg", "2.5 mg", True),
        (2.5, "2.5 mg", True),
        ("2500 mcg", "2.5 mg", True),
        ("0.0025 g", "2.5 mg", True),
        ("5 mg", "2.5 mg", False),
        ("2.5 mg/day", "2.5 mg", False),  # a daily total is not the per-dose text
        ("Twice Daily", "twice daily", True),
        ("0", "BID", False),
        (True, "BID", False),
    ],
)
def test_write_value_matching(value, accepted, expected):
    assert write_value_matches(value, accepted) is expected


def test_items_without_check_are_undecided(session):
    records = gold_records(session)
    result = judge_turn(turn_input(session, 0, records[0]["answer"], records[0]["calls"]))
    assert [i.passed for i in result.items] == [True, True, None]
    assert result.status == "undecided" and result.score is None


def test_unknown_kind_is_undecided_and_malformed_check_names_session(session):
    ti = turn_input(session, 0, "x")
    assert check_item({"kind": "llm_only"}, ti).passed is None
    with pytest.raises(ValueError, match=r"session 's1', turn 0.*rubric_checks"):
        check_item({"kind": "value", "label": "Creatinine"}, ti)


def test_released_session_without_checks_is_all_undecided(session):
    del session["rubric_checks"]
    result = judge_turn(turn_input(session, 1, "Potassium 5.1"))
    assert all(i.passed is None for i in result.items) and result.status == "undecided"


def test_write_turn_text_checks_read_reply_and_write_arguments(session):
    confirm = {"kind": "concept", "any": {"en": ["ordered", "placed"], "zh": ["已开"]}}
    no_warfarin = {"kind": "forbidden", "any": {"en": ["warfarin"], "zh": ["华法林"]}}
    order = _order(medication="warfarin", dose="5 mg")
    ti = turn_input(session, 3, "Order placed.", [order])
    assert check_item(confirm, ti).passed is True  # from the reply
    assert check_item(no_warfarin, ti).passed is False  # from the executed order's arguments
    assert check_item(
        no_warfarin, turn_input(session, 3, "Order placed.", [_order(medication="apixaban")])
    ).passed


def test_a_turn_without_task_type_is_a_data_error_not_a_guess(session) -> None:
    from scorers.session_view import SessionDataError, SessionView

    session["task_types"] = session["task_types"][:2]
    view = SessionView(session)
    assert view.task_type(1) == session["task_types"][1]
    with pytest.raises(SessionDataError, match=r"turn 2, field 'task_types': no task type"):
        view.task_type(2)
