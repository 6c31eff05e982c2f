"""Sessions worth asking (issue 40): safety signals and measured responses from the chart,
the plan's turn-to-turn rules, drug names as a physician says them, questions never repeated
within a build; the issue's charts on the MIMIC-IV demo."""

from __future__ import annotations

import random

import fixtures_builder as fb
import fixtures_store as fx

from generation.builder.profile import DrugSummary, LabSummary, Profile, load_profile
from generation.builder.questions import builds_on, feasible_subtypes, new_question
from generation.builder.signals import response_topics, safety_topics
from generation.builder.topics import Topic, fits, follows
from generation.builder.vocab import drug_spoken

store_cache = fx.store_cache
demo_store = fx.demo_store

ADMISSION = fb.ADMISSION
ITEMS = [
    {"itemid": 50912, "label": "Creatinine", "fluid": "Blood", "category": "Chemistry"},
    {"itemid": 51237, "label": "INR(PT)", "fluid": "Blood", "category": "Hematology"},
    {"itemid": 50971, "label": "Potassium", "fluid": "Blood", "category": "Chemistry"},
    {"itemid": 51009, "label": "Vancomycin", "fluid": "Blood", "category": "Chemistry"},
]


def _rx(
    pid: int,
    drug: str,
    dose: str,
    freq: str,
    start: str = "2150-03-02 09:00:00",
    poe: str | None = None,
    per_day: float = 1,
) -> tuple[dict, dict]:
    return (
        {
            "subject_id": 1,
            "hadm_id": 2,
            "pharmacy_id": pid,
            "poe_id": poe or f"p{pid}",
            "drug": drug,
            "dose_val_rx": dose,
            "dose_unit_rx": "mg",
            "route": "PO",
            "starttime": start,
            "stoptime": "2150-03-06 16:00:00",
            "doses_per_24_hrs": per_day,
        },
        {"subject_id": 1, "hadm_id": 2, "pharmacy_id": pid, "frequency": freq},
    )


def _profile(orders: list[tuple[dict, dict]], labs: list[dict], **extra: list[dict]) -> Profile:
    record = {
        "admissions": [ADMISSION],
        "prescriptions": [o for o, _ in orders],
        "pharmacy": [p for _, p in orders],
        "d_labitems": ITEMS,
        "labevents": labs,
        **extra,
    }
    tl = fb.timeline_of(record)
    drugs = {}
    for o, _ in orders:
        current = tl.current_order(o["drug"].split()[0].lower())
        if current is not None:
            drugs[current.word] = DrugSummary(
                current.word,
                current.drug,
                current.dose_text,
                current.unit,
                current.route,
                current.per_day,
                0,
            )
    return Profile(
        1,
        2,
        "2150-03-06",
        "F",
        70,
        drugs=drugs,
        timeline=tl,
        labs={i["label"]: LabSummary(i["label"], 2, True) for i in ITEMS},
    )


def test_safety_signals_from_the_chart() -> None:
    """The issue's signals: allopurinol with a creatinine of 2.3, a vancomycin trough of 21.5,
    two diltiazem orders, warfarin bridged by enoxaparin 80 mg twice daily, warfarin with
    amiodarone; none where the chart has no risk."""
    labs = fb.labevents(
        (50912, "2150-03-05 06:00:00", 2.3, 0.5, 1.1),
        (51009, "2150-03-05 06:00:00", 21.5, 10, 20),
        (51237, "2150-03-05 06:00:00", 1.7, 0.9, 1.1),
    )
    orders = [
        _rx(1, "Allopurinol", "300", "DAILY"),
        _rx(2, "Vancomycin", "1250", "Q12H"),
        _rx(3, "Diltiazem", "30", "QID"),
        _rx(4, "Diltiazem Extended-Release", "120", "DAILY"),
        _rx(5, "Warfarin", "5", "DAILY"),
        _rx(6, "Enoxaparin Sodium", "80", "BID", per_day=2),
        _rx(7, "Amiodarone", "200", "DAILY"),
    ]
    found = {t.label() for t in safety_topics(_profile(orders, labs))}
    assert {
        "drug_lab_safety(Creatinine, allopurinol)",
        "drug_lab_safety(Vancomycin, vancomycin)",
        "duplicate_therapy(diltiazem)",
        "anticoag_bridge(INR(PT), warfarin, enoxaparin)",
        "interaction(warfarin, amiodarone)",
    } <= found
    quiet = _profile(
        [_rx(1, "Allopurinol", "300", "DAILY")],
        fb.labevents((50912, "2150-03-05 06:00:00", 0.8, 0.5, 1.1)),
    )
    assert safety_topics(quiet) == [] and not fits("med_safety", quiet)


