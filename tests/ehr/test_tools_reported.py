"""Issue 43 over whole stores: strict shows a lab value or a culture result only once it was
reported, and every specimen drawn by the cutoff and not yet reported as pending.

For every subject of the MIMIC-IV demo and of the sample, for its admissions and several
cutoffs (the morning after admission, the middle of the stay at 08:00, the end of the
discharge date), the strict answers are held to the raw CSV tables read here with DuckDB
(no store, no tools): each lab row of the stay (its own, or without ``hadm_id`` drawn from
``edregtime`` on) is shown, with its value when ``storetime`` is by the cutoff, as pending
otherwise; each microbiology test of the stay's specimens likewise (``storetime``, else the end
of ``storedate``), and nothing of a pending test (organism, result text, antibiotics) reaches
the answer.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import fixtures_store as fs
import fixtures_tools as fx
import pytest

from physassist.ehr.store import EHRStore
from physassist.ehr.tools import ToolContext, call_tool
from physassist.ehr.tools.render import attachment_text

store_cache = fs.store_cache
demo_store = fs.demo_store
sample_store = fx.sample_store

#: Admissions per subject held to the tables (its newest ones).
ADMISSIONS = 3


@functools.cache
def raw(source: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name in ("admissions", "labevents", "microbiologyevents"):
        path = next((source / "hosp").glob(f"{name}.csv*"))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}', header=true)")
    return con


def _ts(value: Any) -> dt.datetime | None:
    if value is None or isinstance(value, dt.datetime):
        return value
    return dt.datetime.combine(value, dt.time.min)


def cutoffs(admit: dt.datetime, disch: dt.datetime) -> list[dt.datetime]:
    """The morning after admission, 08:00 of the stay's middle day, the end of discharge day."""
    middle = (admit + (disch - admit) / 2).replace(hour=8, minute=0, second=0, microsecond=0)
    inside = [t for t in (admit + dt.timedelta(hours=20), middle) if admit < t < disch]
    return [*dict.fromkeys(inside), dt.datetime.combine(disch.date(), dt.time.max)]


def stays(
    con: duckdb.DuckDBPyConnection,
) -> Iterator[tuple[int, int, dt.datetime, dt.datetime, dt.datetime]]:
    """(subject, hadm, window start, admittime, dischtime) of each subject's newest stays."""
    rows = con.execute(
        "SELECT subject_id, hadm_id, coalesce(least(edregtime, admittime), admittime), admittime, "
        "dischtime FROM admissions WHERE dischtime IS NOT NULL "
        "QUALIFY row_number() OVER (PARTITION BY subject_id ORDER BY admittime DESC) <= ? "
        "ORDER BY subject_id, admittime",
        [ADMISSIONS],
    ).fetchall()
    yield from rows


def lab_rows(
    con, sid: int, hadm: int, start: dt.datetime, end: dt.datetime, cutoff: dt.datetime
) -> dict[int, dt.datetime | None]:
    """labevent_id -> report time (None: never reported) of the stay's rows drawn by the cutoff."""
    rows = con.execute(
        "SELECT labevent_id, storetime FROM labevents WHERE subject_id = ? AND charttime <= ? "
        "AND (hadm_id = ? OR (hadm_id IS NULL AND charttime BETWEEN ? AND ?))",
        [sid, cutoff, hadm, start, end],
    ).fetchall()
    return {int(i): _ts(t) for i, t in rows}


def micro_tests(
    con, sid: int, hadm: int, start: dt.datetime, end: dt.datetime, cutoff: dt.datetime
) -> dict[tuple[int, int], dict[str, Any]]:
    """(specimen, test item) -> its report time and what it found, of the stay's specimens
    drawn by the cutoff (a specimen known by its date only: by the stay's days)."""
    rows = con.execute(
        "SELECT micro_specimen_id, test_itemid, storetime, storedate, org_name, comments, ab_name, "
        "test_name "
        "FROM microbiologyevents WHERE subject_id = ? AND coalesce(charttime, chartdate) <= ? "
        "AND (hadm_id = ? OR (hadm_id IS NULL AND ((charttime IS NOT NULL AND charttime "
        "BETWEEN ? AND ?) OR (charttime IS NULL AND CAST(chartdate AS DATE) BETWEEN ? AND ?))))",
        [sid, cutoff, hadm, start, end, start.date(), end.date()],
    ).fetchall()
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for spec, test, stored, day, org, comment, ab, name in rows:
        reported = _ts(stored) or (
            dt.datetime.combine(_ts(day).date(), dt.time.max) if day is not None else None
        )
        found = out.setdefault(
            (int(spec), int(test)), {"reported": reported, "said": set(), "name": name}
        )
        found["said"] |= {x.strip() for x in (org, comment, ab) if x and x.strip() != "___"}
    return out


