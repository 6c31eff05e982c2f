"""The grounding check's library (``physassist.grounding``): reading facts and judging them,
EN and ZH, against tool results rendered by the real renderer."""

from __future__ import annotations

import json

import pytest

from physassist.ehr.tools import render
from physassist.grounding import FACT_TYPES, Evidence, Source, answer_facts, ground, markdown_table
from physassist.grounding.session import Call, Turn, ground_session

OPENING = (
    "[Environment]\nCurrent date: 2157-07-02. Patient is a 73-year-old M\ncurrent_date: "
    "2157-07-02\n"
)


def _obs(
    name: str,
    value: float,
    unit: str,
    when: str,
    low: float | None = None,
    high: float | None = None,
) -> dict:
    resource = {
        "resourceType": "Observation",
        "code": {"text": name},
        "effectiveDateTime": when,
        "valueQuantity": {"value": value, "unit": unit},
    }
    if low is not None:
        resource["referenceRange"] = [
            {"low": {"value": low, "unit": unit}, "high": {"value": high, "unit": unit}}
        ]
    return resource


def _bundle(*resources: dict) -> dict:
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(resources),
        "entry": [{"resource": r} for r in resources],
    }


def _mar(drug: str, when: str, event: str, status: str, dose: float) -> dict:
    return {
        "resourceType": "MedicationAdministration",
        "status": status,
        "medicationCodeableConcept": {"text": drug},
        "effectiveDateTime": when,
        "note": [{"text": event}],
        "dosage": {"dose": {"value": dose, "unit": "mg"}},
    }


CREATININE = _bundle(
    _obs("Creatinine", 1.8, "mg/dL", "2157-07-02T05:36:00+00:00", 0.5, 1.2),
    _obs("Creatinine", 1.6, "mg/dL", "2157-06-30T05:20:00+00:00", 0.5, 1.2),
    _obs("Creatinine", 1.3, "mg/dL", "2157-06-24T06:00:00+00:00", 0.5, 1.2),
)
POTASSIUM = _bundle(_obs("Potassium", 3.9, "mEq/L", "2157-07-02T05:36:00+00:00"))
INR = _bundle(
    {
        "resourceType": "Observation",
        "code": {"text": "INR(PT)"},
        "effectiveDateTime": "2157-07-01T05:08:00+00:00",
        "valueQuantity": {"value": 1.2},
    }
)
APIXABAN = _bundle(
    {
        "resourceType": "MedicationRequest",
        "status": "active",
        "medicationCodeableConcept": {"text": "Apixaban"},
        "authoredOn": "2157-06-25T00:00:00+00:00",
        "dosageInstruction": [
            {
                "text": "5 mg PO BID",
                "timing": {"repeat": {"boundsPeriod": {"start": "2157-06-25T08:00:00+00:00"}}},
            }
        ],
    }
)
DOSES = _bundle(
    _mar("Heparin", "2157-07-02T06:09:00+00:00", "Administered", "completed", 5000),
    _mar("Heparin", "2157-07-01T21:52:00+00:00", "Not Given", "not-done", 5000),
    _mar("Heparin", "2157-07-01T14:15:00+00:00", "Administered", "completed", 5000),
    _mar("Heparin", "2157-07-01T06:27:00+00:00", "Administered", "completed", 5000),
)
CULTURE = _bundle(
    {
        "resourceType": "DiagnosticReport",
        "code": {"text": "SPUTUM microbiology"},
        "effectiveDateTime": "2157-06-28T14:28:00+00:00",
        "conclusion": "Organisms: STREPTOCOCCUS PNEUMONIAE",
        "presentedForm": [{"data": "RESPIRATORY CULTURE: STREPTOCOCCUS PNEUMONIAE"}],
    }
)


def evidence(*results: dict, mode: str = "full", questions: tuple[str, ...] = ()) -> Evidence:
    """The evidence of tool results as the model saw them (``render``), the raw results kept."""
    sources = [Source("opening", OPENING)]
    sources += [Source("question", q, turn=0) for q in questions]
    sources += [
        Source("tool", render(r, mode), turn=0, call=i, tool="X.search", raw=r)
        for i, r in enumerate(results, 1)
    ]
    return Evidence(sources)


