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


#: An outpatient weight of 60 kg (omr charts pounds).
WEIGHT = [
    {
        "subject_id": 1,
        "chartdate": "2150-02-01",
        "seq_num": 1,
        "result_name": "Weight (Lbs)",
        "result_value": "132.3",
    }
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
    """The issue's signals: allopurinol 300 mg a day above its labelled maximum at a clearance
    of about 11 mL/min (creatinine 4.5, 60 kg, 70 y, F), a vancomycin trough of 21.5, two
    diltiazem orders, warfarin bridged by enoxaparin 80 mg twice daily, warfarin with
    amiodarone; none where the chart has no risk."""
    labs = fb.labevents(
        (50912, "2150-03-05 06:00:00", 4.5, 0.5, 1.1),
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
    found = {t.label() for t in safety_topics(_profile(orders, labs, omr=WEIGHT))}
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


# --------------------------------------------------------------- renal dosing and rechecks
# A physician's rejects of the seed-77 medication-safety packet (issue 40): "adjust the dose"
# for doses already in the labelled renal range, rechecks a week out whatever their reason,
# rechecks of stale or unrelated values, turns asking again what an earlier turn answered.


def _renal(drug: str, dose: str, freq: str, per_day: float, creatinine: float, **ctx: bool):
    from generation.builder.interpret import Context

    labs = fb.labevents((50912, "2150-03-05 06:00:00", creatinine, 0.5, 1.1))
    prof = _profile([_rx(1, drug, dose, freq, per_day=per_day)], labs, omr=WEIGHT)
    prof.context = Context(**ctx)
    return prof


def test_cockcroft_gault_from_age_sex_weight_and_creatinine() -> None:
    from generation.builder.renal import clearance, cockcroft_gault

    assert round(cockcroft_gault(72, False, 107, 1.7)) == 59  # the pregabalin patient
    assert round(cockcroft_gault(70, True, 60, 2.0), 1) == 24.8
    assert round(clearance(_renal("Pregabalin", "75", "TID", 3, 2.0))) == 25  # omr pounds
    no_weight = _profile([_rx(1, "Pregabalin", "75", "TID", per_day=3)], [])
    assert clearance(no_weight) is None


def test_a_renal_dose_in_its_labelled_band_is_no_signal() -> None:
    """Levetiracetam 500 mg BID at a clearance < 30 (max 1000 mg/day), famotidine 20 mg daily
    on dialysis (max 20), pregabalin 75 mg TID at about 25-60 (max 300 at 30-60): no
    signal; the same drugs above their band are one, "adjust" (a contraindicated drug:
    "hold"); a drug without a table entry (baclofen) never is."""
    from generation.builder.safety import verdict

    def signals(prof: Profile) -> set[str]:
        return {t.label() for t in safety_topics(prof) if t.lab == "Creatinine"}

    assert signals(_renal("LevETIRAcetam", "500", "BID", 2, 4.6)) == set()
    assert signals(_renal("Famotidine", "20", "DAILY", 1, 9.2, esrd=True)) == set()
    assert signals(_renal("Pregabalin", "75", "TID", 3, 1.3)) == set()  # CrCl ~38
    assert signals(_renal("Baclofen", "20", "TID", 3, 4.6)) == set()
    high = _renal("LevETIRAcetam", "1000", "BID", 2, 4.6)
    assert signals(high) == {"drug_lab_safety(Creatinine, levetiracetam)"}
    on_hd = _renal("Famotidine", "20", "BID", 2, 9.2, esrd=True)
    assert signals(on_hd) == {"drug_lab_safety(Creatinine, famotidine)"}
    from generation.builder.answers import Digest, LabFact

    d = Digest(Topic("drug_lab_safety", lab="Creatinine", drug="famotidine"))
    d.labs = [LabFact("Creatinine", 9.2, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05")]
    assert verdict(d, on_hd) == "adjust" and d.renal.on_dialysis and d.renal.maximum == 20
    metformin = _renal("MetFORMIN", "500", "BID", 2, 4.6)
    d = Digest(Topic("drug_lab_safety", lab="Creatinine", drug="metformin"))
    d.labs = [LabFact("Creatinine", 4.6, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05")]
    assert verdict(d, metformin) == "hold"


def test_a_renal_answer_states_the_band_and_no_creatinine_recheck_on_dialysis() -> None:
    from generation.builder.answers import Digest, LabFact, MedFact
    from generation.builder.interpret import Context
    from generation.builder.renal import RenalDose
    from generation.builder.safety import answer_safety, safety_items

    d = Digest(Topic("drug_lab_safety", lab="Creatinine", drug="famotidine"))
    d.labs = [LabFact("Creatinine", 9.2, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05")]
    d.med = MedFact("famotidine", "Famotidine", 20.0, "mg", "PO", "2150-03-02")
    d.context, d.verdict = Context(esrd=True), "adjust"
    d.renal = RenalDose("famotidine", 40.0, 20.0, "mg", None, "BID")
    text = answer_safety(d, "en")
    assert "40 mg a day" in text and "at most 20 mg" in text and "dialysis" in text
    assert "recheck" not in text and "clearance of about" not in text
    assert not [i for i in safety_items(d) if "recheck" in i.en]
    d.context, d.renal = Context(), RenalDose("famotidine", 40.0, 20.0, "mg", 22.0, "BID")
    assert "clearance of about 22 mL/min" in answer_safety(d, "en")
    assert [i for i in safety_items(d) if "recheck" in i.en]


def test_a_recheck_is_dated_by_its_reason() -> None:
    """An INR during an enoxaparin bridge within 1-3 days, potassium in ESRD with the next
    dialysis; the rubric accepts the window, not one day the physician never asked for."""
    from generation.builder.followup import reason
    from generation.builder.interpret import Context
    from generation.builder.topics import calls, candidates

    labs = fb.labevents((51237, "2150-03-06 06:00:00", 1.7, 0.9, 1.1))
    orders = [_rx(5, "Warfarin", "5", "DAILY"), _rx(6, "Enoxaparin Sodium", "80", "BID", per_day=2)]
    prof = _profile(orders, labs)
    prof.context = Context(on_warfarin=True)
    assert reason(prof, "INR(PT)") == "inr_bridge"
    topic = next(
        t
        for t in candidates("med_safety", "Write/Update", prof)
        if t.kind == "order_lab_recheck" and t.lab == "INR(PT)"
    )
    assert topic.when == "inr_bridge"
    assert calls(topic, prof)[0][1]["target_date"] == "2150-03-08"  # discharge + 2 days
    alone = _profile([_rx(5, "Warfarin", "5", "DAILY")], labs)
    alone.context = Context(on_warfarin=True)
    assert reason(alone, "INR(PT)") == "inr_warfarin"
    k = _profile([], fb.labevents((50971, "2150-03-06 06:00:00", 5.5, 3.3, 5.1)))
    k.context = Context(esrd=True)
    assert reason(k, "Potassium") == "dialysis" and reason(_profile([], []), "Potassium") == (
        "follow_up"
    )


def test_no_recheck_of_a_stale_or_irrelevant_value() -> None:
    """A lone neutrophil % four days old, a vancomycin level after vancomycin stopped, a
    creatinine in ESRD, an albumin in a session about warfarin: no repeat is relevant."""
    from generation.builder.followup import problem_labs, relevant
    from generation.builder.interpret import Context

    items = ITEMS + [{"itemid": 51256, "label": "Neutrophils", "fluid": "Blood"}]
    items += [{"itemid": 50862, "label": "Albumin", "fluid": "Blood"}]
    labs = fb.labevents(
        (51256, "2150-03-02 06:00:00", 76.8, 34, 71),
        (51009, "2150-03-05 06:00:00", 5.2, 10, 20),
        (50912, "2150-03-06 06:00:00", 9.2, 0.5, 1.1),
        (50862, "2150-03-06 06:00:00", 3.0, 3.5, 5.2),
        (50971, "2150-03-06 06:00:00", 5.5, 3.3, 5.1),
    )
    stopped = _rx(2, "Vancomycin", "1250", "Q12H")
    stopped[0]["stoptime"] = "2150-03-04 16:00:00"
    prof = _profile([stopped], labs, d_labitems=items)
    prof.context = Context(esrd=True)
    assert not relevant(prof, "Neutrophils")  # stale
    assert not relevant(prof, "Vancomycin")  # the drug was stopped
    assert not relevant(prof, "Creatinine")  # dialysis sets it
    assert relevant(prof, "Potassium") and relevant(prof, "Albumin")
    warfarin = problem_labs([Topic("anticoag_bridge", lab="INR(PT)", drug="warfarin")], [])
    assert not relevant(prof, "Albumin", warfarin)


def test_no_turn_asks_again_what_an_earlier_turn_answered() -> None:
    from generation.builder.topics import repeats

    creat = Topic("lab_latest", lab="Creatinine")
    dup = Topic("duplicate_therapy", drug="metoprolol")
    assert repeats([creat, dup], Topic("lab_trend", lab="Creatinine"))
    bridge = Topic("anticoag_bridge", lab="INR(PT)", drug="warfarin", drug2="enoxaparin")
    assert repeats([bridge], Topic("med_current", drug="enoxaparin"))
    assert repeats([bridge], Topic("lab_trend", lab="INR(PT)"))
    assert not repeats([creat], Topic("drug_lab_safety", lab="Creatinine", drug="allopurinol"))
    assert not repeats([dup], Topic("med_and_admin", drug="metoprolol"))


def test_warfarin_starts_with_its_course_and_its_inr_is_flagged_against_the_target() -> None:
    """Daily ONCE warfarin orders are one course (its start is the first); a flagged INR
    on warfarin is subtherapeutic, not "outside its reference range"."""
    from generation.builder.interpret import Context
    from generation.builder.signals import warfarin_start
    from generation.builder.topics import calls

    def once(pid: int, day: str) -> tuple[dict, dict]:
        o = _rx(pid, "Warfarin", "7.5", "ONCE", start=f"{day} 16:00:00")
        o[0]["stoptime"] = f"{day} 17:00:00"
        return o

    orders = [once(1, "2150-03-03"), once(2, "2150-03-04"), once(3, "2150-03-05")]
    old = _rx(9, "Warfarin", "5", "DAILY", start="2150-02-20 16:00:00")  # an earlier course
    old[0]["admittime"] = None
    labs = fb.labevents((51237, "2150-03-06 06:00:00", 1.7, 0.9, 1.1))
    prof = _profile(orders, labs)
    assert str(warfarin_start(prof.timeline)) == "2150-03-03 16:00:00"
    prof.context = Context(on_warfarin=True)
    detail = calls(Topic("flag_abnormal", lab="INR(PT)"), prof)[0][1]["detail"]
    assert detail.startswith("Latest INR(PT) is subtherapeutic on warfarin (target 2-3)")
