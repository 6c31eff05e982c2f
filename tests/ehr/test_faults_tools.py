"""Hostile tool calls: oversized, deep or odd arguments never raise, never log an error, never
echo megabytes and never take long; ``render`` prints any value.

The time bound here (0.5 s) is a fault guard, ten times the 50 ms target, so a loaded
machine does not fail it; the target itself is measured in ``benchmarks/tool_hostile.py``.
Before the guards: a 1 MB compat ``medication`` took 2.35-4.9 s (compiled as a regex), a
1 MB ``subject_id`` came back as a 1 MB OperationOutcome, 100k-deep arguments raised
RecursionError inside ``call_tool`` (an ERROR traceback in the log), ``render`` raised on a
5,000-level dict.
"""

from __future__ import annotations

import json
import logging
import time

import pytest
from fixtures_tools import sample_store as sample_store  # noqa: F401 (fixture)

from physassist.ehr.store import EHRStore
from physassist.ehr.tools import TOOL_NAMES, ToolContext, call_tool, render
from physassist.ehr.tools.args import MAX_TEXT
from physassist.faults import SystemFault

SUBJECT = 30000001
MEGA = 1_000_000


def deep(levels: int, leaf: object = 1) -> dict:
    value: object = leaf
    for _ in range(levels):
        value = {"a": value}
    return value  # type: ignore[return-value]


HOSTILE: dict[str, object] = {
    "1 MB subject_id (digits)": {"subject_id": "9" * MEGA},
    "1 MB subject_id (letters)": {"subject_id": "x" * MEGA},
    "1 MB subject_id as JSON": json.dumps({"subject_id": "9" * MEGA}),
    "1 MB medication": {"subject_id": SUBJECT, "medication": "a" * MEGA},
    "1 MB of open parentheses": {"subject_id": SUBJECT, "medication": "(" * MEGA},
    "1,000 open parentheses": {"subject_id": SUBJECT, "medication": "(" * MAX_TEXT},
    "1 MB code": {"subject_id": SUBJECT, "code": "x" * MEGA},
    "1 MB keyword": {"subject_id": SUBJECT, "keyword": "x" * MEGA},
    "1 MB parameter name": {"subject_id": SUBJECT, "k" * MEGA: 1},
    "100k keys": {"subject_id": SUBJECT, **{f"k{i}": i for i in range(100_000)}},
    "100k-deep JSON text": f'{{"subject_id": {SUBJECT}, "code": {"[" * 100_000 + "]" * 100_000}}}',
    "10k-deep JSON text": f'{{"subject_id": {SUBJECT}, "code": {"[" * 10_000 + "]" * 10_000}}}',
    "100k-deep dict": {"subject_id": SUBJECT, "code": deep(100_000)},
    "5,000-digit integer text": f'{{"subject_id": {"9" * 5_000}}}',
    "huge integer": {"subject_id": 10**1000},
    "1 MB JSON string of junk": "x" * MEGA,
    "long list": {"subject_id": SUBJECT, "code": list(range(100_000))},
}


def _assert_harmless(result: dict, started: float) -> None:
    # this thread's CPU, not wall time: a hang guard (a 1 MB compat medication took 4.87 s before
    # the bounds) that machine load cannot trip; the timings themselves: benchmarks/tool_hostile.py
    seconds = time.thread_time() - started
    assert seconds < 0.5, f"took {seconds:.2f}s of CPU"
    size = len(json.dumps(result))
    for mode in ("compat", "full", "json"):
        assert isinstance(render(result, mode), str)
    if result.get("resourceType") == "OperationOutcome" or "error" in result:
        assert size < 5_000, f"{size:,}-character OperationOutcome"  # 2 capped texts at most