def statuses(answer: str, ev: Evidence) -> list[tuple[str, str, str]]:
    return [(v.fact.kind, v.fact.text, v.status) for v in ground(answer, ev).verdicts]


def test_fact_types_are_registered_in_their_reading_order() -> None:
    assert [t.name for t in FACT_TYPES] == ["date", "count", "value", "organism"]
    assert all(f"`{t.name}`" in markdown_table() for t in FACT_TYPES)


def test_a_lab_value_is_grounded_by_the_line_that_holds_it() -> None:
    ev = evidence(CREATININE)
    g = ground("Creatinine went from 1.3 to 1.8 mg/dL between 2157-06-24 and 2157-07-02.", ev)
    assert [(v.fact.kind, v.status) for v in g.verdicts] == [("value", "grounded")] * 2 + [
        ("date", "grounded")
    ] * 2
    first = g.verdicts[0]
    assert first.evidence is not None and first.evidence.line is not None
    assert first.evidence.line.where() == "T0 call 1 X.search line 4"
    assert "Creatinine: 1.3 mg/dL" in first.evidence.line.text
    assert g.summary() == "4 facts: 4 grounded, 0 contradicted, 0 unsupported"
    assert g.share == 1.0


def test_a_changed_value_of_the_same_lab_is_contradicted_and_shows_the_record() -> None:
    g = ground("Creatinine is 2.1 mg/dL today.", evidence(CREATININE))
    (verdict,) = g.verdicts
    assert verdict.status == "contradicted"
    assert verdict.seen[:3] == ("1.8 mg/dL", "1.6 mg/dL", "1.3 mg/dL")
    assert "contradicted: the record holds 1.8 mg/dL" in verdict.reason()


def test_a_value_nothing_was_retrieved_for_is_unsupported() -> None:
    assert statuses("Sodium 138 mEq/L.", evidence(CREATININE)) == [
        ("value", "138 mEq/L", "unsupported")
    ]


def test_values_match_unit_aware_and_rounded_as_written() -> None:
    ev = evidence(CREATININE, POTASSIUM)
    assert [s for *_, s in statuses("Creatinine 159 umol/L", ev)] == ["grounded"]  # 1.8 mg/dL
    assert [s for *_, s in statuses("K 3.9 mmol/L", ev)] == ["grounded"]  # mEq/L of potassium
    assert [s for *_, s in statuses("creatinine 2", ev)] == ["grounded"]  # 1.8 read to the unit
    assert [s for *_, s in statuses("creatinine 1.80 mg/dL", ev)] == ["grounded"]
    assert [s for *_, s in statuses("creatinine 1.85 mg/dL", ev)] == [
        "contradicted"
    ]  # more precise than the record


def test_a_value_of_another_lab_does_not_ground_a_label() -> None:
    """Potassium 1.8 is no creatinine record: the number is in the record, for another thing."""
    assert [s for *_, s in statuses("Potassium 1.8 mEq/L", evidence(CREATININE, POTASSIUM))] == [
        "contradicted"
    ]
    assert [s for *_, s in statuses("Potassium 1.8 mEq/L", evidence(CREATININE))] == ["unsupported"]


def test_a_unit_less_value_right_after_its_name_is_a_fact() -> None:
    ev = evidence(INR)
    assert statuses("INR 1.2 on 2157-07-01", ev) == [
        ("value", "1.2", "grounded"),
        ("date", "2157-07-01", "grounded"),
    ]
    assert statuses("INR(PT): 1.5", ev) == [("value", "1.5", "contradicted")]
    assert (
        statuses("Admission 50000209 was on ward 4", ev) == []
    )  # ids and bare numbers without a name


