"""Builder logic on hand-made FHIR observations: arcs, answers, rubrics, rewrites, templates."""

from __future__ import annotations

import datetime as dt
import random
import re

import fixtures_builder as fb
import pytest

from generation.builder import facts as F
from generation.builder.answers import fmt
from generation.builder.arcs import ARCS, CR, DG, IL, WU, check_positions, eligible_arcs
from generation.builder.encode import BuiltTurn, dep_graph, sentences
from generation.builder.gold import answer, digest, rubric
from generation.builder.plan import check_session_rules, choose_topics
from generation.builder.profile import DrugSummary, LabSummary, Profile
from generation.builder.questions import (
    choose_subtype,
    feasible_subtypes,
    make_question,
)
from generation.builder.topics import Topic, candidates
from generation.builder.wording import TemplateError, fill, templates


def lab(
    label: str,
    value: float,
    when: str,
    low: float | None = None,
    high: float | None = None,
    unit: str = "mg/dL",
    code: str = "50912",
) -> dict:
    r = {
        "resourceType": "Observation",
        "code": {"coding": [{"code": code, "display": label}], "text": label},
        "effectiveDateTime": when,
        "valueQuantity": {"value": value, "unit": unit},
    }
    if low is not None:
        r["referenceRange"] = [{"low": {"value": low}, "high": {"value": high}}]
    return r


def bundle(*resources: dict) -> dict:
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(resources),
        "entry": [{"resource": r} for r in resources],
    }


def med(drug: str, dose: float, unit: str, route: str, start: str) -> dict:
    return {
        "resourceType": "MedicationRequest",
        "medicationCodeableConcept": {"text": drug},
        "status": "active",
        "dosageInstruction": [
            {
                "route": {"text": route},
                "doseAndRate": [{"doseQuantity": {"value": dose, "unit": unit}}],
                "timing": {"repeat": {"boundsPeriod": {"start": start}}},
            }
        ],
    }


#: The record behind the observations below: one admission, a current lisinopril order, a
#: serum creatinine series (plus a urine creatinine item of the same label) and potassium.
RECORD = {
    "admissions": [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "admittime": "2150-03-01 07:00:00",
            "dischtime": "2150-03-06 12:00:00",
            "discharge_location": "HOME",
        }
    ],
    "prescriptions": [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "pharmacy_id": 7,
            "drug": "Lisinopril",
            "dose_val_rx": "10",
            "dose_unit_rx": "mg",
            "route": "PO",
            "starttime": "2150-03-01 08:00:00",
            "doses_per_24_hrs": 1,
        }
    ],
    "pharmacy": [{"subject_id": 1, "hadm_id": 2, "pharmacy_id": 7, "frequency": "DAILY"}],
    "d_labitems": [
        {"itemid": 50912, "label": "Creatinine", "fluid": "Blood", "category": "Chemistry"},
        {"itemid": 51082, "label": "Creatinine", "fluid": "Urine", "category": "Chemistry"},
        {"itemid": 50971, "label": "Potassium", "fluid": "Blood", "category": "Chemistry"},
    ],
    "labevents": fb.labevents(
        (50912, "2150-03-02 06:00:00", 1.1),
        (50912, "2150-03-05 06:00:00", 1.9),
        (51082, "2150-03-05 07:00:00", 12.0),
        (50971, "2150-03-05 06:00:00", 4.2),
    ),
}
PROFILE = Profile(
    1,
    2,
    "2150-03-06",
    "F",
    70,
    labs={
        "Creatinine": LabSummary("Creatinine", 3, True),
        "Potassium": LabSummary("Potassium", 2, False),
    },
    drugs={"lisinopril": DrugSummary("lisinopril", "Lisinopril", "10", "mg", "PO", 1.0, 3)},
    timeline=fb.timeline_of(RECORD),
)

CREAT = bundle(
    lab("Creatinine", 1.1, "2150-03-02T06:00:00+00:00", 0.5, 1.2),
    lab("Creatinine", 1.9, "2150-03-05T06:00:00+00:00", 0.5, 1.2),
    lab("Creatinine", 12.0, "2150-03-05T07:00:00+00:00", unit="mg/dL", code="51082"),
    lab("Creatinine, Urine", 80, "2150-03-05T06:00:00+00:00"),
)


