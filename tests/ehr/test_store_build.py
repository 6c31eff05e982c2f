"""The store built from the MIMIC-IV demo holds exactly the demo's rows, typed and sorted."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import fixtures_store as fx
import pytest
from fixtures_store import DEMO_SUBJECT, demo_file, read_demo

from physassist.ehr.sources import STORE_SCHEMA_VERSION, EHRSourceError, detect_source
from physassist.ehr.store import META_TABLE, EHRStore, build_store, csv_header
from physassist.ehr.tables import ROW_COLUMN, SUBJECT_TABLES, TABLES

demo_store = fx.demo_store
store_cache = fx.store_cache


@pytest.mark.parametrize("table", list(TABLES))
def test_row_counts_equal_csv_row_counts(demo_store: EHRStore, table: str) -> None:
    path = demo_file(table)
    expected = len(read_demo(table)) if path is not None else 0
    assert demo_store.row_counts()[table] == expected
    got = demo_store.cursor().execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    assert got == expected


def test_absent_tables_exist_empty_with_canonical_columns(demo_store: EHRStore) -> None:
    for table in ("chartevents", "discharge", "radiology"):  # not in the demo
        assert not demo_store.has_rows(table)
        cols = demo_store.cursor().execute(f'DESCRIBE "{table}"').fetchall()
        assert [c[0] for c in cols] == [*TABLES[table].columns, ROW_COLUMN]
        assert [c[1] for c in cols] == [*TABLES[table].columns.values(), "BIGINT"]
    assert demo_store.has_rows("labevents")
    with pytest.raises(KeyError, match="unknown EHR table"):
        demo_store.has_rows("lab_events")


def test_columns_have_canonical_types(demo_store: EHRStore) -> None:
    for table, spec in TABLES.items():
        cols = dict(
            demo_store.cursor()
            .execute(f'SELECT column_name, column_type FROM (DESCRIBE "{table}")')
            .fetchall()
        )
        assert cols == {**spec.columns, ROW_COLUMN: "BIGINT"}, table


def test_known_subject_labs_match_the_csv(demo_store: EHRStore) -> None:
    csv = read_demo("labevents")
    csv = csv[csv.subject_id == str(DEMO_SUBJECT)]
    got = (
        demo_store.cursor()
        .execute(
            "SELECT labevent_id, itemid, CAST(charttime AS VARCHAR), value, valuenum, valueuom, "
            "flag FROM labevents WHERE subject_id = ?",
            [DEMO_SUBJECT],
        )
        .fetchall()
    )
    assert len(got) == len(csv) > 0
    by_id = {r[0]: r for r in got}
    for row in csv.itertuples():
        labevent_id, itemid, charttime, value, valuenum, unit, flag = by_id[int(row.labevent_id)]
        assert itemid == int(row.itemid)
        assert charttime == row.charttime
        assert (value or "") == row.value
        assert (unit or "") == row.valueuom
        assert (flag or "") == row.flag
        if row.valuenum:
            assert math.isclose(valuenum, float(row.valuenum))
        else:
            assert valuenum is None


def test_known_subject_patient_and_admissions(demo_store: EHRStore) -> None:
    patients = read_demo("patients").set_index("subject_id").loc[str(DEMO_SUBJECT)]
    gender, age = (
        demo_store.cursor()
        .execute("SELECT gender, anchor_age FROM patients WHERE subject_id = ?", [DEMO_SUBJECT])
        .fetchone()
    )
    assert (gender, age) == (patients.gender, int(patients.anchor_age))
    adm = read_demo("admissions")
    expected = sorted(int(h) for h in adm[adm.subject_id == str(DEMO_SUBJECT)].hadm_id)
    got = (
        demo_store.cursor()
        .execute(
            "SELECT hadm_id FROM admissions WHERE subject_id = ? ORDER BY hadm_id", [DEMO_SUBJECT]
        )
        .fetchall()
    )
    assert [h for (h,) in got] == expected


def test_codes_keep_leading_zeros(demo_store: EHRStore) -> None:
    csv_codes = set(read_demo("diagnoses_icd").icd_code)
    store_codes = {
        c for (c,) in demo_store.cursor().execute("SELECT icd_code FROM diagnoses_icd").fetchall()
    }
    assert store_codes == csv_codes
    assert any(c.startswith("0") for c in store_codes)


@pytest.mark.parametrize("table", SUBJECT_TABLES)
def test_per_subject_tables_are_physically_sorted(demo_store: EHRStore, table: str) -> None:
    order = ", ".join(f'"{c}"' for c in (*TABLES[table].sort_key, ROW_COLUMN))
    out_of_place = (
        demo_store.cursor()
        .execute(
            f"SELECT count(*) FROM (SELECT rowid, row_number() OVER (ORDER BY {order}) - 1 AS pos "
            f'FROM "{table}") WHERE rowid <> pos'
        )
        .fetchone()[0]
    )
    assert out_of_place == 0


def test_subject_lookup_prunes_row_groups(demo_store: EHRStore) -> None:
    """The plan pushes the subject filter into the scan (zone maps skip other row groups)."""
    plan = (
        demo_store.cursor()
        .execute("EXPLAIN SELECT * FROM labevents WHERE subject_id = ?", [DEMO_SUBJECT])
        .fetchall()[0][1]
    )
    assert "Filters:" in plan and "subject_id=" in plan.replace(" ", "")


def test_row_column_reproduces_per_subject_file_order(demo_store: EHRStore) -> None:
    """Rank of ``_row`` within a subject == the row index in the reference's per-subject CSV."""
    csv = read_demo("prescriptions")
    csv = csv[csv.subject_id == str(DEMO_SUBJECT)].reset_index(drop=True)
    got = (
        demo_store.cursor()
        .execute(
            "SELECT pharmacy_id, drug, row_number() OVER (ORDER BY _row) - 1 AS idx "
            "FROM prescriptions WHERE subject_id = ? ORDER BY idx",
            [DEMO_SUBJECT],
        )
        .fetchall()
    )
    assert [(p, d) for p, d, _ in got] == [
        (int(p), d) for p, d in zip(csv.pharmacy_id, csv.drug, strict=True)
    ]


