"""Each read tool declares the per-subject columns it reads (``@read_tool(..., reads=...)``), and
the store loads only the union of those declarations: run with nothing loaded but its own
declaration, every tool must answer exactly as it does with everything loaded (an undeclared
table or column is a KeyError, or a ``.get`` that silently turns into None and changes the
answer)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import fixtures_tools as fx
import pytest

from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import EHR_READ_TOOLS, ToolContext, call_tool, registry

sample_store = fx.sample_store

#: Arguments that take each tool down its branches (categories, filters, matches and misses).
ARGUMENTS: dict[str, list[dict[str, Any]]] = {
    "Patient.read": [{}],
    "Encounter.search": [{}, {"hadm": True}],
    "Condition.search": [
        {},
        {"code": "I"},
        {"code": "heart"},
        {"clinical_status": "inactive"},
        {"hadm": True},
    ],
    "Observation.search": [
        {},
        {"code": "Creatinine", "hadm": True},
        {"code": "Zzzz"},
        {"category": "vital-signs"},
        {"category": "vital-signs", "code": "weight"},
        {"category": "vital-signs", "hadm": True},
        {"category": "microbiology"},
        {"category": "microbiology", "code": "blood"},
    ],
    "MedicationRequest.search": [{}, {"status": "active"}, {"medication": "a", "hadm": True}],
    "MedicationAdministration.search": [{}, {"medication": "a", "hadm": True}],
    "DiagnosticReport.search": [
        {},
        {"report_type": "CT"},
        {"report_type": "blood"},
        {"hadm": True},
    ],
    "DocumentReference.search": [{}, {"keyword": "the"}, {"type_code": "radiology", "hadm": True}],
    "CarePlan.search": [{}, {"category": "followup"}, {"hadm": True}],
}


def _subjects(store: EHRStore) -> list[tuple[int, int]]:
    """(subject, admission) with notes, microbiology, eMAR and ICU vitals among them."""
    found: list[tuple[int, int]] = []
    for table in ("discharge", "radiology", "microbiologyevents", "emar", "chartevents"):
        row = store.rows(
            f'SELECT subject_id, hadm_id FROM "{table}" WHERE hadm_id IS NOT NULL ORDER BY '
            "subject_id LIMIT 1"
        )
        found += [
            (r["subject_id"], r["hadm_id"])
            for r in row
            if (r["subject_id"], r["hadm_id"]) not in found
        ]
    return found


def _answers(
    store: EHRStore, tool: str, semantics: str, subjects: list[tuple[int, int]]
) -> list[dict]:
    out = []
    for sid, hadm in subjects:
        ctx = ToolContext(
            store=store, subject_id=sid, hadm_id=hadm, current_date=None, semantics=semantics
        )
        for args in ARGUMENTS[tool]:
            call = {k: v for k, v in args.items() if k != "hadm"} | {"subject_id": sid}
            if args.get("hadm"):
                call["hadm_id"] = hadm
            out.append(call_tool(ctx, tool, call))
    return out


@pytest.fixture
def columns_of() -> Iterator[Any]:
    """Make the store load only the given declaration (registry.COLUMNS restored after)."""
    saved = dict(registry.COLUMNS)

    def only(reads: dict[str, tuple[str, ...]]) -> None:
        registry.COLUMNS.clear()
        registry.COLUMNS.update(reads)

    yield only
    registry.COLUMNS.clear()
    registry.COLUMNS.update(saved)


def test_every_read_tool_has_arguments_here() -> None:
    assert set(ARGUMENTS) == set(EHR_READ_TOOLS)


@pytest.mark.parametrize("semantics", ["strict", "compat"])
@pytest.mark.parametrize("tool", list(EHR_READ_TOOLS))
def test_a_read_tool_needs_only_the_columns_it_declares(
    tool, semantics, sample_store, columns_of
) -> None:
    subjects = _subjects(sample_store)
    assert len(subjects) >= 3
    everything = _answers(sample_store, tool, semantics, subjects)
    columns_of(registry.READS[semantics][tool])
    alone = open_store(sample_store.path)  # empty caches (rows and compat frames are per store)
    try:
        assert _answers(alone, tool, semantics, subjects) == everything
    finally:
        alone.close()
