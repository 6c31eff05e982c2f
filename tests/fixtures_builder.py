"""Shared helpers for the session-builder tests (imported by tests/test_builder_*.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures_store import DEMO_DIR

from generation.builder.plan import check_session_rules
from physassist.data.models import Session

REPO = Path(__file__).resolve().parents[1]
DEMO = DEMO_DIR
SAMPLE = REPO / "data" / "sample"


#: The hand-written records' admission (subject 1, stay 2; discharged home on 2150-03-06).
ADMISSION = {
    "subject_id": 1,
    "hadm_id": 2,
    "admittime": "2150-03-01 07:00:00",
    "dischtime": "2150-03-06 12:00:00",
    "discharge_location": "HOME",
}
_LAB_COLUMNS = ("itemid", "charttime", "valuenum", "ref_range_lower", "ref_range_upper")


def labevents(*rows: tuple[Any, ...]) -> list[dict[str, Any]]:
    """``labevents`` rows of the stay in ADMISSION, numbered in order, from tuples
    ``(itemid, charttime, valuenum[, ref_range_lower, ref_range_upper])``."""
    return [
        {
            "labevent_id": i,
            "subject_id": 1,
            "hadm_id": 2,
            **dict(zip(_LAB_COLUMNS, row, strict=False)),
        }
        for i, row in enumerate(rows)
    ]


def demo_or_skip() -> Path:
    if not (DEMO / "hosp").is_dir():
        pytest.skip(f"MIMIC-IV demo not found at {DEMO}")
    return DEMO


def read_entries(directory: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in sorted(directory.glob("*.jsonl")):
        with path.open(encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def rule_problems(entry: dict[str, Any]) -> list[str]:
    """Arc/tier/diversity violations of one built session."""
    tools = [
        [a["action"]["name"] for a in turn if a["action"]["name"] != "prepare_to_answer"]
        for turn in entry["answer_list"]
    ]
    return check_session_rules(
        entry["task_types"], tools, entry["tool_sources"], entry["difficulty_level"]
    )


def gold_check_failures(entry: dict[str, Any]) -> list[str]:
    """Rubric checks the session's own gold answers/calls fail, judged by the rules judge."""
    from physassist.turn_records import CallRecord, TurnRecord
    from scorers.judgement import TurnInput
    from scorers.rules_judge import check_item
    from scorers.session_view import SessionView

    view = SessionView(Session.model_validate(entry))
    failures: list[str] = []
    for lang, key in (("en", "answer_list"), ("zh", "answer_list_zh")):
        for t, actions in enumerate(entry[key]):
            calls = tuple(
                CallRecord.from_stored(
                    {
                        "name": a["action"]["name"],
                        "arguments": a["action"]["arguments"],
                        "raw": a["observation"],
                    }
                )
                for a in actions
                if a["action"]["name"] != "prepare_to_answer"
            )
            record = TurnRecord(t, entry["tasks"][t], actions[-1]["observation"], calls=calls)
            ti = TurnInput(
                session=view,
                language=lang,
                record=record,
                items=entry["rubrics"][t],
                checks=entry["rubric_checks"][t],
            )
            for i, check in enumerate(entry["rubric_checks"][t]):
                result = check_item(check, ti)
                if result.passed is not True:
                    failures.append(f"{entry['id']} {lang} turn {t} item {i}: {result.reason}")
    return failures


def timeline_of(
    rows: dict[str, list[dict[str, Any]]],
    subject_id: int = 1,
    hadm_id: int = 2,
    current_date: str = "2150-03-06",
    until: Any = None,
):
    """A clinical timeline over a tiny in-memory store: the canonical (empty) tables of
    ``physassist.ehr.tables`` plus ``rows`` per table (columns by name, others NULL); at the
    end of ``current_date``, or at the instant ``until``."""
    import duckdb

    from physassist.ehr.tables import TABLES, create_table_sql
    from physassist.timeline import load_timeline

    con = duckdb.connect()
    for spec in TABLES.values():
        con.execute(create_table_sql(spec))
    for table, records in rows.items():
        for record in records:
            cols = ", ".join(f'"{c}"' for c in record)
            marks = ", ".join("?" for _ in record)
            con.execute(f'INSERT INTO "{table}" ({cols}) VALUES ({marks})', list(record.values()))
    return load_timeline(con, subject_id, hadm_id, current_date, until)


def _as_time(value: Any) -> Any:
    """A CSV-style time string as the datetime the store would hold."""
    import datetime as dt
    import re

    if isinstance(value, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}( \d{2}:\d{2}:\d{2})?", value):
        return dt.datetime.fromisoformat(value)
    return value


def culture_digest(
    rows: list[dict[str, Any]],
    current_date: str = "2150-03-06",
    admission: dict[str, Any] = ADMISSION,
) -> Any:
    """The ``culture_latest`` digest of microbiology ``rows`` of ``admission`` at the end of
    ``current_date``, read through the strict tool's specimen view as the builder reads it."""
    import datetime as dt

    from generation.builder.gold import digest
    from generation.builder.profile import Profile
    from generation.builder.topics import Topic
    from physassist.ehr.tools.microbiology import specimens
    from physassist.ehr.tools.reported import reported_at, stays
    from physassist.ehr.tools.strict_notes import micro_report

    record = {"admissions": [admission], "microbiologyevents": rows}
    prof = Profile(
        1, 2, current_date, "F", 70, timeline=timeline_of(record, current_date=current_date)
    )
    found = specimens(
        [{k: _as_time(v) for k, v in r.items()} for r in rows],
        prof.timeline.cutoff - dt.timedelta(microseconds=1),
        reported_at("microbiologyevents", True)[1],
        stays([{k: _as_time(v) for k, v in admission.items()}]),
    )
    page = {
        "resourceType": "Bundle",
        "type": "searchset",
        "entry": [{"resource": micro_report(s, 1)} for s in found],
    }
    d = digest(Topic("culture_latest"), [page], prof)
    assert d is not None
    return d