def test_store_metadata(demo_store: EHRStore) -> None:
    src = detect_source(demo_store.source)
    assert src.layout == "mimic"
    assert demo_store.fingerprint == src.fingerprint()
    assert demo_store.path.name == f"{demo_store.fingerprint}.duckdb"


def test_store_records_each_source_files_width(demo_store: EHRStore) -> None:
    """compat types values by the width of the file pandas read, so the store keeps it."""
    files = detect_source(demo_store.source).files
    assert {t: w for t, w in demo_store.widths.items() if files.get(t)} == {
        t: len(csv_header(fs[0].path)) for t, fs in files.items() if fs
    }
    assert all(demo_store.widths[t] == len(TABLES[t].columns) for t in TABLES if not files.get(t))


def test_a_store_knows_its_widths_after_its_source_is_gone(tmp_path: Path) -> None:
    src = fx.write_tiny_source(tmp_path / "src")
    patients = src / "hosp" / "patients.csv"
    rows = patients.read_text().splitlines()
    patients.write_text("\n".join([rows[0] + ",extra", *(r + ",x" for r in rows[1:])]) + "\n")
    path = build_store(src, cache_dir=tmp_path / "cache")
    shutil.rmtree(src)
    with EHRStore(path) as store:
        assert store.widths["patients"] == len(TABLES["patients"].columns) + 1
        assert store.widths["labevents"] == 16


def test_a_store_of_another_schema_is_refused_naming_the_rebuild(tmp_path: Path) -> None:
    import duckdb

    src = fx.write_tiny_source(tmp_path / "src")
    path = build_store(src, cache_dir=tmp_path / "cache")
    with duckdb.connect(str(path)) as con:
        con.execute(f"UPDATE {META_TABLE} SET value = '2' WHERE key = 'schema_version'")
    with pytest.raises(
        EHRSourceError,
        match=f"has schema 2, this PhysAssist reads {STORE_SCHEMA_VERSION}.*build {src}",
    ):
        EHRStore(path)


def test_store_is_read_only(demo_store: EHRStore) -> None:
    import duckdb

    with pytest.raises(duckdb.Error, match="read-only"):
        demo_store.cursor().execute("DELETE FROM patients")