def test_arcs_product_order_and_tier_counts() -> None:
    assert len(ARCS) == 27
    assert (
        ARCS[0] == (IL, IL, IL, DG) and ARCS[1] == (IL, IL, IL, CR) and ARCS[2] == (IL, IL, IL, WU)
    )
    assert [len(eligible_arcs(t)) for t in (1, 2, 3)] == [27, 24, 15]
    assert all(CR in ARCS[i][1:3] for i in eligible_arcs(3))
    assert check_positions([IL, WU, IL, CR]) == [
        "turn 1: 'Write/Update' not allowed (allowed: "
        "Information Lookup, Data Gathering, Clinical Reasoning)"
    ]
    with pytest.raises(ValueError, match="tier"):
        eligible_arcs(4)


def test_lab_points_keep_exact_label_and_dominant_item() -> None:
    pts = F.lab_points(CREAT, "Creatinine")
    assert [p.value for p in pts] == [1.1, 1.9]  # urine item and the one-off other code dropped
    assert pts[-1].status == "high"


def test_trend_answer_and_rubric_are_consistent() -> None:
    topic = Topic("lab_trend", lab="Creatinine")
    d = digest(topic, [CREAT], PROFILE)
    assert d is not None and d.trend == "rising" and d.course == "worsening"
    en, zh = answer(d, "en"), answer(d, "zh")
    assert "1.1" in en and "1.9 mg/dL" in en and "rising" in en
    assert len(sentences(en)) == 2  # CR: two sentences, decimals kept whole
    assert "Creatinine" in zh and "上升" in zh
    items = rubric(d)
    assert 5 <= len(items) <= 6
    kinds = [i.check["kind"] for i in items]
    assert kinds.count("value") == 2 and all(i.en and i.zh for i in items)
    assert {i.check["value"] for i in items if i.check["kind"] == "value"} == {1.1, 1.9}


def test_empty_or_unrelated_observations_give_no_digest() -> None:
    outcome = {"resourceType": "OperationOutcome", "issue": [{"severity": "error"}]}
    assert F.is_empty(outcome) and F.is_empty(bundle())
    assert digest(Topic("lab_latest", lab="Potassium"), [CREAT], PROFILE) is None
    one = bundle(lab("Creatinine", 1.0, "2150-03-02T06:00:00+00:00", 0.5, 1.2))
    assert digest(Topic("lab_trend", lab="Creatinine"), [one], PROFILE) is None


def test_drug_lab_safety_holds_when_lab_is_in_the_risky_direction() -> None:
    meds = bundle(med("Lisinopril", 10, "mg", "PO", "2150-03-01T08:00:00+00:00"))
    k_high = bundle(lab("Potassium", 6.1, "2150-03-05T06:00:00+00:00", 3.5, 5.1, "mEq/L", "50971"))
    k_ok = bundle(lab("Potassium", 4.2, "2150-03-05T06:00:00+00:00", 3.5, 5.1, "mEq/L", "50971"))
    topic = Topic("drug_lab_safety", lab="Potassium", drug="lisinopril")
    hold = digest(topic, [meds, k_high], PROFILE)
    ok = digest(topic, [meds, k_ok], PROFILE)
    assert hold is not None and hold.verdict == "hold"
    assert ok is not None and ok.verdict == "ok"
    assert "hold" in answer(hold, "en") and "暂停" in answer(hold, "zh")
    assert "continue" in answer(ok, "en")
    assert 5 <= len(rubric(hold)) <= 6 and 5 <= len(rubric(ok)) <= 6


def test_write_turn_answer_confirms_the_call() -> None:
    result = {"resourceType": "ServiceRequest", "id": "SR-1", "status": "active"}
    args = {
        "subject_id": 1,
        "service_type": "Repeat Creatinine",
        "priority": "routine",
        "target_date": "2150-03-07",
    }
    d = digest(Topic("order_lab_recheck", lab="Creatinine"), [result], PROFILE, [args])
    assert d is not None
    assert answer(d, "en") == "Ordered: Repeat Creatinine (priority routine) for 2150-03-07."
    checks = [i.check for i in rubric(d)]
    assert checks[0] == {"kind": "write_call", "tool": "ServiceRequest.create"}
    assert {
        "kind": "write_arg",
        "tool": "ServiceRequest.create",
        "field": "priority",
        "accepted": ["routine"],
    } in checks
    assert 4 <= len(checks) <= 6


