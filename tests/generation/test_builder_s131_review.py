"""What a blind physician rejected in the seed-131 demo build (issue 40), on hand-written
records: a urea nitrogen within its own course called spurious because its draw was a line
sample; a culture the laboratory called contaminated presented as a pathogen (and pending blood
cultures left out); a severe thrombocytopenia in myelodysplastic syndrome sent to "look for the
cause"; a same-day trend read "between 2114-06-20 and 2114-06-20"."""

from __future__ import annotations

import datetime as dt

import fixtures_builder as fb
import fixtures_record as fr

from generation.builder.answers import Digest, LabFact, course
from generation.builder.gold import answer, digest, rubric
from generation.builder.interpret import Context
from generation.builder.profile import LabSummary, Profile
from generation.builder.topics import Topic
from generation.builder.trends import Trend

ADMISSION = {**fb.ADMISSION, "dischtime": "2150-03-04 12:00:00"}
ITEMS = [
    {"itemid": 50931, "label": "Glucose", "fluid": "Blood", "category": "Chemistry"},
    {"itemid": 50882, "label": "Bicarbonate", "fluid": "Blood", "category": "Chemistry"},
    {"itemid": 50971, "label": "Potassium", "fluid": "Blood", "category": "Chemistry"},
    {"itemid": 51006, "label": "Urea Nitrogen", "fluid": "Blood", "category": "Chemistry"},
]
LINE_SAMPLE = dt.datetime(2150, 3, 2, 23, 18)
#: 10007928 / 20338077 on 2129-04-06 23:18: glucose 942, bicarbonate 46 and potassium 2.3 from
#: a line running NaHCO3 in D5W; that draw's urea nitrogen of 8 is one its course reaches again.
DRAWS = [
    ("2150-03-01 08:00:00", None, None, None, 16),
    ("2150-03-02 06:00:00", None, None, None, 14),
    ("2150-03-02 17:15:00", 83, 10, 4.1, 10),
    ("2150-03-02 23:18:00", 942, 46, 2.3, 8),
    ("2150-03-03 01:00:00", 178, 23, 3.3, 11),
    ("2150-03-03 11:42:00", 112, 24, 3.9, 9),
    ("2150-03-03 20:00:00", None, None, None, 8),
    ("2150-03-04 06:00:00", None, None, None, 8),
]


def _labs(bun: list[float | None]) -> dict[str, list[dict]]:
    rows = [
        (item, t, v, lo, hi)
        for (t, *values), urea in zip(DRAWS, bun, strict=True)
        for item, v, lo, hi in zip(
            (50931, 50882, 50971, 51006),
            (*values[:3], urea),
            (70, 22, 3.5, 6),
            (100, 32, 5.1, 20),
            strict=True,
        )
        if v is not None
    ]
    return {"admissions": [ADMISSION], "d_labitems": ITEMS, "labevents": fb.labevents(*rows)}


def test_a_value_within_its_course_is_never_spurious() -> None:
    """The BUN of 8 of the line sample is not suspect (its course reaches 8 twice more); the
    glucose, bicarbonate and potassium of that draw still are; a BUN the draw lowers beyond
    anything its course reaches (4) is; a BUN the draw raises is not (a line dilutes urea, it
    never adds any)."""
    from physassist.lab_artifacts import stands_apart, within_course

    tl = fb.timeline_of(_labs([d[-1] for d in DRAWS]), current_date="2150-03-04")
    assert LINE_SAMPLE not in tl.lab("Urea Nitrogen").suspect
    for lab in ("Glucose", "Bicarbonate", "Potassium"):
        assert LINE_SAMPLE in tl.lab(lab).suspect, lab
    assert tl.lab("Urea Nitrogen").nadir.value == 8
    diluted = fb.timeline_of(_labs([16, 14, 10, 4, 11, 9, 8, 8]), current_date="2150-03-04")
    assert diluted.lab("Urea Nitrogen").suspect == {LINE_SAMPLE}
    raised = fb.timeline_of(_labs([16, 14, 10, 16.5, 11, 9, 8, 8]), current_date="2150-03-04")
    assert LINE_SAMPLE not in raised.lab("Urea Nitrogen").suspect
    points = tl.lab("Urea Nitrogen").points
    assert within_course(points, 3) and not stands_apart(points, LINE_SAMPLE, "Urea Nitrogen")


