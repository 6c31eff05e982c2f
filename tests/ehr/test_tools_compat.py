"""compat semantics: one test per reference behaviour of docs/compat.md#the-quirks-once-each.

Most tests use the tiny cohort of ``fixtures_tools`` (values known by construction); the
MIMIC-IV demo tests check the same behaviours on real tables.
"""

from __future__ import annotations

import json
import shutil

import fixtures_tools as fx
import pytest
from fixtures_tools import ANCHOR, OTHER, SID, tiny_ctx

import physassist.ehr.store as store_module
from physassist.ehr.store import EHRStore
from physassist.ehr.tools import ToolContext, call_tool, compat_frames, open_chart, render
from physassist.ehr.tools.errors import ToolError
from physassist.ehr.tools.registry import COLUMNS

tiny_store = fx.tiny_store
demo_store = fx.demo_store


def call(store, tool: str, **args):
    return call_tool(tiny_ctx(store, "compat"), tool, {"subject_id": SID, **args})


def values(result: dict) -> list:
    return [
        e["resource"].get("valueQuantity", {}).get("value", e["resource"].get("valueString"))
        for e in result["entry"]
    ]


def labels(result: dict) -> list[str]:
    return [e["resource"]["code"]["text"] for e in result["entry"]]


def is_outcome(result: dict) -> bool:
    return result["resourceType"] == "OperationOutcome"


# ----------------------------------------------------------------------------- call path


