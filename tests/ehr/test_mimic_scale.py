"""``benchmarks/mimic_scale.py`` at a tiny scale: MIMIC-IV's layout, columns and volumes,
skewed charts, a store that builds, and sessions re-pointed at it (seconds)."""

from __future__ import annotations

import gzip
import importlib.util
import json
import statistics
from pathlib import Path
from types import ModuleType

import pytest

from physassist.ehr.sources import detect_source
from physassist.ehr.store import EHRStore, build_store, csv_header, open_store
from physassist.ehr.tables import TABLES

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
SCALE = 0.0002  # 73 subjects, ~32k lab rows, ~87k chart rows


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    out = tmp_path_factory.mktemp("mimic")
    return out, _module("mimic_scale").generate(out, SCALE, threads=1)


def test_layout_columns_and_volumes(source: tuple[Path, list[dict]]) -> None:
    out, results = source
    scale = _module("mimic_scale")
    assert detect_source(out).layout == "mimic"
    rows = {r["table"]: r["rows"] for r in results}
    assert set(rows) == set(TABLES)
    for name, spec in TABLES.items():
        path = out / spec.module / f"{name}.csv.gz"
        assert csv_header(path) == tuple(spec.columns), name
        with gzip.open(path, "rt") as handle:
            assert sum(1 for _ in handle) >= rows[name] + 1  # notes span lines
    for (
        name,
        full,
    ) in scale.ROWS.items():  # MIMIC-IV's volume times the scale, within sampling noise
        assert 0.6 * full * SCALE <= rows[name] <= 1.4 * full * SCALE, (name, rows[name])
    assert {n: rows[n] for n in scale.DICTIONARY_ROWS} == scale.DICTIONARY_ROWS


def test_store_builds_with_keys_and_skewed_charts(
    source: tuple[Path, list[dict]], tmp_path: Path
) -> None:
    out, results = source
    with EHRStore(build_store(out, cache_dir=tmp_path)) as store:
        assert store.row_counts() == {r["table"]: r["rows"] for r in results}
        for name, spec in TABLES.items():
            if spec.per_subject:
                orphans = store.rows(
                    f'SELECT count(*) AS n FROM "{name}" WHERE subject_id IS NULL '
                    "OR subject_id NOT IN (SELECT subject_id FROM patients)"
                )
                assert orphans == [{"n": 0}], name
        labs = [
            r["n"] for r in store.rows("SELECT count(*) AS n FROM labevents GROUP BY subject_id")
        ]
        assert max(labs) > 8 * statistics.median(labs)  # a few charts dwarf the typical one
        unknown = store.rows(
            "SELECT count(*) AS n FROM labevents "
            "WHERE itemid NOT IN (SELECT itemid FROM d_labitems)"
        )
        assert unknown == [{"n": 0}]
        assert store.rows("SELECT count(*) AS n FROM chartevents "
                          "WHERE stay_id NOT IN (SELECT stay_id FROM icustays)") \
            == [{"n": 0}]  # fmt: skip


def test_generation_is_deterministic(source: tuple[Path, list[dict]], tmp_path: Path) -> None:
    out, _ = source
    _module("mimic_scale").generate(tmp_path, SCALE, threads=2, tables=("labevents", "discharge"))
    for path in ("hosp/labevents.csv.gz", "note/discharge.csv.gz"):
        assert gzip.open(tmp_path / path).read() == gzip.open(out / path).read()


def test_sessions_repointed(source: tuple[Path, list[dict]], tmp_path: Path) -> None:
    out, _ = source
    sessions = _module("scale_sessions")
    with (
        EHRStore(build_store(out, cache_dir=tmp_path / "stores")) as store,
        open_store("sample") as sample,
    ):
        mapping = sessions.repoint(
            sessions.ROOT / "data/sample/sessions", store, sample, tmp_path / "s"
        )
        assert len(mapping) == 36
        for entry in mapping:
            old, new = entry["subject_id"]
            assert store.subject_rows("icustays", new, ("stay_id",))
            assert entry["hadm_id"] in {
                a["hadm_id"] for a in store.subject_rows("admissions", new, ("hadm_id",))
            }
    written = [
        json.loads(line) for f in sorted((tmp_path / "s").glob("*.jsonl")) for line in f.open()
    ]
    assert [int(s["subject_id"]) for s in written] == [m["subject_id"][1] for m in mapping]
    assert all(
        str(m["subject_id"][0]) not in json.dumps(s) for s, m in zip(written, mapping, strict=True)
    )
