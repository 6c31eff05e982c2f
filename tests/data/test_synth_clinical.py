"""Clinical consistency of the committed sample cohort: values, drugs, notes and the
reference pre-filter criteria (docs/generation.md#pre-filter) per scenario x tier."""

from __future__ import annotations

import json
import re

import fixtures_synth
from fixtures_synth import SAMPLE

from physassist.ehr.tools.notes_text import discharge_sections
from physassist.synth.archetypes import child_pugh, meld

sample_con = fixtures_synth.sample_con  # session-scoped DuckDB views over the committed sample

FACTS = {
    f["subject_id"]: f
    for f in map(json.loads, (SAMPLE / "meta" / "facts.jsonl").read_text().splitlines())
}


def _section(text: str, title: str) -> list[str]:
    body = discharge_sections(text).get(title)
    assert body, f"section {title!r} missing"
    return [ln for ln in body.splitlines() if re.match(r"\d+\. ", ln)]


def _anchor_note(con, sid: int) -> str:
    return con.sql(
        f"SELECT text FROM discharge d JOIN subjects s USING (subject_id) WHERE subject_id = {sid} "
        "AND d.hadm_id = s.anchor_hadm_id"
    ).fetchall()[0][0]


def test_hyperkalemia_potassium_is_high_and_explained(sample_con) -> None:
    rows = sample_con.sql("""
        SELECT s.subject_id, arg_min(l.valuenum, l.charttime), max(l.valuenum)
        FROM subjects s JOIN labevents l ON l.subject_id = s.subject_id
        AND l.hadm_id = s.anchor_hadm_id
        WHERE s.archetype = 'hyperkalemia_raas' AND l.itemid = 50971 GROUP BY 1""").fetchall()
    assert len(rows) == 9
    for sid, first_k, max_k in rows:
        assert first_k > 5.0 and max_k > 5.0
        drugs = {
            d
            for (d,) in sample_con.sql(f"""SELECT DISTINCT drug FROM prescriptions p
                 JOIN subjects s USING (subject_id)
                 WHERE subject_id = {sid} AND p.hadm_id = s.anchor_hadm_id""").fetchall()
        }
        assert {"Spironolactone", "Lisinopril", "Furosemide"} <= drugs
        note = _anchor_note(sample_con, sid)
        admission = " ".join(_section(note, "Medications on Admission"))
        assert "Spironolactone" in admission and "Lisinopril" in admission
        assert f"K-{first_k:.1f}*" in note and f"K {first_k}" in note
        assert FACTS[sid]["admission_potassium"] == first_k


def test_wbc_falls_after_antibiotics_start(sample_con) -> None:
    subjects = [
        r[0]
        for r in sample_con.sql(
            "SELECT subject_id FROM subjects WHERE archetype = 'pneumonia_sepsis'"
        ).fetchall()
    ]
    assert len(subjects) == 9
    for sid in subjects:
        (abx_start,) = sample_con.sql(f"""SELECT min(e.charttime) FROM emar e
            JOIN subjects s USING (subject_id)
            WHERE subject_id = {sid} AND e.hadm_id = s.anchor_hadm_id
            AND e.event_txt = 'Administered'
            AND e.medication IN ('Vancomycin', 'Piperacillin-Tazobactam', 'CefTRIAXone',
            'Azithromycin')""").fetchall()[0]
        wbc = sample_con.sql(f"""SELECT l.charttime, l.valuenum FROM labevents l
            JOIN subjects s USING (subject_id)
            WHERE subject_id = {sid} AND l.hadm_id = s.anchor_hadm_id AND l.itemid = 51301
            ORDER BY 1""").fetchall()
        before = [v for t, v in wbc if t < abx_start]
        after = [v for t, v in wbc if t >= abx_start]
        assert before and len(after) >= 2, sid
        assert before[0] > 11.0  # leukocytosis at presentation
        assert after[-1] < after[0] < before[0] and after[-1] <= 11.0
        assert FACTS[sid]["admission_wbc"] == before[0] and FACTS[sid]["discharge_wbc"] == after[-1]


