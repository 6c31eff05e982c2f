"""strict's reading of note text (``notes_text``) on notes in the MIMIC-IV-Note layout: the
conformance notes cohort (``shared/conformance/notes-cohort``, docs/data.md; varied real
layouts) and written-out cases of each layout rule."""

from __future__ import annotations

import gzip

import pandas as pd
import pytest
from fixtures_store import shared

from physassist.ehr.tools.notes_text import (
    discharge_sections,
    impression,
    note_grounding,
    radiology_title,
)

NOTES = shared("conformance") / "notes-cohort" / "note"  # docs/data.md


def _notes(table: str) -> pd.DataFrame:
    path = NOTES / f"{table}.csv.gz"
    if not path.is_file():
        pytest.skip(f"conformance notes cohort not found at {NOTES}")
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


NOTE = (
    "Name:  ___                 Unit No:   ___\r\n \r\nAdmission Date:  ___\r\n \r\n"
    "Chief Complaint:\r\nFever\r\n \r\nBrief Hospital Course\r\n# Pneumonia: treated.\r\n"
    "Discharge condition was discussed with the family.\r\n\r\nPLAN - continue amoxicillin\r\n"
    "- repeat CXR\r\n \r\nDISCHARGE CONDITION\r\nMental Status: Clear and coherent.\r\n"
    "Level of Consciousness: Alert and interactive.\r\nActivity Status: Ambulatory - "
    "Independent.\r\n"
    " \r\nFollow-up Instructions:\r\n- PCP in 1 week\r\n- Pulmonology in 2 weeks\r\n"
)


def test_sections_are_whole_and_start_only_at_headers() -> None:
    got = discharge_sections(NOTE)
    # three lines, not the reference's first line; the mention in the course starts nothing
    assert got["Discharge Condition"] == (
        "Mental Status: Clear and coherent.\nLevel of Consciousness: Alert and interactive.\n"
        "Activity Status: Ambulatory - Independent."
    )
    assert got["Followup Instructions"] == "- PCP in 1 week\n- Pulmonology in 2 weeks"
    assert got["Plan"] == "continue amoxicillin\n- repeat CXR"
    assert got["Brief Hospital Course"].endswith("discussed with the family.")
    assert got["Chief Complaint"] == "Fever"


def test_real_layouts_give_every_section_whole() -> None:
    notes = _notes("discharge")
    for text in notes["text"]:
        got = discharge_sections(text)
        for header in ("Chief Complaint", "Medications on Admission", "Discharge Medications"):
            assert got.get(header), header
        assert got["Discharge Medications"].startswith("1.")
        condition = got.get("Discharge Condition", "")
        assert "discussed" not in condition  # the course's mention is not the section
        if "Activity Status:" in text.split("Discharge Condition")[-1][:400]:
            assert "Activity Status:" in condition


def test_radiology_titles_and_impressions_on_real_layouts() -> None:
    notes = _notes("radiology")
    titles = [radiology_title(t) for t in notes["text"]]
    # a report starting with its indication has no exam line: no finding text becomes a title
    assert not [t for t in titles if t.startswith(("The ", "INDICATION", "Indication", "DOSE"))]
    assert "CHEST (PORTABLE AP)" in titles and "Radiology report" in titles
    assert all(impression(t) for t in notes["text"])
    text = (
        "FINAL REPORT\nCHEST (PA AND LAT)\n\nINDICATION: cough\n\nIMPRESSION:\n\nClear.\n\n"
        "NOTIFICATION: called"
    )
    assert (radiology_title(text), impression(text)) == ("CHEST (PA AND LAT)", "Clear.")


def test_note_grounding_reads_the_discharge_summary() -> None:
    got = note_grounding(NOTE)
    assert got["chief_complaint"] == "Fever"
    assert got["functional_status"] == "Ambulatory - Independent."
    assert got["follow_up_instructions"] == "- PCP in 1 week\n- Pulmonology in 2 weeks"
    assert got["medications_on_admission"] is None  # absent: None, never another section
    for text in _notes("discharge")["text"]:
        found = note_grounding(text)
        assert found["chief_complaint"] and found["discharge_medications"]
        assert found["social_history"] and found["medications_on_admission"]
