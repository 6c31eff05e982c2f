"""The reference's per-subject split layout loads the same rows as the MIMIC-IV directory."""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

import fixtures_store as fx
import pytest
from fixtures_store import DEMO_DIR, demo_file, read_demo, require_demo

from physassist.ehr.sources import detect_source
from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tables import DICTIONARY_TABLES, SUBJECT_TABLES, TABLES

demo_store = fx.demo_store
store_cache = fx.store_cache

SUBJECTS = (10000032, 10001217, 10002428)


def write_split(base: Path, subjects: tuple[int, ...]) -> Path:
    """Split the demo like the reference's script: one folder per subject, tables named
    ``<module>_<table>.csv.csv.gz`` written as several concatenated gzip members, and the
    dictionaries in ``raw_data/mimiciv/<module>/`` beside the split."""
    root = base / "raw_data" / "MIMIC-IV-split-by-patient" / "split_data_each_patient"
    for table in SUBJECT_TABLES:
        if demo_file(table) is None:
            continue
        df = read_demo(table)
        for sid in subjects:
            rows = df[df.subject_id == str(sid)]
            if rows.empty:
                continue
            folder = root / str(sid)
            folder.mkdir(parents=True, exist_ok=True)
            half = len(rows) // 2
            with open(folder / f"{TABLES[table].module}_{table}.csv.csv.gz", "wb") as out:
                out.write(gzip.compress(rows.iloc[:half].to_csv(index=False).encode()))
                out.write(
                    gzip.compress(rows.iloc[half:].to_csv(index=False, header=False).encode())
                )
    for table in DICTIONARY_TABLES:
        src = demo_file(table)
        if src is not None:
            dest = base / "raw_data" / "mimiciv" / TABLES[table].module / src.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(src.read_bytes())
    return root


@pytest.fixture(scope="module")
def split_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EHRStore]:
    require_demo()
    base = tmp_path_factory.mktemp("split")
    root = write_split(base, SUBJECTS)
    store = open_store(root, cache_dir=base / "cache")
    yield store
    store.close()


def test_split_layout_is_detected(split_store: EHRStore) -> None:
    assert split_store.layout == "split"
    src = detect_source(split_store.source)
    assert set(src.files["labevents"][0].rel.split("/")) == {
        str(SUBJECTS[0]),
        "hosp_labevents.csv.csv.gz",
    }
    assert (
        src.files["d_labitems"][0].path.parent == split_store.source.parents[1] / "mimiciv" / "hosp"
    )


@pytest.mark.parametrize("table", SUBJECT_TABLES)
def test_split_rows_equal_mimic_dir_rows(
    split_store: EHRStore, demo_store: EHRStore, table: str
) -> None:
    sql = f'SELECT * EXCLUDE (_row) FROM "{table}" WHERE subject_id IN (?, ?, ?) ORDER BY rowid'
    expected = demo_store.cursor().execute(sql, list(SUBJECTS)).fetchall()
    got = split_store.cursor().execute(sql, list(SUBJECTS)).fetchall()
    assert got == expected
    if table in ("patients", "admissions", "labevents", "prescriptions", "emar"):
        assert expected, f"demo subjects {SUBJECTS} should have {table} rows"
    assert split_store.row_counts()[table] == len(expected)


def test_split_preserves_per_subject_file_order(
    split_store: EHRStore, demo_store: EHRStore
) -> None:
    sql = (
        "SELECT pharmacy_id, row_number() OVER (ORDER BY _row) AS i FROM prescriptions "
        "WHERE subject_id = ? ORDER BY i"
    )
    for sid in SUBJECTS:
        assert (
            split_store.cursor().execute(sql, [sid]).fetchall()
            == demo_store.cursor().execute(sql, [sid]).fetchall()
        )


@pytest.mark.parametrize("table", DICTIONARY_TABLES)
def test_split_finds_the_dictionaries(
    split_store: EHRStore, demo_store: EHRStore, table: str
) -> None:
    assert split_store.row_counts()[table] == demo_store.row_counts()[table]
    if (DEMO_DIR / TABLES[table].module / f"{table}.csv.gz").exists():
        assert split_store.has_rows(table)


def test_dictionaries_under_the_split_root_are_found(tmp_path: Path) -> None:
    require_demo()
    root = tmp_path / "split"
    (root / "10000032").mkdir(parents=True)
    (root / "10000032" / "hosp_patients.csv.csv.gz").write_bytes(
        gzip.compress(
            b"subject_id,gender,anchor_age,anchor_year,anchor_year_group,dod\n"
            b"10000032,F,52,2180,2014 - 2016,\n"
        )
    )
    (root / "dicts").mkdir()
    (root / "dicts" / "hosp_d_labitems.csv.csv.gz").write_bytes(
        demo_file("d_labitems").read_bytes()
    )
    with open_store(root, cache_dir=tmp_path / "cache") as store:
        assert store.row_counts()["patients"] == 1
        assert store.row_counts()["d_labitems"] == len(read_demo("d_labitems"))