def test_the_record_check_finds_a_value_within_its_course_called_spurious(tmp_path) -> None:
    """The record check's category: a rubric that calls a value its own course reaches
    spurious."""
    hosp = tmp_path / "hosp"
    hosp.mkdir()
    stay = {**ADMISSION, "deathtime": "", "hospital_expire_flag": "0", "edregtime": ""}
    _csv(hosp / "admissions.csv.gz", [stay])
    _csv(hosp / "d_labitems.csv.gz", ITEMS)
    labs = _labs([d[-1] for d in DRAWS])["labevents"]
    _csv(hosp / "labevents.csv.gz", [{**r, "storetime": r["charttime"]} for r in labs])
    turn = [
        {
            "action": {
                "name": "Observation.search",
                "arguments": {"hadm_id": 2, "code": "Urea Nitrogen"},
            },
            "observation": "{}",
        },
        {"action": {"name": "prepare_to_answer", "arguments": {}}, "observation": "gold"},
    ]
    said = "The answer treats the Urea Nitrogen of 8 mg/dL as spurious (or asks to repeat it)."
    entry = {
        "id": "s",
        "hadm_id": 2,
        "current_date": "2150-03-04",
        "answer_list": [turn],
        "rubric_checks": [[]],
        "rubrics": [[said]],
        "task_types": ["Clinical Reasoning"],
    }
    assert fr.defects([entry], tmp_path)["spurious_in_course"] == [
        "s turn 0: Urea Nitrogen 8 called spurious, within its own course"
    ]
    entry["rubrics"] = [[said.replace("of 8 ", "of 4 ")]]
    assert fr.defects([entry], tmp_path)["spurious_in_course"] == []


def _csv(path, rows: list[dict]) -> None:
    import csv
    import gzip

    columns = list(dict.fromkeys(k for r in rows for k in r))
    with gzip.open(path, "wt", newline="") as fh:
        w = csv.DictWriter(fh, columns)
        w.writeheader()
        w.writerows(rows)