def test_dose_counts_against_the_administrations_retrieved() -> None:
    ev = evidence(DOSES)
    assert statuses("Of 4 charted doses, given: 3, not given: 1.", ev) == [
        ("count", "4 charted doses", "grounded"),
        ("count", "given: 3", "grounded"),
        ("count", "not given: 1", "grounded"),
    ]
    assert statuses("given: 4", ev) == [("count", "given: 4", "contradicted")]
    assert [v.seen for v in ground("not given: 2", ev).verdicts] == [("1 not given",)]
    assert statuses("heparin was given 3 times", ev) == [("count", "3 times", "grounded")]
    assert statuses("3 of 4 doses were given", ev) == [
        ("count", "3 of 4 doses", "grounded"),
        ("count", "3 of 4 doses", "grounded"),
    ]


def test_dose_counts_since_a_date_against_the_doses_charted_from_then_on() -> None:
    """The builder's count of an order ("ordered since <start>; of the N doses charted since
    then"): the doses charted from an hour before that start, not the whole listing."""
    ev = evidence(DOSES)  # 2157-07-01 06:27 given, 14:15 given, 21:52 not given, 07-02 given
    ordered = "Heparin has been ordered since 2157-07-01 16:00; of the {} doses charted since then"
    # (the order's start is no date the listing holds: its date fact is not the point here)
    assert statuses(ordered.format(2) + ", given: 1, not given: 1.", ev)[1:] == [
        ("count", "2 doses", "grounded"),
        ("count", "given: 1", "grounded"),
        ("count", "not given: 1", "grounded"),
    ]
    [_, verdict] = ground(ordered.format(4) + ".", ev).verdicts  # 4: the whole listing's count
    assert verdict.status == "contradicted" and verdict.seen == ("2 charted",)
    skewed = "ordered since 2157-07-01 15:00; of the 3 doses charted since then, given: 2"
    assert [s for _, _, s in statuses(skewed, ev)[1:]] == ["grounded"] * 2  # 14:15: an hour before
    zh = "自 2157-07-01 16:00 起执行该医嘱；此后共记录 2 次给药，已给（given）：1。"
    assert statuses(zh, ev)[1:] == [
        ("count", "2 次给药", "grounded"),
        ("count", "已给（given）：1", "grounded"),
    ]
    bullet = (
        "- Last dose given: 2157-07-02 06:09 ({} doses of this order given since 2157-07-01 16:00)"
    )
    assert statuses(bullet.format(1), ev)[1] == ("count", "1 doses", "grounded")
    assert statuses(bullet.format(3), ev)[1] == ("count", "3 doses", "contradicted")
    # a window ends with its sentence
    assert statuses("Ordered since 2157-07-01 16:00. Of 4 charted doses, given: 3.", ev)[1:] == [
        ("count", "4 charted doses", "grounded"),
        ("count", "given: 3", "grounded"),
    ]


def test_other_counts_by_the_same_number_of_the_same_thing() -> None:
    patient = Source(
        "tool",
        "Patient: Onset was about two weeks ago. I can walk about 4 blocks. I fell once.",
        turn=0,
        call=1,
        tool="patient.get_symptom_history",
    )
    ev = Evidence([patient])
    assert [s for *_, s in statuses("started 2 weeks ago; walks 4 blocks; one fall", ev)] == [
        "grounded"
    ] * 3
    assert [s for *_, s in statuses("started 3 weeks ago", ev)] == ["unsupported"]


def test_dates_in_the_formats_tools_and_people_write() -> None:
    ev = evidence(CREATININE)
    for written in (
        "2157-07-02",
        "2157/07/02",
        "July 2, 2157",
        "2 July 2157",
        "2157年7月2日",
        "2157-07-02 05:36",
    ):
        assert statuses(f"Creatinine checked {written}", ev) == [("date", written, "grounded")], (
            written
        )
    assert statuses("creatinine checked 2157-07-01", ev) == [("date", "2157-07-01", "contradicted")]
    assert statuses("creatinine checked 2157-07-02 07:00", ev) == [
        ("date", "2157-07-02 07:00", "contradicted")
    ]
    assert statuses("repeat creatinine ordered for 2157-07-03", ev) == [
        ("date", "2157-07-03", "unsupported")
    ]  # a plan
    assert statuses("admitted 2157-06-20", ev) == [
        ("date", "2157-06-20", "unsupported")
    ]  # about no thing retrieved


