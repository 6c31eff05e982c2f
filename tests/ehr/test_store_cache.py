"""Caching by fingerprint, atomic builds and clear errors for bad sources."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from fixtures_store import write_tiny_source

from physassist.ehr import store as store_module
from physassist.ehr.sources import EHRSourceError, detect_source, resolve_source_path
from physassist.ehr.store import (
    EHRBuildError,
    EHRStore,
    build_store,
    default_cache_dir,
    open_store,
)


def _leftovers(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if ".building" in p.name)


def test_tiny_source_loads_sorted(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    with open_store(src, cache_dir=tmp_path / "cache") as store:
        assert store.layout == "mimic"
        assert store.row_counts()["labevents"] == 3
        assert store.row_counts()["admissions"] == 0
        got = store.cursor().execute("SELECT labevent_id FROM labevents ORDER BY rowid").fetchall()
        assert [i for (i,) in got] == [2, 1, 3]  # (subject, charttime) order, not file order
        (dod,) = store.cursor().execute("SELECT dod FROM patients WHERE subject_id = 2").fetchone()
        assert str(dod) == "2165-03-01"


def test_second_build_reuses_the_store(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    cache = tmp_path / "cache"
    first = build_store(src, cache_dir=cache)
    stamp = first.stat().st_mtime_ns
    second = build_store(src, cache_dir=cache)
    assert second == first
    assert second.stat().st_mtime_ns == stamp
    assert sorted(p.name for p in cache.glob("*.duckdb")) == [first.name]


def test_force_rebuilds(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    cache = tmp_path / "cache"
    first = build_store(src, cache_dir=cache)
    stamp = first.stat().st_mtime_ns
    again = build_store(src, cache_dir=cache, force=True)
    assert again == first
    assert again.stat().st_mtime_ns != stamp


def test_changed_source_rebuilds_and_drops_the_old_store(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    cache = tmp_path / "cache"
    old = build_store(src, cache_dir=cache)
    old.with_suffix(".compat-kinds").write_text("{}")  # what compat keeps beside a store
    patients = src / "hosp" / "patients.csv"
    patients.write_text(patients.read_text() + "3,F,40,2170,2017 - 2019,\n")
    new = build_store(src, cache_dir=cache)
    assert new != old
    assert not old.exists() and not list(cache.glob(f"{old.stem}.*"))  # nor anything beside it
    with open_store(src, cache_dir=cache) as store:
        assert store.path == new
        assert store.row_counts()["patients"] == 3


def test_touching_a_table_changes_the_fingerprint(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    before = detect_source(src).fingerprint()
    lab = src / "hosp" / "labevents.csv.gz"
    os.utime(lab, ns=(lab.stat().st_atime_ns, lab.stat().st_mtime_ns + 10**9))
    assert detect_source(src).fingerprint() != before
    (src / "README.txt").write_text("not a table")  # unrelated files do not matter
    (src / "phm").mkdir()
    assert detect_source(src).layout == "synthetic"


def test_env_sets_the_default_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHYSASSIST_CACHE", str(tmp_path / "envcache"))
    assert default_cache_dir() == tmp_path / "envcache"
    path = build_store(write_tiny_source(tmp_path / "src"))
    assert path.parent == tmp_path / "envcache"
    monkeypatch.delenv("PHYSASSIST_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "physassist" / "stores"


@pytest.mark.parametrize("kind", ["empty", "missing", "file", "unrelated"])
def test_bad_source_fails_with_one_clear_message(tmp_path: Path, kind: str) -> None:
    bad = tmp_path / "bad"
    if kind == "empty":
        bad.mkdir()
    elif kind == "file":
        bad.write_text("x")
    elif kind == "unrelated":
        (bad / "hosp").mkdir(parents=True)
        (bad / "hosp" / "notes.txt").write_text("x")
        (bad / "123").mkdir()
        (bad / "123" / "other.csv").write_text("a\n1\n")
    with pytest.raises(EHRSourceError, match=str(bad)):
        build_store(bad, cache_dir=tmp_path / "cache")


def test_sample_resolves_inside_the_repository() -> None:
    expected = Path(store_module.__file__).resolve().parents[2] / "data" / "sample" / "cohort"
    if expected.is_dir():
        assert resolve_source_path("sample") == expected
    else:
        with pytest.raises(EHRSourceError, match="sample cohort"):
            resolve_source_path("sample")


def test_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    src = write_tiny_source(tmp_path / "src")
    lab = src / "hosp" / "labevents.csv.gz"
    lab.unlink()
    (src / "hosp" / "labevents.csv").write_text(
        "labevent_id,subject_id,hadm_id,specimen_id,itemid,charttime,valuenum\n"
        "1,1,100,10,50912,2150-05-02 06:00:00,not-a-number\n"
    )
    cache = tmp_path / "cache"
    with pytest.raises(EHRBuildError, match="labevents.*labevents.csv"):
        build_store(src, cache_dir=cache)
    assert list(cache.glob("*.duckdb")) == []
    assert _leftovers(cache) == []


def test_interrupted_build_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = write_tiny_source(tmp_path / "src")
    cache = tmp_path / "cache"
    real = store_module._load_table
    calls = []

    def interrupt(*args: object) -> None:
        calls.append(1)
        if len(calls) == 2:  # Ctrl-C in the middle of the second table
            raise KeyboardInterrupt
        real(*args)

    monkeypatch.setattr(store_module, "_load_table", interrupt)
    with pytest.raises(KeyboardInterrupt):
        build_store(src, cache_dir=cache)
    assert list(cache.glob("*.duckdb")) == []
    assert _leftovers(cache) == []


def test_abandoned_temp_of_a_dead_build_is_removed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = cache / f".abc.{int(dead.stdout)}.deadbeef.building"
    stale.write_bytes(b"half a store")
    live = cache / f".abc.{os.getppid()}.cafe.building"  # a running process: left alone
    live.write_bytes(b"in progress")
    build_store(write_tiny_source(tmp_path / "src"), cache_dir=cache)
    assert not stale.exists()
    assert live.exists()


def test_open_store_accepts_a_built_file(tmp_path: Path) -> None:
    path = build_store(write_tiny_source(tmp_path / "src"), cache_dir=tmp_path / "cache")
    with open_store(path) as store:
        assert store.path == path
        assert store.fingerprint == path.stem
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).close()
    with pytest.raises(EHRSourceError, match="not a PhysAssist EHR store"):
        EHRStore(other)


def test_prune_removes_stores_whose_source_is_gone_or_changed(tmp_path: Path, capsys) -> None:
    from physassist.cli.ehr import main
    from physassist.ehr.store import prune_stores

    cache = tmp_path / "cache"
    kept, gone, changed = (
        write_tiny_source(tmp_path / name) for name in ("kept", "gone", "changed")
    )
    stores = {src.name: build_store(src, cache_dir=cache) for src in (kept, gone, changed)}
    stores["gone"].with_suffix(".compat-kinds").write_text("{}")
    shutil.rmtree(gone)
    patients = changed / "hosp" / "patients.csv"
    patients.write_text(patients.read_text() + "3,F,40,2170,2017 - 2019,\n")
    assert main(["prune", "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert f"removed: {stores['gone']}" in out and f"removed: {stores['changed']}" in out
    assert "2 of 3 stores removed" in out
    assert sorted(p.name for p in cache.iterdir() if not p.name.startswith(".")) == [
        stores["kept"].name,
        stores["kept"].with_suffix(".json").name,
    ]
    with open_store(kept, cache_dir=cache) as store:  # reused, not rebuilt
        assert store.path == stores["kept"]
    assert prune_stores(cache) == ({}, 1)