def test_subtypes_follow_the_position_and_antecedent_rules() -> None:
    trend = Topic("lab_trend", lab="Creatinine")
    assert feasible_subtypes(trend, 0, set()) == []
    assert feasible_subtypes(trend, 1, set()) == ["PE"]
    assert feasible_subtypes(trend, 1, {"Creatinine"}) == ["NA", "PE"]
    assert feasible_subtypes(trend, 2, {"Creatinine"}) == ["NA", "PE", "AE"]
    assert "AE" not in feasible_subtypes(Topic("lab_latest", lab="Creatinine"), 3, {"Creatinine"})
    assert feasible_subtypes(Topic("order_lab_recheck", lab="Creatinine"), 3, {"Creatinine"}) == []
    used = {"NA": 3, "PE": 1, "AE": 1}
    assert choose_subtype(["NA", "PE", "AE"], used, random.Random(0)) in ("PE", "AE")


def test_rewrites_change_the_question_and_never_state_values() -> None:
    topic = Topic("lab_trend", lab="Creatinine")
    for subtype in ("PE", "NA", "AE"):
        for variant in range(3):
            q = make_question(topic, subtype, variant, "F", {"Creatinine"})
            assert q.subtype == subtype and q.implicit_en != q.explicit_en
            assert not re.search(r"\d", q.explicit_en + q.implicit_en + q.implicit_zh)
    na = make_question(topic, "NA", 0, "F", {"Creatinine"})
    assert "creatinine" not in na.implicit_en.lower() and na.antecedent == "Creatinine"
    explicit = make_question(topic, None, 1, "M", set())
    assert explicit.subtype is None and explicit.implicit_en == explicit.explicit_en
    with pytest.raises(ValueError, match="earlier-turn entity"):
        make_question(topic, "NA", 0, "F", set())


def test_templates_are_parallel_and_fill_reports_missing_values() -> None:
    en, zh = templates("en"), templates("zh")
    assert en["questions"].keys() == zh["questions"].keys()
    for kind, forms in en["questions"].items():
        assert forms.keys() == zh["questions"][kind].keys(), kind
        for form, texts in forms.items():
            assert len(texts) == len(zh["questions"][kind][form]), (kind, form)
    assert en["rubrics"].keys() == zh["rubrics"].keys()
    with pytest.raises(TemplateError, match="no value for lab"):
        fill("{lab}?", "en:questions.x.pe")


def test_planner_respects_diversity_rules_and_patient_data() -> None:
    rng = random.Random(3)
    for arc_index in eligible_arcs(3):
        pools = [candidates("med_safety", ARCS[arc_index][t], PROFILE) for t in range(4)]
        topics = choose_topics(arc_index, pools, rng)
        if topics is None:
            continue
        tools = [list(t.tools) for t in topics]
        assert (
            check_session_rules([t.task_type for t in topics], tools, [t.source for t in topics], 3)
            == []
        )
        for t in topics:
            assert t.lab in (None, "Creatinine", "Potassium") and t.drug in (None, "lisinopril")


def test_dep_graph_keeps_decimals_and_records_anaphora_edges() -> None:
    trend = Topic("lab_trend", lab="Creatinine")
    d = digest(trend, [CREAT], PROFILE)
    assert d is not None
    q0 = make_question(Topic("lab_latest", lab="Creatinine"), None, 0, "F", set())
    q1 = make_question(trend, "NA", 0, "F", {"Creatinine"})
    turns = [
        BuiltTurn(
            IL,
            "ehr",
            "lab_latest",
            ["Creatinine"],
            q0,
            [],
            [],
            "Creatinine: 1.9 mg/dL (high), 2150-03-05 06:00",
            "",
            [],
        ),
        BuiltTurn(CR, "ehr", "lab_trend", ["Creatinine"], q1, [], [], answer(d, "en"), "", []),
    ]
    graph = dep_graph(turns)
    assert any("1.9" in f for f in graph["nodes"]["0"]["facts"])
    assert {"from": 0, "to": 1, "type": "NA", "entity": "Creatinine"} in graph["edges"]