def test_a_rendering_without_times_neither_grounds_nor_contradicts_the_minute() -> None:
    assert statuses("creatinine 2157-07-02 05:36", evidence(CREATININE, mode="compat")) == [
        ("date", "2157-07-02 05:36", "unsupported")
    ]


def test_json_results_are_read_as_their_full_rendering() -> None:
    assert [
        s
        for *_, s in statuses(
            "Creatinine 1.8 mg/dL on 2157-07-02 05:36", evidence(CREATININE, mode="json")
        )
    ] == ["grounded"] * 2


def test_organisms_written_out_abbreviated_and_in_chinese() -> None:
    ev = evidence(CULTURE)
    for written in (
        "Streptococcus pneumoniae",
        "S. pneumoniae",
        "pneumococcus",
        "肺炎链球菌",
        "strep",
    ):
        found = [(k, s) for k, _, s in statuses(f"Sputum grew {written}.", ev)]
        assert found == ([("organism", "grounded")] if written != "strep" else []), written
    assert statuses("Sputum grew Klebsiella pneumoniae.", ev) == [
        ("organism", "Klebsiella pneumoniae", "contradicted")
    ]
    assert statuses("MRSA screen negative, Klebsiella bacteremia", evidence(CREATININE)) == [
        ("organism", "Klebsiella", "unsupported")
    ]


def test_medication_doses_and_names_from_the_record() -> None:
    ev = evidence(APIXABAN)
    assert statuses("Apixaban is ordered at 5 mg PO, started 2157-06-25.", ev) == [
        ("value", "5 mg", "grounded"),
        ("date", "2157-06-25", "grounded"),
    ]
    assert statuses("apixaban 10 mg twice daily", ev) == [("value", "10 mg", "contradicted")]
    assert statuses("10 mg of apixaban", ev) == [("value", "10 mg", "contradicted")]


def test_chinese_answers() -> None:
    ev = evidence(CREATININE, POTASSIUM, DOSES)
    answer = (
        "肌酐（Creatinine）从 1.3 变为 1.8 mg/dL（2157-06-24 至 2157-07-02，上升）。钾 3.9 mEq/L。共记录 4 "
        "次给药，已给（given）：3，未给（not given）：1（最后一次给药 2157-07-02 06:09）。"
    )
    found = statuses(answer, ev)
    assert all(s == "grounded" for *_, s in found), found
    assert [k for k, *_ in found].count("count") == 3
    assert statuses("肌酐 2.4 mg/dL", ev) == [
        ("value", "2.4 mg/dL", "contradicted")
    ]  # by the Chinese name alone


GABAPENTIN = _bundle(
    {
        "resourceType": "MedicationRequest",
        "status": "active",
        "medicationCodeableConcept": {"text": "Gabapentin"},
        "authoredOn": "2157-06-25T00:00:00+00:00",
        "dosageInstruction": [{"text": "600 mg PO TID"}],
    }
)


@pytest.mark.parametrize(
    ("answer", "judged"),
    [
        (  # 600 mg TID is 1800 mg a day (derived); the clearance and the maximum are not judged
            "Gabapentin 600 mg TID: at 600 mg TID that is 1800 mg a day; at a creatinine "
            "clearance of about 50 mL/min (Cockcroft-Gault) the labelled maximum is 1400 mg a "
            "day. Creatinine 1.8 mg/dL.",
            [
                ("value", "600 mg", "grounded"),
                ("value", "600 mg", "grounded"),
                ("value", "1800 mg", "grounded"),
                ("value", "1.8 mg/dL", "grounded"),
            ],
        ),
        (
            "按 600 mg TID 计每日 1800 mg；肌酐清除率约 50 mL/min（Cockcroft-Gault）时说明书每日上限为 "
            "1400 mg。",
            [("value", "600 mg", "grounded"), ("value", "1800 mg", "grounded")],
        ),
        (  # a wrong product is judged as any dose: the record's 600 mg contradicts it
            "Gabapentin 600 mg TID, that is 2400 mg a day; CrCl 50 mL/min.",
            [("value", "600 mg", "grounded"), ("value", "2400 mg", "contradicted")],
        ),
        (
            "按 600 mg TID 计每日 1200 mg。",
            [("value", "600 mg", "grounded"), ("value", "1200 mg", "unsupported")],
        ),
        (  # a product of nothing the record holds, and a day's dose not written as one
            "gabapentin 1800 mg TID",
            [("value", "1800 mg", "contradicted")],
        ),
        (  # a maximum stated alone is a criterion
            "Keep gabapentin within the maximum daily dose of 700 mg.",
            [],
        ),
    ],
)
def test_a_daily_dose_is_derived_from_an_order_and_a_maximum_is_not_judged(
    answer: str, judged: list
) -> None:
    assert statuses(answer, evidence(GABAPENTIN, CREATININE)) == judged


