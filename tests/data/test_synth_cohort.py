"""Synthetic cohort: MIMIC-IV layout, reproducibility, dictionaries, CLI and argument checks."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from fixtures_store import require_demo
from fixtures_synth import SAMPLE, SAMPLE_SUBJECTS

from physassist.synth import generate_cohort, load_phm, records
from physassist.synth.__main__ import main as cli_main
from physassist.synth.cohort import PER_CHUNK_TABLES
from physassist.synth.writer import SCHEMAS, WRITTEN_TABLES, table_path


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _header(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.readline().rstrip("\n").split(",")


def test_sample_cohort_regenerates_byte_for_byte(tmp_path: Path) -> None:
    committed = _files(SAMPLE)
    assert committed, f"no committed sample at {SAMPLE}"
    meta = json.loads((SAMPLE / "meta" / "cohort.json").read_text())
    assert meta["n_subjects"] == SAMPLE_SUBJECTS and meta["seed"] == 0
    generate_cohort(tmp_path / "cohort", SAMPLE_SUBJECTS, seed=0)
    fresh = _files(tmp_path / "cohort")
    assert sorted(fresh) == sorted(committed)
    changed = [name for name in committed if committed[name] != fresh[name]]
    assert not changed, f"sample cohort drifted from the generator: {changed[:5]}"


def test_same_seed_is_byte_identical_whatever_the_workers(tmp_path: Path) -> None:
    generate_cohort(tmp_path / "a", 23, seed=5, chunk_size=8, workers=1)
    generate_cohort(tmp_path / "b", 23, seed=5, chunk_size=8, workers=2)
    generate_cohort(tmp_path / "c", 23, seed=6, chunk_size=8, workers=1)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b
    assert a["hosp/labevents.csv.gz"] != c["hosp/labevents.csv.gz"]


def test_every_table_has_mimic_columns_and_stable_gzip() -> None:
    for name, (module, cols) in SCHEMAS.items():
        path = table_path(SAMPLE, name)
        assert path.parent.name == module
        assert _header(path) == [c for c, _ in cols], name
        raw = path.read_bytes()
        assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\0\0\0\0", f"{name}: gzip mtime must be 0"
        assert raw[3] & 0x08 == 0, f"{name}: gzip header must not embed a file name"


def test_headers_match_the_mimic_iv_demo() -> None:
    demo = require_demo()
    checked = 0
    for name, (module, cols) in SCHEMAS.items():
        demo_file = demo / module / f"{name}.csv.gz"
        if demo_file.is_file():
            assert _header(demo_file) == [c for c, _ in cols], name
            checked += 1
    assert checked >= 15


def test_each_table_is_written_once_per_chunk_or_once_as_a_dictionary() -> None:
    dictionaries = set(records.dictionaries())
    assert dictionaries == {"d_icd_diagnoses", "d_labitems", "d_items"}
    assert not dictionaries & set(PER_CHUNK_TABLES)
    assert sorted(dictionaries | set(PER_CHUNK_TABLES)) == sorted(WRITTEN_TABLES)


def test_dictionaries_are_real_mimic_entries() -> None:
    import duckdb

    demo = require_demo()
    con = duckdb.connect()

    def rows(path: Path, cols: str) -> set[tuple]:
        return set(
            con.sql(
                f"SELECT {cols} FROM read_csv('{path}', header=true, all_varchar=true)"
            ).fetchall()
        )

    ours = rows(table_path(SAMPLE, "d_labitems"), "itemid, label, fluid, category")
    assert ours <= rows(demo / "hosp" / "d_labitems.csv.gz", "itemid, label, fluid, category")
    ours = rows(table_path(SAMPLE, "d_icd_diagnoses"), "icd_code, icd_version, long_title")
    assert ours <= rows(
        demo / "hosp" / "d_icd_diagnoses.csv.gz", "icd_code, icd_version, long_title"
    )
    ours = rows(table_path(SAMPLE, "d_items"), "itemid, label, abbreviation, category, unitname")
    assert ours <= rows(
        demo / "icu" / "d_items.csv.gz", "itemid, label, abbreviation, category, unitname"
    )


def test_phm_files_and_load_phm() -> None:
    subjects = (SAMPLE / "meta" / "subjects.csv").read_text().splitlines()[1:]
    assert len(subjects) == SAMPLE_SUBJECTS
    sid = int(subjects[0].split(",")[0])
    phm = load_phm(SAMPLE, sid)
    assert phm is not None and phm["subject_id"] == sid
    assert set(phm) >= {
        "persona",
        "symptoms",
        "medications",
        "social_history",
        "functional_status",
        "pain",
    }
    assert load_phm(SAMPLE, 1) is None and load_phm(SAMPLE, "not-an-id") is None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_subjects": 0}, "n_subjects"),
        ({"n_subjects": 2.5}, "n_subjects"),
        ({"n_subjects": 3, "seed": -1}, "seed"),
        ({"n_subjects": 3, "chunk_size": 0}, "chunk_size"),
        ({"n_subjects": 3, "compresslevel": 11}, "compresslevel"),
    ],
)
def test_bad_arguments_are_named(tmp_path: Path, kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        generate_cohort(tmp_path / "x", **kwargs)


def test_output_path_that_is_a_file_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(NotADirectoryError):
        generate_cohort(target, 2)


def test_a_foreign_non_empty_directory_is_never_overwritten(tmp_path: Path) -> None:
    (tmp_path / "mimic" / "hosp").mkdir(parents=True)
    (tmp_path / "mimic" / "hosp" / "patients.csv.gz").write_bytes(b"real data")
    with pytest.raises(FileExistsError, match="not a synthetic cohort"):
        generate_cohort(tmp_path / "mimic", 2)
    assert (tmp_path / "mimic" / "hosp" / "patients.csv.gz").read_bytes() == b"real data"
    generate_cohort(tmp_path / "ours", 2)
    generate_cohort(tmp_path / "ours", 3)  # regenerating our own cohort in place is fine
    assert json.loads((tmp_path / "ours" / "meta" / "cohort.json").read_text())["n_subjects"] == 3


def test_cli_writes_a_cohort(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["--out", str(tmp_path / "c"), "--subjects", "7", "--seed", "3"]) == 0
    assert "7 subjects" in capsys.readouterr().out
    assert json.loads((tmp_path / "c" / "meta" / "cohort.json").read_text())["seed"] == 3
    with pytest.raises(SystemExit) as usage:  # bad usage: argparse's exit code 2
        cli_main(["--out", str(tmp_path / "d"), "--subjects", "0"])
    assert usage.value.code == 2
