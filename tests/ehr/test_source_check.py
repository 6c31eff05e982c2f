"""A broken EHR source is an error, not an empty chart: copies of the MIMIC-IV demo damaged the
way real downloads and re-exports get damaged, each built as a user builds it."""

from __future__ import annotations

import csv
import functools
import gzip
import io
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import fixtures_store as fx
import pytest
from fixtures_tracking import cli

from physassist.cli import data as data_cli
from physassist.cli import ehr as ehr_cli
from physassist.ehr.source_check import SourceTableError, needs
from physassist.ehr.store import open_store
from physassist.ehr.tables import TABLES
from physassist.ehr.tools.reads import COLUMNS
from physassist.vocab import SCENARIOS

demo_store = fx.demo_store
store_cache = fx.store_cache

Rows = list[list[str]]


def _damaged(
    tmp_path: Path, tables: tuple[str, ...] | None = None, **edits: Callable[[Rows], Rows] | None
) -> Path:
    """A copy of the demo in ``tmp_path/src``: the tables named (all when None) symlinked, each
    table in ``edits`` rewritten through its function (``None``: left out)."""
    demo = fx.require_demo()
    root = tmp_path / "src"
    for name in tables or TABLES:
        source = fx.demo_file(name)
        if source is None:
            continue
        target = root / TABLES[name].module / source.name
        target.parent.mkdir(parents=True, exist_ok=True)
        if name not in edits:
            os.symlink(source, target)
        elif edits[name] is not None:
            with gzip.open(target, "wt", newline="", compresslevel=1) as f:
                csv.writer(f).writerows(edits[name]([list(r) for r in _rows(source)]))
    assert demo.is_dir()
    return root


@functools.cache
def _rows(path: Path) -> tuple[tuple[str, ...], ...]:
    """A demo file's rows as text (read once per test process)."""
    with gzip.open(path, "rt", newline="") as f:
        return tuple(tuple(r) for r in csv.reader(f))