def test_fmt_writes_numbers_like_a_clinician() -> None:
    assert [fmt(1.40), fmt(140.0), fmt(0.125), fmt(3.0004)] == ["1.4", "140", "0.125", "3"]


def _patient_obs(text: str) -> dict:
    return {
        "patient_response": text,
        "patient_responses_all_literacy": {"high": text, "medium": text, "low": text},
    }


PHM = {
    "persona": {
        "health_literacy": "low",
        "adherence": "poor",
        "anxiety_level": "low",
        "info_completeness": "critical_withheld",
    },
    "medications": [
        {
            "drug": "Lisinopril",
            "names": ["lisinopril"],
            "adherence": "self_discontinued",
            "missed_per_week": 6,
            "reason": {"en": "it made me cough", "zh": "吃了咳嗽"},
        }
    ],
    "social_history": {"lives_alone": True, "smoking": {"status": "current"}},
    "functional_status": {
        "assistive_device": "walker",
        "blocks": 2,
        "falls": {"en": "I fell once last month", "zh": "上个月摔过"},
    },
    "symptoms": [
        {
            "primary": True,
            "term": {"en": "palpitations", "zh": "心悸"},
            "onset": {"en": "two days ago while resting", "zh": "两天前休息时"},
            "severity": 6,
        }
    ],
    "pain": {
        "present": True,
        "score": 4,
        "location": {"en": "left chest", "zh": "左胸"},
        "quality": {"en": "dull", "zh": "钝痛"},
    },
}


def _items_pass_literal_terms(items, answer_en: str, answer_zh: str) -> None:
    """Every concept item names a term found in the matching answer (simple checker)."""
    for item in items:
        if item.check["kind"] == "concept":
            assert any(w.lower() in answer_en.lower() for w in item.check["any"]["en"]), item.en
            assert any(w.lower() in answer_zh.lower() for w in item.check["any"]["zh"]), item.zh


def test_patient_turns_render_the_patient_model_in_both_languages() -> None:
    prof = Profile(
        1, 2, "2150-03-06", "F", 70, drugs=PROFILE.drugs, phm=PHM, timeline=PROFILE.timeline
    )
    meds = bundle(med("Lisinopril", 10, "mg", "PO", "2150-03-01T08:00:00+00:00"))
    adherence = digest(
        Topic("adherence_check", drug="lisinopril"),
        [meds, _patient_obs("I stopped it, it made me cough.")],
        prof,
    )
    assert adherence is not None and adherence.adherence == "stopped"
    en, zh = answer(adherence, "en"), answer(adherence, "zh")
    assert "stopped taking" in en and "it made me cough" in en and "已自行停药" in zh
    items = rubric(adherence)
    assert 5 <= len(items) <= 6
    _items_pass_literal_terms(items, en, zh)

    home = digest(
        Topic("home_function"), [_patient_obs("I live alone."), _patient_obs("walker")], prof
    )
    assert home is not None
    en, zh = answer(home, "en"), answer(home, "zh")
    assert "lives alone" in en and "walker" in en and "one fall" in en and "current smoker" in en
    assert {i.check["kind"] for i in rubric(home)} == {"concept", "value"}

    pain = digest(Topic("symptom_pain"), [_patient_obs("racing heart"), _patient_obs("4/10")], prof)
    assert pain is not None
    en, zh = answer(pain, "en"), answer(pain, "zh")
    assert "started two days ago" in en and "while resting" not in en and "4/10" in en
    # The reply states the pain score, not the symptom's severity (6): only the score is a fact.
    assert "6/10" not in en and len(rubric(pain)) == 5
    assert all(i.check.get("label") != "severity" for i in rubric(pain))
    assert digest(Topic("symptom_pain"), [_patient_obs(""), _patient_obs("4/10")], prof) is None