def test_blood_cultures_and_susceptibilities_match_the_antibiotics(sample_con) -> None:
    rows = sample_con.sql("""SELECT m.subject_id, m.org_name, m.ab_name, m.interpretation
        FROM microbiologyevents m
        JOIN subjects s USING (subject_id) WHERE s.archetype = 'pneumonia_sepsis'
        AND m.spec_type_desc = 'BLOOD CULTURE'
        AND m.org_name IS NOT NULL""").fetchall()
    assert rows, "septic tiers must have positive blood cultures"
    assert {r[1] for r in rows} == {"STREPTOCOCCUS PNEUMONIAE"}
    assert all(
        r[3] == "S" for r in rows if r[2] == "CEFTRIAXONE"
    )  # the narrowed antibiotic covers the isolate


def test_discharge_planning_patients_have_ten_or_more_discharge_drugs(sample_con) -> None:
    subjects = [
        r[0]
        for r in sample_con.sql(
            "SELECT subject_id FROM subjects WHERE scenarios LIKE '%discharge_planning%'"
        ).fetchall()
    ]
    assert len(subjects) >= 9
    for sid in subjects:
        meds = _section(_anchor_note(sample_con, sid), "Discharge Medications")
        names = {re.sub(r"^\d+\. ", "", m).split(" ")[0] for m in meds}
        assert len(names) >= 10, (sid, meds)


def test_note_medication_lists_are_in_the_prescriptions(sample_con) -> None:
    for (sid,) in sample_con.sql("SELECT subject_id FROM subjects").fetchall():
        note = _anchor_note(sample_con, sid)
        drugs = {
            d
            for (d,) in sample_con.sql(f"""SELECT DISTINCT drug FROM prescriptions p
                 JOIN subjects s USING (subject_id)
                 WHERE subject_id = {sid} AND p.hadm_id = s.anchor_hadm_id""").fetchall()
        }
        listed = _section(note, "Discharge Medications") + _section(
            note, "Medications on Admission"
        )
        for line in listed:
            assert any(line[line.index(" ") + 1 :].startswith(d + " ") for d in drugs), (sid, line)


def test_every_lab_flag_agrees_with_its_range(sample_con) -> None:
    (bad, total, flagged) = sample_con.sql("""SELECT
        sum(CASE WHEN coalesce(valuenum < ref_range_lower OR valuenum > ref_range_upper, false)
                 != (flag IS NOT NULL AND flag = 'abnormal') THEN 1 ELSE 0 END), count(*),
        sum(CASE WHEN flag = 'abnormal' THEN 1 ELSE 0 END) FROM labevents""").fetchall()[0]
    assert total > 10_000 and flagged > 0 and bad == 0


def test_note_admission_labs_equal_the_first_values(sample_con) -> None:
    rows = sample_con.sql("""SELECT s.subject_id, l.itemid, arg_min(l.value, l.charttime)
        FROM subjects s JOIN labevents l
        ON l.subject_id = s.subject_id AND l.hadm_id = s.anchor_hadm_id
        WHERE l.itemid IN (50912, 51301, 50983)
        GROUP BY 1, 2""").fetchall()
    abbr = {50912: "Creat", 51301: "WBC", 50983: "Na"}
    for sid, itemid, value in rows:
        adm = _anchor_note(sample_con, sid).split("ADMISSION LABS:")[1].split("DISCHARGE LABS:")[0]
        assert re.search(rf"\b{abbr[itemid]}-{re.escape(value)}\*?(\s|$)", adm), (
            sid,
            itemid,
            value,
        )


def test_derived_labs_are_consistent_per_draw(sample_con) -> None:
    (bad_gap, bad_hct) = sample_con.sql("""WITH d AS (SELECT specimen_id // 8 AS draw, subject_id,
            max(valuenum) FILTER (itemid = 50983) na, max(valuenum) FILTER (itemid = 50902) cl,
            max(valuenum) FILTER (itemid = 50882) hco3, max(valuenum) FILTER (itemid = 50868) ag,
            max(valuenum) FILTER (itemid = 51222) hgb, max(valuenum) FILTER (itemid = 51221) hct
        FROM labevents GROUP BY 1, 2)
        SELECT sum(CASE WHEN ag IS NOT NULL AND ag != na - cl - hco3 THEN 1 ELSE 0 END),
               sum(CASE WHEN hct IS NOT NULL AND abs(hct - 3 * hgb) > 0.051 THEN 1 ELSE 0 END)
               FROM d""").fetchall()[0]
    assert bad_gap == 0 and bad_hct == 0


