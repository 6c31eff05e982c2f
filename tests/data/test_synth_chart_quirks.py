"""The committed sample carries the chart quirks of ``physassist.synth.chart_quirks`` and the
timeline handles them: the metoprolol XL order written as a 25 mg and a 50 mg row of one
``poe_id`` is one 75 mg order, and the contaminated draw is suspect and never cited."""

from __future__ import annotations

import csv
import gzip

import fixtures_builder as fb
import fixtures_tools as fx
import pytest

from physassist.ehr.tools import ToolContext, call_tool
from physassist.synth.chart_quirks import DRAW_ID_OFFSET, SPLIT_CODE
from physassist.synth.quirks import TWIN_ID_OFFSET
from physassist.timeline import load_timeline

sample_store = fx.sample_store
COHORT = fb.SAMPLE / "cohort"
pytestmark = pytest.mark.skipif(
    not (COHORT / "meta" / "subjects.csv").is_file(), reason=f"no sample cohort at {COHORT}"
)


def _table(name: str) -> list[dict[str, str]]:
    with gzip.open(COHORT / "hosp" / f"{name}.csv.gz", "rt", newline="") as f:
        return list(csv.DictReader(f))


def _anchors() -> dict[int, tuple[int, str]]:
    """hadm_id of each anchor admission -> (subject_id, current_date)."""
    with (COHORT / "meta" / "subjects.csv").open(newline="") as f:
        return {
            int(r["anchor_hadm_id"]): (int(r["subject_id"]), r["current_date"])
            for r in csv.DictReader(f)
        }


def test_the_split_order_is_one_75_mg_order(sample_store) -> None:
    rows = [r for r in _table("prescriptions") if r["formulary_drug_cd"] == SPLIT_CODE]
    by_poe: dict[str, list[str]] = {}
    for r in rows:
        by_poe.setdefault(r["poe_id"], []).append(r["dose_val_rx"])
    assert by_poe and all(sorted(doses) == ["25", "50"] for doses in by_poe.values())
    anchors = _anchors()
    checked = 0
    for poe, hadm in sorted({(r["poe_id"], int(r["hadm_id"])) for r in rows}):
        if hadm not in anchors:
            continue
        subject, day = anchors[hadm]
        tl = load_timeline(sample_store.cursor(), subject, hadm, day)
        orders = [o for o in tl.orders_for("metoprolol") if "XL" in o.drug]
        assert len(orders) == 1 and orders[0].dose == 75, (poe, orders)
        ctx = ToolContext(store=sample_store, subject_id=subject, hadm_id=hadm, current_date=day)
        args = {"subject_id": subject, "hadm_id": hadm, "medication": "metoprolol succinate"}
        doses = {
            r["resource"]["dosage"]["dose"]["value"]
            for r in call_tool(ctx, "MedicationAdministration.search", args)["entry"]
        }
        assert doses == {75}, (poe, doses)
        checked += 1
    assert checked >= 3


def test_the_contaminated_draw_is_suspect_and_never_cited(sample_store) -> None:
    labels = {"50931": "Glucose", "50882": "Bicarbonate", "50971": "Potassium", "50902": "Chloride"}
    draws = [
        r for r in _table("labevents") if DRAW_ID_OFFSET <= int(r["labevent_id"]) < TWIN_ID_OFFSET
    ]
    assert {r["itemid"] for r in draws} == set(labels)
    anchors = _anchors()
    for hadm in {int(r["hadm_id"]) for r in draws}:
        subject, day = anchors[hadm]
        tl = load_timeline(sample_store.cursor(), subject, hadm, day)
        glucose = tl.lab("Glucose")
        assert glucose is not None
        times = {p.time for p in glucose.points if p.value > 500}
        assert times and times <= glucose.suspect, (hadm, times)
    cited = {(int(r["hadm_id"]), labels[r["itemid"]], float(r["valuenum"])) for r in draws}
    sessions = fb.read_entries(fb.SAMPLE / "sessions")
    claims = {
        (e["hadm_id"], c.get("label"), c.get("value"))
        for e in sessions
        for turn in e["rubric_checks"]
        for c in turn
        if c and c.get("kind") == "value"
    }
    assert not cited & claims
    assert {e["hadm_id"] for e in sessions} & {h for h, _, _ in cited}, (
        "no sample session is on an admission with a contaminated draw: the check reads nothing"
    )