def _build(
    source: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[str]]:
    """``physassist-ehr build SOURCE``: its exit code and the lines it wrote on stderr."""
    code = ehr_cli.main(["build", str(source), "--cache-dir", str(tmp_path / "cache")])
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def _no_store(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    assert not cache.exists() or not [
        p for p in cache.iterdir() if p.suffix == ".duckdb" or ".building" in p.name
    ]


def _without(column: str) -> Callable[[Rows], Rows]:
    def edit(rows: Rows) -> Rows:
        i = rows[0].index(column)
        return [r[:i] + r[i + 1 :] for r in rows]

    return edit


def _set(column: str, value: str, rows_at: range) -> Callable[[Rows], Rows]:
    def edit(rows: Rows) -> Rows:
        i = rows[0].index(column)
        for r in rows[rows_at.start : rows_at.stop]:
            r[i] = value
        return rows

    return edit


def test_wrong_delimiter_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _damaged(tmp_path, ("patients", "labevents"), labevents=None)
    lab = src / "hosp" / "labevents.csv.gz"
    text = io.StringIO()
    csv.writer(text, delimiter=";").writerows(_rows(fx.demo_file("labevents")))
    lab.write_bytes(gzip.compress(text.getvalue().encode(), compresslevel=1))
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert str(lab) in err[0] and "0 of the 12 columns labevents needs" in err[0]
    assert "delimiter ';'?" in err[0]
    _no_store(tmp_path)


def test_missing_key_column_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _damaged(tmp_path, ("labevents",), labevents=_without("itemid"))
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert (
        err[0]
        == f"physassist-ehr: error: labevents: {src / 'hosp' / 'labevents.csv.gz'}: no column "
        "itemid (a key)"
    )
    _no_store(tmp_path)


def test_missing_column_a_tool_reads_names_the_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _damaged(tmp_path, ("prescriptions",), prescriptions=_without("drug"))
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith(
        "prescriptions.csv.gz: no column drug (read by MedicationRequest.search)"
    )
    _no_store(tmp_path)


def test_text_in_a_numeric_column_counts_the_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _damaged(tmp_path, ("labevents",), labevents=_set("valuenum", "n/a", range(10, 13)))
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    lab = src / "hosp" / "labevents.csv.gz"
    assert err[0] == (
        f"physassist-ehr: error: labevents: {lab}: column valuenum: 3 of 107,727 rows do not parse "
        "as DOUBLE (e.g. 'n/a')"
    )
    _no_store(tmp_path)


def test_empty_key_counts_the_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _damaged(tmp_path, ("labevents",), labevents=_set("subject_id", "", range(5, 9)))
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert err[0].endswith("labevents.csv.gz: key column subject_id is empty on 4 of 107,727 rows")
    _no_store(tmp_path)


def test_rows_that_are_not_rows_of_the_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _damaged(
        tmp_path, ("labevents",), labevents=lambda rows: [rows[0], ["1", "2"], *rows[1:], ["3"]]
    )
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert "labevents.csv.gz: 2 rows do not have its header's 16 columns (line 2: " in err[0]
    _no_store(tmp_path)


def test_foreign_csv_in_a_tables_place(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = _damaged(tmp_path, ("patients",))
    os.symlink(fx.demo_file("patients"), src / "hosp" / "prescriptions.csv.gz")
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1, err
    assert "prescriptions.csv.gz: its header has 1 of the 12 columns prescriptions needs" in err[0]
    assert "not a prescriptions table" in err[0]
    _no_store(tmp_path)


def test_prescriptions_with_only_ids_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: ``subject_id,hadm_id`` built into one empty order per row."""
    src = _damaged(tmp_path, ("prescriptions",), prescriptions=lambda rows: [r[:2] for r in rows])
    code, err = _build(src, tmp_path, capsys)
    assert code == 2 and len(err) == 1 and "2 of the 12 columns prescriptions needs" in err[0], err
    _no_store(tmp_path)


@pytest.mark.parametrize("content", [b"", gzip.compress(b"")], ids=["zero bytes", "empty gzip"])
def test_empty_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes
) -> None:
    src = _damaged(tmp_path, ("patients",))
    (src / "hosp" / "prescriptions.csv.gz").write_bytes(content)
    code, err = _build(src, tmp_path, capsys)
    assert err == [
        f"physassist-ehr: error: prescriptions: {src / 'hosp' / 'prescriptions.csv.gz'} is empty: "
        "no CSV header line"
    ]
    assert code == 2
    _no_store(tmp_path)


def test_absent_and_header_only_tables_are_listed_once_with_their_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    src = _damaged(
        tmp_path,
        ("patients", "admissions", "labevents", "d_labitems", "emar"),
        emar=lambda rows: rows[:1],
    )
    with caplog.at_level(logging.WARNING, logger="physassist.ehr.store"):
        code, err = _build(src, tmp_path, capsys)
        assert code == 0 and err == []
        assert (
            ehr_cli.main(["build", str(src), "--cache-dir", str(tmp_path / "cache")]) == 0
        )  # reused
    summaries = [r.getMessage() for r in caplog.records if "lacks" in r.getMessage()]
    assert len(summaries) == 1
    lines = summaries[0].splitlines()
    assert lines[0] == f"EHR source {src.resolve()} lacks, at a cost:"
    assert (
        "  no hosp/prescriptions: nothing of it in MedicationRequest.search answers; "
        "med_safety, discharge_planning sessions cannot be built"
    ) in lines
    assert (
        "  hosp/emar has no rows: nothing of it in MedicationAdministration.search answers; "
        "treatment_response sessions cannot be built"
    ) in lines
    assert (
        "  no hosp/d_icd_diagnoses: diagnoses_icd codes go without names in Condition.search"
        in lines
    )
    assert (  # d_items names both ICU event tables' items
        "  no icu/d_items: chartevents and inputevents codes go without names in "
        "MedicationAdministration.search, Observation.search"
    ) in lines
    with open_store(src, cache_dir=tmp_path / "cache") as store:
        assert store.gaps == tuple(line.strip() for line in lines[1:])
        assert store.row_counts()["labevents"] == 107_727


def test_a_column_a_release_lacks_is_listed_with_its_cost(tmp_path: Path) -> None:
    """MIMIC-IV v1.0 has ``ethnicity`` where later releases have ``race``: it builds."""
    src = _damaged(
        tmp_path,
        ("admissions",),
        admissions=lambda rows: [["ethnicity" if c == "race" else c for c in rows[0]], *rows[1:]],
    )
    with open_store(src, cache_dir=tmp_path / "cache") as store:
        assert "admissions lacks race: shown as unknown by Encounter.search" in store.gaps
        assert store.row_counts()["admissions"] == 275


def test_the_intact_demo_lacks_only_what_the_demo_lacks(demo_store) -> None:
    """The demo has no ``icu/chartevents`` and no ``note/`` module, and nothing else is missing."""
    assert [line.split(":")[0] for line in demo_store.gaps] == [
        "no icu/chartevents",
        "no note/discharge",
        "no note/radiology",
    ]
    assert "discharge_planning sessions cannot be built" in demo_store.gaps[1]


def test_the_sample_lacks_nothing(store_cache: Path) -> None:
    with open_store("sample", cache_dir=store_cache) as store:
        assert store.gaps == ()


def test_needs_are_the_keys_and_what_the_tools_read() -> None:
    """Derived, not repeated: every column a tool declares it reads is needed or optional."""
    for name, spec in TABLES.items():
        wanted = needs(spec)
        assert set(spec.keys) <= set(wanted), name
        read = set(COLUMNS.get(name, ())) | set(spec.lookups)
        assert read - set(spec.optional) <= set(wanted), name
        assert set(spec.optional) <= read, f"{name}: optional columns no tool reads"
        assert set(wanted) <= set(spec.columns), name


def test_declared_scenarios_are_what_the_builder_needs(tmp_path: Path, store_cache: Path) -> None:
    """``TableSpec.scenarios`` held to the builder's rules: emptying a table of the sample
    leaves exactly those scenarios without a qualifying patient."""
    from generation.builder.prefilter import qualify

    with open_store("sample", cache_dir=store_cache) as store:
        copy = tmp_path / "sample.duckdb"
        shutil.copyfile(store.path, copy)
    con = duckdb.connect(str(copy))

    def starved() -> set[str]:
        found = qualify(con)
        return {s for s in SCENARIOS if not any(found[(s, t)] for t in (1, 2, 3))}

    assert starved() == set()
    for name, spec in TABLES.items():
        assert set(spec.scenarios) <= set(SCENARIOS), name
        con.execute("BEGIN")
        con.execute(f'DELETE FROM "{name}"')
        assert starved() == set(spec.scenarios), name
        con.execute("ROLLBACK")
    con.close()


def test_physassist_data_build_goes_through_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = _damaged(tmp_path, ("labevents",), labevents=_without("itemid"))
    code = data_cli.main(["build", "--store", str(src), "--out", str(tmp_path / "out")])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and err == [
        f"physassist-data: error: labevents: {src / 'hosp' / 'labevents.csv.gz'}: no column itemid "
        "(a key)"
    ]
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # imports Inspect and the generation pipeline: ~5 s unloaded
def test_physassist_generate_goes_through_the_check(tmp_path: Path) -> None:
    from generation.task import generate

    src = _damaged(tmp_path, ("labevents",), labevents=_without("itemid"))
    with pytest.raises(SourceTableError, match="no column itemid"):
        generate(store=str(src), cache_dir=str(tmp_path / "cache"))
    _no_store(tmp_path)


@pytest.mark.slow  # a physassist-eval process: ~10 s unloaded
def test_physassist_eval_goes_through_the_check(tmp_path: Path) -> None:
    src = _damaged(tmp_path, ("labevents",), labevents=_without("itemid"))
    proc = cli(
        [
            "physassist-eval",
            f"dataset.ehr_source={src}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            "tracking=none",
            "inspect.display=none",
            f"hydra.run.dir={tmp_path / 'outputs'}",
        ],
        cwd=tmp_path,
        timeout=120,
        env={"PHYSASSIST_CACHE": str(tmp_path / "cache")},
    )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert lines == [
        f"physassist-eval: error: labevents: {src / 'hosp' / 'labevents.csv.gz'}: no column itemid "
        "(a key)"
    ]
    _no_store(tmp_path)