def test_rows_returns_dicts_named_by_column(demo_store: EHRStore) -> None:
    sql = "SELECT itemid, label FROM d_labitems WHERE itemid = ANY(?) ORDER BY itemid"
    assert demo_store.rows(sql, [[50971, 50912]]) == [
        {"itemid": 50912, "label": "Creatinine"},
        {"itemid": 50971, "label": "Potassium"},
    ]


def _busiest_subject(store: EHRStore) -> int:
    return store.rows(
        "SELECT subject_id FROM labevents GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1"
    )[0]["subject_id"]


def test_subject_rows_are_the_subjects_rows_in_file_order(demo_store: EHRStore) -> None:
    sid = _busiest_subject(demo_store)
    columns = ("labevent_id", "itemid", "charttime", "valuenum")
    got = demo_store.subject_rows("labevents", sid, columns)
    expected = demo_store.rows(
        "SELECT labevent_id, itemid, charttime, valuenum, _row FROM labevents "
        "WHERE subject_id = ? ORDER BY _row",
        [sid],
    )
    assert len(got) > 100 and list(got) == expected
    # the table is stored by (subject, charttime): file order is a different order here
    assert [r["_row"] for r in got] != [
        r["_row"] for r in sorted(got, key=lambda r: (r["charttime"] is None, r["charttime"]))
    ]


class _CountingCursor:
    """Wraps a store's cursors to record the SQL they run."""

    def __init__(self, store: EHRStore, queries: list[str]) -> None:
        self._cur = EHRStore.cursor(store)
        self._queries = queries

    def execute(self, sql: str, params: list) -> object:
        self._queries.append(sql)
        return self._cur.execute(sql, params)

    def close(self) -> None:
        self._cur.close()