def test_compat_date_gate_excludes_current_day(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Creatinine", hadm_id=ANCHOR)
    # 2150-01-10 05:00 (the current day) is hidden; the urine creatinine comes in by substring
    assert values(got) == [1.4, 80.0, 1.1]


def test_compat_caller_date_to_reaches_future(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Creatinine", date_to="2150-12-31")
    assert values(got)[0] == 2.0 and 1.6 in values(got)


def test_compat_blank_date_to_escapes_gate(tiny_store) -> None:
    # the gate runs before placeholder coercion: date_to="" blocks the gate, then becomes null
    got = call(tiny_store, "Observation.search", code="Creatinine", date_to="  ")
    assert values(got)[0] == 2.0


def test_compat_date_from_is_string_comparison(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="White Blood", date_from="2150-01-09")
    assert values(got) == [9.0]


def test_compat_non_text_date_bound_is_pythons_comparison_error(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Creatinine", date_from=2150)
    assert got == {
        "error": "Bad arguments for Observation.search: "
        "'>=' not supported between instances of 'str' and 'int'"
    }
    # no row left to compare: pandas raised nothing and the search is just empty
    assert is_outcome(call(tiny_store, "Observation.search", hadm_id=9999, date_to=2150))


def test_compat_aliases_are_renamed(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", test_name="Potassium", limit=1)
    assert labels(got) == ["Potassium"] and got["total"] == 1
    cond = call(tiny_store, "Condition.search", icd_code="I48")
    assert [e["resource"]["code"]["coding"][0]["code"] for e in cond["entry"]] == ["I4891"]
    meds = call(tiny_store, "MedicationRequest.search", drug="furosemide")
    assert [e["resource"]["medicationCodeableConcept"]["text"] for e in meds["entry"]] == [
        "Furosemide"
    ]


def test_compat_medication_orders_ignore_count(tiny_store) -> None:
    """``_count`` on ``MedicationRequest.search`` is strict's (issue 27): the reference had none
    and returned every order, and compat still does."""
    every = call(tiny_store, "MedicationRequest.search")
    assert (
        len(every["entry"]) == 5 and call(tiny_store, "MedicationRequest.search", _count=1) == every
    )


def test_compat_unknown_args_silently_dropped(tiny_store) -> None:
    # `drug` is no alias for MedicationAdministration.search: the filter is lost, all doses come
    # back
    got = call(tiny_store, "MedicationAdministration.search", drug="Apixaban", bogus=1)
    assert got["total"] == 4


def test_compat_zero_hadm_id_means_not_given(tiny_store) -> None:
    assert call(tiny_store, "Encounter.search", hadm_id=0)["total"] == 3


def test_compat_blank_code_means_not_given(tiny_store) -> None:
    assert call(tiny_store, "Observation.search", code="   ")["total"] == 20


def test_compat_string_hadm_id_matches_nothing(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Creatinine", hadm_id=str(ANCHOR))
    assert is_outcome(got)


def test_compat_float_hadm_id_works(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Potassium", hadm_id=float(ANCHOR))
    assert values(got) == [5.9]


def test_compat_count_string_is_error(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Glucose", _count="5")
    assert got["error"].startswith("Bad arguments for Observation.search") and set(got) == {"error"}
    assert render(got, "compat").startswith('{"error": "Bad arguments')


def test_compat_string_subject_id_works(tiny_store) -> None:
    got = call_tool(tiny_ctx(tiny_store, "compat"), "Patient.read", {"subject_id": str(SID)})
    assert got["resourceType"] == "Patient" and got["_anchor_age"] == 71


def test_compat_missing_subject_is_bad_arguments(tiny_store) -> None:
    got = call_tool(tiny_ctx(tiny_store, "compat"), "Encounter.search", {})
    assert "Bad arguments" in got["error"]


def test_compat_regex_metachar_medication_is_execution_error(tiny_store) -> None:
    got = call(tiny_store, "MedicationRequest.search", medication="Heparin (Porcine")
    assert got["error"].startswith("Tool execution error for MedicationRequest.search")
    doc = call(tiny_store, "DocumentReference.search", keyword="[unclosed")
    assert "Tool execution error" in doc["error"]


def test_compat_text_filters_are_regular_expressions(tiny_store) -> None:
    # pandas' str.contains(case=False, regex=True): "." is any character, groups group
    got = call(tiny_store, "MedicationRequest.search", medication="hep.*(porcine)")
    assert {e["resource"]["medicationCodeableConcept"]["text"] for e in got["entry"]} == {
        "Heparin (Porcine)"
    }
    doc = call(tiny_store, "DocumentReference.search", keyword="chest (pa and lat)")
    assert is_outcome(doc)  # the group matches "pa and lat", not the parentheses
    doc = call(tiny_store, "DocumentReference.search", keyword="chest .pa and lat.")
    assert [e["resource"]["id"] for e in doc["entry"]] == ["docref-1001-RR-1"]


HUGE_REPEATS = ("a{99999999999}", "a{4294967295}", "a{1,99999999999}")


def test_compat_huge_repetition_is_the_references_error(tiny_store) -> None:
    """Python's OverflowError, which the reference answered as any tool exception."""
    for pattern in HUGE_REPEATS:
        for tool, key in (
            ("DocumentReference.search", "keyword"),
            ("MedicationRequest.search", "medication"),
            ("MedicationAdministration.search", "medication"),
        ):
            got = call(tiny_store, tool, **{key: pattern})
            assert got == {
                "error": f"Tool execution error for {tool}: the repetition number is too large"
            }, (tool, pattern)


def test_compat_keyword_compiled_only_over_notes(tiny_store) -> None:
    """The reference compiled the keyword when it filtered a subject's notes: without notes,
    any keyword finds nothing; with them, a keyword that is not text is its TypeError."""
    ctx = tiny_ctx(tiny_store, "compat")
    for keyword in (*HUGE_REPEATS, "[unclosed", 5):
        got = call_tool(ctx, "DocumentReference.search", {"subject_id": OTHER, "keyword": keyword})
        assert got["issue"][0]["diagnostics"] == f"No documents found for Patient/{OTHER}"
    got = call(tiny_store, "DocumentReference.search", keyword=5)
    assert got == {
        "error": "Bad arguments for DocumentReference.search: first argument must be string or "
        "compiled pattern"
    }


def test_compat_pattern_guards(tiny_store, monkeypatch) -> None:
    """Bounds the reference lacked, answered in its error shape: a pattern the engine would
    unroll past MAX_UNROLLED items, matching past the time budget (catastrophic backtracking)."""
    from physassist.ehr.tools import compat_common

    got = call(tiny_store, "DocumentReference.search", keyword="(a{1000}){1000}")
    assert got["error"].startswith("Tool execution error for DocumentReference.search: the pattern")
    monkeypatch.setattr(compat_common, "REGEX_BUDGET_S", 0.001)
    matches = compat_common.regex_matcher("DocumentReference.search", "(a|aa)+$")
    with pytest.raises(ToolError, match="the pattern '\\(a\\|aa\\)\\+\\$' took over 0.001 s"):
        matches("a" * 60 + "b")  # 10^12 ways to split the run; stopped after milliseconds


def test_compat_unknown_tool_is_reference_error(tiny_store) -> None:
    # the reference answered its unoffered tools; compat does not (docs/compat.md, deviation 5)
    for name in ("Patient.everything", "AllergyIntolerance.search", "Procedure.search",
                 "get_lab_results"):  # fmt: skip
        got = call_tool(tiny_ctx(tiny_store, "compat"), name, {"subject_id": SID})
        assert got == {"error": f"Unknown tool: {name}"}


def test_compat_tool_outside_menu_refused(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store, "compat", allowed=frozenset({"Patient.read"}))
    got = call_tool(ctx, "Encounter.search", {"subject_id": SID})
    assert is_outcome(got) and "not offered" in got["issue"][0]["diagnostics"]


def test_compat_api_names_accepted(tiny_store) -> None:
    got = call_tool(
        tiny_ctx(tiny_store, "compat"),
        "Observation__search",
        '{"subject_id": 1001, "code": "Potassium"}',
    )
    assert values(got) == [5.9]


# ----------------------------------------------------------------------------- per tool


def test_compat_unmatched_code_returns_unfiltered_labs(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Zzzznotexist")
    assert got["total"] == 20 and len(set(labels(got))) > 1


def test_compat_dictionary_match_without_patient_items_is_operation_outcome(tiny_store) -> None:
    # "WBC" matches only the dictionary's "WBC Count"; the patient's values are "White Blood Cells"
    assert is_outcome(call(tiny_store, "Observation.search", code="WBC"))


def test_compat_substring_k_hits_alkaline_phosphatase(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="K")
    assert set(labels(got)) == {"Alkaline Phosphatase"}


def test_compat_default_count_is_20_even_with_code(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Glucose")
    assert got["total"] == 20 == len(got["entry"])


def test_compat_bundle_total_is_returned_count(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Glucose", _count=3)
    assert got["total"] == 3 and got["_fhir_resource_type"] == "Observation"


def test_compat_lab_encounter_reference_float_quirk(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Potassium")
    assert (
        got["entry"][0]["resource"]["encounter"]["reference"] == f"Encounter/encounter-{ANCHOR}.0"
    )
    cond = call(tiny_store, "Condition.search", hadm_id=ANCHOR)
    assert cond["entry"][0]["resource"]["encounter"]["reference"] == f"Encounter/encounter-{ANCHOR}"


def test_compat_lab_shape(tiny_store) -> None:
    obs = call(tiny_store, "Observation.search", code="Potassium")["entry"][0]["resource"]
    assert obs["id"] == "lab-9" and obs["effectiveDateTime"] == "2150-01-06 06:00:00"
    assert obs["valueQuantity"] == {"value": 5.9, "unit": "mEq/L"}
    assert obs["interpretation"][0]["coding"][0]["code"] == "A"
    assert obs["referenceRange"] == [
        {"low": {"value": 3.3, "unit": "mEq/L"}, "high": {"value": 5.1, "unit": "mEq/L"}}
    ]


def test_compat_vitals_ignore_hadm_id(tiny_store) -> None:
    got = call(
        tiny_store, "Observation.search", category="vital-signs", code="Heart Rate", hadm_id=ANCHOR
    )
    assert values(got) == [110.0, 95.0, 88.0, 70.0]  # other admissions and the future included


def test_compat_vitals_ignore_dates_and_gate(tiny_store) -> None:
    got = call(
        tiny_store, "Observation.search", category="vitals", code="Heart Rate", date_to="2149-01-01"
    )
    assert values(got)[0] == 110.0


def test_compat_vitals_unmatched_code_is_unfiltered(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", category="vital_signs", code="HR")
    assert got["total"] == 6  # "HR" is in no d_items label here -> no filter


def test_compat_vitals_fall_back_to_omr(demo_store) -> None:
    sid = (
        demo_store.cursor()
        .execute("SELECT subject_id FROM omr GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")
        .fetchone()[0]
    )
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    got = call_tool(
        ctx,
        "Observation.search",
        {"subject_id": sid, "category": "vital-signs", "code": "Blood Pressure"},
    )
    assert got["total"] == 20
    first = got["entry"][0]["resource"]
    assert first["id"].startswith(f"omr-{sid}-") and "valueString" in first
    assert first["code"]["text"].startswith("Blood Pressure")


def test_compat_micro_observation_is_operation_outcome(tiny_store) -> None:
    assert is_outcome(call(tiny_store, "Observation.search", category="microbiology"))


def test_compat_condition_prefix_upper_without_dot_removal(tiny_store) -> None:
    assert call(tiny_store, "Condition.search", code="i48")["total"] == 1
    assert is_outcome(call(tiny_store, "Condition.search", code="I48.91"))
    got = call(tiny_store, "Condition.search")
    assert [
        (e["resource"]["encounter"]["reference"][-4:], e["resource"]["_seq_num"])
        for e in got["entry"]
    ] == [("5000", 1), ("5000", 2), ("5001", 1), ("5001", 2), ("5001", 3), ("5002", 1)]


def test_compat_clinical_status_only_active(tiny_store) -> None:
    assert call(tiny_store, "Condition.search", clinical_status="active")["total"] == 6
    assert is_outcome(call(tiny_store, "Condition.search", clinical_status="resolved"))
    assert is_outcome(call(tiny_store, "Condition.search", clinical_status="inactive"))


def test_compat_medication_request_derived_status_no_limit(tiny_store) -> None:
    got = call(tiny_store, "MedicationRequest.search")
    status = {
        e["resource"]["medicationCodeableConcept"]["text"]: e["resource"]["status"]
        for e in got["entry"]
    }
    assert status == {
        "Amoxicillin": "completed",
        "Furosemide": "completed",
        "Heparin (Porcine)": "active",
        "Apixaban": "completed",
        "Metoprolol Tartrate": "completed",
    }
    assert is_outcome(call(tiny_store, "MedicationRequest.search", status="stopped"))
    assert call(tiny_store, "MedicationRequest.search", status="active")["total"] == 1
    rx = got["entry"][-1]["resource"]
    # the subject's doses include a missing one, so pandas read them as floats
    assert rx["id"] == f"rx-{SID}-1" and rx["dosageInstruction"][0]["text"] == "25.0mg PO"


def test_compat_medication_request_demo_has_no_limit(demo_store) -> None:
    sid, n = (
        demo_store.cursor()
        .execute(
            "SELECT subject_id, count(*) FROM prescriptions GROUP BY 1 ORDER BY 2 DESC LIMIT 1"
        )
        .fetchone()
    )
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    assert call_tool(ctx, "MedicationRequest.search", {"subject_id": sid})["total"] == n > 100


def test_compat_mar_status_always_completed_with_event_txt(tiny_store) -> None:
    got = call(tiny_store, "MedicationAdministration.search", medication="apixaban")
    assert [(e["resource"]["status"], e["resource"]["_event_txt"]) for e in got["entry"]] == [
        ("completed", "Not Given"),
        ("completed", "Administered"),
    ]
    assert "dosage" not in got["entry"][0]["resource"]


def test_compat_mar_limit_100_only_without_filters(demo_store) -> None:
    sid, hadm, n = (
        demo_store.cursor()
        .execute(
            "SELECT subject_id, hadm_id, count(*) FROM emar GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1"
        )
        .fetchone()
    )
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    assert call_tool(ctx, "MedicationAdministration.search", {"subject_id": sid})["total"] == 100
    assert (
        call_tool(ctx, "MedicationAdministration.search", {"subject_id": sid, "hadm_id": hadm})[
            "total"
        ]
        == n
        > 100
    )


def test_compat_future_records_leak(tiny_store) -> None:
    # only labs are gated: reports, orders and administrations from a later admission show up
    dr = call(tiny_store, "DiagnosticReport.search", report_type="CXR")
    assert [e["resource"]["id"] for e in dr["entry"]] == ["dr-1001-RR-3", "dr-1001-RR-1"]
    assert call(tiny_store, "Encounter.search")["total"] == 3


def test_compat_radiology_synonyms_and_title(tiny_store) -> None:
    mri = call(tiny_store, "DiagnosticReport.search", report_type="MRI")
    assert [e["resource"]["code"]["text"] for e in mri["entry"]] == ["EXAMINATION:  MR HEAD"]
    assert "encounter" not in mri["entry"][0]["resource"]  # radiology row without admission
    ct = call(tiny_store, "DiagnosticReport.search", report_type="ct", hadm_id=ANCHOR)
    assert [e["resource"]["id"] for e in ct["entry"]] == ["dr-1001-RR-2"]


def test_compat_micro_reports_rules(tiny_store) -> None:
    got = call(tiny_store, "DiagnosticReport.search", report_type="blood culture", hadm_id=ANCHOR)
    assert [e["resource"]["id"] for e in got["entry"]] == [f"micro-{SID}-2150-01-06 08:00:00"]
    report = got["entry"][0]["resource"]
    assert (
        report["presentedForm"][0]["data"]
        == "Specimen: BLOOD CULTURE | Organism: ESCHERICHIA COLI | Antibiotic: CEFTRIAXONE (S)"
    )
    assert report["encounter"]["reference"] == f"Encounter/encounter-{ANCHOR}"
    every = call(tiny_store, "DiagnosticReport.search")
    assert every["total"] == 7  # 4 radiology + 3 specimens (deduplicated by specimen and time)


def test_compat_micro_reports_demo_capped_at_10(demo_store) -> None:
    sid = (
        demo_store.cursor()
        .execute(
            "SELECT subject_id FROM microbiologyevents GROUP BY 1 ORDER BY count(DISTINCT "
            "charttime) DESC LIMIT 1"
        )
        .fetchone()[0]
    )
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    got = call_tool(ctx, "DiagnosticReport.search", {"subject_id": sid, "report_type": "culture"})
    assert got["total"] == 10


def test_compat_document_reference_top5_per_table_cut_4000(tiny_store) -> None:
    got = call(tiny_store, "DocumentReference.search")
    kinds = [e["resource"]["type"]["coding"][0]["code"] for e in got["entry"]]
    assert kinds == ["discharge-summary"] * 3 + ["radiology"] * 4
    assert call(tiny_store, "DocumentReference.search", type_code="discharge")["total"] == 3
    assert (
        call(tiny_store, "DocumentReference.search", type="radiology", query="pneumonia")["total"]
        == 1
    )


def test_compat_careplan_fragments_file_order_always_bundle(tiny_store) -> None:
    got = call(tiny_store, "CarePlan.search", hadm_id=ANCHOR)
    notes = {
        e["resource"]["category"][0]["text"]: e["resource"]["note"][0]["text"] for e in got["entry"]
    }
    assert notes["Discharge Instructions"] == "Dear Mr. ___,"  # the reference's fragment
    ids = [e["resource"]["id"] for e in got["entry"]]
    assert (
        ids.count("careplan-1001-DS-2-discharge-planning") == 2
    )  # ids repeat, as in the reference
    assert render(got, "compat").splitlines()[1] == "  - Discharge Instructions [completed]"
    empty = call(tiny_store, "CarePlan.search", hadm_id=9999)
    assert empty["resourceType"] == "Bundle" and empty["total"] == 0


def test_compat_patient_read_and_missing(tiny_store) -> None:
    got = call(tiny_store, "Patient.read")
    assert got == {
        "resourceType": "Patient",
        "id": "1001",
        "identifier": [{"system": "mimic-iv", "value": "1001"}],
        "gender": "male",
        "_anchor_age": 71,
        "deceasedDateTime": "2150-05-01",
    }
    missing = call_tool(tiny_ctx(tiny_store, "compat"), "Patient.read", {"subject_id": 424242})
    assert is_outcome(missing) and "Patient/424242 not found" in missing["issue"][0]["diagnostics"]


def test_compat_encounter_file_order_and_shape(tiny_store) -> None:
    got = call(tiny_store, "Encounter.search")
    enc = got["entry"][1]["resource"]
    assert [e["resource"]["id"] for e in got["entry"]] == [
        "encounter-5000",
        "encounter-5001",
        "encounter-5002",
    ]
    assert enc["period"] == {"start": "2150-01-05 08:00:00", "end": "2150-01-10 14:00:00"}
    assert (
        enc["_mimic"]["discharge_location"] == "HOME HEALTH CARE" and "hospitalization" not in enc
    )


def test_compat_other_subject_not_refused(tiny_store) -> None:
    got = call_tool(
        tiny_ctx(tiny_store, "compat"),
        "Observation.search",
        {"subject_id": OTHER, "code": "Creatinine"},
    )
    assert values(got) == [3.0]


def test_compat_empty_result_is_operation_outcome(tiny_store) -> None:
    assert is_outcome(call(tiny_store, "MedicationRequest.search", medication="warfarin"))


def test_compat_writes_raw_and_deterministic(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store, "compat")
    got = call_tool(
        ctx,
        "MedicationRequest.create",
        {
            "subject_id": SID,
            "medication": "Apixaban",
            "dose": "5 mg",
            "route": "oral",
            "frequency": "BID",
            "indication": "AF",
        },
    )
    # dated by the session's current date, not the wall clock
    assert got["id"] == "MR-sim-1001-21500110" and got["_simulated"] is True
    assert (
        render(got, "compat") == "MedicationRequest created: id=MR-sim-1001-21500110 status=active"
    )
    assert got["_created_at"] == "2150-01-10T00:00:01+00:00"
    assert got["dosageInstruction"][0]["text"] == "5 mg oral BID"
    assert got["reasonCode"] == [{"text": "AF"}]
    loose = call_tool(ctx, "Flag.create", {"detail": "x"})  # no validation, missing subject -> 0
    assert loose["subject"] == {"reference": "Patient/0"} and loose["id"] == "FL-sim-0-21500110"
    sr = call_tool(ctx, "ServiceRequest.create", {"subject_id": SID, "service_type": "BMP"})
    assert sr["priority"] == "routine" and sr["occurrenceDateTime"] == ""
    assert len(ctx.sandbox) == 3


def test_compat_prepare_to_answer(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store, "compat")
    assert call_tool(ctx, "prepare_to_answer", {}) == {"status": "ready", "answer_type": "tool"}
    assert call_tool(ctx, "prepare_to_answer", {"answer_type": "chat"})["answer_type"] == "chat"


# ----------------------------------------------------------------------------- real MIMIC-IV demo


def test_compat_demo_latest_creatinine_under_gate(demo_store) -> None:
    cur = demo_store.cursor()
    sid, hadm, disch = cur.execute(
        "SELECT a.subject_id, a.hadm_id, CAST(a.dischtime AS DATE) "
        "FROM admissions a JOIN labevents l ON l.hadm_id = a.hadm_id AND l.itemid = 50912 "
        "GROUP BY ALL ORDER BY count(*) DESC, 2 LIMIT 1"
    ).fetchone()
    expected = cur.execute(
        "SELECT valuenum FROM labevents l JOIN d_labitems d USING (itemid) WHERE l.subject_id = ? "
        "AND l.hadm_id = ? AND d.label ILIKE '%creatinine%' AND CAST(charttime AS VARCHAR) <= ? "
        "ORDER BY charttime DESC, l._row LIMIT 1",
        [sid, hadm, str(disch)],
    ).fetchone()[0]
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=hadm, current_date=str(disch), semantics="compat"
    )
    got = call_tool(
        ctx, "Observation.search", {"subject_id": sid, "code": "Creatinine", "hadm_id": hadm}
    )
    assert got["entry"][0]["resource"]["valueQuantity"]["value"] == expected
    assert all(e["resource"]["effectiveDateTime"] < str(disch) for e in got["entry"])


def test_compat_demo_condition_prefix(demo_store) -> None:
    cur = demo_store.cursor()
    sid, code = cur.execute(
        "SELECT subject_id, icd_code FROM diagnoses_icd WHERE icd_version = 10 AND "
        "length(icd_code) >= 4 ORDER BY subject_id, icd_code LIMIT 1"
    ).fetchone()
    n = cur.execute(
        "SELECT count(*) FROM diagnoses_icd WHERE subject_id = ? AND starts_with(icd_code, ?)",
        [sid, code[:3]],
    ).fetchone()[0]
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=None, current_date=None, semantics="compat"
    )
    assert (
        call_tool(ctx, "Condition.search", {"subject_id": sid, "code": code[:3].lower()})["total"]
        == n
    )
    dotted = call_tool(
        ctx, "Condition.search", {"subject_id": sid, "code": f"{code[:3]}.{code[3:]}"}
    )
    assert dotted["resourceType"] == "OperationOutcome"


# ----------------------------------------------------------------------------- big charts

BIG_CHART_CALLS = [
    ("Observation.search", {}),
    ("Observation.search", {"code": "Creatinine"}),
    ("Observation.search", {"code": "glucose", "_count": 5, "date_from": "2150-01-08"}),
    ("Observation.search", {"code": "a", "_count": None, "date_to": ""}),
    ("Observation.search", {"code": "Creatinine", "_count": "3"}),  # head's error: its index
    ("Observation.search", {"code": "Creatinine", "date_from": 5}),  # Python's error
    ("Observation.search", {"category": "microbiology", "_count": 200}),
    ("Observation.search", {"category": "vital-signs", "_count": 200}),
    ("Observation.search", {"category": "vitals", "code": "Heart Rate", "_count": -3}),
    ("Observation.search", {"category": "vital-signs", "code": "no such item"}),
    ("MedicationRequest.search", {}),
    ("MedicationRequest.search", {"medication": "HEPARIN"}),
    ("MedicationRequest.search", {"medication": "^s.*e$", "status": "completed"}),
    ("MedicationRequest.search", {"medication": "no such drug"}),
    ("MedicationAdministration.search", {}),
    ("MedicationAdministration.search", {"medication": "sodium chloride"}),
    ("MedicationAdministration.search", {"medication": "heparin"}),
]
BIG_CHART_TABLES = ("labevents", "chartevents", "prescriptions", "emar")


@pytest.mark.parametrize("block", [None, 40])
@pytest.mark.parametrize("name", ["tiny", "demo"])
def test_compat_big_chart_path_answers_as_the_small_one(
    name: str,
    block: int | None,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path,
) -> None:
    """A big chart's rows are typed from per-subject kinds measured in SQL and only the rows a
    call returns are fetched; a small chart is typed whole: the same answers, byte for byte,
    for the busiest chart of each table compat queries, each admission (also as a float) and
    session date. With the threshold at 0 every chart is big, and nothing of those tables is
    loaded whole (nor prefetched by ``open_chart``) but for all orders of a chart, which is
    the answer. ``block`` shrinks pandas' type-inference blocks to 40 rows, so that a
    subject's file spans many and the split read's kinds differ between blocks (mixed)."""
    shared: EHRStore = request.getfixturevalue(f"{name}_store")
    path = tmp_path / "store.duckdb"  # its own compat-kinds file, measured with these blocks
    shutil.copy(shared.path, path)
    if block is not None:
        monkeypatch.setattr(compat_frames, "block_rows", lambda width: block)
    busiest = {
        t: shared.rows(f'SELECT subject_id FROM "{t}" GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1')
        for t in BIG_CHART_TABLES
    }
    subjects = sorted({r[0]["subject_id"] for r in busiest.values() if r})
    answers = {}
    for limit in (None, 0):
        if limit is not None:
            monkeypatch.setattr(store_module, "SMALL_CHART_ROWS", limit)
        store = EHRStore(path)
        got = []
        for sid in subjects:
            stays = store.rows(
                "SELECT hadm_id, CAST(dischtime AS DATE) AS day FROM admissions "
                "WHERE subject_id = ? ORDER BY admittime",
                [sid],
            )
            for date in (None, *(str(s["day"]) for s in stays[:1])):
                ctx = ToolContext(
                    store=store, subject_id=sid, current_date=date, semantics="compat"
                )
                open_chart(ctx)
                for hadm in (
                    None,
                    *(s["hadm_id"] for s in stays[:1]),
                    *(float(s["hadm_id"]) for s in stays[-1:]),
                ):
                    for tool, args in BIG_CHART_CALLS:
                        extra = {} if hadm is None else {"hadm_id": hadm}
                        result = call_tool(ctx, tool, {"subject_id": sid, **args, **extra})
                        got.append(json.dumps(result))
        if limit == 0 and block is None:
            store._filler.shutdown(wait=True)
            for sid in subjects:  # prescriptions: an unfiltered search returns the whole chart
                typed = ("labevents", "chartevents", "emar")
                assert all(not store._subjects.get(sid, (t, COLUMNS[t])) for t in typed)
        answers[limit] = got
        store.close()
    assert answers[0] == answers[None]
    for tool in ("Observation", "MedicationRequest", "MedicationAdministration"):
        assert any(f'"resourceType": "{tool}"' in a for a in answers[0]), tool
    assert any("cannot do positional indexing" in a for a in answers[0])