def known(reported: dt.datetime | None, cutoff: dt.datetime) -> bool:
    return reported is not None and reported <= cutoff


def entries(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        e["resource"]
        for e in result.get("entry", [])
        if e["resource"]["resourceType"] != "OperationOutcome"
    ]


def check_stay(
    store: EHRStore,
    con,
    sid: int,
    hadm: int,
    start: dt.datetime,
    end: dt.datetime,
    cutoff: dt.datetime,
) -> dict[str, int]:
    """Every lab and microbiology answer of one stay at one cutoff against the tables; returns
    how many results and pending specimens were seen."""
    ctx = ToolContext(
        store=store,
        subject_id=sid,
        hadm_id=hadm,
        current_date=cutoff.date().isoformat(),
        cutoff=cutoff,
    )
    seen = {"labs": 0, "labs pending": 0, "tests": 0, "tests pending": 0}
    where = f"subject {sid} hadm {hadm} cutoff {cutoff}"
    labs = lab_rows(con, sid, hadm, start, end, cutoff)
    shown: dict[int, dict[str, Any]] = {}
    (first,) = con.execute(
        "SELECT min(charttime) FROM labevents WHERE labevent_id IN (SELECT unnest(?))", [list(labs)]
    ).fetchone()
    day = dt.datetime.combine(min(start, first or start).date(), dt.time.min)
    while day <= cutoff:  # pages of a day or less: every row of the stay is shown
        shown.update(_page(ctx, sid, hadm, day, day + dt.timedelta(days=1)))
        day += dt.timedelta(days=1)
    assert set(shown) == set(labs), where
    for lab_id, o in shown.items():
        if known(labs[lab_id], cutoff):
            assert o["status"] == "final", (where, lab_id)
            seen["labs"] += 1
        else:  # drawn by the cutoff, not yet reported: nothing of its result
            assert o["status"] == "registered", (where, lab_id)
            assert not {"valueQuantity", "valueString", "interpretation", "referenceRange"} & set(o)
            seen["labs pending"] += 1
    tests = micro_tests(con, sid, hadm, start, end, cutoff)
    got = call_tool(
        ctx,
        "Observation.search",
        {"subject_id": sid, "hadm_id": hadm, "category": "microbiology", "_count": 200},
    )
    assert got["total"] == len(entries(got)), where
    reports = call_tool(
        ctx,
        "DiagnosticReport.search",
        {"subject_id": sid, "hadm_id": hadm, "report_type": "culture"},
    )
    by_test: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for o in entries(got) + [c for r in entries(reports) for c in r.get("contained", [])]:
        by_test.setdefault(_test_of(o), []).append(o)
    assert {_test_of(o) for o in entries(got)} == set(tests), where  # every test of the stay
    assert set(by_test) <= set(tests), where
    for key, found in by_test.items():
        if known(tests[key]["reported"], cutoff):
            seen["tests"] += 1
            assert all(o["status"] in ("final", "cancelled") for o in found), (where, key)
        else:
            seen["tests pending"] += 1
            for o in found:
                assert o["status"] == "registered" and len(found) <= 2, (where, key)
                text = json.dumps({k: v for k, v in o.items() if k not in ("code", "id", "note")})
                assert not any(s in text for s in tests[key]["said"]), (where, key, o)
    for r in entries(reports):  # a report's own text says nothing of its pending tests
        spec = int(r["id"].removeprefix("micro-"))
        pending = [k for k in tests if k[0] == spec and not known(tests[k]["reported"], cutoff)]
        told = {
            s
            for k in tests
            if k[0] == spec and known(tests[k]["reported"], cutoff)
            for s in tests[k]["said"]
        }
        text = r.get("conclusion", "") + attachment_text(r["presentedForm"][0])
        for k in tests:  # the tests' own names say what was sent, not what was found
            text = text.replace(str(tests[k]["name"]).strip(), "")
        for k in pending:
            assert not any(s in text and s not in told for s in tests[k]["said"]), (where, k)
    return seen