@pytest.mark.parametrize("semantics", ["strict", "compat"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_arguments_are_answered_briefly_and_quickly(
    sample_store: EHRStore,  # noqa: F811
    semantics: str,
    case: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ctx = ToolContext(
        store=sample_store, subject_id=SUBJECT, current_date="2166-12-31", semantics=semantics
    )
    call_tool(ctx, "Patient.read", {"subject_id": SUBJECT})  # warm the subject's rows
    for tool in TOOL_NAMES:
        with caplog.at_level(logging.ERROR):
            started = time.thread_time()
            result = call_tool(ctx, tool, HOSTILE[case])
            _assert_harmless(result, started)
        assert not caplog.records, f"{tool}: {caplog.records[0].getMessage()}"


@pytest.mark.parametrize("semantics", ["strict", "compat"])
def test_a_megabyte_tool_name_is_not_echoed(sample_store: EHRStore, semantics: str) -> None:  # noqa: F811
    ctx = ToolContext(store=sample_store, subject_id=SUBJECT, semantics=semantics)
    started = time.thread_time()
    result = call_tool(ctx, "X" * MEGA, {"subject_id": SUBJECT})
    _assert_harmless(result, started)
    assert result.get("resourceType") == "OperationOutcome" or "error" in result


def test_oversized_arguments_are_named_not_echoed(sample_store: EHRStore) -> None:  # noqa: F811
    ctx = ToolContext(store=sample_store, subject_id=SUBJECT, semantics="compat")
    result = call_tool(
        ctx, "MedicationRequest.search", {"subject_id": SUBJECT, "medication": "a" * MEGA}
    )
    text = render(result, "full")
    assert "'medication' is 1,000,000 characters long; at most 1,000" in text
    deep_result = call_tool(
        ctx, "Observation.search", {"subject_id": SUBJECT, "code": deep(100_000)}
    )
    assert "nested deeper than" in render(deep_result, "full")


def test_normal_arguments_still_answer(sample_store: EHRStore) -> None:  # noqa: F811
    """The bounds are far above real calls: a long but plausible value is still searched."""
    for semantics in ("strict", "compat"):
        ctx = ToolContext(store=sample_store, subject_id=SUBJECT, semantics=semantics)
        result = call_tool(
            ctx, "Observation.search", {"subject_id": SUBJECT, "code": "Creatinine", "_count": 5}
        )
        assert result["resourceType"] == "Bundle"
        nested = call_tool(ctx, "Patient.read", {"subject_id": SUBJECT, "extra": deep(5)})
        assert nested["resourceType"] in ("Patient", "OperationOutcome")


@pytest.mark.parametrize("mode", ["compat", "full", "json"])
@pytest.mark.parametrize(
    "value",
    [
        deep(5_000),
        [[[]]] * 2 + [deep(5_000)],
        {"resourceType": "Bundle", "entry": [{"resource": deep(5_000)}]},
    ],
    ids=["dict", "list", "bundle"],
)
def test_render_prints_any_depth(value: object, mode: str) -> None:
    text = render(value, mode)  # type: ignore[arg-type]
    assert isinstance(text, str) and len(text) < 20_000


# -- infrastructure faults inside a tool call: not tool answers ------------------------------


def test_a_store_that_cannot_be_read_is_a_system_fault(sample_store: EHRStore) -> None:  # noqa: F811
    """A closed (or unreadable) store raises SystemFault; the model's bad arguments on the same
    broken store are still its own mistake (an OperationOutcome, no store read needed)."""
    broken = EHRStore(sample_store.path, prefetch=False)
    broken.close()
    for semantics in ("strict", "compat"):
        ctx = ToolContext(store=broken, subject_id=SUBJECT, semantics=semantics)
        with pytest.raises(SystemFault, match="Observation.search failed: .*closed"):
            call_tool(ctx, "Observation.search", {"subject_id": SUBJECT, "code": "Creatinine"})
        refused = call_tool(ctx, "Observation.search", {"subject_id": SUBJECT, "k" * 2_000: 1})
        assert refused.get("resourceType") == "OperationOutcome" or "error" in refused


@pytest.mark.slow
def test_corrupt_rows_end_the_turn_unscored_and_counted(tmp_path, sample_store: EHRStore) -> None:  # noqa: F811
    """The issue's run without the integrity check (a store file with no manifest, three
    overwritten blocks): calls that hit a corrupt block end their turn with status error,
    unscored with the reason and counted; no corrupt-read text reaches the model or a score."""
    import shutil

    from inspect_ai import eval as inspect_eval
    from test_faults_store import overwrite_blocks

    from physassist.metrics import summarize
    from physassist.results import turn_table
    from solvers.context import cached_store
    from tasks.physassistbench import physassistbench

    corrupt = tmp_path / "corrupt.duckdb"
    shutil.copy(sample_store.path, corrupt)
    overwrite_blocks(corrupt)
    task = physassistbench(dataset="sample", ehr_source=str(corrupt), judge="rules")
    try:
        [log] = inspect_eval(
            task,
            model="physassist/baseline",
            limit=12,
            display="none",
            log_dir=str(tmp_path / "logs"),
        )
    finally:
        cached_store.cache_clear()
    assert log.status == "success"
    turns = [t for s in log.samples for t in s.store["physassist:turns"]]
    faulted = [t for t in turns if t["end"] == "error"]
    assert faulted, "the damage must hit some calls"
    assert all("Corrupt database file" in t["error"] for t in faulted)
    seen = [m.text for s in log.samples for m in s.messages if m.role == "tool"]
    assert seen and not [t for t in seen if "Corrupt" in t or "execution error" in t]
    table = turn_table(log)
    errors = table[table["status"] == "error"]
    assert len(errors) == len(faulted) and errors["score"].isna().all()
    assert summarize(table, n_boot=0)["error_turns"] == len(faulted)
