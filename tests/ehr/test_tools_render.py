"""Renderers: the reference's compact view (docs/compat.md#text-shown-to-the-model-renderresult-compat), our full view, raw JSON."""

from __future__ import annotations

import json

import fixtures_tools as fx
import pytest
from fixtures_tools import ANCHOR, SID, tiny_ctx

from physassist.ehr.tools import call_tool, render
from physassist.ehr.tools.render import COMPAT_CAP

tiny_store = fx.tiny_store


def run(store, semantics: str, tool: str, **args) -> dict:
    return call_tool(tiny_ctx(store, semantics), tool, {"subject_id": SID, **args})


def test_compat_render_lines_match_reference_format(tiny_store) -> None:
    obs = render(run(tiny_store, "compat", "Observation.search", code="Potassium"), "compat")
    assert (
        obs == "(1 results)\n  - Potassium: 5.9 mEq/L (Abnormal) @ 2150-01-06"
    )  # no reference range
    mar = render(
        run(tiny_store, "compat", "MedicationAdministration.search", medication="Apixaban"),
        "compat",
    )
    assert mar.splitlines()[1:] == [
        "  - Apixaban:   @ 2150-01-07 09:00",
        "  - Apixaban:   @ 2150-01-06 09:00",
    ]
    cond = render(run(tiny_store, "compat", "Condition.search", code="I48"), "compat")
    assert cond.splitlines()[1] == "  - Unspecified atrial fibrillation [active] @ "
    enc = render(run(tiny_store, "compat", "Encounter.search", hadm_id=ANCHOR), "compat")
    assert enc.splitlines()[1] == "  - IMP  2150-01-05–2150-01-10 "
    rx = render(
        run(tiny_store, "compat", "MedicationRequest.search", medication="apixaban"), "compat"
    )
    assert rx.splitlines()[1] == "  - Apixaban [completed]: 5.0mg PO @ "
    plan = render(run(tiny_store, "compat", "CarePlan.search", category="followup"), "compat")
    assert plan.splitlines()[1:] == ["  - Followup Instructions [completed]"] * 2  # body dropped


def test_compat_render_caps_lines_and_characters(tiny_store) -> None:
    text = render(run(tiny_store, "compat", "Observation.search", code="Glucose"), "compat")
    lines = text.splitlines()
    assert lines[0] == "(20 results)" and len(lines) == 17 and lines[-1] == "  ... (5 more)"
    big = {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": 1,
        "entry": [
            {
                "resource": {
                    "resourceType": "DocumentReference",
                    "type": {"text": "x"},
                    "date": "2150-01-01",
                    "content": [{"attachment": {"data": "word " * 2000}}],
                }
            }
        ]
        * 15,
    }
    text = render(big, "compat")
    full = len("(15 results)") + 15 * len("\n  - x @ 2150-01-01: " + ("word " * 2000)[:800])
    assert text == text[:COMPAT_CAP] + f"\n... [truncated: {full} chars total]"


def test_compat_render_other_results(tiny_store) -> None:
    ctx = tiny_ctx(tiny_store, "compat")
    write = call_tool(
        ctx,
        "ServiceRequest.create",
        {"subject_id": SID, "service_type": "BMP", "priority": "urgent"},
    )
    assert render(write, "compat") == f"ServiceRequest created: id={write['id']} status=active"
    assert render({"patient_response": "x" * 3000}, "compat") == "x" * 1500
    empty = run(tiny_store, "compat", "MedicationRequest.search", medication="warfarin")
    assert render(empty, "compat") == json.dumps(empty)  # json's default separators
    patient = run(tiny_store, "compat", "Patient.read")
    assert json.loads(render(patient, "compat")) == patient