#: A stay's microbiology (issue 43): the ED's blood culture before admission (no hadm_id) grew
#: an MRSA; a sputum grew yeast (commensal) and its Legionella culture is pending; an RPR
#: serology is no culture; the last blood culture is pending at discharge.
MICRO = [
    {
        "hadm_id": hadm,
        "micro_specimen_id": spec,
        "spec_type_desc": kind,
        "test_seq": seq,
        "test_itemid": seq,
        "test_name": test,
        "charttime": drawn,
        "chartdate": drawn[:10],
        "storetime": stored,
        "storedate": stored[:10],
        "org_name": org,
        "isolate_num": 1 if org else None,
        "ab_name": ab,
        "interpretation": sir,
        "dilution_text": None,
        "comments": comment,
    }
    for hadm, spec, kind, seq, test, drawn, stored, org, ab, sir, comment in (
        (
            None,
            1,
            "BLOOD CULTURE",
            1,
            "Blood Culture, Routine",
            "2150-03-01 06:00:00",
            "2150-03-03 12:00:00",
            "STAPH AUREUS COAG +",
            "OXACILLIN",
            "R",
            None,
        ),
        (
            None,
            1,
            "BLOOD CULTURE",
            1,
            "Blood Culture, Routine",
            "2150-03-01 06:00:00",
            "2150-03-03 12:00:00",
            "STAPH AUREUS COAG +",
            "VANCOMYCIN",
            "S",
            None,
        ),
        (
            2,
            2,
            "SEROLOGY/BLOOD",
            1,
            "RAPID PLASMA REAGIN TEST",
            "2150-03-02 09:00:00",
            "2150-03-02 18:00:00",
            None,
            None,
            None,
            "NONREACTIVE.",
        ),
        (
            2,
            3,
            "SPUTUM",
            1,
            "RESPIRATORY CULTURE",
            "2150-03-03 10:00:00",
            "2150-03-05 10:00:00",
            "YEAST",
            None,
            None,
            None,
        ),
        (
            2,
            3,
            "SPUTUM",
            2,
            "LEGIONELLA CULTURE",
            "2150-03-03 10:00:00",
            "2150-03-11 10:00:00",
            None,
            None,
            None,
            "NO LEGIONELLA ISOLATED.",
        ),
        (
            2,
            4,
            "BLOOD CULTURE",
            1,
            "Blood Culture, Routine",
            "2150-03-05 10:00:00",
            "2150-03-10 10:00:00",
            None,
            None,
            None,
            "NO GROWTH.",
        ),
    )
]


def test_culture_answers_lead_with_the_significant_organism_and_its_resistance() -> None:
    """The culture answer and rubric follow what was known at the cutoff, from the strict
    report: the ED's MRSA (and what it is susceptible to) leads, the sputum's yeast is named as
    commensal flora, pending cultures are pending (never their result), the RPR is left out."""
    from physassist.ehr.tools.microbiology import specimens
    from physassist.ehr.tools.reported import reported_at, stays
    from physassist.ehr.tools.strict_notes import micro_report

    admission = {**RECORD["admissions"][0], "edregtime": "2150-03-01 05:00:00"}
    record = {
        **RECORD,
        "admissions": [admission],
        "microbiologyevents": [
            {**r, "subject_id": 1, "microevent_id": i} for i, r in enumerate(MICRO)
        ],
    }
    prof = Profile(1, 2, "2150-03-06", "F", 70, timeline=fb.timeline_of(record))
    cutoff = prof.timeline.cutoff - dt.timedelta(microseconds=1)
    rows = [{k: _time(v) for k, v in r.items()} for r in MICRO]
    found = specimens(
        rows,
        cutoff,
        reported_at("microbiologyevents", True)[1],
        stays([{k: _time(v) for k, v in admission.items()}]),
    )
    d = digest(Topic("culture_latest"), [bundle(*(micro_report(s, 1) for s in found))], prof)
    assert d is not None
    assert [r.title for r in d.reports] == ["BLOOD CULTURE", "SPUTUM", "BLOOD CULTURE"]
    en = answer(d, "en")
    assert "STAPH AUREUS COAG + (MRSA" in en and "susceptible to VANCOMYCIN" in en
    assert "drawn in the ED" in en and "YEAST (commensal flora)" in en
    assert "LEGIONELLA CULTURE pending" in en and "Blood Culture, Routine pending" in en
    assert "NO LEGIONELLA" not in en and "RAPID PLASMA" not in en and "NO GROWTH" not in en
    items = rubric(d)
    assert items[0].check["any"]["en"] == ["STAPH AUREUS COAG +", "S. AUREUS COAG +"]
    assert "MRSA" in items[2].check["any"]["en"]
    zh = answer(d, "zh")
    assert "MRSA" in zh and "待回报" in zh and "共生菌" in zh


