"""The clinical timeline at the cutoff (physassist.timeline) on hand-written records, and the
builder's record check and trend rule built on it."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys

import duckdb
import fixtures_builder as fb
import fixtures_store as fx

from generation.builder.answers import Digest, LabFact
from generation.builder.profile import NOT_A_DRUG_WORD
from generation.builder.recheck import record_check
from generation.builder.topics import Topic
from physassist.timeline import load_timeline, order_dose

store_cache = fx.store_cache
demo_store = fx.demo_store

ADMISSION = fb.ADMISSION


def _rx(
    pid: int,
    drug: str,
    dose: str,
    start: str,
    stop: str | None,
    freq: str,
    sliding: str | None = None,
) -> tuple[dict, dict]:
    return (
        {
            "subject_id": 1,
            "hadm_id": 2,
            "pharmacy_id": pid,
            "drug": drug,
            "dose_val_rx": dose,
            "dose_unit_rx": "mg",
            "route": "PO",
            "starttime": start,
            "stoptime": stop,
        },
        {
            "subject_id": 1,
            "hadm_id": 2,
            "pharmacy_id": pid,
            "frequency": freq,
            "sliding_scale": sliding,
        },
    )


def _record(**extra: list[dict]) -> dict[str, list[dict]]:
    orders = [
        _rx(1, "Warfarin", "2", "2150-03-01 16:00:00", "2150-03-03 13:00:00", "DAILY"),
        _rx(2, "Metoprolol Tartrate", "25", "2150-03-01 09:00:00", "2150-03-06 16:00:00", "BID"),
        _rx(6, "Lisinopril", "10", "2150-03-01 09:00:00", "2150-03-06 09:00:00", "DAILY"),
        _rx(3, "Insulin", "0", "2150-03-01 09:00:00", "2150-03-06 11:00:00", "ASDIR", "Y"),
        _rx(4, "Acetaminophen", "650", "2150-03-01 09:00:00", None, "Q6H:PRN"),
        _rx(5, "Furosemide", "40", "2150-03-05 09:00:00", "2150-03-05 09:01:00", "ONCE"),
    ]
    rows = {
        "admissions": [ADMISSION],
        "prescriptions": [o for o, _ in orders],
        "pharmacy": [p for _, p in orders],
    }
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
    items = [
        {"itemid": 50931, "label": "Glucose", "fluid": "Blood", "category": "Chemistry"},
        {"itemid": 50809, "label": "Glucose", "fluid": "Blood", "category": "Blood Gas"},
        {"itemid": 50811, "label": "Hemoglobin", "fluid": "Blood", "category": "Blood Gas"},
    ]
    values = [
        (50931, "2150-03-02 06:00:00", 140.0),
        (50931, "2150-03-04 06:00:00", 114.0),
        (50809, "2150-03-05 06:00:00", 173.0),
        (50931, "2150-03-02 06:00:00", 140.0),
        (50811, "2150-03-05 06:00:00", 9.1),
    ]
    labs = fb.labevents(*values)
    tl = fb.timeline_of(_record(d_labitems=items, labevents=labs))
    glucose = tl.lab("Glucose")
    assert glucose is not None and glucose.itemids == (50931,)
    assert [p.value for p in glucose.points] == [140.0, 114.0]  # blood gas 173 left out
    assert glucose.peak.value == 140.0 and glucose.nadir.value == 114.0
    hemoglobin = tl.lab("Hemoglobin")  # only blood gas values: they are the concept
    assert hemoglobin is not None and hemoglobin.latest.value == 9.1


def test_only_dose_events_count_and_icu_doses_make_a_drug_uncountable() -> None:
    """As a nurse counts doses: Administered gives one and Not Given / Hold Dose withhold one;
    an empty, Confirmed, Started or Flushed event is no dose."""
    texts = [
        "Administered",
        None,
        "Not Given",
        "Hold Dose",
        "Confirmed",
        "Started",
        "Flushed",
        "Delayed Administered",
    ]
    events = [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "emar_id": f"e{i}",
            "medication": "Metoprolol",
            "charttime": f"2150-03-0{2 + i // 4} 0{i % 4 + 1}:00:00",
            "event_txt": text,
        }
        for i, text in enumerate(texts)
    ]
    tl = fb.timeline_of(_record(emar=events))
    admins = tl.administrations("metoprolol")
    assert (len(admins.given), len(admins.not_given), admins.at_discharge) == (2, 2, 0)
    assert admins.countable and admins.icu == 0
    # ICU doses of the drug (d_items label "Metoprolol") count (given, paused = not given,
    # rewritten = nothing, running at the cutoff = given) and make its count one that only
    # strict shows.
    items = [
        {"itemid": 225974, "label": "Metoprolol"},
        {"itemid": 221794, "label": "Furosemide (Lasix)"},
    ]
    icu = [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "stay_id": 9,
            "itemid": item,
            "starttime": start,
            "endtime": end,
            "statusdescription": status,
        }
        for item, start, end, status in [
            (225974, "2150-03-02 20:00:00", "2150-03-02 20:01:00", "FinishedRunning"),
            (225974, "2150-03-03 20:00:00", "2150-03-03 21:00:00", "Paused"),
            (225974, "2150-03-04 20:00:00", "2150-03-04 20:01:00", "Rewritten"),
            (225974, "2150-03-06 23:00:00", "2150-03-07 02:00:00", "FinishedRunning"),
            (225974, "2150-03-07 08:00:00", "2150-03-07 08:01:00", "FinishedRunning"),
            (221794, "2150-03-02 20:00:00", "2150-03-02 20:01:00", "FinishedRunning"),
        ]
    ]
    admins = fb.timeline_of(_record(emar=events, d_items=items, inputevents=icu)).administrations(
        "metoprolol"
    )
    assert (len(admins.given), len(admins.not_given), admins.icu) == (4, 3, 4)
    assert admins.given[-1].hour == 23 and not admins.countable
    d = Digest(Topic("admin_reliability", drug="metoprolol"))
    d.admin_count, d.admin_last = 1, "2150-03-02 09:00"
    tl = fb.timeline_of(_record(emar=events, d_items=items, inputevents=icu))
    assert record_check(d, tl) == "admin_uncountable"


def _xl_order(poe: str = "p-358") -> tuple[list[dict], list[dict]]:
    """The issue's metoprolol XL: one order written as a 25 mg and a 50 mg row."""
    rx, ph = zip(
        *(
            _rx(
                pid,
                "Metoprolol Succinate XL",
                dose,
                "2150-03-04 17:00:00",
                "2150-03-06 16:00:00",
                "DAILY",
            )
            for pid, dose in ((11, "25"), (12, "50"))
        ),
        strict=True,
    )
    return [{**r, "poe_id": poe} for r in rx], list(ph)