def test_apixaban_dose_facts_follow_the_record(sample_con) -> None:
    rows = sample_con.sql("""SELECT s.subject_id, p.anchor_age, max(r.dose_val_rx) FROM subjects s
        JOIN patients p USING (subject_id) JOIN prescriptions r ON r.subject_id = s.subject_id
        AND r.hadm_id = s.anchor_hadm_id
        WHERE s.archetype = 'afib_apixaban' AND r.drug = 'Apixaban' GROUP BY 1, 2""").fetchall()
    assert len(rows) == 9
    for sid, age, dose in rows:
        f = FACTS[sid]
        assert f["prescribed_apixaban"] == f"{dose} mg BID"
        criteria = (
            int(age >= 80) + int(f["weight_kg"] <= 60) + int(f["admission_creatinine"] >= 1.5)
        )
        assert criteria == f["dose_reduction_criteria_met"]
        assert f["recommended_apixaban"] == ("2.5 mg BID" if criteria >= 2 else "5 mg BID")


def test_cirrhosis_scores_follow_the_admission_labs(sample_con) -> None:
    rows = sample_con.sql("""SELECT s.subject_id,
        map_from_entries(list(struct_pack(k := l.itemid, v := l.first)))
        FROM subjects s JOIN (SELECT subject_id, hadm_id, itemid,
        arg_min(valuenum, charttime) AS first FROM labevents
        GROUP BY ALL) l ON l.subject_id = s.subject_id AND l.hadm_id = s.anchor_hadm_id
        WHERE s.archetype = 'cirrhosis_ascites' GROUP BY 1""").fetchall()
    assert len(rows) == 9
    for sid, labs in rows:
        f = FACTS[sid]
        m, mna = meld(labs[50885], labs[51237], labs[50912], labs[50983])
        assert (m, mna) == (f["meld"], f["meld_na"])
        score, cls = child_pugh(
            labs[50885], labs[50862], labs[51237], 2, f["encephalopathy_points"]
        )
        assert (score, cls) == (f["child_pugh_score"], f["child_pugh_class"])


def test_held_doses_have_event_text_and_no_dose_given(sample_con) -> None:
    held = sample_con.sql("""SELECT e.emar_id, e.medication, count(d.dose_given) FROM emar e
        LEFT JOIN emar_detail d USING (emar_id) WHERE e.event_txt IN ('Hold Dose', 'Not Given')
        GROUP BY 1, 2""").fetchall()
    assert any(m == "Spironolactone" for _, m, _ in held)
    assert all(n == 0 for _, _, n in held)
    (missing,) = sample_con.sql("""SELECT count(*) FROM emar e WHERE e.event_txt = 'Administered'
        AND NOT EXISTS
        (SELECT 1 FROM emar_detail d WHERE d.emar_id = e.emar_id
        AND d.dose_given IS NOT NULL)""").fetchall()[0]
    assert missing == 0


def test_icu_doses_are_charted_in_inputevents_not_the_emar(sample_con) -> None:
    """The ICU-only quirk (physassist.synth.quirks.ICU_MEDS): inside an ICU stay IV vancomycin,
    piperacillin-tazobactam, furosemide and SC heparin doses are inputevents rows of their real
    d_items items, and the eMAR has none of them there; outside the stay the eMAR charts them."""
    icu = sample_con.sql("""SELECT d.label, i.ordercategorydescription, i.statusdescription,
            count(*), bool_and(i.starttime >= s.intime AND i.starttime < s.outtime)
        FROM inputevents i JOIN d_items d USING (itemid) JOIN icustays s USING (stay_id)
        GROUP BY ALL ORDER BY 1""").fetchall()
    assert [r[0] for r in icu] == [
        "Furosemide (Lasix)",
        "Heparin Sodium (Prophylaxis)",
        "Piperacillin/Tazobactam (Zosyn)",
        "Vancomycin",
    ]
    assert all(r[1:3] == ("Drug Push", "FinishedRunning") and r[3] > 5 and r[4] for r in icu)
    (in_stay,) = (
        sample_con.sql("""SELECT count(*) FROM emar e JOIN prescriptions p USING (pharmacy_id)
        JOIN icustays s ON s.hadm_id = e.hadm_id AND e.charttime >= s.intime
        AND e.charttime < s.outtime
        WHERE p.formulary_drug_cd IN ('VANC1F', 'PTZ4.5F', 'FURO40I', 'HEPA5I')""").fetchall()[0]
    )
    (outside,) = (
        sample_con.sql("""SELECT count(*) FROM emar e JOIN prescriptions p USING (pharmacy_id)
        JOIN icustays s ON s.hadm_id = e.hadm_id
        WHERE p.formulary_drug_cd IN ('VANC1F', 'PTZ4.5F', 'FURO40I', 'HEPA5I')""").fetchall()[0]
    )
    assert in_stay == 0 and outside > 0


