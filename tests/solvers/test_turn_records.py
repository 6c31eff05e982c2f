"""The typed turn record (``physassist.turn_records``): what the loop writes is what every reader
gets back, and the shapes of logs written before read the same.

A call's raw result is written as JSON text (``raw_json``, issue 25); logs written before hold
the object (``raw``), and older ones have no ``started`` or ``history``. Every reader (the
judges, the turn table, the traces' ``fhir`` attribute) goes through ``from_stored``.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import anyio
import pytest
from fixtures_scoring import gold_records, make_session, turn_input

from physassist.results import turn_rows
from physassist.turn_records import TURNS_KEY, CallRecord, TurnRecord, read_turns, stored_turns
from scorers import llm_judge
from scorers.session_scorer import turn_inputs
from solvers.tools import SessionToolbox

BUNDLE = {
    "resourceType": "Bundle",
    "type": "searchset",
    "total": 1,
    "entry": [
        {
            "resource": {
                "resourceType": "Observation",
                "code": {"text": "Creatinine"},
                "valueQuantity": {"value": 2.9, "unit": "µmol/L"},
                "note": [{"text": "复查"}],
                "interpretation": None,
            }
        }
    ],
}
OUTCOME = {
    "resourceType": "OperationOutcome",
    "issue": [{"severity": "error", "code": "invalid", "diagnostics": "Unknown code"}],
}
COMPAT_ERROR = {"error": "Unknown tool: Lab.search"}  # the reference's bare refusal (ehr=compat)


def written(raw: dict[str, Any]) -> CallRecord:
    """The record the loop makes of a call that returned ``raw``."""
    toolbox = SessionToolbox(
        lambda name, args: raw, lambda r: "shown text", observations="keep", language="en"
    )
    return anyio.run(toolbox.call, "Observation.search", {"subject_id": 1, "code": "Creatinine"})


def before(call: CallRecord) -> dict[str, Any]:
    """The same call as a log written before issue 25 holds it (the object, no times)."""
    return {
        "name": call.name,
        "arguments": call.arguments,
        "raw": json.loads(call.raw_json),
        "text": call.text,
    }


@pytest.mark.parametrize(
    "raw", [BUNDLE, OUTCOME, COMPAT_ERROR], ids=["bundle", "outcome", "compat-error"]
)
def test_a_call_of_either_shape_reads_the_same(raw) -> None:
    new = written(raw)
    stored = new.stored()
    assert list(stored) == ["name", "arguments", "raw_json", "text", "started", "seconds"]
    assert (
        isinstance(stored["raw_json"], str) and stored["arguments"] is new.arguments
    )  # shared, not copied
    assert ("µmol/L" in stored["raw_json"]) == (
        raw is BUNDLE
    )  # not \u-escaped, as the traces showed
    assert CallRecord.from_stored(stored) == new
    old = CallRecord.from_stored(before(new))
    assert old.raw == new.raw == raw and old.raw_json == new.raw_json
    assert old.started is None and old.seconds == 0.0
    assert new.refused == (raw is not BUNDLE) == old.refused


def test_a_turn_round_trips_through_the_store_and_old_turns_take_their_defaults() -> None:
    call = written(BUNDLE)
    turn = TurnRecord(1, "Creatinine?", "2.9", "answered", (call,), 20, 10, 1.5e9, 0.25)
    assert TurnRecord.from_stored(turn.stored()) == turn
    assert (
        json.loads(json.dumps(turn.stored())) == turn.stored()
    )  # plain JSON values, as the log keeps them
    legacy = {k: v for k, v in turn.stored().items() if k not in ("started", "history", "error")}
    legacy["calls"] = [before(call)]
    old = TurnRecord.from_stored(legacy)
    assert old.history == "free" and old.started is None and old.error is None
    assert dataclasses.replace(old, calls=()) == dataclasses.replace(turn, started=None, calls=())
    store = {TURNS_KEY: [turn.stored(), "not a record", {"no": "turn"}]}
    assert stored_turns(store) == [turn] and read_turns(None) == [] and stored_turns(None) == []


def test_judges_see_the_same_calls_in_either_shape() -> None:
    session = make_session("s")
    new = [written(BUNDLE), written(OUTCOME), written(COMPAT_ERROR)]
    turns = [
        turn_input(session, 0, "Creatinine 2.9.", calls)
        for calls in ([c.stored() for c in new], [before(c) for c in new])
    ]
    assert [len(t.executed_calls()) for t in turns] == [1, 1]  # the refusals did not run
    assert llm_judge.evidence_block(turns[0]) == llm_judge.evidence_block(turns[1])
    assert "Creatinine" in llm_judge.evidence_block(turns[0])


def test_the_scorer_and_the_turn_table_read_an_old_logs_records() -> None:
    """Records as the test fixtures write them (the oldest shape: ``raw`` objects, no
    ``started``, ``error`` or ``history``): the scorer's inputs and the table's rows."""
    session = make_session("s")
    records = read_turns(gold_records(session)[:3])  # the loop never reached turn 3
    inputs = turn_inputs({"session": json.dumps(session)}, records)
    assert [ti.end for ti in inputs] == ["answered"] * 3 + ["missing"]
    assert inputs[3].question == session["tasks_en"][3] and inputs[3].calls == ()
    assert [len(ti.calls) for ti in inputs[:3]] == [len(r.calls) for r in records]
    scored = [{"turn": t, "score": 1.0, "status": "scored", "items": []} for t in range(4)]
    rows = turn_rows("s", 1, {"session": json.dumps(session)}, scored, records)
    assert [r["tokens_in"] for r in rows] == [100, 101, 102, None]
    assert [r["answered"] for r in rows] == [True, True, True, None]
    assert (
        rows[0]["n_calls"] == len(records[0].calls) and rows[0]["question"] == records[0].question
    )