def test_an_order_is_its_rows_and_its_doses_are_its_poe_events() -> None:
    """The issue's 10020944: metoprolol XL 75 mg (25 mg + 50 mg rows, ``dose_due`` 75) given 2
    of 2; the missed dose was the discontinued tartrate order's, and a dose held at discharge
    is expected, not missed."""
    xl, xl_ph = _xl_order()
    record = _record()
    record["prescriptions"] = [o for o in record["prescriptions"] if "Metoprolol" not in o["drug"]]
    tartrate = {
        **_rx(
            7, "Metoprolol Tartrate", "12.5", "2150-03-01 12:00:00", "2150-03-03 10:00:00", "TID"
        )[0],
        "poe_id": "p-350",
    }
    record["prescriptions"] += [*xl, tartrate]
    record["pharmacy"] += [*xl_ph, _rx(7, "x", "1", "", None, "TID")[1]]
    emar = [
        ("e1", "p-350", "Metoprolol Tartrate", "2150-03-02 14:00:00", "Not Given"),
        ("e2", "p-358", "Metoprolol Succinate XL", "2150-03-04 16:45:00", "Administered"),
        ("e3", "p-358", "Metoprolol Succinate XL", "2150-03-05 09:40:00", "Administered"),
        ("e4", "p-358", "Metoprolol Succinate XL", "2150-03-06 09:00:00", "Hold Dose"),
    ]
    record["emar"] = [
        {
            "subject_id": 1,
            "hadm_id": 2,
            "emar_id": i,
            "poe_id": poe,
            "medication": med,
            "charttime": t,
            "event_txt": ev,
        }
        for i, poe, med, t, ev in emar
    ]
    record["emar_detail"] = [{"subject_id": 1, "emar_id": "e2", "dose_due": "75"}]
    tl = fb.timeline_of(record)
    order = tl.current_order("metoprolol")
    assert order is not None and (order.dose, order.components) == (75.0, ("25", "50"))
    admins = tl.order_administrations(order)
    assert (len(admins.given), len(admins.not_given), admins.at_discharge) == (2, 0, 1)
    assert admins.countable
    # A second order under the same name charted since the start: the tools cannot tell its
    # doses apart, so no count is asked.
    record["emar"].append({**record["emar"][1], "emar_id": "e5", "poe_id": "p-400"})
    assert not fb.timeline_of(record).order_administrations(order).countable


