"""The synthetic notes are written in the MIMIC-IV-Note layout and vary it as real notes do, so
the sample exercises the branches real notes take in compat and strict (``docs/notes.md``)."""

from __future__ import annotations

import collections
import gzip
import json
import re

import fixtures_tools as fx
import pandas as pd
from fixtures_synth import SAMPLE

from physassist.ehr.tools import call_tool
from physassist.ehr.tools.context import ToolContext
from physassist.ehr.tools.notes_text import note_grounding, radiology_title

sample_store = fx.sample_store


def _notes(table: str) -> pd.DataFrame:
    with gzip.open(SAMPLE / "note" / f"{table}.csv.gz", "rt", encoding="utf-8", newline="") as f:
        return pd.read_csv(f, dtype=str, keep_default_na=False)


def _anchor_texts() -> list[str]:
    anchors = set(pd.read_csv(SAMPLE / "meta" / "subjects.csv", dtype=str)["anchor_hadm_id"])
    notes = _notes("discharge")
    return list(notes.loc[notes["hadm_id"].isin(anchors), "text"])


def test_notes_have_the_mimic_iv_note_layout() -> None:
    for text in _notes("discharge")["text"]:
        assert text.startswith("Name:  ___                 Unit No:   ___"), text[:80]
        assert "Attending: ___." in text and re.search(r"(?im)^follow[- ]?up instructions?:", text)
    for text in _anchor_texts():
        assert re.search(r"Dear M[rs]s?\. ___,", text)
    for text in _notes("radiology")["text"]:
        assert "FINDINGS:" in text and "IMPRESSION:" in text and "___" in text
        assert radiology_title(text) != "Radiology report" or "INDICATION" in text.upper()


def test_layouts_vary_as_real_notes_do() -> None:
    texts = list(_notes("discharge")["text"])
    assert any("\r\n" in t for t in texts) and not all("\r\n" in t for t in texts)
    assert sum("\n \n" in t for t in texts) > len(texts) // 2  # one-space separator lines, mostly
    assert any(re.search(r"(?m)^Discharge Condition\r?$", t) for t in texts)  # header, no colon
    spellings = {
        m.lower() for t in texts for m in re.findall(r"(?im)^(follow[- ]?up instructions?):", t)
    }
    assert len(spellings) >= 3
    starts = collections.Counter(
        re.sub(r"[:\s].*", "", t.lstrip("\r\n")[:14], flags=re.S)
        for t in _notes("radiology")["text"]
    )
    assert len(starts) >= 5, starts


def test_note_grounding_reads_every_anchor_summary() -> None:
    for text in _anchor_texts():
        got = note_grounding(text)
        assert all(got.values()), {k: v for k, v in got.items() if not v}
        assert got["functional_status"].startswith("Ambulatory")
        assert got["discharge_medications"].startswith("1. ")


def test_compat_careplans_take_both_branches_on_the_sample(sample_store) -> None:
    """Some notes have a plan the reference's expression finds and some do not; its Discharge
    Condition is the first line where strict keeps the whole section."""
    found, first_line_only = 0, 0
    subjects = sorted({int(s) for s in _notes("discharge")["subject_id"]})
    for sid in subjects:
        ctx = ToolContext(store=sample_store, subject_id=sid, semantics="compat")
        plans = call_tool(ctx, "CarePlan.search", {"subject_id": sid, "category": "treatment"})
        found += plans["total"] > 0
        strict = ToolContext(store=sample_store, subject_id=sid, semantics="strict")
        care = call_tool(
            strict, "CarePlan.search", {"subject_id": sid, "category": "discharge-planning"}
        )
        whole = " ".join(n["text"] for e in care.get("entry", []) for n in e["resource"]["note"])
        compat = call_tool(
            ctx, "CarePlan.search", {"subject_id": sid, "category": "discharge-planning"}
        )
        bodies = [e["resource"]["note"][0]["text"] for e in compat["entry"]]
        first_line_only += any(
            b.startswith("Mental Status:") and "\n" not in b for b in bodies
        ) and ("Activity Status" in whole)
    assert 0 < found < len(subjects) and first_line_only > 0


def test_discharge_planning_sessions_carry_their_note_grounding() -> None:
    path = SAMPLE.parent / "sessions" / "discharge_planning.jsonl"
    sessions = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    notes = _notes("discharge")
    for s in sessions:
        text = notes.loc[notes["hadm_id"] == str(s["hadm_id"]), "text"].iloc[-1]
        assert s["note_grounding"] == note_grounding(text), s["id"]
        assert s["note_grounding"]["chief_complaint"] and s["note_grounding"]["functional_status"]
