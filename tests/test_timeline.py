"""The clinical timeline at the cutoff (physassist.timeline) on hand-written records, and the
builder's record check and trend rule built on it."""

from __future__ import annotations

import subprocess
import sys

import fixtures_builder as fb

from generation.builder.answers import Digest, LabFact, judge_trend
from generation.builder.recheck import record_check
from generation.builder.topics import Topic
from physassist.timeline import LabPoint

ADMISSION = {"subject_id": 1, "hadm_id": 2, "admittime": "2150-03-01 07:00:00",
             "dischtime": "2150-03-06 12:00:00", "discharge_location": "HOME"}


def _rx(pid: int, drug: str, dose: str, start: str, stop: str | None, freq: str,
        sliding: str | None = None) -> tuple[dict, dict]:
    return ({"subject_id": 1, "hadm_id": 2, "pharmacy_id": pid, "drug": drug, "dose_val_rx": dose,
             "dose_unit_rx": "mg", "route": "PO", "starttime": start, "stoptime": stop},
            {"subject_id": 1, "hadm_id": 2, "pharmacy_id": pid, "frequency": freq,
             "sliding_scale": sliding})


def _record(**extra: list[dict]) -> dict[str, list[dict]]:
    orders = [
        _rx(1, "Warfarin", "2", "2150-03-01 16:00:00", "2150-03-03 13:00:00", "DAILY"),
        _rx(2, "Metoprolol Tartrate", "25", "2150-03-01 09:00:00", "2150-03-06 16:00:00", "BID"),
        _rx(6, "Lisinopril", "10", "2150-03-01 09:00:00", "2150-03-06 09:00:00", "DAILY"),
        _rx(3, "Insulin", "0", "2150-03-01 09:00:00", "2150-03-06 11:00:00", "ASDIR", "Y"),
        _rx(4, "Acetaminophen", "650", "2150-03-01 09:00:00", None, "Q6H:PRN"),
        _rx(5, "Furosemide", "40", "2150-03-05 09:00:00", "2150-03-05 09:01:00", "ONCE"),
    ]
    rows = {"admissions": [ADMISSION], "prescriptions": [o for o, _ in orders],
            "pharmacy": [p for _, p in orders]}
    rows.update(extra)
    return rows


def test_current_orders_leave_out_stopped_sliding_scale_prn_and_one_time() -> None:
    tl = fb.timeline_of(_record())
    assert tl.current_order("warfarin") is None  # stopped three days before discharge
    metoprolol = tl.current_order("metoprolol")  # closed by pharmacy after discharge
    assert metoprolol is not None and metoprolol.dose == 25.0
    assert tl.current_order("lisinopril") is None  # stopped three hours before discharge
    for word in ("insulin", "acetaminophen", "furosemide"):
        assert tl.current_order(word) is None, word
    assert [o.word for o in tl.orders_for("insulin")] == ["insulin"]


def test_labs_prefer_chemistry_over_blood_gas_and_merge_one_time() -> None:
    items = [{"itemid": 50931, "label": "Glucose", "fluid": "Blood", "category": "Chemistry"},
             {"itemid": 50809, "label": "Glucose", "fluid": "Blood", "category": "Blood Gas"},
             {"itemid": 50811, "label": "Hemoglobin", "fluid": "Blood", "category": "Blood Gas"}]
    values = [(50931, "2150-03-02 06:00:00", 140.0), (50931, "2150-03-04 06:00:00", 114.0),
              (50809, "2150-03-05 06:00:00", 173.0), (50931, "2150-03-02 06:00:00", 140.0),
              (50811, "2150-03-05 06:00:00", 9.1)]
    labs = [{"labevent_id": i, "subject_id": 1, "hadm_id": 2, "itemid": item, "charttime": t,
             "valuenum": v} for i, (item, t, v) in enumerate(values)]
    tl = fb.timeline_of(_record(d_labitems=items, labevents=labs))
    glucose = tl.lab("Glucose")
    assert glucose is not None and glucose.itemids == (50931,)
    assert [p.value for p in glucose.points] == [140.0, 114.0]  # blood gas 173 left out
    assert glucose.peak.value == 140.0 and glucose.nadir.value == 114.0
    hemoglobin = tl.lab("Hemoglobin")  # only blood gas values: they are the concept
    assert hemoglobin is not None and hemoglobin.latest.value == 9.1