def test_order_dose_and_line_care() -> None:
    assert order_dose(["25", "50"], "75") == "75"
    assert order_dose(["150", "150"]) == "150"  # a tablet and a liquid: one dose either way
    assert order_dose(["250", "500"]) == "750"
    assert order_dose(["5", "2.5", "7.5"], "7.5") == "7.5"
    assert order_dose(["0.1", "0.2"]) == "0.3"
    flush = {
        **_rx(
            9,
            "Heparin Flush (10 units/ml)",
            "1",
            "2150-03-02 20:00:00",
            "2150-03-06 17:00:00",
            "DAILY",
        )[0]
    }
    record = _record()
    record["prescriptions"].append(flush)
    record["pharmacy"].append(_rx(9, "x", "1", "", None, "DAILY")[1])
    tl = fb.timeline_of(record)
    assert tl.orders_for("heparin")[0].line_care and tl.current_order("heparin") is None


def test_icu_doses_match_their_orders_by_name_on_the_demo(demo_store) -> None:
    """The name match (d_items.label holds the order's word) read on the raw demo CSVs: of the
    ICU rows it gives a drug of an admission, at least 95% start inside a prescription of that
    word (start - 1 h to stop + 1 h); and the timeline counts them, e.g. the issue's
    metronidazole of admission 24982426: 2 eMAR doses and 11 in the CCU."""
    demo = fb.demo_or_skip()
    con = duckdb.connect()
    for module, name in (("icu", "inputevents"), ("icu", "d_items"), ("hosp", "prescriptions")):
        con.execute(
            f"CREATE VIEW {name} AS SELECT * FROM read_csv('{demo}/{module}/{name}.csv.gz')"
        )
    matched, in_window = con.execute(
        """
        WITH o AS (SELECT hadm_id, lower(trim(split_part(trim(drug), ' ', 1), ',;:()')) AS w,
                          starttime, stoptime FROM prescriptions),
        words AS (SELECT DISTINCT hadm_id, w FROM o WHERE length(w) >= 4
                  AND regexp_matches(w, '^[a-z]+$') AND w NOT IN (SELECT unnest(?))),
        m AS (SELECT words.w, i.hadm_id, i.starttime FROM words JOIN inputevents i USING (hadm_id)
              JOIN d_items d USING (itemid) WHERE contains(lower(d.label), words.w))
        SELECT count(*), count(*) FILTER (WHERE EXISTS (
            SELECT 1 FROM o WHERE o.hadm_id = m.hadm_id AND o.w = m.w
              AND m.starttime BETWEEN o.starttime - INTERVAL 1 HOUR
                                  AND o.stoptime + INTERVAL 1 HOUR)) FROM m
        """,
        [sorted(NOT_A_DRUG_WORD)],
    ).fetchone()
    assert matched > 5000 and in_window >= 0.95 * matched, (matched, in_window)
    tl = load_timeline(demo_store.cursor(), 10002495, 24982426, "2141-05-29")
    admins = tl.administrations("metronidazole")
    assert (admins.icu, len(admins.given)) == (11, 13) and not admins.countable


def test_the_issues_metoprolol_xl_on_the_demo(demo_store) -> None:
    """10020944 / 29974575: metoprolol XL is one 75 mg order given 2 of 2 (the missed dose was
    the discontinued tartrate's); strict ``MedicationAdministration.search`` shows the whole
    dose (25 + 50 mg), and at discharge the order is active in the tool's own view."""
    from physassist.ehr.tools import ToolContext, call_tool

    tl = load_timeline(demo_store.cursor(), 10020944, 29974575, "2131-03-13")
    order = tl.current_order("metoprolol")
    assert order is not None and order.drug == "Metoprolol Succinate XL" and order.dose == 75
    admins = tl.order_administrations(order)
    assert (len(admins.given), len(admins.not_given), admins.countable) == (2, 0, True)
    ctx = ToolContext(
        store=demo_store, subject_id=10020944, hadm_id=29974575, current_date="2131-03-13"
    )
    args = {"subject_id": 10020944, "hadm_id": 29974575, "medication": "metoprolol succinate"}
    doses = [
        r["resource"]["dosage"]["dose"]["value"]
        for r in call_tool(ctx, "MedicationAdministration.search", args)["entry"]
    ]
    assert doses == [75, 75]
    orders = call_tool(ctx, "MedicationRequest.search", args)["entry"]
    assert {r["resource"]["status"] for r in orders} == {"active"}