def test_subject_rows_are_loaded_once_per_subject_and_columns(
    demo_store: EHRStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EHRStore(demo_store.path, prefetch=False)  # a fresh cache
    queries: list[str] = []
    monkeypatch.setattr(store, "cursor", lambda: _CountingCursor(store, queries))
    sid = _busiest_subject(demo_store)
    first = store.subject_rows("labevents", sid, ("itemid",))
    assert store.subject_rows("labevents", sid, ("itemid",)) is first
    assert len(queries) == 1
    store.subject_rows("labevents", sid, ("itemid", "valuenum"))
    store.subject_rows("admissions", sid, ("hadm_id",))
    assert len(queries) == 3
    store.close()


def test_prefetch_loads_a_subjects_tables_in_the_background(
    demo_store: EHRStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EHRStore(demo_store.path)
    sid = _busiest_subject(demo_store)
    keys = [("labevents", ("itemid",)), ("admissions", ("hadm_id",))]
    store.prefetch(sid, keys)
    store.prefetch(sid, keys)  # a second request while filling adds nothing
    store._filler.shutdown(wait=True)  # let the background load finish
    queries: list[str] = []
    monkeypatch.setattr(store, "cursor", lambda: _CountingCursor(store, queries))
    labs = store.subject_rows("labevents", sid, ("itemid",))
    admissions = store.subject_rows("admissions", sid, ("hadm_id",))
    store.prefetch(sid, keys)  # everything is cached: nothing to do
    assert queries == []
    expected_labs = demo_store.rows(
        "SELECT itemid FROM labevents WHERE subject_id = ? ORDER BY _row", [sid]
    )
    assert [r["itemid"] for r in labs] == [r["itemid"] for r in expected_labs]
    expected_adm = demo_store.rows("SELECT hadm_id FROM admissions WHERE subject_id = ?", [sid])
    assert {r["hadm_id"] for r in admissions} == {r["hadm_id"] for r in expected_adm}
    store.close()


def test_prefetch_is_off_when_asked(demo_store: EHRStore) -> None:
    store = EHRStore(demo_store.path, prefetch=False)
    store.prefetch(_busiest_subject(demo_store), [("labevents", ("itemid",))])
    assert store._filler is None and store._subjects.subjects() == []
    store.close()


def test_dictionary_is_keyed_by_its_key_columns(demo_store: EHRStore) -> None:
    labs = demo_store.dictionary("d_labitems", ("itemid",))
    assert labs[50912]["label"] == "Creatinine"
    assert demo_store.dictionary("d_labitems", ("itemid",)) is labs
    icd = demo_store.dictionary("d_icd_diagnoses", ("icd_code", "icd_version"))
    assert icd[("I10", 10)]["long_title"] == "Essential (primary) hypertension"
    assert len(icd) == demo_store.row_counts()["d_icd_diagnoses"]


def test_cached_reads_refuse_the_wrong_kind_of_table(demo_store: EHRStore) -> None:
    with pytest.raises(KeyError, match="d_labitems"):
        demo_store.subject_rows("d_labitems", 1, ("itemid",))
    with pytest.raises(KeyError, match="labevents"):
        demo_store.dictionary("labevents", ("itemid",))


def test_reader_memory_limit_defaults_to_2gb_and_follows_the_environment(
    demo_store: EHRStore, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import shutil

    # a copy: DuckDB refuses a second configuration for a file this process has open
    copy = shutil.copy(demo_store.path, tmp_path / "store.duckdb")

    def limit() -> str:
        store = EHRStore(copy)
        try:
            return store.rows("SELECT current_setting('memory_limit') AS m")[0]["m"]
        finally:
            store.close()

    monkeypatch.delenv("PHYSASSIST_DUCKDB_READER_MEMORY", raising=False)
    assert limit() == "1.8 GiB"  # DuckDB shows 2GB (10^9 bytes) in GiB
    monkeypatch.setenv("PHYSASSIST_DUCKDB_READER_MEMORY", "512MB")
    assert limit() == "488.2 MiB"


@pytest.mark.parametrize(("ram_gib", "limit"), [(24, "9830MB"), (3, "1536MB"), (2, "1228MB")])
def test_build_memory_limit_is_40_percent_of_ram_with_a_floor(
    monkeypatch: pytest.MonkeyPatch, ram_gib: int, limit: str
) -> None:
    """A full MIMIC-IV build sits at this limit (its sorts spill beyond it): 40% keeps a 24 GB
    machine's build near 10 GiB of RSS; small machines keep 60% up to the reader's ~1.5 GiB."""
    from physassist.ehr import store as store_module

    monkeypatch.delenv("PHYSASSIST_DUCKDB_MEMORY", raising=False)
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": ram_gib * 2**30 // 4096}
    monkeypatch.setattr(store_module.os, "sysconf", pages.__getitem__)
    assert store_module._memory_limit() == limit
    monkeypatch.setenv("PHYSASSIST_DUCKDB_MEMORY", "3GB")
    assert store_module._memory_limit() == "3GB"


def test_a_failed_prefetch_is_logged_not_lost(
    demo_store: EHRStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = EHRStore(demo_store.path)

    def broken(key: object, subject_id: int) -> None:
        raise RuntimeError("disk gone")

    monkeypatch.setattr(store, "_load", broken)
    with caplog.at_level("WARNING", logger="physassist.ehr.store"):
        store.prefetch(1, [("labevents", ("itemid",))])
        store._filler.shutdown(wait=True)
    assert "prefetch for subject 1 failed" in caplog.text and "disk gone" in caplog.text
    monkeypatch.undo()
    store.close()


#: What a store of each schema version holds and what a source must hold to be built (a digest of
#: the tables' DDL, sort keys and ``source_check.needs``, below). A change to any of them leaves a
#: cached store of the same name stale: bump ``STORE_SCHEMA_VERSION`` (``sources.py``), then
#: record the new digest here.
STORE_LAYOUT = {5: "027aad1e594735c1"}


def test_a_change_to_what_a_store_holds_or_checks_bumps_its_schema_version() -> None:
    import hashlib
    import json

    from physassist.ehr.source_check import needs
    from physassist.ehr.tables import create_table_sql

    held = {
        name: [create_table_sql(spec), list(spec.sort_key), sorted(needs(spec))]
        for name, spec in sorted(TABLES.items())
    }
    digest = hashlib.sha256(json.dumps(held, sort_keys=True).encode()).hexdigest()[:16]
    assert STORE_LAYOUT.get(STORE_SCHEMA_VERSION) == digest, (
        f"the store's tables or its source checks changed (digest {digest}): bump "
        f"STORE_SCHEMA_VERSION ({STORE_SCHEMA_VERSION}) so cached stores rebuild, and record it"
    )
