"""compat's split-read kinds are measured once per store and kept beside it: later processes
read them, a damaged or stale file is measured again, and a store directory that cannot be
written only costs the measurement."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from fixtures_tools import SID, write_tiny_cohort

from physassist.ehr.store import EHRStore, build_store
from physassist.ehr.tools import compat_frames, compat_kinds_file
from physassist.ehr.tools.compat_frames import _TableKinds, frame

TABLE = "labevents"


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return build_store(write_tiny_cohort(tmp_path / "src"), cache_dir=tmp_path / "cache")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count measurements (each one scans the whole table)."""
    measured: list[str] = []
    real = _TableKinds.measure.__func__

    def measure(cls, store, table, columns):
        measured.append(table)
        return real(cls, store, table, columns)

    monkeypatch.setattr(_TableKinds, "measure", classmethod(measure))
    return measured


def _first_frame(store_path: Path) -> tuple:
    with EHRStore(store_path) as store:  # a new store object: nothing in memory yet
        return frame(store, TABLE, SID)


def test_a_second_process_reads_the_kinds_instead_of_measuring(
    store_path: Path, monkeypatch
) -> None:
    measured = _counting(monkeypatch)
    first = _first_frame(store_path)
    kept = compat_kinds_file.path_for(store_path)
    assert measured == [TABLE] and kept.is_file()
    assert _first_frame(store_path) == first and measured == [TABLE]
    entry = json.loads(kept.read_text())["tables"][TABLE]
    with EHRStore(store_path) as store:
        assert (entry["rows"], entry["width"]) == (store.row_counts()[TABLE], store.widths[TABLE])
    assert set(entry["merged"]) == set(entry["columns"])


@pytest.mark.parametrize(
    "damage", ["not json", "truncated", "stale rows", "unknown kind", "other store"]
)
def test_a_damaged_or_stale_file_is_measured_again_and_rewritten(
    store_path: Path, monkeypatch, damage: str
) -> None:
    first = _first_frame(store_path)
    kept = compat_kinds_file.path_for(store_path)
    data = json.loads(kept.read_text())
    entry = data["tables"][TABLE]
    if damage == "not json":
        kept.write_text("{")
    elif damage == "truncated":
        kept.write_text(kept.read_text()[:40])
    else:
        if damage == "stale rows":
            entry["rows"] += 1
        elif damage == "unknown kind":
            entry["merged"][next(iter(entry["merged"]))] = "complex"
        else:
            data["fingerprint"] = "another"
        kept.write_text(json.dumps(data))
    measured = _counting(monkeypatch)
    assert _first_frame(store_path) == first and measured == [TABLE]
    assert json.loads(kept.read_text())["tables"][TABLE]["rows"] == entry["rows"] - (
        damage == "stale rows"
    )


def test_an_unwritable_store_directory_costs_only_the_measurement(
    store_path: Path, monkeypatch, caplog
) -> None:
    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    caplog.set_level(logging.INFO, logger=compat_kinds_file.__name__)
    monkeypatch.setattr(compat_kinds_file.os, "replace", refuse)
    measured = _counting(monkeypatch)
    first = _first_frame(store_path)
    assert _first_frame(store_path) == first and measured == [TABLE, TABLE]
    assert not compat_kinds_file.path_for(store_path).exists()
    assert not list(store_path.parent.glob(".*.tmp"))
    assert "each process measures them" in caplog.text


def test_concurrent_first_calls_measure_once(store_path: Path, monkeypatch) -> None:
    measured = _counting(monkeypatch)
    start = threading.Barrier(8)
    results: list = []
    with EHRStore(store_path) as store:

        def call() -> None:
            start.wait(10)
            results.append(frame(store, TABLE, SID))

        threads = [threading.Thread(target=call) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
    assert measured == [TABLE] and len(results) == 8 and all(r == results[0] for r in results)


def test_a_mixed_columns_blocks_survive_the_file(tmp_path: Path) -> None:
    """Blocks are kept only where the merged kind is mixed (a text column some blocks read as
    numbers)."""
    kinds = _TableKinds(
        16, {"value": "mixed", "valuenum": "float"}, {"value": {0: "float", 1: "str", 7: "int"}}
    )
    path = tmp_path / "x.duckdb"
    entry = {"merged": kinds.merged, "blocks": compat_kinds_file.blocks_to_json(kinds.kinds)}
    compat_kinds_file.save(path, "fp", TABLE, {"columns": ["value", "valuenum"], **entry})
    loaded = compat_kinds_file.load(path, "fp", TABLE, {"columns": ["value", "valuenum"]})
    assert loaded is not None
    again = _TableKinds(16, loaded["merged"], compat_kinds_file.blocks_from_json(loaded["blocks"]))
    assert (
        again.kinds == kinds.kinds
        and again.merged == kinds.merged
        and again.complete(["value", "valuenum"])
    )
    assert not _TableKinds(16, {"value": "mixed"}, {}).complete(["value"])  # blocks missing
    assert compat_frames.block_rows(16) == again.size