def test_course_and_cultures() -> None:
    died = {**ADMISSION, "discharge_location": "DIED", "hospital_expire_flag": 1}
    hospice = {**ADMISSION, "discharge_location": "HOSPICE-MEDICAL FACILITY"}
    assert fb.timeline_of({"admissions": [died]}).course == "died"
    assert fb.timeline_of({"admissions": [hospice]}).end_of_life
    assert fb.timeline_of({"admissions": [ADMISSION]}).course == "discharged"
    micro = [
        {
            "microevent_id": i,
            "subject_id": 1,
            "hadm_id": 2,
            "micro_specimen_id": spec,
            "spec_type_desc": kind,
            "test_name": test,
            "charttime": t,
            "org_name": org,
        }
        for i, (spec, kind, test, t, org) in enumerate(
            [
                (1, "URINE", "URINE CULTURE", "2150-03-02 10:00:00", "PSEUDOMONAS AERUGINOSA"),
                (1, "URINE", "URINE CULTURE", "2150-03-02 10:00:00", "YEAST"),
                (2, "BLOOD CULTURE", "Blood Culture, Routine", "2150-03-05 10:00:00", None),
            ]
        )
    ]
    tl = fb.timeline_of(_record(microbiologyevents=micro))
    assert [c.specimen for c in tl.cultures] == ["BLOOD CULTURE", "URINE"]
    assert tl.positive_cultures[0].organisms == ("PSEUDOMONAS AERUGINOSA", "YEAST")


#: The stay of ``ADMISSION`` seen from the emergency department, two hours before admission.
ED_ADMISSION = {**ADMISSION, "edregtime": "2150-03-01 05:00:00"}


def _micro(
    spec: int,
    hadm: int | None,
    kind: str,
    test: str,
    drawn: str,
    stored: str,
    org: str | None = None,
    panel: tuple[tuple[str, str], ...] = (),
    comment: str | None = None,
) -> list[dict]:
    base = {
        "subject_id": 1,
        "hadm_id": hadm,
        "micro_specimen_id": spec,
        "spec_type_desc": kind,
        "test_seq": 1,
        "test_name": test,
        "charttime": drawn,
        "chartdate": drawn[:10],
        "storetime": stored,
        "storedate": stored[:10],
        "org_name": org,
        "comments": comment,
    }
    rows = [{**base, "ab_name": ab, "interpretation": sir} for ab, sir in panel] or [base]
    return [{**r, "microevent_id": spec * 100 + i} for i, r in enumerate(rows)]


def test_cultures_are_known_from_their_report_time_with_the_stays_ed_specimens() -> None:
    """Issue 43: a culture result counts from its report, not its draw; the blood culture the
    ED drew before admission (no hadm_id) is the stay's; an oxacillin-resistant S. aureus is
    MRSA; a serology is no culture; a sputum's yeast is commensal flora."""
    micro = [
        *_micro(
            1,
            None,
            "BLOOD CULTURE",
            "Blood Culture, Routine",
            "2150-03-01 06:00:00",
            "2150-03-03 12:00:00",
            "STAPH AUREUS COAG +",
            (("OXACILLIN", "R"), ("VANCOMYCIN", "S")),
        ),
        *_micro(
            2,
            2,
            "SPUTUM",
            "RESPIRATORY CULTURE",
            "2150-03-02 10:00:00",
            "2150-03-04 09:00:00",
            "YEAST",
        ),
        *_micro(
            3,
            2,
            "BLOOD CULTURE",
            "Blood Culture, Routine",
            "2150-03-05 10:00:00",
            "2150-03-10 08:00:00",
            "ESCHERICHIA COLI",
            (("CEFTRIAXONE", "R"),),
        ),
        *_micro(
            4,
            2,
            "SEROLOGY/BLOOD",
            "RAPID PLASMA REAGIN TEST",
            "2150-03-02 11:00:00",
            "2150-03-03 09:00:00",
            comment="NONREACTIVE.",
        ),
        *_micro(
            5,
            None,
            "URINE",
            "URINE CULTURE",
            "2150-02-20 10:00:00",
            "2150-02-22 10:00:00",
            "ESCHERICHIA COLI",
        ),  # a clinic visit: another stay
    ]
    record = {**_record(microbiologyevents=micro), "admissions": [ED_ADMISSION]}
    tl = fb.timeline_of(record)  # at discharge
    assert [c.record.specimen_id for c in tl.microbiology] == [3, 4, 2, 1]
    assert [c.record.specimen_id for c in tl.cultures] == [3, 2, 1]  # the RPR is no culture
    ed, sputum, pending = tl.cultures[2], tl.cultures[1], tl.cultures[0]
    assert ed.record.origin == "emergency department" and ed.record.hadm_id == 2
    (mrsa,) = ed.significant
    assert mrsa.resistance == ("MRSA",)
    assert [(s.antibiotic, s.interpretation) for s in mrsa.susceptibilities] == [
        ("OXACILLIN", "R"),
        ("VANCOMYCIN", "S"),
    ]
    assert sputum.organisms == ("YEAST",) and not sputum.significant  # commensal flora
    assert pending.organisms == () and [t.name for t in pending.pending] == [
        "Blood Culture, Routine"
    ]  # reported four days after discharge: nothing of it known
    assert [c.record.specimen_id for c in tl.positive_cultures] == [2, 1]
    morning = fb.timeline_of(record, current_date="2150-03-03", until=dt.datetime(2150, 3, 3, 8, 0))
    assert [c.record.specimen_id for c in morning.cultures] == [2, 1]
    assert all(c.pending and not c.organisms for c in morning.cultures)


