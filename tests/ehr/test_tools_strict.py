"""strict semantics: the fixes of docs/compat.md#what-strict-does-instead (items 1-7), with exact values."""

from __future__ import annotations

import datetime as dt
import json

import fixtures_tools as fx
import pytest
from fixtures_tools import ANCHOR, EARLIER, FUTURE, OTHER, SID, entries, hint, tiny_ctx

import physassist.ehr.store as store_module
from physassist.ehr.store import EHRStore
from physassist.ehr.tools import TOOL_NAMES, ToolContext, call_tool, open_chart, render
from physassist.ehr.tools.labels import match_label
from physassist.ehr.tools.records import STRICT_QUERIED
from physassist.ehr.tools.registry import COLUMNS

tiny_store = fx.tiny_store
demo_store = fx.demo_store

READS = [
    ("Patient.read", {}),
    ("Encounter.search", {}),
    ("Condition.search", {}),
    ("Observation.search", {"_count": 200}),
    ("Observation.search", {"category": "vital-signs", "_count": 200}),
    ("Observation.search", {"category": "microbiology", "_count": 200}),
    ("MedicationRequest.search", {}),
    ("MedicationAdministration.search", {}),
    ("DiagnosticReport.search", {}),
    ("DocumentReference.search", {}),
    ("CarePlan.search", {}),
]


STRICT_CALLS = [
    *READS,
    ("Observation.search", {"code": "Creatinine"}),
    ("Observation.search", {"code": "Creatinine", "_count": 2, "date_from": "2150-01-08"}),
    ("Observation.search", {"code": "glucose", "date_to": "2150-01-09"}),
    ("Observation.search", {"code": "no such test"}),
    ("Observation.search", {"category": "vital-signs", "code": "Heart Rate", "_count": 3}),
    ("Observation.search", {"category": "vital-signs", "code": "weight"}),
    ("MedicationRequest.search", {"medication": "HEPARIN"}),
    ("MedicationRequest.search", {"medication": "no such drug"}),
    ("MedicationAdministration.search", {"medication": "sodium chloride"}),
    ("MedicationAdministration.search", {"medication": "heparin"}),  # ICU: Heparin Sodium
]
#: Asked without an admission only (the admission's condition is the same ``Where`` term).
WHOLE_CHART_CALLS = [
    ("MedicationRequest.search", {"status": "active"}),
    ("MedicationRequest.search", {"status": "completed", "_count": 2}),
    ("MedicationRequest.search", {"status": "stopped"}),
    ("MedicationRequest.search", {"_count": 3}),
    ("Condition.search", {"clinical_status": "active"}),
    ("Condition.search", {"clinical_status": "inactive"}),
    ("Condition.search", {"code": "I"}),
    ("Condition.search", {"code": "E87.1"}),
    ("Condition.search", {"code": "failure"}),
    ("DiagnosticReport.search", {"report_type": "culture"}),
    ("DiagnosticReport.search", {"report_type": "urine"}),
    ("Observation.search", {"category": "microbiology", "code": "blood culture", "_count": 2}),
]