def test_future_data_exists_after_the_anchor_discharge(sample_con) -> None:
    (n,) = sample_con.sql("""SELECT count(*) FROM labevents l JOIN subjects s USING (subject_id)
        JOIN admissions a
        ON a.hadm_id = s.anchor_hadm_id WHERE l.charttime > a.dischtime""").fetchall()[0]
    assert n > 0  # tier 2-3 follow-up draws: what a strict time cutoff must hide


# -- the reference pre-filter, scoped to the anchor (latest) admission -------------------------
_ORGAN = {
    50983: "metabolic",
    50971: "metabolic",
    50931: "metabolic",
    51006: "renal",
    50912: "renal",
    51301: "hematologic",
    51222: "hematologic",
    51265: "hematologic",
    50885: "hepatic",
    50862: "hepatic",
    50878: "hepatic",
    51237: "coagulation",
    51274: "coagulation",
    50813: "inflammatory",
    51256: "inflammatory",
    50889: "inflammatory",
    50963: "cardiac",
    51003: "cardiac",
}
_PAIRS = {  # drug category -> (drug name patterns, monitoring lab itemids)
    "nephrotoxic": (("vancomycin", "gentamicin", "ibuprofen"), (50912,)),
    "acei_arb": (("lisinopril", "losartan", "valsartan", "enalapril"), (50912, 50971)),
    "diabetes": (("metformin", "insulin", "glipizide"), (50931, 50852)),
    "diuretic_electrolyte": (
        ("furosemide", "torsemide", "spironolactone", "hydrochlorothiazide", "potassium"),
        (50971, 50983),
    ),
    "warfarin": (("warfarin",), (51237,)),
}
_ANTIBIOTIC_CLASSES = {
    "vancomycin": "glycopeptide",
    "piperacillin": "penicillin",
    "amoxicillin": "penicillin",
    "ceftriaxone": "cephalosporin",
    "cefepime": "cephalosporin",
    "azithromycin": "macrolide",
    "levofloxacin": "fluoroquinolone",
}


def _anchor_profile(con) -> dict[int, dict]:
    prof: dict[int, dict] = {}
    for (
        sid,
        tier,
        hadm,
        loc,
    ) in con.sql("""SELECT s.subject_id, s.tier, s.anchor_hadm_id, a.discharge_location
            FROM subjects s JOIN admissions a ON a.hadm_id = s.anchor_hadm_id""").fetchall():
        labs = dict(
            con.sql(
                f"SELECT itemid, count(*) FROM labevents WHERE hadm_id = {hadm} GROUP BY 1"
            ).fetchall()
        )
        drugs = {
            d.lower()
            for (d,) in con.sql(
                f"SELECT DISTINCT drug FROM prescriptions WHERE hadm_id = {hadm}"
            ).fetchall()
        }
        emar = {
            m.lower()
            for (m,) in con.sql(
                f"SELECT DISTINCT medication FROM emar WHERE hadm_id = {hadm}"
            ).fetchall()
        }
        dx = [
            c
            for (c,) in con.sql(
                f"SELECT icd_code FROM diagnoses_icd WHERE hadm_id = {hadm}"
            ).fetchall()
        ]
        (rad,) = con.sql(f"SELECT count(*) FROM radiology WHERE hadm_id = {hadm}").fetchall()[0]
        (ds,) = con.sql(f"SELECT count(*) FROM discharge WHERE hadm_id = {hadm}").fetchall()[0]
        prof[sid] = dict(
            tier=tier, labs=labs, drugs=drugs, emar=emar, dx=dx, rad=rad, ds=ds, loc=loc
        )
    return prof