def _time(value: object) -> object:
    """A row value as the store gives it: MIMIC times as datetimes."""
    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?", value):
        return dt.datetime.fromisoformat(value)
    return value


def test_imaging_lookups_name_the_finding() -> None:
    def report(title: str, conclusion: str, when: str) -> dict:
        return {
            "resourceType": "DiagnosticReport",
            "code": {"text": title},
            "category": [{"coding": [{"display": "Radiology"}]}],
            "conclusion": conclusion,
            "effectiveDateTime": when,
        }

    imaging = bundle(
        report(
            "EXAMINATION:  CHEST (PORTABLE AP)",
            "No new consolidation. Small left effusion.",
            "2150-03-04T09:00:00",
        )
    )
    d = digest(Topic("imaging_latest"), [imaging], PROFILE)
    assert d is not None
    finding = rubric(d)[1].check["any"]["en"]
    assert "effusion" in finding and "consolidation" not in finding


def test_conditions_and_unsafe_verdicts_need_the_clinical_threshold() -> None:
    """A value past the lab's reference range is "high"/"low"; naming a condition or holding a
    drug needs the documented clinical threshold (vocab.MEANINGS, vocab.UNSAFE_WHEN)."""
    from generation.builder.answers import Digest, LabFact, course, meaning
    from generation.builder.interpret import Context
    from generation.builder.trends import Trend
    from generation.builder.vocab import unsafe

    def said(label: str, value: float, status: str) -> str | None:
        d = Digest(Topic("lab_trend", lab=label))
        d.labs = [LabFact(label, value, "", status, "2150-03-05 06:00", "2150-03-05")]
        m = meaning(d)
        return m.en if m is not None else None

    assert said("Glucose", 120, "high") is None  # above 70-100, not hospital hyperglycemia
    assert said("Glucose", 190, "high") == "hyperglycemia"
    assert said("INR(PT)", 1.2, "high") is None and said("INR(PT)", 2.1, "high") is not None
    assert said("Urea Nitrogen", 24, "high") is None  # BUN alone names no kidney condition
    assert said("Creatinine", 1.2, "high") is None and said("Creatinine", 1.9, "high")
    assert said("Lactate", 2.4, "high") is None and said("Lactate", 4.5, "high")
    assert said("Potassium", 5.6, "high") == "hyperkalemia"
    inr = LabFact("INR(PT)", 1.2, "", "high", "2150-03-05 06:00", "2150-03-05")
    steady, rising = Trend("stable", "none", inr, "first"), Trend("rising", "clear", inr, "first")
    assert course(inr, steady, Context()) == "minor"  # mildly high and steady: no action
    creat = LabFact("Creatinine", 1.3, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05")
    assert course(creat, rising, Context()) == "worsening"  # a KDIGO-sized rise still counts
    assert not unsafe("Warfarin", "INR(PT)", 2.5) and unsafe("warfarin", "INR(PT)", 3.6)
    assert not unsafe("potassium chloride", "Potassium", 3.1)  # it treats the low potassium
    assert unsafe("potassium chloride", "Potassium", 5.4)
    assert not unsafe("furosemide", "Potassium", 3.3) and unsafe("furosemide", "Potassium", 2.8)
    assert not unsafe("vancomycin", "Urea Nitrogen", 40) and unsafe("vancomycin", "Creatinine", 2.0)
    assert not unsafe("lisinopril", "Potassium", 5.3) and unsafe("lisinopril", "Potassium", 5.8)
