"""A turn record's raw tool results: the loop writes them as JSON text (``raw_json``, issue 25),
logs written before hold the object (``raw``); every reader (the judges, the traces' ``fhir``
attribute) gets the same from either."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from fixtures_scoring import make_session, turn_input

from physassist.results import call_raw, call_raw_json
from scorers import llm_judge
from solvers.tools import SessionToolbox

BUNDLE = {
    "resourceType": "Bundle", "type": "searchset", "total": 1,
    "entry": [{"resource": {"resourceType": "Observation", "code": {"text": "Creatinine"},
                            "valueQuantity": {"value": 2.9, "unit": "µmol/L"}, "note": [{"text": "复查"}],
                            "interpretation": None}}],
}
OUTCOME = {"resourceType": "OperationOutcome", "issue": [{"severity": "error", "code": "invalid",
                                                          "diagnostics": "Unknown code"}]}
COMPAT_ERROR = {"error": "Unknown tool: Lab.search"}  # the reference's bare refusal (ehr=compat)


def written(raw: dict[str, Any]) -> dict[str, Any]:
    """The record the loop writes for a call that returned ``raw``."""
    toolbox = SessionToolbox(lambda name, args: raw, lambda r: "shown text", observations="keep", language="en")
    return anyio.run(toolbox.call, "Observation.search", {"subject_id": 1, "code": "Creatinine"})


def before(record: dict[str, Any]) -> dict[str, Any]:
    """The same call as a log written before issue 25 holds it."""
    return {**{k: v for k, v in record.items() if k != "raw_json"}, "raw": call_raw(record)}


@pytest.mark.parametrize("raw", [BUNDLE, OUTCOME, COMPAT_ERROR], ids=["bundle", "outcome", "compat-error"])
def test_a_record_of_either_shape_reads_the_same(raw) -> None:
    new = written(raw)
    assert set(new) == {"name", "arguments", "raw_json", "text", "started", "seconds"}
    assert isinstance(new["raw_json"], str)
    assert ("µmol/L" in new["raw_json"]) == (raw is BUNDLE)  # not \u-escaped, as the traces showed
    old = before(new)
    assert call_raw(new) == call_raw(old) == raw
    assert call_raw_json(new) == call_raw_json(old)


def test_judges_see_the_same_calls_in_either_shape() -> None:
    session = make_session("s")
    new = [written(BUNDLE), written(OUTCOME), written(COMPAT_ERROR)]
    turns = [turn_input(session, 0, "Creatinine 2.9.", calls) for calls in (new, [before(c) for c in new])]
    assert [len(t.executed_calls()) for t in turns] == [1, 1]  # the refusals did not run
    assert llm_judge.evidence_block(turns[0]) == llm_judge.evidence_block(turns[1])
    assert "Creatinine" in llm_judge.evidence_block(turns[0])