A1C = _bundle(_obs("% Hemoglobin A1c", 8.4, "%", "2157-07-01T05:08:00+00:00", 4, 6))


@pytest.mark.parametrize(
    ("answer", "judged"),
    [
        (  # a target, a threshold, a condition still to be met: the record values only
            "The latest INR(PT) is 1.2 (2157-07-01 05:08, subtherapeutic on warfarin, below the "
            "2-3 target), still below 2, so I'd continue the heparin until the INR has been 2 "
            "or more for 24 hours.",
            [("value", "1.2", "grounded"), ("date", "2157-07-01 05:08", "grounded")],
        ),
        (
            "% Hemoglobin A1c: 8.4 % (in the diabetes range, 6.5% or more), goal < 7%.",
            [("value", "8.4 %", "grounded")],
        ),
        (
            "Keep simvastatin within the labelled limit (20 mg with amiodarone, 10 mg with "
            "diltiazem); creatinine 1.8 mg/dL, at least 1.5 mg/dL.",
            [("value", "1.8 mg/dL", "grounded")],
        ),
        (
            "国际标准化比值（INR(PT)）为 1.2（服用华法林时低于 2-3 的目标范围（未达标）），仍低于 2，"
            "直到 INR 连续 24 小时 ≥ 2。糖化血红蛋白 8.4 %（达到糖尿病范围（6.5% 及以上））。",
            [("value", "1.2", "grounded"), ("value", "8.4 %", "grounded")],
        ),
        (  # the window a trend is told over; a clock time's digits are no value
            "Creatinine 1.8 mg/dL (falling overall, but rising over the last 2 days); "
            "肌酐从 05:20 的 1.6 变为 05:36 的 1.8 mg/dL（总体下降，但近2天回升）。",
            [
                ("value", "1.8 mg/dL", "grounded"),
                ("value", "1.6", "grounded"),
                ("value", "1.8 mg/dL", "grounded"),
            ],
        ),
        (  # a record value beside a criterion is still judged, and a wrong one contradicted
            "INR 1.9, below the 2-3 target; creatinine 1.3 -> 2.4 mg/dL.",
            [
                ("value", "1.9", "contradicted"),
                ("value", "1.3", "grounded"),
                ("value", "2.4 mg/dL", "contradicted"),
            ],
        ),
    ],
)
def test_a_number_stated_as_a_criterion_is_not_judged(answer: str, judged: list) -> None:
    assert statuses(answer, evidence(INR, A1C, CREATININE)) == judged


def test_a_score_out_of_ten_is_about_its_clause_and_written_either_way() -> None:
    said = "Pain in the right side of the chest: sharp, stabbing, about a 6 out of 10."
    ev = Evidence([Source("tool", said, turn=0, call=1, tool="patient.get_pain_assessment")])
    assert statuses("- Pain: 6/10, right side of the chest", ev) == [("value", "6/10", "grounded")]
    assert statuses("- Pain: 7/10", ev) == [("value", "7/10", "contradicted")]


