"""Built sessions against the raw MIMIC-IV tables (issue 29): current orders, zero doses,
latest values, cultures, administrations and end of life, read by ``fixtures_record`` from
the CSV files alone. The demo build uses the issue's command line (3 per slot, seed 1)."""

from __future__ import annotations

import fixtures_builder as fb
import fixtures_record as fr
import fixtures_store as fx
import pytest

from generation.builder import build_sessions

store_cache = fx.store_cache
demo_store = fx.demo_store


@pytest.mark.slow
def test_demo_sessions_agree_with_the_raw_tables(demo_store, tmp_path) -> None:
    report = build_sessions(demo_store, tmp_path, sessions_per_slot=3, seed=1)
    entries = fb.read_entries(tmp_path)
    assert len(entries) == report.n_sessions >= 20
    found = fr.defects(entries, fb.DEMO)
    assert found == {k: [] for k in fr.CATEGORIES}
    # The check reads what the sessions claim: there are claims of every kind to check.
    kinds = {c["kind"] for e in entries for turn in e["rubric_checks"] for c in turn}
    assert {"value", "concept"} <= kinds


def test_sample_sessions_agree_with_the_raw_tables() -> None:
    entries = fb.read_entries(fb.SAMPLE / "sessions")
    assert entries
    found = fr.defects(entries, fb.SAMPLE / "cohort")
    assert found == {k: [] for k in fr.CATEGORIES}