def _page(
    ctx: ToolContext, sid: int, hadm: int, since: dt.datetime, until: dt.datetime
) -> dict[int, dict[str, Any]]:
    """The stay's lab Observations drawn in [since, until), halving the window until a page
    holds them all."""
    last = until - dt.timedelta(microseconds=1)
    got = call_tool(
        ctx,
        "Observation.search",
        {
            "subject_id": sid,
            "hadm_id": hadm,
            "date_from": since.isoformat(),
            "date_to": last.isoformat(),
            "_count": 200,
        },
    )
    if got["total"] > len(entries(got)):
        middle = since + (until - since) / 2
        return {**_page(ctx, sid, hadm, since, middle), **_page(ctx, sid, hadm, middle, until)}
    return {int(o["id"].removeprefix("lab-")): o for o in entries(got)}


def _test_of(o: dict[str, Any]) -> tuple[int, int]:
    """(specimen, test item) of a microbiology Observation, from its id ``micro-<s>-<t>-...``."""
    spec, test = o["id"].split("-")[1:3]
    return int(spec), int(test)


def sweep(store: EHRStore, source: Path) -> dict[str, int]:
    con = raw(source)
    total = {"stays": 0, "cutoffs": 0}
    for sid, hadm, start, admit, disch in stays(con):
        total["stays"] += 1
        for cutoff in cutoffs(admit, disch):
            total["cutoffs"] += 1
            for k, n in check_stay(store, con, sid, hadm, start, disch, cutoff).items():
                total[k] = total.get(k, 0) + n
    return total


@pytest.mark.slow
def test_demo_strict_shows_results_from_their_report_time_and_pending_specimens(demo_store) -> None:
    seen = sweep(demo_store, fs.DEMO_DIR)
    assert seen["stays"] >= 100 and seen["labs pending"] > 0 and seen["tests pending"] > 0, seen
    assert seen["labs"] > 10_000 and seen["tests"] > 500, seen


def test_sample_strict_shows_results_from_their_report_time_and_pending_specimens(
    sample_store,
) -> None:
    seen = sweep(sample_store, fx.SAMPLE)
    assert seen["stays"] >= 60 and seen["labs pending"] > 0 and seen["tests pending"] > 0, seen


def test_a_report_time_of_another_type_is_raised_not_read_as_never_reported() -> None:
    """A store whose time columns do not hold the declared types is a fault (``call_tool``
    makes it a SystemFault), never every result shown as pending."""
    from physassist.ehr.tools.reported import reported_at, stays

    when = dt.datetime(2150, 1, 2, 8)
    get = reported_at("microbiologyevents", True)[1]
    assert get({"storetime": None, "storedate": when.date()}) == dt.datetime.combine(
        when.date(), dt.time.max
    )
    with pytest.raises(TypeError, match="got str '2150-01-02 08:00:00'"):
        get({"storetime": str(when), "storedate": None})
    with pytest.raises(TypeError, match="got str"):
        stays([{"hadm_id": 1, "admittime": str(when), "dischtime": None, "edregtime": None}])


def test_specimens_are_newest_drawn_first_whatever_the_machines_time_zone(monkeypatch) -> None:
    """Draw times are wall-clock times of the source: ordered as such, not through the local
    zone (``timestamp()`` put 02:30 on a spring-forward night after 03:15)."""
    import time

    from physassist.ehr.tools.microbiology import specimens

    night = dt.date(2150, 3, 8)  # second Sunday of March: New York skips 02:00-03:00

    def row(specimen: int, at: dt.time) -> dict[str, Any]:
        return {"micro_specimen_id": specimen, "charttime": dt.datetime.combine(night, at),
                "chartdate": night, "hadm_id": 1, "spec_type_desc": "BLOOD CULTURE",
                "test_seq": 1, "test_itemid": 90201, "test_name": "Blood Culture, Routine",
                "org_name": None, "isolate_num": None, "ab_name": None, "dilution_text": None,
                "interpretation": None, "comments": None}  # fmt: skip

    rows = [row(1, dt.time(2, 30)), row(2, dt.time(3, 15)), row(3, dt.time(3, 15))]
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        found = specimens(rows, None, lambda r: r["charttime"])
    finally:
        monkeypatch.undo()
        time.tzset()
    assert [s.specimen_id for s in found] == [2, 3, 1]