def test_labs_are_known_from_their_report_time_with_the_stays_ed_draws() -> None:
    """A creatinine drawn before midnight and reported after it belongs to the next day; the
    ED's draw before admission (no hadm_id) opens the series; a session inside the stay sees
    only what was reported by its instant."""

    def lab(i: int, hadm: int | None, drawn: str, stored: str | None, value: float) -> dict:
        return {
            "labevent_id": i,
            "subject_id": 1,
            "hadm_id": hadm,
            "itemid": 50912,
            "charttime": drawn,
            "storetime": stored,
            "valuenum": value,
        }

    labs = [
        lab(1, None, "2150-03-01 05:30:00", "2150-03-01 06:10:00", 2.4),
        lab(2, 2, "2150-03-03 04:00:00", "2150-03-03 07:30:00", 1.9),
        lab(3, 2, "2150-03-05 23:00:00", "2150-03-06 01:00:00", 1.4),
        lab(4, None, "2150-02-20 10:00:00", "2150-02-20 11:00:00", 1.0),
    ]  # another visit
    record = {
        **_record(labevents=labs),
        "admissions": [ED_ADMISSION],
        "d_labitems": [
            {"itemid": 50912, "label": "Creatinine", "fluid": "Blood", "category": "Chemistry"}
        ],
    }
    series = fb.timeline_of(record, current_date="2150-03-05").lab("Creatinine")
    assert series is not None and [p.value for p in series.points] == [2.4, 1.9]
    assert [p.value for p in fb.timeline_of(record).lab("Creatinine").points] == [2.4, 1.9, 1.4]
    early = fb.timeline_of(record, current_date="2150-03-03", until=dt.datetime(2150, 3, 3, 7))
    assert [p.value for p in early.lab("Creatinine").points] == [2.4]  # drawn, not reported


def test_record_check_rejects_what_the_record_contradicts() -> None:
    items = [{"itemid": 50912, "label": "Creatinine", "fluid": "Blood", "category": "Chemistry"}]
    labs = [
        {
            "labevent_id": 1,
            "subject_id": 1,
            "hadm_id": 2,
            "itemid": 50912,
            "charttime": "2150-03-05 06:00:00",
            "valuenum": 1.9,
        }
    ]
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


def test_the_sample_meets_current_orders_with_icu_doses(store_cache) -> None:
    """The synthetic ICU-only doses reach the builder: subcutaneous heparin runs on to discharge
    after ICU doses charted in inputevents, so its eMAR count is short and it gets no count."""
    from generation.builder.profile import load_profile
    from physassist.ehr.store import open_store

    with open_store("sample", cache_dir=store_cache) as store:
        con = store.cursor()
        stays = con.execute(
            "SELECT DISTINCT i.subject_id, i.hadm_id, a.dischtime::DATE::VARCHAR FROM inputevents "
            "i "
            "JOIN admissions a USING (hadm_id) ORDER BY 1"
        ).fetchall()
        heparin = [load_profile(con, *s).drugs.get("heparin") for s in stays]
    current = [d for d in heparin if d is not None]
    assert current and all(d.n_admin > 0 and not d.admin_countable for d in current)