def test_one_prescription_and_prophylaxis_are_no_signal() -> None:
    """Rows of one poe_id at different doses are one regimen, not duplicate therapy; heparin
    5000 units SC (or enoxaparin 40 mg daily) is prophylaxis, not a bridge."""
    labs = fb.labevents((51237, "2150-03-05 06:00:00", 1.7, 0.9, 1.1))
    orders = [
        _rx(1, "ALPRAZolam", "2", "BID", poe="p9"),
        _rx(2, "ALPRAZolam", "1", "DAILY", poe="p9"),
        _rx(5, "Warfarin", "5", "DAILY"),
        _rx(6, "Enoxaparin Sodium", "40", "DAILY"),
    ]
    found = {t.label() for t in safety_topics(_profile(orders, labs))}
    assert found == {"drug_lab_safety(INR(PT), warfarin)"}  # the INR on warfarin, nothing else


def test_a_response_needs_a_treated_value_before_and_after() -> None:
    """Potassium chloride after a low potassium, measured again: a response to ask about; the
    same repletion of a normal potassium is maintenance."""
    emar = [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "emar_id": f"e{i}",
            "medication": "Potassium Chloride",
            "charttime": t,
            "event_txt": "Administered",
        }
        for i, t in enumerate(("2150-03-03 10:00:00", "2150-03-03 14:00:00"))
    ]
    low = fb.labevents(
        (50971, "2150-03-03 06:00:00", 3.1, 3.5, 5.1), (50971, "2150-03-04 06:00:00", 4.0, 3.5, 5.1)
    )
    normal = fb.labevents(
        (50971, "2150-03-03 06:00:00", 3.9, 3.5, 5.1), (50971, "2150-03-04 06:00:00", 4.2, 3.5, 5.1)
    )
    topics = response_topics(_profile([], low, emar=emar))
    assert [t.label() for t in topics] == ["treatment_effect(Potassium, potassium chloride)"]
    assert topics[0].name == "potassium chloride"
    assert response_topics(_profile([], normal, emar=emar)) == []


def test_turns_follow_each_other() -> None:
    trend = Topic("lab_trend", lab="INR(PT)")
    assert not follows(trend, Topic("lab_pair", lab="Potassium", lab2="INR(PT)"))  # asked again
    assert follows(trend, Topic("flag_abnormal", lab="INR(PT)"))  # "flag that INR": it was named
    assert not follows(Topic("med_current", drug="aspirin"), Topic("flag_abnormal", lab="INR(PT)"))
    assert not follows(Topic("med_and_admin", drug="aspirin"), Topic("med_current", drug="aspirin"))
    assert follows(Topic("lab_latest", lab="Creatinine"), Topic("lab_trend", lab="Creatinine"))
    # "Given all this, ..." only where the turn builds on the one before
    laxative, labs = (
        Topic("med_current", drug="senna"),
        Topic("lab_pair", lab="Creatinine", lab2="Glucose"),
    )
    assert not builds_on(laxative, labs) and "AE" not in feasible_subtypes(labs, 2, set(), False)
    assert builds_on(Topic("med_current", drug="lisinopril"), Topic("lab_latest", lab="Potassium"))


def test_drug_names_as_a_physician_says_them() -> None:
    assert drug_spoken("Milk of Magnesia") == "milk of magnesia"  # was "Milk"
    assert drug_spoken("Ferrous Sulfate") == "ferrous sulfate"  # was "Ferrous"
    assert drug_spoken("Metoprolol Succinate XL") == "metoprolol succinate XL"
    assert drug_spoken("Docusate Sodium (Liquid)") == "docusate sodium"
    assert drug_spoken("LeVETiracetam") == "levetiracetam"
    assert drug_spoken("Fluticasone Propionate 110mcg") == "fluticasone propionate"


def test_no_question_is_asked_twice_in_a_build() -> None:
    topic = Topic("dx_primary")
    asked: set[str] = set()
    rng = random.Random(0)
    texts = []
    while (q := new_question(topic, 1, set(), True, "F", {}, rng, asked)) is not None:
        assert q.implicit_en not in asked
        asked.add(q.implicit_en)
        texts.append(q.implicit_en)
    assert len(texts) == len(set(texts)) >= 12  # explicit and fragment variants, then none


def test_the_issues_medication_safety_charts_on_the_demo(demo_store) -> None:
    """The signals the issue found asked nowhere: the duplicate diltiazem (10022880), the
    warfarin-enoxaparin bridge (10039831). (Its vancomycin trough of 21.5, 10014729, was drawn
    on a dose the team then reduced: see the test below.)"""
    con = demo_store.cursor()
    expected = {
        (10022880, 27708593, "2177-03-19"): "duplicate_therapy(diltiazem)",
        (10039831, 26924951, "2116-01-02"): "anticoag_bridge(INR(PT), warfarin, enoxaparin)",
    }
    for (sid, hadm, day), signal in expected.items():
        prof = load_profile(con, sid, hadm, day)
        assert signal in {t.label() for t in safety_topics(prof)}, (sid, signal)
        assert fits("med_safety", prof)