#: A urine E. coli whose every row carries the laboratory's doubt (MIMIC-IV 10007928), with a
#: susceptibility panel; three blood cultures, a fungal bottle and a Brucella send-out pending.
DOUBT = (
    "Culture workup discontinued. Further incubation showed contamination with mixed "
    "skin/genital flora. Clinical significance of isolate(s) uncertain. Interpret with caution."
)
MICRO = [
    {
        "subject_id": 1,
        "microevent_id": i,
        "hadm_id": 2,
        "micro_specimen_id": spec,
        "spec_type_desc": kind,
        "test_seq": 1,
        "test_itemid": 1,
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
    for i, (spec, kind, test, drawn, stored, org, ab, sir, comment) in enumerate(
        (
            1,
            "URINE",
            "URINE CULTURE",
            "2150-03-01 08:00:00",
            "2150-03-03 09:00:00",
            "ESCHERICHIA COLI",
            ab,
            "S",
            DOUBT,
        )
        for ab in ("CEFTRIAXONE", "NITROFURANTOIN")
    )  # fmt: skip
]
MICRO += [
    {**MICRO[0], "microevent_id": 10 + n, "micro_specimen_id": 10 + n, "org_name": None,
     "isolate_num": None, "ab_name": None, "interpretation": None, "comments": None,
     "spec_type_desc": kind, "test_name": test, "charttime": drawn, "chartdate": drawn[:10],
     "storetime": "2150-03-20 08:00:00", "storedate": "2150-03-20"}
    for n, (kind, test, drawn) in enumerate(
        (
            ("BLOOD CULTURE", "Blood Culture, Routine", "2150-03-01 07:30:00"),
            ("BLOOD CULTURE", "Blood Culture, Routine", "2150-03-02 05:00:00"),
            ("BLOOD CULTURE", "Blood Culture, Routine", "2150-03-03 03:00:00"),
            ("BLOOD CULTURE ( MYCO/F LYTIC BOTTLE)", "BLOOD/FUNGAL CULTURE", "2150-03-03 03:05:00"),
            ("BLOOD CULTURE", "BRUCELLA BLOOD CULTURE", "2150-03-03 15:00:00"),
        )
    )
]  # fmt: skip


def _culture_digest() -> Digest:
    d: Digest = fb.culture_digest(MICRO, "2150-03-04", ADMISSION)
    return d


def test_a_culture_the_laboratory_doubts_is_no_pathogen() -> None:
    """The E. coli keeps the laboratory's caveat and no susceptibility panel; the rubric asks
    for the caveat, not for the organism as a pathogen; no pending blood culture is left out."""
    d = _culture_digest()
    en = answer(d, "en")
    line = next(x for x in en.splitlines() if "ESCHERICHIA COLI" in x)
    assert "contamination" in line and "uncertain" in line
    assert "susceptible to" not in line and "CEFTRIAXONE" not in line
    first = rubric(d)[0]
    assert "reports the organism grown" not in first.en and "contaminat" in first.check["any"]["en"]
    assert "BLOOD CULTURE x" in en  # the pending routine blood cultures, beside the send-out
    pending = sum(len(x.split(" x", 1)[1:]) for x in en.splitlines() if x.startswith("Also"))
    listed = [x for x in en.splitlines() if x.startswith("- ")]
    assert len(listed) + pending >= 3 and "污染" in answer(d, "zh")


def test_a_severe_cytopenia_with_a_marrow_disease_is_its_known_course() -> None:
    """Platelets 16 -> 12 inside a 7-26 band in myelodysplastic syndrome: no "look for the
    cause", no "slightly falling", the known disease named; without the disease coded, the
    old reading stands."""
    from generation.builder.interpret import marrow_cytopenia

    mds = Context(heme_malignancy=True)
    assert marrow_cytopenia("Platelet Count", 12, "low", mds) is not None
    assert marrow_cytopenia("Platelet Count", 12, "low", Context()) is None
    assert marrow_cytopenia("Platelet Count", 90, "low", mds) is None  # not severe
    assert marrow_cytopenia("Platelet Count", 12, "low", Context(marrow_failure=True))
    values = [16, 26, 7, 8, 19, 12]
    obs = {
        "resourceType": "Bundle",
        "type": "searchset",
        "entry": [
            {
                "resource": {
                    "resourceType": "Observation",
                    "code": {"coding": [{"code": "51265"}], "text": "Platelet Count"},
                    "effectiveDateTime": f"2150-03-0{i + 1}T06:00:00",
                    "valueQuantity": {"value": v, "unit": "K/uL"},
                    "referenceRange": [{"low": {"value": 150}, "high": {"value": 440}}],
                }
            }
            for i, v in enumerate(values)
        ],
    }
    labs = {"Platelet Count": LabSummary("Platelet Count", len(values), True)}
    record = {
        "admissions": [fb.ADMISSION],
        "d_labitems": [{"itemid": 51265, "label": "Platelet Count", "fluid": "Blood"}],
        "labevents": fb.labevents(
            *((51265, f"2150-03-0{i + 1} 06:00:00", v, 150, 440) for i, v in enumerate(values))
        ),
    }
    tl = fb.timeline_of(record)
    prof = Profile(1, 2, "2150-03-06", "F", 70, labs=labs, timeline=tl, context=mds)
    d = digest(Topic("lab_trend", lab="Platelet Count"), [obs], prof)
    assert d is not None and d.course == "known_cause"
    en = answer(d, "en")
    assert "look for the cause" not in en and "slightly" not in en
    assert "known marrow disease" in en and "7 to 26" in en
    items = rubric(d)
    assert any("known marrow disease" in i.en for i in items)
    assert not any("thrombocytopenia" in i.en for i in items)
    plain = digest(
        Topic("lab_trend", lab="Platelet Count"),
        [obs],
        Profile(1, 2, "2150-03-06", "F", 70, labs=labs, timeline=tl),
    )
    assert plain is not None and "look for the cause" in answer(plain, "en")
    low = LabFact(
        "Platelet Count", 12, "K/uL", "low", "2150-03-06 06:00", "2150-03-06", "low", 150, 440
    )
    assert course(low, Trend("falling", "clear", low, "first"), mds) == "known_cause"


def test_a_same_day_trend_reads_with_its_times() -> None:
    def fact(value: float, time: str) -> LabFact:
        return LabFact("INR(PT)", value, "", "high", time, time[:10], "high", 0.9, 1.1)

    d = Digest(Topic("lab_trend", lab="INR(PT)"))
    d.series = [fact(1.6, "2114-06-20 09:59"), fact(1.2, "2114-06-20 11:09")]
    d.labs, d.trend, d.trend_size, d.course = [d.series[1]], "falling", "clear", "minor"
    en = answer(d, "en")
    assert "on 2114-06-20, from 09:59 to 11:09" in en and "between" not in en
    assert "2114-06-20" in answer(d, "zh") and "09:59" in answer(d, "zh")
    d.series = [fact(1.6, "2114-06-19 09:59"), fact(1.2, "2114-06-20 11:09")]
    assert "between 2114-06-19 and 2114-06-20" in answer(d, "en")