def test_full_render_keeps_decisive_fields(tiny_store) -> None:
    labs = render(run(tiny_store, "strict", "Observation.search", code="K"), "full")
    assert (
        labs
        == "1 result(s)\n- 2150-01-06 06:00 Potassium: 5.9 mEq/L H [ref 3.3 mEq/L - 5.1 mEq/L] "
        "(HEMOLYZED)"
    )
    mar = render(run(tiny_store, "strict", "MedicationAdministration.search"), "full")
    assert (
        "Apixaban: Administered [completed], dose 5 mg PO" in mar and "Hold Dose [on-hold]" in mar
    )
    plan = render(run(tiny_store, "strict", "CarePlan.search", hadm_id=ANCHOR), "full")
    assert (
        "Please take apixaban 5 mg twice daily." in plan and "Cardiology clinic in 2 weeks." in plan
    )
    enc = render(run(tiny_store, "strict", "Encounter.search", hadm_id=ANCHOR), "full")
    assert "discharged to HOME HEALTH CARE" in enc
    report = render(run(tiny_store, "strict", "DiagnosticReport.search", report_type="CT"), "full")
    assert "Conclusion: No hemorrhage." in report and "CT HEAD W/O CONTRAST" in report
    micro = render(run(tiny_store, "strict", "Observation.search", category="microbiology"), "full")
    assert "ESCHERICHIA COLI; susceptibility:" in micro
    assert "CEFTRIAXONE S <=1" in micro and "AMPICILLIN R >=32" in micro
    miss = render(run(tiny_store, "strict", "Observation.search", code="Zzzznotexist"), "full")
    assert miss.startswith("0 result(s)\nNote: No laboratory test named 'Zzzznotexist'")


def test_full_render_of_compat_results_keeps_event_text(tiny_store) -> None:
    mar = render(
        run(tiny_store, "compat", "MedicationAdministration.search", medication="Apixaban"), "full"
    )
    assert "Apixaban: Not Given [completed]" in mar
    labs = render(run(tiny_store, "compat", "Observation.search", code="Potassium"), "full")
    assert "[ref 3.3 mEq/L - 5.1 mEq/L]" in labs


def test_json_render_is_raw_fhir(tiny_store) -> None:
    result = run(tiny_store, "strict", "Condition.search")
    assert json.loads(render(result, "json")) == result


def test_unknown_render_mode() -> None:
    with pytest.raises(ValueError, match="render mode"):
        render({}, "fancy")  # type: ignore[arg-type]


def test_a_pending_result_reads_pending_in_every_text_view() -> None:
    """strict's pending lab or culture (``registered``, no value) is said to be pending in the
    compact view too (``ehr.render=compat`` with ``ehr.semantics=strict``), never shown as a
    line without a value a model could read as a result."""
    import datetime as dt

    from physassist.ehr.tools.microbiology import specimens
    from physassist.ehr.tools.strict_common import bundle
    from physassist.ehr.tools.strict_observations import micro_observation

    drawn = dt.datetime(2150, 1, 6, 9)
    row = {"micro_specimen_id": 7, "charttime": drawn, "chartdate": drawn.date(), "hadm_id": 1,
           "spec_type_desc": "BLOOD CULTURE", "test_seq": 1, "test_itemid": 90201,
           "test_name": "Blood Culture, Routine", "org_name": "ESCHERICHIA COLI",
           "isolate_num": 1, "ab_name": None, "dilution_text": None, "interpretation": None,
           "comments": None}  # fmt: skip
    [specimen] = specimens([row], drawn + dt.timedelta(hours=1), lambda r: drawn + dt.timedelta(2))
    [test] = specimen.tests
    lab = {"resourceType": "Observation", "id": "lab-1", "status": "registered",
           "code": {"text": "Creatinine"}, "effectiveDateTime": "2150-01-06T09:00:00"}  # fmt: skip
    result = bundle([micro_observation(specimen, test, None, SID), lab])
    compat = render(result, "compat").splitlines()[1:]
    assert compat == [
        "  - Blood Culture, Routine (BLOOD CULTURE): pending @ 2150-01-06",
        "  - Creatinine: pending @ 2150-01-06",
    ]
    assert "ESCHERICHIA" not in render(result, "full")
    full = render(result, "full").splitlines()[1:3]
    assert [line.split(": ", 1)[1].split(" ")[0] for line in full] == ["pending", "pending"]