def _qualifies(scenario: str, tier: int, p: dict) -> bool:
    labs, drugs, dx = p["labs"], p["drugs"], p["dx"]
    if scenario == "diagnostic_workup":
        systems = {_ORGAN[i] for i in labs if i in _ORGAN}
        return len(systems) >= 1 + tier and p["rad"] >= tier and len(dx) >= (3, 5, 8)[tier - 1]
    if scenario == "med_safety":
        monitoring = any(i in labs for i in (50912, 50971, 50931, 51006, 51237, 50852))
        pairs = sum(
            any(pat in d for d in drugs for pat in pats) and any(i in labs for i in lab_ids)
            for pats, lab_ids in _PAIRS.values()
        )
        return monitoring and bool(drugs) and pairs >= tier - 1
    if scenario == "treatment_response":
        wbc = labs.get(51301, 0)
        classes = {c for d in p["emar"] for k, c in _ANTIBIOTIC_CLASSES.items() if k in d}
        sofa = all(i in labs for i in (51265, 50885, 50912)) or any(
            c.startswith(("A41", "R652")) for c in dx
        )
        return (
            (51301 in labs or 50813 in labs)
            and bool(p["emar"])
            and (tier < 2 or (wbc >= 2 and classes))
            and (tier < 3 or (wbc >= 3 and len(classes) >= 2 and len(dx) >= 5 and sofa))
        )
    if scenario == "discharge_planning":
        return (
            p["loc"] not in ("DIED", "HOSPICE")
            and p["ds"] > 0
            and len(drugs) >= (10, 20, 30)[tier - 1]
            and len(dx) >= (5, 12, 18)[tier - 1]
            and sum(labs.values()) > (0, 50, 150)[tier - 1]
        )
    raise AssertionError(scenario)


def test_designed_scenarios_pass_the_reference_prefilter_at_their_tier(sample_con) -> None:
    prof = _anchor_profile(sample_con)
    slots: dict[tuple[str, int], int] = {}
    for sid, scenarios in sample_con.sql("SELECT subject_id, scenarios FROM subjects").fetchall():
        for scenario in scenarios.split(";"):
            tier = prof[sid]["tier"]
            assert _qualifies(scenario, tier, prof[sid]), (sid, scenario, tier)
            slots[(scenario, tier)] = slots.get((scenario, tier), 0) + 1
    for scenario in ("diagnostic_workup", "med_safety", "treatment_response", "discharge_planning"):
        for tier in (1, 2, 3):
            assert slots.get((scenario, tier), 0) >= 3, (scenario, tier)


def test_personas_vary_across_all_levels(sample_con) -> None:
    rows = sample_con.sql(
        "SELECT health_literacy, adherence, anxiety_level, info_completeness FROM subjects"
    ).fetchall()
    for i in range(4):
        assert len({r[i] for r in rows}) == 3
    assert len(set(rows)) >= 27


def test_withheld_drug_is_a_critical_non_adherence_in_the_phm(sample_con) -> None:
    from physassist.synth import load_phm

    rows = sample_con.sql(
        "SELECT subject_id, info_completeness, withheld_drug FROM subjects"
    ).fetchall()
    assert any(r[1] == "critical_withheld" for r in rows)
    for sid, info, withheld in rows:
        phm = load_phm(SAMPLE, sid)
        flagged = [m for m in phm["medications"] if m["withheld"]]
        if info == "critical_withheld":
            assert len(flagged) == 1 and flagged[0]["drug"] == withheld
            assert flagged[0]["critical_flag"] and flagged[0]["current_status"] == "not_taking"
        else:
            assert not flagged and not withheld


def test_load_phm_names_the_file_that_is_not_a_json_object(tmp_path) -> None:
    import pytest

    from physassist.synth import load_phm

    (tmp_path / "phm").mkdir()
    (tmp_path / "phm" / "7.json").write_text("[1, 2]")
    (tmp_path / "phm" / "8.json").write_text("{not json")
    with pytest.raises(ValueError, match=r"phm/7\.json: .* must be a JSON object, got list"):
        load_phm(tmp_path, 7)
    with pytest.raises(ValueError, match=r"phm/8\.json: not a readable"):
        load_phm(tmp_path, 8)
    assert load_phm(tmp_path, 9) is None