def test_empty_emar_event_is_unknown_and_icu_overlap_is_incomplete() -> None:
    events = [{"subject_id": 1, "hadm_id": 2, "emar_id": f"e{i}", "medication": "Metoprolol",
               "charttime": f"2150-03-0{i + 2} 09:00:00", "event_txt": text}
              for i, text in enumerate(["Administered", None, "Not Given", "Held"])]
    tl = fb.timeline_of(_record(emar=events))
    admins = tl.administrations("metoprolol")
    assert (len(admins.given), admins.not_given, admins.unknown) == (1, 2, 1)
    assert admins.complete
    icu = [{"subject_id": 1, "hadm_id": 2, "stay_id": 9, "intime": "2150-03-02 00:00:00",
            "outtime": "2150-03-03 00:00:00"}]
    assert not fb.timeline_of(_record(emar=events, icustays=icu)).administrations(
        "metoprolol").complete


def test_course_and_cultures() -> None:
    died = {**ADMISSION, "discharge_location": "DIED", "hospital_expire_flag": 1}
    hospice = {**ADMISSION, "discharge_location": "HOSPICE-MEDICAL FACILITY"}
    assert fb.timeline_of({"admissions": [died]}).course == "died"
    assert fb.timeline_of({"admissions": [hospice]}).end_of_life
    assert fb.timeline_of({"admissions": [ADMISSION]}).course == "discharged"
    micro = [{"microevent_id": i, "subject_id": 1, "hadm_id": 2, "micro_specimen_id": spec,
              "spec_type_desc": kind, "charttime": t, "org_name": org}
             for i, (spec, kind, t, org) in enumerate([
                 (1, "URINE", "2150-03-02 10:00:00", "PSEUDOMONAS AERUGINOSA"),
                 (1, "URINE", "2150-03-02 10:00:00", "YEAST"),
                 (2, "BLOOD CULTURE", "2150-03-05 10:00:00", None)])]
    tl = fb.timeline_of(_record(microbiologyevents=micro))
    assert [c.specimen for c in tl.cultures] == ["BLOOD CULTURE", "URINE"]
    assert tl.positive_cultures[0].organisms == ("PSEUDOMONAS AERUGINOSA", "YEAST")


def _points(*values: float) -> list[LabPoint]:
    import datetime as dt
    return [LabPoint(dt.datetime(2150, 3, 1) + dt.timedelta(days=i), v, "", None, None, 1)
            for i, v in enumerate(values)]


def test_trends_use_absolute_changes_and_name_the_turn() -> None:
    trend, ref, anchor = judge_trend(_points(67, 90, 127, 110, 102), 10.0)  # BUN
    assert (trend, ref.value, anchor) == ("falling", 127, "peak")
    assert judge_trend(_points(1.0, 1.5, 1.2, 1.2, 1.2), 0.5)[0] == "stable"  # INR
    assert judge_trend(_points(135, 139, 146), 4.0)[:1] == ("rising",)  # sodium
    assert judge_trend(_points(6.9, 6.7), 1.0)[0] == "stable"  # hemoglobin


def test_record_check_rejects_what_the_record_contradicts() -> None:
    items = [{"itemid": 50912, "label": "Creatinine", "fluid": "Blood", "category": "Chemistry"}]
    labs = [{"labevent_id": 1, "subject_id": 1, "hadm_id": 2, "itemid": 50912,
             "charttime": "2150-03-05 06:00:00", "valuenum": 1.9}]
    tl = fb.timeline_of(_record(d_labitems=items, labevents=labs))
    d = Digest(Topic("lab_latest", lab="Creatinine"))
    d.labs = [LabFact("Creatinine", 1.9, "mg/dL", "high", "2150-03-05 06:00", "2150-03-05")]
    assert record_check(d, tl) is None
    d.labs = [LabFact("Creatinine", 1.2, "mg/dL", "high", "2150-03-04 06:00", "2150-03-04")]
    assert record_check(d, tl) == "lab_latest"
    assert record_check(Digest(Topic("continue_med", drug="warfarin")), tl) == "order_not_current"
    died = fb.timeline_of({"admissions": [{**ADMISSION, "deathtime": "2150-03-06 11:00:00"}]})
    assert record_check(d, died) == "end_of_life"


def test_timeline_never_imports_inspect() -> None:
    code = "import sys, physassist.timeline; print('inspect_ai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