@pytest.mark.parametrize("name", ["tiny", "demo"])
def test_strict_big_chart_path_answers_as_the_small_one(
    name: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big chart's search is asked of the store in SQL, a small one's filtered in memory: the
    same answers, byte for byte, for each admission and with and without a cutoff, for the
    busiest eMAR and the busiest ICU heparin chart (a cutoff inside its ICU stay: running
    rows) and the chart with the most microbiology specimens (more than a report search shows).
    With the threshold at 0 every chart is big, and then nothing of the queried tables is
    loaded whole (nor prefetched by ``open_chart``)."""
    store_fixture: EHRStore = request.getfixturevalue(f"{name}_store")
    busiest = "SELECT subject_id FROM emar GROUP BY 1 ORDER BY count(*) DESC LIMIT 1"
    heparin = (  # and the first day ending while one of its ICU rows runs on past midnight
        "SELECT subject_id, CAST(min(starttime) FILTER (WHERE CAST(endtime AS DATE) > "
        "CAST(starttime AS DATE)) AS DATE) AS day FROM inputevents JOIN d_items USING (itemid) "
        "GROUP BY 1 ORDER BY count(*) FILTER (WHERE label ILIKE '%heparin%') DESC LIMIT 1"
    )
    cultured = (  # the most specimens, and a day before its newest one
        "SELECT subject_id, CAST(max(chartdate) AS DATE) - 1 AS day FROM microbiologyevents "
        "GROUP BY 1 ORDER BY count(DISTINCT micro_specimen_id) DESC, 1 LIMIT 1"
    )
    (icu,) = store_fixture.rows(heparin)
    (micro,) = store_fixture.rows(cultured)
    charts = [  # a subject may be two of them
        (store_fixture.rows(busiest)[0]["subject_id"], (None, "2150-01-08", "2200-01-01")),
        (icu["subject_id"], (None, icu["day"].isoformat())),
        (micro["subject_id"], (micro["day"].isoformat(),)),
    ]
    queried = [(t, COLUMNS[t]) for t in sorted(STRICT_QUERIED)]
    answers = {}
    for limit in (None, 0):
        if limit is not None:
            monkeypatch.setattr(store_module, "SMALL_CHART_ROWS", limit)
        store = EHRStore(store_fixture.path)
        got = []
        for sid, dates in charts:
            admissions = [
                r["hadm_id"]
                for r in store.rows("SELECT hadm_id FROM admissions WHERE subject_id = ?", [sid])
            ]
            for date in dates:
                ctx = ToolContext(
                    store=store, subject_id=sid, current_date=date, semantics="strict"
                )
                open_chart(ctx)
                for hadm in (None, *admissions[:2]):
                    for tool, args in STRICT_CALLS + (WHOLE_CHART_CALLS if hadm is None else []):
                        extra = {} if hadm is None else {"hadm_id": hadm}
                        got.append(
                            json.dumps(call_tool(ctx, tool, {"subject_id": sid, **args, **extra}))
                        )
        if limit == 0:
            store._filler.shutdown(wait=True)
            for sid, _ in charts:  # none, or an empty table
                assert all(not store._subjects.get(sid, k) for k in queried)
        answers[limit] = got
        store.close()
    assert answers[0] == answers[None]
    assert any('"total": 0' not in a for a in answers[0])  # not all empty
    assert any('"Heparin Sodium' in a and '"effectivePeriod"' in a for a in answers[0])
    assert any('"ICU (running)"' in a for a in answers[0])  # the cutoff inside the ICU stay
    reports = [json.loads(a) for a in answers[0] if '"DiagnosticReport"' in a]
    if name == "demo":  # only the newest specimens shown
        assert any(r["total"] > len(r.get("entry", ())) for r in reports)


def test_strict_big_chart_queries_asked_once_per_cutoff_and_filter(
    tiny_store: EHRStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A big chart's query results are kept with the subject: the same call again asks DuckDB
    nothing; another cutoff or code asks again, and gets its own answer."""
    monkeypatch.setattr(store_module, "SMALL_CHART_ROWS", 0)
    store = EHRStore(tiny_store.path)
    asked: list[str] = []
    for method in ("select", "aggregate"):
        real = getattr(store, method)
        monkeypatch.setattr(
            store, method, lambda *a, real=real, **k: asked.append(a[0]) or real(*a, **k)
        )
    creatinine = {"subject_id": SID, "code": "Creatinine"}
    first = call_tool(tiny_ctx(store), "Observation.search", creatinine)
    queries = len(asked)
    assert queries and call_tool(tiny_ctx(store), "Observation.search", creatinine) == first
    assert len(asked) == queries
    earlier = call_tool(
        tiny_ctx(store, current_date="2150-01-08"), "Observation.search", creatinine
    )
    glucose = call_tool(tiny_ctx(store), "Observation.search", {**creatinine, "code": "Glucose"})
    assert len(asked) > queries and earlier["total"] < first["total"] and glucose != first
    store.close()


def call(store, tool: str, **args):
    return call_tool(tiny_ctx(store), tool, {"subject_id": SID, **args})


def vals(bundle: dict) -> list:
    return [r.get("valueQuantity", {}).get("value", r.get("valueString")) for r in entries(bundle)]


def outcome(result: dict) -> str:
    assert result["resourceType"] == "OperationOutcome", result
    return result["issue"][0]["diagnostics"]


# ----------------------------------------------------------------------------- fix 1: cutoff


def test_strict_cutoff_is_inclusive_of_current_day(tiny_store) -> None:
    assert vals(call(tiny_store, "Observation.search", code="Creatinine")) == [1.6, 1.4, 1.1, 1.0]


def test_strict_caller_date_to_cannot_pass_cutoff(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Creatinine", date_to="2150-12-31")
    assert vals(got)[0] == 1.6
    assert vals(
        call(tiny_store, "Observation.search", code="Creatinine", date_to="2150-01-08")
    ) == [1.4, 1.1, 1.0]
    assert vals(
        call(tiny_store, "Observation.search", code="Creatinine", date_from="2150-01-08")
    ) == [1.6, 1.4]


def test_strict_explicit_cutoff_overrides_current_date(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store, cutoff=dt.datetime(2150, 1, 8, 6, 0))
    got = call_tool(ctx, "Observation.search", {"subject_id": SID, "code": "Creatinine"})
    assert vals(got) == [1.4, 1.1, 1.0]
    enc = entries(call_tool(ctx, "Encounter.search", {"subject_id": SID}))
    assert enc[0]["status"] == "in-progress" and "end" not in enc[0]["period"]
    assert "dischargeDisposition" not in enc[0].get("hospitalization", {})
    # diagnoses are coded at discharge: the running admission has none yet
    assert {
        r["encounter"]["reference"]
        for r in entries(call_tool(ctx, "Condition.search", {"subject_id": SID}))
    } == {f"Encounter/encounter-{EARLIER}"}


def _timestamps(resource: dict) -> list[str]:
    keys = ("effectiveDateTime", "date", "authoredOn", "created")
    out = [resource[k] for k in keys if k in resource]
    out += [
        v
        for p in ("period", "effectivePeriod")
        for k in ("start", "end")
        if (v := resource.get(p, {}).get(k))
    ]
    return out


@pytest.mark.parametrize(
    ("tool", "args"), READS, ids=lambda x: json.dumps(x) if isinstance(x, dict) else x
)
def test_strict_no_timestamp_after_cutoff(tiny_store, tool: str, args: dict) -> None:
    got = call(tiny_store, tool, **args)
    resources = entries(got) if got["resourceType"] == "Bundle" else [got]
    assert resources, (tool, args)
    for r in resources:
        for stamp in _timestamps(r):
            assert stamp[:10] <= fx.CURRENT_DATE, (tool, r["id"], stamp)
        text = json.dumps(r)
        assert str(FUTURE) not in text and "2150-03" not in text, (tool, r["id"])


def test_strict_death_after_cutoff_not_revealed(tiny_store) -> None:
    assert "deceasedDateTime" not in call(tiny_store, "Patient.read")
    later = tiny_ctx(tiny_store, current_date="2150-06-01")
    assert call_tool(later, "Patient.read", {"subject_id": SID})["deceasedDateTime"] == "2150-05-01"


def test_strict_no_timestamp_after_cutoff_demo(demo_store) -> None:
    cur = demo_store.cursor()
    sid, hadm, disch = cur.execute(
        "SELECT subject_id, hadm_id, CAST(dischtime AS DATE) FROM admissions WHERE subject_id IN "
        "(SELECT subject_id FROM admissions GROUP BY 1 HAVING count(*) >= 3) ORDER BY subject_id, "
        "admittime LIMIT 1"
    ).fetchone()
    ctx = ToolContext(
        store=demo_store, subject_id=sid, hadm_id=hadm, current_date=str(disch), semantics="strict"
    )
    for tool, args in READS:
        got = call_tool(ctx, tool, {"subject_id": sid, **args})
        for r in entries(got) if got["resourceType"] == "Bundle" else [got]:
            for stamp in _timestamps(r):
                assert stamp[:10] <= str(disch), (tool, r["id"], stamp)


# ----------------------------------------------------------------------------- fix 2: labels


def test_strict_synonym_wbc_finds_white_blood_cells(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="WBC")
    assert vals(got) == [9.0, 12.5] and {r["code"]["text"] for r in entries(got)} == {
        "White Blood Cells"
    }


def test_strict_exact_creatinine_excludes_urine(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="creatinine")
    assert {r["code"]["text"] for r in entries(got)} == {"Creatinine"}


def test_strict_k_means_potassium_not_alkaline_phosphatase(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="K")
    assert vals(got) == [5.9] and entries(got)[0]["code"]["text"] == "Potassium"


def test_strict_inr_synonym_and_fuzzy_typo(tiny_store) -> None:
    assert vals(call(tiny_store, "Observation.search", code="INR")) == [2.5]
    assert vals(call(tiny_store, "Observation.search", code="Potasium")) == [5.9]


def test_strict_no_match_is_empty_searchset_with_hint(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Zzzznotexist")
    assert got["total"] == 0 and entries(got) == []
    assert "Zzzznotexist" in hint(got) and "Closest" in hint(got)
    lact = call(tiny_store, "Observation.search", code="Lactate")
    assert lact["total"] == 0 and "Lactate" in hint(lact)


def test_match_label_rules() -> None:
    have = [
        "White Blood Cells",
        "Potassium",
        "Alkaline Phosphatase",
        "Creatinine",
        "Creatinine, Urine",
    ]
    assert match_label("wbc", have).labels == ("White Blood Cells",)
    assert match_label("CREATININE", have).how == "exact"
    assert match_label("Creatinin", have).labels == ("Creatinine",)
    assert not match_label("Crea", have).matched  # too loose for fuzzy
    miss = match_label("Phosphate", have)
    assert not miss.matched and miss.closest


def test_strict_vitals_synonyms_honour_hadm_and_dates(tiny_store) -> None:
    assert vals(
        call(tiny_store, "Observation.search", category="vital-signs", code="HR", hadm_id=ANCHOR)
    ) == [95.0, 88.0]
    assert vals(
        call(
            tiny_store, "Observation.search", category="vitals", code="heart rate", hadm_id=EARLIER
        )
    ) == [70.0]
    assert vals(
        call(
            tiny_store,
            "Observation.search",
            category="vital-signs",
            code="HR",
            date_to="2150-01-06",
        )
    ) == [88.0, 70.0]
    assert vals(call(tiny_store, "Observation.search", category="vital-signs", code="SpO2")) == [
        95.0
    ]


def test_strict_vitals_omr_fallback_with_cutoff(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", category="vital-signs", code="BP")
    # chartevents has NIBP systolic -> ICU values first
    assert vals(got) == [140.0]
    weight = call(tiny_store, "Observation.search", category="vital-signs", code="weight")
    assert vals(weight) == [180.0] and entries(weight)[0]["valueQuantity"]["unit"] == "Lbs"


# ----------------------------------------------------------------------------- fix 3: totals, filters


def test_strict_total_is_number_of_matches(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", code="Glucose", _count=5)
    assert got["total"] == 25 and len(entries(got)) == 5
    assert render(got, "full").startswith("25 result(s), showing the newest 5")


def test_strict_count_capped_and_coerced(tiny_store) -> None:
    assert len(entries(call(tiny_store, "Observation.search", code="Glucose", _count=10**9))) == 25
    assert len(entries(call(tiny_store, "Observation.search", code="Glucose", _count="3"))) == 3
    assert "at least 1" in outcome(call(tiny_store, "Observation.search", _count=0))


def test_strict_ids_coerced_from_strings_and_floats(tiny_store) -> None:
    a = call_tool(
        tiny_ctx(tiny_store),
        "Observation.search",
        {"subject_id": str(SID), "hadm_id": f"{ANCHOR}", "code": "K"},
    )
    b = call_tool(
        tiny_ctx(tiny_store),
        "Observation.search",
        {"subject_id": float(SID), "hadm_id": float(ANCHOR), "code": "K"},
    )
    assert vals(a) == vals(b) == [5.9]
    assert "integer" in outcome(call(tiny_store, "Encounter.search", hadm_id="abc"))


def test_strict_microbiology_observations(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", category="microbiology")
    assert got["total"] == 2
    blood = entries(got)[1]
    assert blood["valueString"] == "ESCHERICHIA COLI"
    assert {c["code"]["text"]: c["valueString"] for c in blood["component"]} == {
        "AMPICILLIN": "R >=32",
        "CEFTRIAXONE": "S <=1",
    }
    urine = entries(
        call(tiny_store, "Observation.search", category="microbiology", code="urine culture")
    )
    assert [r["valueString"] for r in urine] == ["NO GROWTH."]


def test_strict_medication_status_derived_against_cutoff(tiny_store) -> None:
    got = call(tiny_store, "MedicationRequest.search")
    status = {r["medicationCodeableConcept"]["text"]: r["status"] for r in entries(got)}
    assert status == {
        "Apixaban": "stopped",
        "Metoprolol Tartrate": "active",
        "Furosemide": "completed",
        "Heparin (Porcine)": "active",
    }
    assert [
        r["medicationCodeableConcept"]["text"]
        for r in entries(call(tiny_store, "MedicationRequest.search", status="stopped"))
    ] == ["Apixaban"]
    assert call(tiny_store, "MedicationRequest.search", status="active")["total"] == 2
    # the planned stop of a running order is not revealed
    metoprolol = next(
        r
        for r in entries(got)
        if r["status"] == "active" and "Metoprolol" in r["medicationCodeableConcept"]["text"]
    )
    assert "end" not in metoprolol["dosageInstruction"][0]["timing"]["repeat"]["boundsPeriod"]


def test_strict_medication_orders_newest_first_within_count(tiny_store) -> None:
    """``_count`` keeps the newest orders; ``total`` counts every match, after the status filter;
    with no ``_count`` the default (200) returns all four."""
    every = entries(call(tiny_store, "MedicationRequest.search"))
    starts = [r["authoredOn"] for r in every]
    assert len(every) == 4 and starts == sorted(starts, reverse=True)
    two = call(tiny_store, "MedicationRequest.search", _count=2)
    assert two["total"] == 4 and entries(two) == every[:2]
    active = call(tiny_store, "MedicationRequest.search", status="active", _count=1)
    assert active["total"] == 2 and [r["status"] for r in entries(active)] == ["active"]
    assert entries(active) == [r for r in every if r["status"] == "active"][:1]


def test_strict_regex_metachar_is_literal(tiny_store) -> None:
    got = call(tiny_store, "MedicationRequest.search", medication="Heparin (Porcine")
    assert got["total"] == 1
    assert call(tiny_store, "MedicationRequest.search", medication="%")["total"] == 0
    assert call(tiny_store, "DocumentReference.search", keyword="[a-z]+")["total"] == 0


def test_strict_sql_quotes_are_data(tiny_store) -> None:
    got = call(
        tiny_store, "MedicationRequest.search", medication="x'; DROP TABLE prescriptions; --"
    )
    assert got["total"] == 0
    assert call(tiny_store, "MedicationRequest.search")["total"] == 4


def test_strict_condition_codes_with_or_without_dots_and_status(tiny_store) -> None:
    for code in ("I48.91", "I4891", "i48", "I48."):
        assert [
            r["code"]["coding"][0]["code"]
            for r in entries(call(tiny_store, "Condition.search", code=code))
        ] == ["I4891"]
    active = {
        r["code"]["coding"][0]["code"]
        for r in entries(call(tiny_store, "Condition.search", clinical_status="active"))
    }
    inactive = {
        r["code"]["coding"][0]["code"]
        for r in entries(call(tiny_store, "Condition.search", clinical_status="inactive"))
    }
    assert active == {"I4891", "N179", "I10"} and inactive == {"E119"}
    resolved = call(tiny_store, "Condition.search", clinical_status="resolved")
    assert resolved["total"] == 0 and "resolution" in hint(resolved)
    assert [
        r["code"]["coding"][0]["code"]
        for r in entries(call(tiny_store, "Condition.search", code="fibrillation"))
    ] == ["I4891"]


# ----------------------------------------------------------------------------- fix 4: shapes


def test_strict_mar_given_vs_not_given_and_dose(tiny_store) -> None:
    got = entries(call(tiny_store, "MedicationAdministration.search"))
    assert [(r["medicationCodeableConcept"]["text"], r["status"]) for r in got] == [
        ("Heparin Sodium", "in-progress"),
        ("Vancomycin", "completed"),
        ("Metoprolol Tartrate", "on-hold"),
        ("Apixaban", "not-done"),
        ("Apixaban", "completed"),
    ]
    assert got[4]["dosage"]["dose"] == {"value": 5.0, "unit": "mg"} and got[4]["dosage"][
        "route"
    ] == {"text": "PO"}
    assert got[3]["statusReason"] == [{"text": "Not Given"}]
    text = render(call(tiny_store, "MedicationAdministration.search"), "full")
    assert "Not Given [not-done]" in text and "dose 5 mg PO" in text


def test_strict_icu_doses_from_inputevents(tiny_store) -> None:
    """ICU administrations (icu/inputevents), as MIMIC-on-FHIR's MedicationAdministrationICU:
    the d_items item, the period, amount and method; a drip running at the cutoff shows no
    end and no amount; the medication filter matches the d_items label."""
    vanco = entries(call(tiny_store, "MedicationAdministration.search", medication="vanco"))
    assert len(vanco) == 1  # the future admission's push is not shown
    (push,) = vanco
    assert push["medicationCodeableConcept"]["coding"][0]["code"] == "225798"
    assert push["effectivePeriod"]["start"].startswith("2150-01-07T20:00")
    assert push["dosage"]["dose"] == {"value": 1.0, "unit": "dose"}
    assert push["dosage"]["method"] == {"text": "Drug Push"}
    assert push["category"] == {"text": "08-Antibiotics (IV)"}
    (drip,) = entries(call(tiny_store, "MedicationAdministration.search", medication="heparin"))
    assert drip["status"] == "in-progress" and drip["effectivePeriod"].get("end") is None
    assert "dose" not in drip["dosage"] and drip["dosage"]["rateQuantity"]["value"] == 1000
    text = render(call(tiny_store, "MedicationAdministration.search", medication="vanco"), "full")
    assert "2150-01-07 20:00 Vancomycin" in text and "[completed]" in text


def test_strict_encounter_discharge_disposition(tiny_store) -> None:
    got = entries(call(tiny_store, "Encounter.search", hadm_id=ANCHOR))
    assert got[0]["hospitalization"]["dischargeDisposition"] == {"text": "HOME HEALTH CARE"}
    assert "discharged to HOME HEALTH CARE" in render(call(tiny_store, "Encounter.search"), "full")


def test_strict_empty_result_is_empty_searchset(tiny_store) -> None:
    got = call(tiny_store, "MedicationRequest.search", medication="warfarin")
    assert got["resourceType"] == "Bundle" and got["total"] == 0 and "warfarin" in hint(got)


def test_strict_unknown_admission_hint(tiny_store) -> None:
    got = call(tiny_store, "Observation.search", hadm_id=424242)
    assert got["total"] == 0 and "424242" in hint(got) and str(ANCHOR) in hint(got)
    future = call(
        tiny_store, "MedicationRequest.search", hadm_id=FUTURE
    )  # not started by the cutoff
    assert future["total"] == 0 and "not one of" in hint(future)


def test_strict_ids_deterministic_and_unique(tiny_store) -> None:
    for tool, args in READS[1:]:
        first, second = call(tiny_store, tool, **args), call(tiny_store, tool, **args)
        ids = [r["id"] for r in entries(first)]
        assert ids == [r["id"] for r in entries(second)] and len(ids) == len(set(ids)), tool


def test_strict_careplan_bodies_and_categories(tiny_store) -> None:
    got = call(tiny_store, "CarePlan.search", hadm_id=ANCHOR)
    plans = {r["id"]: [n["text"] for n in r["note"]] for r in entries(got)}
    assert plans["careplan-1001-DS-2-discharge-planning"][2].startswith(
        "Discharge Instructions: Dear Mr. ___,"
    )
    assert "apixaban 5 mg twice daily" in plans["careplan-1001-DS-2-discharge-planning"][2]
    assert plans["careplan-1001-DS-2-followup"] == [
        "Followup Instructions: Cardiology clinic in 2 weeks."
    ]
    assert call(tiny_store, "CarePlan.search", category="followup")["total"] == 2


def test_strict_reports_and_documents(tiny_store) -> None:
    cxr = entries(call(tiny_store, "DiagnosticReport.search", report_type="chest x-ray"))
    assert [r["id"] for r in cxr] == ["dr-1001-RR-1"] and cxr[0][
        "conclusion"
    ] == "No acute cardiopulmonary process."
    micro = entries(call(tiny_store, "DiagnosticReport.search", report_type="blood culture"))
    assert [r["conclusion"] for r in micro] == ["Organisms: ESCHERICHIA COLI"]
    docs = call(tiny_store, "DocumentReference.search", type_code="discharge-summary")
    assert [r["id"] for r in entries(docs)] == ["docref-1001-DS-2", "docref-1001-DS-1"]
    assert "apixaban 5 mg" in render(
        call(tiny_store, "DocumentReference.search", keyword="APIXABAN"), "full"
    )


# ----------------------------------------------------------------------------- scoping, writes


VALID_WRITES = {
    "MedicationRequest.create": {
        "medication": "x",
        "dose": "1 mg",
        "route": "PO",
        "frequency": "BID",
    },
    "ServiceRequest.create": {"service_type": "BMP", "priority": "routine"},
    "Flag.create": {"category": "safety", "code": "x", "detail": "x"},
}


@pytest.mark.parametrize(
    "tool", [t for t in TOOL_NAMES if t != "prepare_to_answer" and not t.startswith("patient.")]
)
def test_strict_other_subject_refused(tiny_store, tool: str) -> None:
    ctx = tiny_ctx(tiny_store)
    got = call_tool(ctx, tool, {"subject_id": OTHER, **VALID_WRITES.get(tool, {})})
    assert got["issue"][0]["code"] == "forbidden" and str(SID) in outcome(got)
    assert len(ctx.sandbox) == 0


def test_strict_missing_subject_and_unknown_param(tiny_store) -> None:
    assert "missing required parameter(s) ['subject_id']" in outcome(
        call_tool(tiny_ctx(tiny_store), "Encounter.search", {})
    )
    msg = outcome(call(tiny_store, "Observation.search", colour="red"))
    assert "colour" in msg and "accepted parameters" in msg
    assert "must be one of" in outcome(call(tiny_store, "Observation.search", category="radiology"))


WRITE = {
    "subject_id": SID,
    "medication": "Apixaban",
    "dose": "2.5 mg",
    "route": "oral",
    "frequency": "BID",
    "indication": "AF",
}


def test_strict_write_validation(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store)
    assert "missing required" in outcome(
        call_tool(ctx, "MedicationRequest.create", {"subject_id": SID, "medication": "x"})
    )
    assert "must be one of" in outcome(
        call_tool(
            ctx,
            "ServiceRequest.create",
            {"subject_id": SID, "service_type": "BMP", "priority": "whenever"},
        )
    )
    assert "number with a unit" in outcome(
        call_tool(ctx, "MedicationRequest.create", {**WRITE, "dose": "some"})
    )
    assert "YYYY-MM-DD" in outcome(
        call_tool(
            ctx,
            "ServiceRequest.create",
            {"subject_id": SID, "service_type": "BMP", "priority": "urgent", "target_date": "soon"},
        )
    )
    assert len(ctx.sandbox) == 0
    mr = call_tool(ctx, "MedicationRequest.create", WRITE)
    assert mr["dosageInstruction"][0]["doseAndRate"][0]["doseQuantity"] == {
        "value": 2.5,
        "unit": "mg",
    }
    assert mr["meta"]["tag"][0]["code"] == "simulated" and mr["id"] == "MR-sim-1001-21500110-1"
    assert mr["authoredOn"] == "2150-01-10T00:00:01+00:00"
    flag = call_tool(
        ctx,
        "Flag.create",
        {"subject_id": SID, "category": "safety", "code": "Bleeding risk", "detail": "On apixaban"},
    )
    assert flag["code"]["text"] == "Bleeding risk: On apixaban"
    assert [w["id"] for w in ctx.sandbox.writes] == [mr["id"], flag["id"]]


def test_strict_sandbox_isolation_and_store_unchanged(tiny_store) -> None:
    counts = tiny_store.row_counts()
    a, b = tiny_ctx(tiny_store), tiny_ctx(tiny_store)
    call_tool(a, "MedicationRequest.create", WRITE)
    assert len(a.sandbox) == 1 and len(b.sandbox) == 0
    assert (
        call_tool(b, "MedicationRequest.create", WRITE)["id"] == a.sandbox.writes[0]["id"]
    )  # deterministic per session
    assert tiny_store.row_counts() == counts
    rx = tiny_store.cursor().execute("SELECT count(*) FROM prescriptions").fetchone()[0]
    assert rx == 6
    assert call(tiny_store, "MedicationRequest.search", medication="Apixaban")["total"] == 1


class Echo:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict]] = []

    def respond(self, tool: str, arguments: dict) -> dict:
        self.calls.append((tool, arguments))
        return {
            "patient_response": f"about {arguments.get('drug') or arguments.get('query') or 'that'}"
        }


@pytest.mark.parametrize("semantics", ["compat", "strict"])
def test_patient_tools_delegate_with_injected_ids(tiny_store, semantics: str) -> None:
    echo = Echo()
    ctx = tiny_ctx(tiny_store, semantics, patient=echo)
    got = call_tool(ctx, "patient__get_medication_adherence", {"drug": "apixaban"})
    assert got == {"patient_response": "about apixaban"}
    assert echo.calls == [
        (
            "patient.get_medication_adherence",
            {"drug": "apixaban", "subject_id": SID, "session_id": "tiny-session"},
        )
    ]
    assert render(got, "compat") == "about apixaban"
    no_patient = call_tool(tiny_ctx(tiny_store, semantics), "patient.get_pain_assessment", {})
    assert no_patient["resourceType"] == "OperationOutcome"


def test_strict_prepare_to_answer(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store)
    assert call_tool(ctx, "prepare_to_answer", {"answer_type": "Chat", "subject_id": SID}) == {
        "status": "ready",
        "answer_type": "chat",
    }
    assert call_tool(ctx, "prepare_to_answer", "") == {"status": "ready", "answer_type": "tool"}


def test_strict_bad_json_arguments(tiny_store) -> None:
    assert "not valid JSON" in outcome(
        call_tool(tiny_ctx(tiny_store), "Encounter.search", "{subject_id: 1001")
    )
    assert "JSON object" in outcome(call_tool(tiny_ctx(tiny_store), "Encounter.search", "[1001]"))


# ----------------------------------------------------------------------------- real MIMIC-IV demo


def _demo_ctx(store, sid: int, hadm: int | None, day: str | None) -> ToolContext:
    return ToolContext(
        store=store, subject_id=sid, hadm_id=hadm, current_date=day, semantics="strict"
    )


def test_strict_demo_latest_creatinine(demo_store) -> None:
    cur = demo_store.cursor()
    sid, hadm, disch = cur.execute(
        "SELECT a.subject_id, a.hadm_id, CAST(a.dischtime AS DATE) "
        "FROM admissions a JOIN labevents l ON l.hadm_id = a.hadm_id AND l.itemid = 50912 "
        "GROUP BY ALL ORDER BY count(*) DESC, 2 LIMIT 1"
    ).fetchone()
    expected, n = cur.execute(
        "SELECT first(valuenum ORDER BY charttime DESC, labevent_id), count(*) FROM labevents "
        "WHERE subject_id = ? AND itemid IN (SELECT itemid FROM d_labitems WHERE label = "
        "'Creatinine' AND fluid = 'Blood') AND charttime < CAST(? AS DATE) + INTERVAL 1 DAY",
        [sid, disch],
    ).fetchone()
    got = call_tool(
        _demo_ctx(demo_store, sid, hadm, str(disch)),
        "Observation.search",
        {"subject_id": sid, "code": "Cr"},
    )
    assert entries(got)[0]["valueQuantity"]["value"] == expected and got["total"] == n


def test_strict_demo_encounters_and_medications(demo_store) -> None:
    cur = demo_store.cursor()
    sid, day = cur.execute(
        "SELECT subject_id, CAST(max(dischtime) AS DATE) FROM admissions GROUP BY 1 ORDER BY "
        "count(*) DESC, 1 LIMIT 1"
    ).fetchone()
    n_adm = cur.execute("SELECT count(*) FROM admissions WHERE subject_id = ?", [sid]).fetchone()[0]
    ctx = _demo_ctx(demo_store, sid, None, str(day))
    assert call_tool(ctx, "Encounter.search", {"subject_id": sid})["total"] == n_adm
    drug = cur.execute(
        "SELECT drug FROM prescriptions WHERE subject_id = ? "
        "GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
        [sid],
    ).fetchone()[0]
    n_rx = cur.execute(
        "SELECT count(*) FROM prescriptions WHERE subject_id = ? AND drug ILIKE ?",
        [sid, f"%{drug}%"],
    ).fetchone()[0]
    got = call_tool(
        ctx, "MedicationRequest.search", {"subject_id": sid, "medication": drug.upper()}
    )
    assert got["total"] == n_rx
    by_status = sum(
        call_tool(
            ctx, "MedicationRequest.search", {"subject_id": sid, "medication": drug, "status": s}
        )["total"]
        for s in ("active", "completed", "stopped")
    )
    assert by_status == n_rx


def test_strict_demo_microbiology_and_conditions(demo_store) -> None:
    cur = demo_store.cursor()
    sid, n_spec = cur.execute(
        "SELECT subject_id, count(DISTINCT micro_specimen_id) FROM microbiologyevents GROUP BY 1 "
        "ORDER BY 2 DESC LIMIT 1"
    ).fetchone()
    ctx = _demo_ctx(demo_store, sid, None, None)
    micro = call_tool(
        ctx, "DiagnosticReport.search", {"subject_id": sid, "report_type": "microbiology"}
    )
    assert micro["total"] == n_spec
    obs = call_tool(
        ctx, "Observation.search", {"subject_id": sid, "category": "microbiology", "_count": 5}
    )
    assert len(entries(obs)) == 5 and obs["total"] >= n_spec
    code = cur.execute(
        "SELECT icd_code FROM diagnoses_icd WHERE subject_id = ? AND icd_version = 10 AND "
        "length(icd_code) > 3 LIMIT 1",
        [sid],
    ).fetchone()
    if code:
        dotted = f"{code[0][:3]}.{code[0][3:]}"
        assert code[0] in [
            r["code"]["coding"][0]["code"]
            for r in entries(
                call_tool(ctx, "Condition.search", {"subject_id": sid, "code": dotted})
            )
        ]


def test_tool_context_validates_fields(tiny_store) -> None:
    with pytest.raises(ValueError, match="current_date"):
        tiny_ctx(tiny_store, current_date="10/01/2150")
    with pytest.raises(ValueError, match="semantics"):
        tiny_ctx(tiny_store, "lenient")
    assert tiny_ctx(tiny_store).effective_cutoff() == dt.datetime(2150, 1, 10, 23, 59, 59, 999999)
    assert tiny_ctx(tiny_store, current_date=None).effective_cutoff() is None