def test_the_raw_check_finds_what_the_builder_got_wrong_before() -> None:
    """The issue's defects, as sessions claimed them on main at 3e5055e, are found."""
    demo = fb.demo_or_skip()
    warfarin = {"id": "w", "hadm_id": 0, "current_date": "", "task_types": ["Information Lookup"]}
    con = fr.raw(demo)
    hadm, day = con.execute(
        "SELECT hadm_id, dischtime[:10] FROM admissions "
        "WHERE subject_id = '10023117' ORDER BY admittime DESC"
    ).fetchone()
    warfarin.update(
        hadm_id=int(hadm),
        current_date=day,
        answer_list=[
            [
                {
                    "action": {
                        "name": "MedicationRequest.search",
                        "arguments": {"medication": "warfarin"},
                    },
                    "observation": {},
                },
                {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": ""},
            ]
        ],
        rubric_checks=[[{"kind": "value", "label": "warfarin", "value": 2.0}]],
    )
    found = fr.defects([warfarin], demo)
    assert found["end_of_life"] and found["current_orders"]


def test_the_raw_check_counts_icu_doses() -> None:
    """The issue's metronidazole: "2 doses" from the eMAR while 11 more were given in the CCU
    (icu/inputevents only). The count is wrong, and a dose count of a drug with ICU doses is
    one compat cannot show."""
    demo = fb.demo_or_skip()
    day = (
        fr.raw(demo)
        .execute("SELECT dischtime[:10] FROM admissions WHERE hadm_id = '24982426'")
        .fetchone()[0]
    )
    claim = {
        "id": "m",
        "hadm_id": 24982426,
        "current_date": day,
        "task_types": ["Clinical Reasoning"],
        "session_plan": {"turn_intents": ["admin_reliability(metronidazole)"]},
        "answer_list": [
            [
                {
                    "action": {
                        "name": "MedicationAdministration.search",
                        "arguments": {"medication": "metronidazole"},
                    },
                    "observation": {},
                },
                {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": ""},
            ]
        ],
        "rubric_checks": [[{"kind": "value", "label": "given", "value": 2.0}]],
    }
    found = fr.defects([claim], demo)["administrations"]
    assert len(found) == 2
    assert "current orders say (given, not given) []" in found[0]  # stopped before discharge
    assert "11 ICU administrations" in found[1]


def _reliability_claim(hadm: int, day: str, word: str, given: float, missed: float) -> dict:
    return {
        "id": "r",
        "hadm_id": hadm,
        "current_date": day,
        "task_types": ["Clinical Reasoning"],
        "session_plan": {"turn_intents": [f"admin_reliability({word})"]},
        "answer_list": [
            [
                {
                    "action": {
                        "name": "MedicationAdministration.search",
                        "arguments": {"medication": word},
                    },
                    "observation": {},
                },
                {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": ""},
            ]
        ],
        "rubric_checks": [
            [
                {"kind": "value", "label": "given", "value": given},
                {"kind": "value", "label": "not given", "value": missed},
            ]
        ],
    }


def test_the_raw_check_counts_doses_per_order() -> None:
    """Issue 40's metoprolol XL (10020944 / 29974575): "1 of 6 doses missed" counted the
    tartrate order's doses and its missed one; the XL order (25 + 50 mg rows of one poe_id)
    was given 2 of 2. Its dose is 75 mg, not either row's."""
    demo = fb.demo_or_skip()
    wrong = _reliability_claim(29974575, "2131-03-13", "metoprolol", 5.0, 1.0)
    found = fr.defects([wrong], demo)["administrations"]
    assert len(found) == 2 and "[(2, 0)]" in found[0]
    right = _reliability_claim(29974575, "2131-03-13", "metoprolol", 2.0, 0.0)
    right["rubric_checks"][0].append({"kind": "value", "label": "metoprolol", "value": 75.0})
    right["answer_list"][0].insert(
        0,
        {
            "action": {
                "name": "MedicationRequest.search",
                "arguments": {"medication": "metoprolol"},
            },
            "observation": {},
        },
    )
    assert fr.defects([right], demo) == {k: [] for k in fr.CATEGORIES}


def test_the_raw_check_finds_a_spurious_peak_and_a_trend_the_table_contradicts() -> None:
    """Issue 40's 10007928 / 20338077: "glucose peaked at 942" required by a rubric (a
    contaminated line sample, back to 178 within two hours), and the trend words of a turn
    against the documented table."""
    demo = fb.demo_or_skip()
    day = (
        fr.raw(demo)
        .execute("SELECT dischtime[:10] FROM admissions WHERE hadm_id = '20338077'")
        .fetchone()[0]
    )
    claim = {
        "id": "g",
        "hadm_id": 20338077,
        "current_date": day,
        "task_types": ["Clinical Reasoning"],
        "session_plan": {"turn_intents": ["lab_trend(Glucose)"]},
        "answer_list": [
            [
                {
                    "action": {"name": "Observation.search", "arguments": {"code": "Glucose"}},
                    "observation": {},
                },
                {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": ""},
            ]
        ],
        "rubrics": [
            [
                "The answer cites the admission's peak Glucose of 942 mg/dL.",
                "The answer describes the Glucose as stable.",
            ]
        ],
        "rubric_checks": [
            [
                {"kind": "value", "label": "Glucose", "value": 942.0},
                {"kind": "concept", "any": {"en": ["stable"], "zh": ["稳定"]}},
            ]
        ],
    }
    found = fr.defects([claim], demo)
    assert len(found["artifacts"]) == 1 and "942" in found["artifacts"][0]
    assert len(found["trends"]) == 1 and "the rubric accepts ['stable']" in found["trends"][0]


def test_the_reviewers_sheet_shows_sessions_beside_their_record(tmp_path) -> None:
    """``docs/reviewer_sheet.py`` on the committed sample: each picked session with its
    admission, outcome and what it was built on, each turn with its raw rows."""
    import subprocess
    import sys

    out = tmp_path / "sheet.md"
    subprocess.run(
        [
            sys.executable,
            "docs/reviewer_sheet.py",
            "--source",
            str(fb.SAMPLE / "cohort"),
            "--build",
            str(fb.SAMPLE / "sessions"),
            "--turns",
            "40",
            "--out",
            str(out),
        ],
        check=True,
        cwd=fb.REPO,
        capture_output=True,
    )
    text = out.read_text(encoding="utf-8")
    assert text.count("\n### ") == 40 and "\n## " in text
    for line in (x for x in text.splitlines() if x.startswith("Subject ")):
        assert "discharged to" in line or "died" in line
        assert "built on" in line or "no signal required" in line, line
    assert "labevents, " in text and "emar events" in text


def _s131_claim(hadm: int, intent: str, call: dict, gold: str, rubric: list[str]) -> dict:
    day = (
        fr.raw(fb.demo_or_skip())
        .execute("SELECT dischtime[:10] FROM admissions WHERE hadm_id = ?", [str(hadm)])
        .fetchone()[0]
    )
    return {
        "id": intent,
        "hadm_id": hadm,
        "current_date": day,
        "task_types": ["Clinical Reasoning"],
        "session_plan": {"turn_intents": [intent]},
        "answer_list": [
            [
                {"action": call, "observation": {}},
                {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": gold},
            ]
        ],
        "rubrics": [rubric],
        "rubric_checks": [[]],
    }


def test_the_raw_check_finds_the_seed_131_rejects() -> None:
    """Issue 40's seed-131 review, as main built it: 10007928's urine E. coli (every row says
    "contamination with mixed skin/genital flora ... significance uncertain") presented with its
    susceptibilities and required as the organism grown; the BUN of 8 of its line sample, a
    value its course reaches twice more, called spurious; 10019003's platelets of 12 in
    myelodysplastic syndrome sent to "look for the cause"."""
    demo = fb.demo_or_skip()
    culture = _s131_claim(
        20338077,
        "culture_latest()",
        {"name": "DiagnosticReport.search", "arguments": {"report_type": "culture"}},
        "- URINE (2129-04-06 02:24): URINE CULTURE grew ESCHERICHIA COLI (susceptible to "
        "GENTAMICIN, CEFAZOLIN)",
        [
            "The answer reports the organism grown (ESCHERICHIA COLI).",
            "The answer names the specimen (URINE).",
        ],
    )
    bun = _s131_claim(
        20338077,
        "lab_latest(Urea Nitrogen)",
        {"name": "Observation.search", "arguments": {"code": "Urea Nitrogen"}},
        "",
        [
            "The answer treats the Urea Nitrogen of 8 mg/dL as spurious (or asks to repeat the "
            "draw) rather than as a real value."
        ],
    )
    platelets = _s131_claim(
        26226543,
        "lab_latest(Platelet Count)",
        {"name": "Observation.search", "arguments": {"code": "Platelet Count"}},
        "Platelet Count went from 16 to 12 K/uL (slightly falling). I'd recheck it at the "
        "follow-up visit after discharge and look for the cause.",
        [],
    )
    found = fr.defects([culture, bun, platelets], demo)
    assert len(found["contaminated_cultures"]) == 2
    assert "presented as a pathogen" in found["contaminated_cultures"][0]
    assert found["spurious_in_course"] == [
        "lab_latest(Urea Nitrogen) turn 0: Urea Nitrogen 8 called spurious, within its own course"
    ]
    assert len(found["known_cause_worked_up"]) == 1
    culture["answer_list"][0][1]["observation"] = (
        "- URINE (2129-04-06 02:24): URINE CULTURE grew ESCHERICHIA COLI (the laboratory "
        "reports contamination with mixed flora: clinical significance uncertain)"
    )
    culture["rubrics"] = [["The answer says the laboratory doubts the ESCHERICHIA COLI."]]
    assert fr.defects([culture], demo)["contaminated_cultures"] == []


def _claim(hadm: int, day: str, intent: str, calls: list, answer: str, rubric: list) -> dict:
    """One turn as a session states it: its intent, tool calls, answer and rubric items
    (``rubric``: (item text, check) pairs)."""
    return {
        "id": "c",
        "hadm_id": hadm,
        "current_date": day,
        "task_types": ["Clinical Reasoning"],
        "session_plan": {"turn_intents": [intent]},
        "answer_list": [
            [{"action": {"name": n, "arguments": a}, "observation": {}} for n, a in calls]
            + [{"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": answer}]
        ],
        "rubrics": [[text for text, _ in rubric]],
        "rubric_checks": [[check for _, check in rubric]],
    }


def _response(hadm: int, day: str, word: str, lab: str, answer: str) -> dict:
    calls = [
        ("MedicationAdministration.search", {"medication": word}),
        ("Observation.search", {"code": lab}),
    ]
    given = f"The answer confirms {word} is being given."
    check = {"kind": "concept", "any": {"en": [word], "zh": [word]}}
    return _claim(hadm, day, f"abx_response({lab}, {word})", calls, answer, [(given, check)])


def test_the_raw_check_finds_responses_to_a_drug_no_longer_given() -> None:
    """The second review's treatment-response rejects: cefepime (23488445) stepped down to
    cefpodoxime the day before, yet "being given"; phenylephrine (29366372) stopped 5 days
    before, judged by a lactate of 5 days before called "now". Pip-tazo (20973395), still
    given on the discharge day with its WBC of 3 days before and a culture sent, is sound."""
    demo = fb.demo_or_skip()
    now = "WBC: 41.1 K/uL just before it, 13.3 K/uL now (falling); review the culture results."
    wbc = "White Blood Cells"
    found = fr.defects([_response(23488445, "2189-06-13", "cefepime", wbc, now)], demo)
    assert len(found["responses"]) == 1 and "cefepime not running" in found["responses"][0]
    stale = "Lactate: 3.6 mmol/L just before it, 2.4 mmol/L now (falling)."
    found = fr.defects([_response(29366372, "2167-05-11", "phenylephrine", "Lactate", stale)], demo)
    assert len(found["responses"]) == 2 and "called now" in found["responses"][1]
    ok = "WBC: 16.5 K/uL just before it, 10.5 K/uL on 2185-06-18 15:30, the latest value."
    found = fr.defects([_response(20973395, "2185-06-21", "piperacillin", wbc, ok)], demo)
    assert found["responses"] == []
    # the cefepime asked as the finished course it is: sound
    done = _response(23488445, "2189-06-13", "cefepime", wbc, "given from 06-09 to 06-12.")
    done["rubrics"] = [["The answer says cefepime was given and the course has ended."]]
    assert fr.defects([done], demo)["responses"] == []


def test_the_raw_check_reads_a_plateau_after_transfusion() -> None:
    """The second review's Hgb (28019404): 9.6, 8.1, four units, 10.1, 9.5, 9.6 is a plateau;
    a rubric that requires "rising" is a defect, one that accepts "stable" is not."""
    demo = fb.demo_or_skip()
    calls = [("Observation.search", {"code": "Hemoglobin"})]
    text = "The answer describes the Hemoglobin trend (rising)."

    def claim(words: list[str]) -> dict:
        check = {"kind": "concept", "any": {"en": words, "zh": []}}
        return _claim(28019404, "2157-07-03", "lab_trend(Hemoglobin)", calls, "", [(text, check)])

    assert fr.defects([claim(["rising", "increased"])], demo)["trends"]
    assert fr.defects([claim(["stable", "plateau", "levelled off"])], demo)["trends"] == []


def _turn(*calls: tuple[str, dict]) -> list[dict]:
    return [{"action": {"name": n, "arguments": a}, "observation": {}} for n, a in calls] + [
        {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": ""}
    ]


def _session(hadm: int, day: str, turns: list[list[dict]], **extra: object) -> dict:
    n = len(turns)
    return {
        "id": f"s{hadm}",
        "hadm_id": hadm,
        "current_date": day,
        "clinical_scenario": "med_safety",
        "task_types": ["Clinical Reasoning"] * n,
        "answer_list": turns,
        "rubrics": [[] for _ in turns],
        "rubric_checks": [[] for _ in turns],
        **extra,
    }


def test_the_raw_check_finds_renal_adjustments_in_range_and_rechecks_out_of_place() -> None:
    """A physician's seed-77 rejects (issue 40): "adjust" famotidine 20 mg daily on dialysis
    (10021938 / 27154822) with a creatinine recheck, a repeat INR a week out during an
    enoxaparin bridge (10039831 / 26924951), "Enoxaparin bridge?" then "Enoxaparin?"."""
    demo = fb.demo_or_skip()
    famotidine = _session(27154822, "2181-10-27", [_turn()])
    famotidine["rubrics"] = [
        [
            "The answer recommends adjusting the famotidine dose to kidney function.",
            "The answer recommends a recheck of the Creatinine.",
        ]
    ]
    found = fr.defects([famotidine], demo)["renal_dose"]
    assert len(found) == 2 and "dialysis True" in found[1], found
    service = {"service_type": "Repeat INR(PT)", "target_date": "2116-01-09"}
    late = {"kind": "write_arg", "field": "target_date", "accepted": ["2116-01-07", "2116-01-09"]}
    search = ("MedicationRequest.search", {"medication": "enoxaparin"})
    bridge = _session(
        26924951,
        "2116-01-02",
        [
            _turn(("MedicationRequest.search", {"medication": "warfarin"}), search),
            _turn(search),
            _turn(("ServiceRequest.create", service)),
        ],
        session_plan={
            "turn_intents": [
                "anticoag_bridge(INR(PT), warfarin, enoxaparin)",
                "med_current(enoxaparin)",
                "order_lab_recheck(INR(PT))",
            ]
        },
    )
    bridge["rubric_checks"][2] = [late]
    found = fr.defects([bridge], demo)
    assert [f for f in found["rechecks"] if "due within days" in f], found["rechecks"]
    assert found["repeats"] == [
        "s26924951 turn 1: med_current(enoxaparin) repeats an earlier turn's drug"
    ]
    late["accepted"] = ["2116-01-03", "2116-01-05"]
    assert fr.defects([bridge], demo)["rechecks"] == []


def test_the_raw_check_finds_the_second_seed_131_rejects() -> None:
    """Issue 40's second seed-131 review, as main built it: 10013049's haemoglobin trend from
    10.3, drawn on bypass before the 10:15 admission; an INR recheck for 10014354 on
    rivaroxaban (no warfarin, no liver failure); 10002495's "micro so far" without its positive
    stool C. difficile PCR. Each, stated as the builder now states it, is clean."""
    demo = fb.demo_or_skip()
    hb = _s131_claim(
        22675517,
        "lab_latest(Hemoglobin)",
        {"name": "Observation.search", "arguments": {"code": "Hemoglobin"}},
        "",
        ["The answer cites the Hemoglobin."],
    )
    hb["rubric_checks"] = [[{"kind": "value", "label": "Hemoglobin", "value": 10.3}]]
    inr = _s131_claim(
        24357615,
        "recheck(INR(PT))",
        {
            "name": "ServiceRequest.create",
            "arguments": {"service_type": "Repeat INR(PT)", "priority": "routine"},
        },
        "Ordered: Repeat INR(PT) (priority routine).",
        [],
    )
    micro = _s131_claim(
        24982426,
        "culture_latest()",
        {"name": "DiagnosticReport.search", "arguments": {"report_type": "culture"}},
        "- BLOOD CULTURE (2141-05-23 05:48): Blood Culture, Routine: NO GROWTH.",
        [],
    )
    micro["current_date"] = "2141-05-29"
    found = fr.defects([hb, inr, micro], demo)
    assert len(found["procedural_draws"]) == 1 and "10.3" in found["procedural_draws"][0]
    assert found["rechecks"] == [
        "recheck(INR(PT)) turn 0: repeat INR without a vitamin K antagonist or liver failure"
    ]
    assert len(found["positive_tests"]) == 1 and "C. difficile PCR" in found["positive_tests"][0]
    hb["rubric_checks"] = [[{"kind": "value", "label": "Hemoglobin", "value": 13.0}]]
    micro["answer_list"][0][1]["observation"] += (
        "\n- STOOL (2141-05-22 21:29): C. difficile PCR positive (CLOSTRIDIUM DIFFICILE)"
    )
    found = fr.defects([hb, micro], demo)
    assert found == {k: [] for k in fr.CATEGORIES}