def test_a_listing_cut_short_grounds_but_never_contradicts() -> None:
    """``ehr.render=compat`` lists 15 entries then ``... (N more)``: a date or value of a hidden
    entry is unsupported, not contradicted by the entries shown."""
    doses = [
        _mar("Insulin", f"2157-07-{d:02d}T0{h}:00:00+00:00", "Administered", "completed", 4)
        for d in range(9, 0, -1)  # the latest first, as the tools list them
        for h in (8, 6)
    ]
    full, compat = evidence(_bundle(*doses)), evidence(_bundle(*doses), mode="compat")
    assert compat.sources[-1].partial and not full.sources[-1].partial
    answer = "Insulin was first given 2157-07-01 06:00."
    assert statuses(answer, full) == [("date", "2157-07-01 06:00", "grounded")]
    assert statuses(answer, compat) == [("date", "2157-07-01 06:00", "unsupported")]
    assert statuses("Insulin was first given 2157-07-01 07:00.", full)[0][2] == "contradicted"


def test_a_fact_from_the_question_or_the_opening_message() -> None:
    ev = evidence(CREATININE, questions=("Her lactate was 4.2 mmol/L this morning; what now?",))
    (verdict,) = ground("With a lactate of 4.2 mmol/L, as of 2157-07-02", ev).verdicts[:1]
    assert verdict.status == "grounded" and verdict.evidence and verdict.evidence.line
    assert verdict.evidence.line.where() == "T0 question line 1"


def test_answer_facts_skip_numbers_inside_dates_and_names() -> None:
    ev = evidence(CREATININE)
    facts = answer_facts(
        "% Hemoglobin A1c pending; creatinine 1.8 mg/dL at 2157-07-02 05:36 (ICD J189)", ev
    )
    assert [(f.kind, f.text) for f in facts] == [
        ("value", "1.8 mg/dL"),
        ("date", "2157-07-02 05:36"),
    ]


def test_a_session_grounds_each_turn_on_what_it_had_received_by_then() -> None:
    creat = Call("Observation.search", render(CREATININE), json.dumps(CREATININE))
    k = Call("Observation.search", render(POTASSIUM), POTASSIUM)
    turns = [
        Turn(0, "Creatinine?", "Creatinine 1.8 mg/dL.", (creat,)),
        Turn(1, "Potassium?", "Potassium 3.9 mEq/L; creatinine 1.8 mg/dL.", (k,)),
        Turn(2, "And?", "Potassium 3.9 mEq/L.", ()),
    ]
    free = ground_session(OPENING, turns)
    assert [g.summary() for g in free] == [
        "1 facts: 1 grounded, 0 contradicted, 0 unsupported",
        "2 facts: 2 grounded, 0 contradicted, 0 unsupported",
        "1 facts: 1 grounded, 0 contradicted, 0 unsupported",
    ]
    early = ground_session(OPENING, [Turn(0, "?", "Potassium 3.9 mEq/L.", ()), turns[1]])
    assert early[0].count("unsupported") == 1  # turn 1's result does not ground turn 0
    gold = [
        Turn(0, "Creatinine?", "I do not know.", (), "gold", (creat,)),
        Turn(1, "Potassium?", "Creatinine 1.8 mg/dL.", (), "gold"),
    ]
    g = ground_session(OPENING, gold)[1]
    assert g.count("grounded") == 1
    assert g.verdicts[0].evidence.line.where().startswith("T0 gold call 1")  # type: ignore[union-attr]


@pytest.mark.parametrize("answer", ["", "No numbers here.", "Ready."])
def test_an_answer_without_facts(answer: str) -> None:
    g = ground(answer, evidence(CREATININE))
    assert g.facts == 0 and g.share is None and g.summary() == "no facts stated"


def test_every_lab_the_builder_asks_about_is_known_by_its_spoken_and_chinese_names() -> None:
    """``names.CONCEPTS`` against the session builder's own lab names: an answer that says
    "BUN" or "尿素氮" is about the record's "Urea Nitrogen"."""
    from generation.builder.vocab import LABS
    from physassist.grounding.labels import Names

    names = Names()
    for lab in LABS.values():
        key = names.key_of(lab.label)
        assert key == lab.label.lower(), lab.label
        assert all(key in names.keys(spoken) for spoken in (lab.en, lab.zh)), lab


def test_the_reports_page_shows_the_fact_type_table() -> None:
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "reports.md").read_text(encoding="utf-8")
    assert markdown_table() in page, (
        "docs/reports.md fact-type table is stale: paste `python -m physassist.grounding`"
    )
