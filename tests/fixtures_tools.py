"""Shared fixtures for the tool tests: the MIMIC-IV demo store and a tiny cohort built here.

The tiny cohort (two subjects, MIMIC-IV layout) is written by this module, so every value a
tool returns from it is known exactly; it has rows before, on and after the session's
``current_date`` in every time-bearing table, notes, ICU vitals, a held dose, a culture with
susceptibilities, and a second subject that must never leak.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from fixtures_store import process_store_cache
from fixtures_store import require_demo as _require_demo

from physassist.ehr.sources import sample_cohort_dir
from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import ToolContext

SAMPLE = sample_cohort_dir()

SID, OTHER = 1001, 1002
ANCHOR, EARLIER, FUTURE = 5001, 5000, 5002
CURRENT_DATE = "2150-01-10"

DS2 = """Name:  ___                     Unit No:   ___
 
Chief Complaint:
palpitations
 
Discharge Disposition:
Home With Service
 
Discharge Condition:
Mental Status: Clear and coherent.
Level of Consciousness: Alert and interactive.
 
Discharge Instructions:
Dear Mr. ___,

You were admitted for a fast heart rhythm called atrial fibrillation.
Please take apixaban 5 mg twice daily.
 
Followup Instructions:
Cardiology clinic in 2 weeks.
"""

TINY: dict[str, tuple[str, list[tuple]]] = {
    "hosp/patients": (
        "subject_id,gender,anchor_age,anchor_year,anchor_year_group,dod",
        [
            (SID, "M", 71, 2150, "2017 - 2019", "2150-05-01"),
            (OTHER, "F", 50, 2150, "2017 - 2019", ""),
        ],
    ),
    "hosp/admissions": (
        "subject_id,hadm_id,admittime,dischtime,admission_type,admission_location,discharge_location,hospital_expire_flag",
        [
            (
                SID,
                EARLIER,
                "2149-06-01 08:00:00",
                "2149-06-05 12:00:00",
                "URGENT",
                "EMERGENCY ROOM",
                "HOME",
                0,
            ),
            (
                SID,
                ANCHOR,
                "2150-01-05 08:00:00",
                "2150-01-10 14:00:00",
                "EW EMER.",
                "EMERGENCY ROOM",
                "HOME HEALTH CARE",
                0,
            ),
            (
                SID,
                FUTURE,
                "2150-03-01 09:00:00",
                "2150-03-04 11:00:00",
                "EW EMER.",
                "EMERGENCY ROOM",
                "SKILLED NURSING FACILITY",
                0,
            ),
            (
                OTHER,
                6001,
                "2150-01-03 08:00:00",
                "2150-01-08 08:00:00",
                "ELECTIVE",
                "PHYSICIAN REFERRAL",
                "HOME",
                0,
            ),
        ],
    ),
    "hosp/d_icd_diagnoses": (
        "icd_code,icd_version,long_title",
        [
            ("I10", 10, "Essential (primary) hypertension"),
            ("E119", 10, "Type 2 diabetes mellitus without complications"),
            ("I4891", 10, "Unspecified atrial fibrillation"),
            ("N179", 10, "Acute kidney failure, unspecified"),
            ("J189", 10, "Pneumonia, unspecified organism"),
        ],
    ),
    "hosp/diagnoses_icd": (
        "subject_id,hadm_id,seq_num,icd_code,icd_version",
        [
            (SID, EARLIER, 1, "I10", 10),
            (SID, EARLIER, 2, "E119", 10),
            (SID, ANCHOR, 1, "I4891", 10),
            (SID, ANCHOR, 2, "N179", 10),
            (SID, ANCHOR, 3, "I10", 10),
            (SID, FUTURE, 1, "J189", 10),
            (OTHER, 6001, 1, "I10", 10),
        ],
    ),
    "hosp/d_labitems": (
        "itemid,label,fluid,category",
        [
            (50912, "Creatinine", "Blood", "Chemistry"),
            (51082, "Creatinine, Urine", "Urine", "Chemistry"),
            (51301, "White Blood Cells", "Blood", "Hematology"),
            (51755, "WBC Count", "Other Body Fluid", "Hematology"),
            (50971, "Potassium", "Blood", "Chemistry"),
            (50863, "Alkaline Phosphatase", "Blood", "Chemistry"),
            (51237, "INR(PT)", "Blood", "Hematology"),
            (50931, "Glucose", "Blood", "Chemistry"),
        ],
    ),
    "hosp/labevents": (
        "labevent_id,subject_id,hadm_id,itemid,charttime,value,valuenum,valueuom,ref_range_lower,ref_range_upper,flag,comments",
        [
            (1, SID, "", 50912, "2149-12-01 09:00:00", "1.0", 1.0, "mg/dL", 0.5, 1.2, "", ""),
            (2, SID, ANCHOR, 50912, "2150-01-06 06:00:00", "1.1", 1.1, "mg/dL", 0.5, 1.2, "", ""),
            (
                3,
                SID,
                ANCHOR,
                50912,
                "2150-01-08 06:00:00",
                "1.4",
                1.4,
                "mg/dL",
                0.5,
                1.2,
                "abnormal",
                "",
            ),
            (
                4,
                SID,
                ANCHOR,
                50912,
                "2150-01-10 05:00:00",
                "1.6",
                1.6,
                "mg/dL",
                0.5,
                1.2,
                "abnormal",
                "",
            ),
            (
                5,
                SID,
                FUTURE,
                50912,
                "2150-03-02 06:00:00",
                "2.0",
                2.0,
                "mg/dL",
                0.5,
                1.2,
                "abnormal",
                "",
            ),
            (6, SID, ANCHOR, 51082, "2150-01-07 10:00:00", "80", 80.0, "mg/dL", "", "", "", ""),
            (
                7,
                SID,
                ANCHOR,
                51301,
                "2150-01-06 06:00:00",
                "12.5",
                12.5,
                "K/uL",
                4.0,
                11.0,
                "abnormal",
                "",
            ),
            (8, SID, ANCHOR, 51301, "2150-01-09 06:00:00", "9.0", 9.0, "K/uL", 4.0, 11.0, "", ""),
            (
                9,
                SID,
                ANCHOR,
                50971,
                "2150-01-06 06:00:00",
                "5.9",
                5.9,
                "mEq/L",
                3.3,
                5.1,
                "abnormal",
                "HEMOLYZED",
            ),
            (
                10,
                SID,
                ANCHOR,
                50863,
                "2150-01-06 06:00:00",
                "90",
                90.0,
                "IU/L",
                35.0,
                105.0,
                "",
                "",
            ),
            (
                11,
                SID,
                ANCHOR,
                51237,
                "2150-01-07 06:00:00",
                "2.5",
                2.5,
                "",
                0.9,
                1.1,
                "abnormal",
                "",
            ),
            *[
                (
                    100 + i,
                    SID,
                    ANCHOR,
                    50931,
                    f"2150-01-0{5 + i // 8} {i % 8 + 10:02d}:00:00",
                    str(100 + i),
                    100.0 + i,
                    "mg/dL",
                    70.0,
                    100.0,
                    "abnormal",
                    "",
                )
                for i in range(25)
            ],
            (
                200,
                OTHER,
                6001,
                50912,
                "2150-01-06 06:00:00",
                "3.0",
                3.0,
                "mg/dL",
                0.5,
                1.2,
                "abnormal",
                "",
            ),
        ],
    ),
    "hosp/prescriptions": (
        "subject_id,hadm_id,pharmacy_id,poe_id,poe_seq,starttime,stoptime,drug_type,drug,dose_val_rx,dose_unit_rx,route",
        [
            (
                SID,
                ANCHOR,
                11,
                "1001-11",
                11,
                "2150-01-05 10:00:00",
                "2150-01-09 10:00:00",
                "MAIN",
                "Apixaban",
                "5",
                "mg",
                "PO",
            ),
            (
                SID,
                ANCHOR,
                12,
                "1001-12",
                12,
                "2150-01-05 10:00:00",
                "2150-01-20 10:00:00",
                "MAIN",
                "Metoprolol Tartrate",
                "25",
                "mg",
                "PO",
            ),
            (
                SID,
                ANCHOR,
                13,
                "1001-13",
                13,
                "2150-01-06 08:00:00",
                "2150-01-08 08:00:00",
                "MAIN",
                "Furosemide",
                "40",
                "mg",
                "IV",
            ),
            (
                SID,
                ANCHOR,
                14,
                "1001-14",
                14,
                "2150-01-06 08:00:00",
                "",
                "MAIN",
                "Heparin (Porcine)",
                "5000",
                "UNIT",
                "SC",
            ),
            (
                SID,
                FUTURE,
                15,
                "1001-15",
                15,
                "2150-03-01 12:00:00",
                "2150-03-04 10:00:00",
                "MAIN",
                "Amoxicillin",
                "500",
                "mg",
                "PO",
            ),
            (
                OTHER,
                6001,
                21,
                "1002-21",
                21,
                "2150-01-04 10:00:00",
                "2150-01-07 10:00:00",
                "MAIN",
                "Apixaban",
                "2.5",
                "mg",
                "PO",
            ),
        ],
    ),
    "hosp/pharmacy": (
        "subject_id,hadm_id,pharmacy_id,status,frequency",
        [
            (SID, ANCHOR, 11, "Discontinued", "BID"),
            (SID, ANCHOR, 12, "Discontinued via patient discharge", "BID"),
            (SID, ANCHOR, 13, "Expired", "Q12H"),
            (SID, ANCHOR, 14, "Active", "Q8H"),
            (SID, FUTURE, 15, "Expired", "TID"),
        ],
    ),
    "hosp/emar": (
        "subject_id,hadm_id,emar_id,emar_seq,charttime,medication,event_txt",
        [
            (SID, ANCHOR, "1001-1", 1, "2150-01-06 09:00:00", "Apixaban", "Administered"),
            (SID, ANCHOR, "1001-2", 2, "2150-01-07 09:00:00", "Apixaban", "Not Given"),
            (SID, ANCHOR, "1001-3", 3, "2150-01-07 09:05:00", "Metoprolol Tartrate", "Hold Dose"),
            (SID, FUTURE, "1001-4", 4, "2150-03-02 09:00:00", "Amoxicillin", "Administered"),
        ],
    ),
    "hosp/emar_detail": (
        "subject_id,emar_id,emar_seq,parent_field_ordinal,dose_given,dose_given_unit,route",
        [
            (SID, "1001-1", 1, "", "", "", ""),
            (SID, "1001-1", 1, "1.1", "5", "mg", "PO"),
            (SID, "1001-3", 3, "1.1", "", "", "PO"),
        ],
    ),
    "hosp/microbiologyevents": (
        "microevent_id,subject_id,hadm_id,micro_specimen_id,chartdate,charttime,spec_type_desc,test_seq,test_itemid,test_name,org_name,isolate_num,ab_name,dilution_text,interpretation,comments",
        [
            (
                1,
                SID,
                ANCHOR,
                9001,
                "2150-01-06 00:00:00",
                "2150-01-06 08:00:00",
                "BLOOD CULTURE",
                1,
                90201,
                "Blood Culture, Routine",
                "ESCHERICHIA COLI",
                1,
                "CEFTRIAXONE",
                "<=1",
                "S",
                "",
            ),
            (
                2,
                SID,
                ANCHOR,
                9001,
                "2150-01-06 00:00:00",
                "2150-01-06 08:00:00",
                "BLOOD CULTURE",
                1,
                90201,
                "Blood Culture, Routine",
                "ESCHERICHIA COLI",
                1,
                "AMPICILLIN",
                ">=32",
                "R",
                "",
            ),
            (
                3,
                SID,
                ANCHOR,
                9002,
                "2150-01-07 00:00:00",
                "2150-01-07 10:00:00",
                "URINE",
                1,
                90039,
                "URINE CULTURE",
                "",
                "",
                "",
                "",
                "",
                "NO GROWTH.",
            ),
            (
                4,
                SID,
                FUTURE,
                9003,
                "2150-03-02 00:00:00",
                "2150-03-02 07:00:00",
                "SPUTUM",
                1,
                90042,
                "RESPIRATORY CULTURE",
                "STREPTOCOCCUS PNEUMONIAE",
                1,
                "",
                "",
                "",
                "",
            ),
        ],
    ),
    "hosp/omr": (
        "subject_id,chartdate,seq_num,result_name,result_value",
        [
            (SID, "2149-12-01", 1, "Blood Pressure", "130/80"),
            (SID, "2149-12-01", 1, "Weight (Lbs)", "180"),
            (SID, "2150-02-01", 1, "Blood Pressure", "150/90"),
        ],
    ),
    "icu/icustays": (
        "subject_id,hadm_id,stay_id,intime,outtime",
        [
            (SID, EARLIER, 7000, "2149-06-02 00:00:00", "2149-06-03 00:00:00"),
            (SID, ANCHOR, 7001, "2150-01-06 00:00:00", "2150-01-08 00:00:00"),
            (SID, FUTURE, 7002, "2150-03-02 00:00:00", "2150-03-03 00:00:00"),
        ],
    ),
    "icu/d_items": (
        "itemid,label,abbreviation,linksto,category,unitname",
        [
            (220045, "Heart Rate", "HR", "chartevents", "Routine Vital Signs", "bpm"),
            (
                220179,
                "Non Invasive Blood Pressure systolic",
                "NBPs",
                "chartevents",
                "Routine Vital Signs",
                "mmHg",
            ),
            (220277, "O2 saturation pulseoxymetry", "SpO2", "chartevents", "Respiratory", "%"),
            (225152, "Heparin Sodium", "Heparin Sodium", "inputevents", "Medications", "units"),
            (225798, "Vancomycin", "Vancomycin", "inputevents", "Antibiotics", "dose"),
        ],
    ),
    # ICU doses: a vancomycin push in the anchor's ICU stay, a heparin drip still running at the
    # cutoff (its end and amount are charted later), a push in the future admission.
    "icu/inputevents": (
        "subject_id,hadm_id,stay_id,starttime,endtime,itemid,amount,amountuom,rate,rateuom,"
        "orderid,linkorderid,ordercategoryname,ordercategorydescription,statusdescription",
        [
            (
                SID,
                ANCHOR,
                7001,
                "2150-01-07 20:00:00",
                "2150-01-07 20:01:00",
                225798,
                1,
                "dose",
                "",
                "",
                11,
                11,
                "08-Antibiotics (IV)",
                "Drug Push",
                "FinishedRunning",
            ),
            (
                SID,
                ANCHOR,
                7001,
                "2150-01-10 22:00:00",
                "2150-01-11 02:00:00",
                225152,
                4000,
                "units",
                1000,
                "units/hour",
                12,
                12,
                "01-Drips",
                "Continuous Med",
                "FinishedRunning",
            ),
            (
                SID,
                FUTURE,
                7002,
                "2150-03-02 08:00:00",
                "2150-03-02 08:01:00",
                225798,
                1,
                "dose",
                "",
                "",
                13,
                13,
                "08-Antibiotics (IV)",
                "Drug Push",
                "FinishedRunning",
            ),
        ],
    ),
    "icu/chartevents": (
        "subject_id,hadm_id,stay_id,charttime,itemid,value,valuenum,valueuom",
        [
            (SID, EARLIER, 7000, "2149-06-02 10:00:00", 220045, "70", 70, "bpm"),
            (SID, ANCHOR, 7001, "2150-01-06 10:00:00", 220045, "88", 88, "bpm"),
            (SID, ANCHOR, 7001, "2150-01-07 10:00:00", 220045, "95", 95, "bpm"),
            (SID, ANCHOR, 7001, "2150-01-06 10:00:00", 220179, "140", 140, "mmHg"),
            (SID, ANCHOR, 7001, "2150-01-06 10:00:00", 220277, "95", 95, "%"),
            (SID, FUTURE, 7002, "2150-03-02 10:00:00", 220045, "110", 110, "bpm"),
        ],
    ),
    "note/discharge": (
        "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text",
        [
            (
                "1001-DS-1",
                SID,
                EARLIER,
                "DS",
                1,
                "2149-06-05 00:00:00",
                "",
                "Discharge Instructions:\nTake lisinopril.\n\nFollowup Instructions:\nPCP in 1 "
                "week.\n",
            ),
            ("1001-DS-2", SID, ANCHOR, "DS", 2, "2150-01-10 00:00:00", "", DS2),
            (
                "1001-DS-3",
                SID,
                FUTURE,
                "DS",
                3,
                "2150-03-04 00:00:00",
                "",
                "Discharge Instructions:\nFinish amoxicillin.\n",
            ),
        ],
    ),
    "note/radiology": (
        "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text",
        [
            (
                "1001-RR-0",
                SID,
                "",
                "RR",
                0,
                "2149-12-01 12:00:00",
                "",
                "EXAMINATION:  MR HEAD\n\nIMPRESSION: Normal.",
            ),
            (
                "1001-RR-1",
                SID,
                ANCHOR,
                "RR",
                1,
                "2150-01-06 11:00:00",
                "",
                "EXAMINATION:  CHEST (PA AND LAT)\n\nINDICATION: dyspnea\n\nIMPRESSION: No acute "
                "cardiopulmonary process.",
            ),
            (
                "1001-RR-2",
                SID,
                ANCHOR,
                "RR",
                2,
                "2150-01-07 11:00:00",
                "",
                "EXAMINATION:  CT HEAD W/O CONTRAST\n\nIMPRESSION: No hemorrhage.",
            ),
            (
                "1001-RR-3",
                SID,
                FUTURE,
                "RR",
                3,
                "2150-03-02 11:00:00",
                "",
                "EXAMINATION:  CHEST (PORTABLE AP)\n\nIMPRESSION: Right lower lobe pneumonia.",
            ),
        ],
    ),
}


def write_tiny_cohort(root: Path) -> Path:
    """Write the tiny cohort as MIMIC-IV CSVs under ``root`` and return it."""
    for rel, (header, records) in TINY.items():
        path = root / f"{rel}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", newline="") as fh:
            writer = csv.writer(fh)
            writer.writerow(header.split(","))
            writer.writerows(records)
    return root


# one store per source and process: test modules bind these fixtures under their own names,
# which pytest treats as separate fixtures, so the opened stores are shared here instead
_STORES: dict[str, EHRStore] = {}


def _shared_store(key: str, source: Path, factory: pytest.TempPathFactory) -> EHRStore:
    if key not in _STORES:  # built in the process's store cache, shared with fixtures_store
        _STORES[key] = open_store(source, cache_dir=process_store_cache(factory))
    return _STORES[key]


@pytest.fixture(scope="session")
def tiny_store(tmp_path_factory: pytest.TempPathFactory) -> EHRStore:
    if "tiny" not in _STORES:
        root = write_tiny_cohort(tmp_path_factory.mktemp("tiny_cohort"))
        _shared_store("tiny", root, tmp_path_factory)
    return _STORES["tiny"]


@pytest.fixture(scope="session")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> EHRStore:
    return _shared_store("demo", _require_demo(), tmp_path_factory)


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> EHRStore:
    return _shared_store("sample", SAMPLE, tmp_path_factory)


def tiny_ctx(store: EHRStore, semantics: str = "strict", **kw) -> ToolContext:
    """A session on the tiny cohort: subject 1001, anchor admission 5001, day 2150-01-10."""
    fields = {
        "subject_id": SID,
        "hadm_id": ANCHOR,
        "current_date": CURRENT_DATE,
        "semantics": semantics,
        "session_id": "tiny-session",
        **kw,
    }
    return ToolContext(store=store, **fields)


def entries(bundle: dict) -> list[dict]:
    """The match entries of a searchset (outcome entries left out)."""
    assert bundle["resourceType"] == "Bundle", bundle
    return [
        e["resource"]
        for e in bundle.get("entry", [])
        if e["resource"]["resourceType"] != "OperationOutcome"
    ]


def hint(bundle: dict) -> str:
    """The diagnostics of a strict searchset's outcome entry ('' if none)."""
    return " ".join(
        i["diagnostics"]
        for e in bundle.get("entry", [])
        if e["resource"]["resourceType"] == "OperationOutcome"
        for i in e["resource"]["issue"]
    )