def _topics(con, sid: int, hadm: int, day: str, which) -> set[str]:
    return {t.label() for t in which(load_profile(con, sid, hadm, day))}


def test_a_response_is_a_running_course_measured_after_it_on_the_demo(demo_store) -> None:
    """A physician's rejects of a seed-77 build: antibiotic prophylaxis after CABG, under 48 h
    and stopped days before discharge (22580999, 22342963, 29366372), metronidazole stopped after 2 doses
    (20973395), calcium gluconate 3 weeks before the value (20364112), cefepime stopped 2 weeks
    before (23052851), oral cefpodoxime with one dose before the white count (23488445),
    glucose "falling" on insulin while it rose over the last 5 days (22205327). MRSA pneumonia
    on vancomycin at discharge (28829452) still measures a response."""
    con = demo_store.cursor()
    none_of = {
        (10035185, 22580999, "2120-05-17"): ("cefazolin", "vancomycin"),
        (10022017, 22342963, "2189-09-16"): ("cefazolin",),
        (10018423, 29366372, "2167-05-11"): ("cefazolin", "vancomycin"),
        (10016810, 20973395, "2185-06-21"): ("metronidazole",),
        (10005866, 20364112, "2149-10-25"): ("calcium gluconate",),
        (10020306, 23052851, "2135-02-07"): ("cefepime", "vancomycin"),
        (10020786, 23488445, "2189-06-13"): ("cefpodoxime",),
        (10029291, 22205327, "2123-03-10"): ("insulin", "vancomycin"),
    }
    for (sid, hadm, day), drugs in none_of.items():
        found = _topics(con, sid, hadm, day, response_topics)
        assert not [t for t in found for d in drugs if f", {d})" in t], (hadm, found)
    assert "abx_response(White Blood Cells, vancomycin)" in _topics(
        con, 10021312, 28829452, "2113-09-20", response_topics
    )


def test_a_trend_turned_back_is_not_a_response_on_the_demo(demo_store) -> None:
    """Glucose 324 before insulin, 78-106 a week later, then 148, 177, 195, 189, 239 at
    discharge (22205327): end to end "falling", but the last value turned back."""
    from generation.builder.trends import turned_back
    from generation.builder.vocab import TRENDS
    from physassist.timeline import load_timeline

    tl = load_timeline(demo_store.cursor(), 10029291, 22205327, "2123-03-10")
    first = tl.administrations("insulin").given[0]
    pts = tl.lab("Glucose").confirmed
    base = [p for p in pts if p.time <= first][-1]
    after = [p for p in pts if p.time > first]
    assert base.value > after[-1].value  # falling, end to end
    assert turned_back(base, after, TRENDS["Glucose"])
    assert not turned_back(base, after[:3], TRENDS["Glucose"])  # while it fell


def test_med_safety_skips_what_the_team_already_handled_on_the_demo(demo_store) -> None:
    """A physician's rejects of a seed-77 build: allopurinol 100 mg every other day on dialysis
    (29488258), a vancomycin trough drawn on a dose reduced afterwards (23300884), "raise the
    warfarin" during initiation or after a recent INR above 3 (29374560, 27708593, 22205327),
    metformin blamed for hypoglycaemia on glipizide and insulin (25926192); an INR after
    warfarin was stopped (21255400) is not judged against the warfarin target."""
    con = demo_store.cursor()
    none_of = {
        (10039708, 29488258, "2144-01-21"): "drug_lab_safety(Creatinine, allopurinol)",
        (10014729, 23300884, "2125-03-28"): "drug_lab_safety(Vancomycin, vancomycin)",
        (10016150, 29374560, "2142-05-15"): "drug_lab_safety(INR(PT), warfarin)",
        (10022880, 27708593, "2177-03-19"): "drug_lab_safety(INR(PT), warfarin)",
        (10029291, 22205327, "2123-03-10"): "drug_lab_safety(INR(PT), warfarin)",
        (10009628, 25926192, "2153-09-25"): "drug_lab_safety(Glucose, metformin)",
    }
    for (sid, hadm, day), signal in none_of.items():
        assert signal not in _topics(con, sid, hadm, day, safety_topics), hadm
    ctx = load_profile(con, 10004422, 21255400, "2111-01-25").context
    assert ctx.off_warfarin and not ctx.on_warfarin
