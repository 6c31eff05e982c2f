"""Loading from every kind of source gives the same table; lenient mode; lossless saving."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures_sessions import (
    ALL_IDS,
    DISCHARGE,
    FIXTURES,
    MED_SAFETY,
    TREATMENT,
    fixture_dicts,
    write_fixture_dir,
)

from physassist.data import (
    Session,
    SessionFormatError,
    TurnTable,
    load_sessions,
    save_sessions,
    turns_frame,
)
from physassist.data.folder import HASHES, MANIFEST, FolderError
from physassist.data.hf import sessions_to_dataset
from physassist.data.loader import SAMPLE_SESSIONS
from physassist.vocab import SCENARIOS

LOCATION_COLUMNS = ["file", "line"]


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=LOCATION_COLUMNS).reset_index(drop=True)


@pytest.fixture(scope="module")
def reference():
    return load_sessions(FIXTURES)


def test_directory_loads_all_fixture_sessions(reference) -> None:
    assert [s.id for s in reference.sessions] == list(ALL_IDS)
    assert len(reference.turns) == 4 * len(ALL_IDS)
    assert reference.skipped == []
    TurnTable.validate(reference.turns)
    row = reference.turns.set_index(["session_id", "turn"]).loc[(MED_SAFETY, 3)]
    assert row["task_type"] == "Write/Update" and row["tool_source"] == "write"
    assert row["gold_tools"] == ["MedicationRequest.create"] and row["has_checks"]
    assert row["question_en_explicit"] == "OK, put in the apixaban at the usual dose."
    derived = reference.turns.set_index(["session_id", "turn"]).loc[(TREATMENT, 2)]
    assert derived["tool_source"] == "ehr" and derived["subtype"] == "AE"
    assert reference.by_id(DISCHARGE).scenario == "discharge_planning"


def test_turns_frame_equals_loader_table(reference) -> None:
    frame = turns_frame(reference.sessions)
    pd.testing.assert_frame_equal(frame, reference.turns)


def test_single_jsonl_parquet_and_dataset_dir_give_the_same_table(
    reference, tmp_path: Path
) -> None:
    single = tmp_path / "all.jsonl"
    save_sessions(reference, single)
    parquet = tmp_path / "all.parquet"
    sessions_to_dataset(reference.sessions).to_parquet(str(parquet))
    dataset_dir = tmp_path / "hfdir"
    sessions_to_dataset(reference.sessions).save_to_disk(str(dataset_dir))
    parquet_dir = tmp_path / "hub_layout" / "data"
    parquet_dir.mkdir(parents=True)
    save_sessions(reference, parquet_dir / "train-00000.parquet")

    expected = _comparable(reference.turns)
    for source in (
        single,
        parquet,
        f"hf:{dataset_dir}",
        dataset_dir,
        f"hf://{tmp_path / 'hub_layout'}",
        f"hf:{single}",
    ):
        loaded = load_sessions(source)
        pd.testing.assert_frame_equal(_comparable(loaded.turns), expected, obj=str(source))
        assert loaded.fingerprint == reference.fingerprint, source
        assert [s.to_dict() for s in loaded.sessions] == [s.to_dict() for s in reference.sessions]


def _write_native_parquet(rows: list[dict[str, Any]], path: Path) -> Path:
    """One column per key, nested values JSON-encoded (a foreign export's layout)."""
    import datasets

    keys = sorted({k for d in rows for k in d})
    columns = {
        k: [
            json.dumps(d[k], ensure_ascii=False)
            if k in d and not isinstance(d[k], str | int)
            else d.get(k)
            for d in rows
        ]
        for k in keys
    }
    columns = {
        k: [None if v is None else str(v) if not isinstance(v, int) else v for v in vals]
        for k, vals in columns.items()
    }
    datasets.Dataset.from_dict(columns).to_parquet(str(path))
    return path


def test_native_column_parquet_is_decoded(tmp_path: Path) -> None:
    """A foreign export with one column per key (nested values JSON-encoded) still loads."""
    rows = [d for ds in fixture_dicts().values() for d in ds]
    loaded = load_sessions(_write_native_parquet(rows, tmp_path / "native.parquet"))
    assert sorted(s.id for s in loaded.sessions) == sorted(ALL_IDS)


def test_native_column_with_broken_json_names_session_and_field(tmp_path: Path) -> None:
    """A nested column that is not valid JSON is kept as text and rejected by validation."""
    rows = [d for ds in fixture_dicts().values() for d in ds]
    path = _write_native_parquet(rows, tmp_path / "native.parquet")
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    tasks = table.column("tasks").to_pylist()
    tasks[0] = "[broken"
    table = table.set_column(table.schema.get_field_index("tasks"), "tasks", [tasks])
    pq.write_table(table, path)
    with pytest.raises(SessionFormatError) as err:
        load_sessions(path)
    assert f"session {rows[0]['id']}, field tasks:" in str(err.value)


def test_fingerprint_ignores_order_but_not_content(reference, tmp_path: Path) -> None:
    shuffled = tmp_path / "shuffled.jsonl"
    save_sessions(list(reversed(reference.sessions)), shuffled)
    assert load_sessions(shuffled).fingerprint == reference.fingerprint

    def edit(data: dict[str, Any]) -> None:
        data["rubrics"][0][0] = "The answer states a creatinine of 1.2 mg/dL."

    changed = load_sessions(write_fixture_dir(tmp_path / "changed", {MED_SAFETY: edit}))
    assert changed.fingerprint != reference.fingerprint


def test_save_directory_round_trip_is_byte_identical(reference, tmp_path: Path) -> None:
    written = save_sessions(reference, tmp_path / "out")
    assert sorted(p.name for p in written) == sorted(p.name for p in FIXTURES.glob("*.jsonl"))
    for path in written:
        assert path.read_bytes() == (FIXTURES / path.name).read_bytes()
    assert not list((tmp_path / "out").glob(".*"))  # no temp files left behind


def test_save_is_utf8_without_escapes(reference, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    save_sessions([reference.by_id(MED_SAFETY)], path)
    text = path.read_text(encoding="utf-8")
    assert "肌酐" in text and "\\u" not in text


def test_save_failure_leaves_the_old_file(reference, tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "keep.jsonl"
    path.write_text("old\n", encoding="utf-8")

    def boom(self: Session) -> str:
        raise RuntimeError("disk full")

    monkeypatch.setattr(Session, "to_json", boom)
    with pytest.raises(RuntimeError):
        save_sessions(reference, path)
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.jsonl"]


def test_lenient_mode_skips_and_counts(tmp_path: Path) -> None:
    source = write_fixture_dir(
        tmp_path / "data",
        {
            MED_SAFETY: lambda d: d["task_types"].__setitem__(3, "Unknown"),
            TREATMENT: lambda d: d.pop("subject_id"),
        },
        extra_lines={"discharge_planning.jsonl": ["{not json"]},
    )
    with pytest.raises(SessionFormatError):
        load_sessions(source)
    loaded = load_sessions(source, lenient=True)
    assert len(loaded.sessions) == 3 and len(loaded.turns) == 12
    assert set(loaded.turns["session_id"]) == set(ALL_IDS) - {MED_SAFETY, TREATMENT}
    assert len(loaded.skipped) == 3
    reasons = {sid: why for _, sid, why in loaded.skipped}
    assert "turn 3, field task_types" in reasons[MED_SAFETY]
    assert "field subject_id: missing required key" in reasons[TREATMENT]
    assert "invalid JSON" in reasons[None]
    summary = loaded.summary()
    assert "3 sessions, 12 turns" in summary and "skipped 3 session(s)" in summary
    TurnTable.validate(loaded.turns)


def test_scenario_filter_and_zh(tmp_path: Path) -> None:
    loaded = load_sessions(FIXTURES, language="zh", scenarios=["med_safety", "diagnostic_workup"])
    assert {s.scenario for s in loaded.sessions} == {"med_safety", "diagnostic_workup"}
    assert loaded.turns["gold_answer"].str.contains("[\u4e00-\u9fff]").all()
    assert loaded.turns["language"].eq("zh").all()
    with pytest.raises(ValueError, match="unknown scenario"):
        load_sessions(FIXTURES, scenarios=["lab_trend"])


def test_scenario_filter_on_a_single_file(reference, tmp_path: Path) -> None:
    single = tmp_path / "all.jsonl"
    save_sessions(reference, single)
    loaded = load_sessions(single, scenarios=["discharge_planning"])
    assert [s.id for s in loaded.sessions] == [DISCHARGE]


def test_unreadable_sources_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not found"):
        load_sessions(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .jsonl session files"):
        load_sessions(tmp_path / "empty")
    (tmp_path / "x.csv").write_text("a\n")
    with pytest.raises(ValueError, match="unsupported session source"):
        load_sessions(tmp_path / "x.csv")
    with pytest.raises(ValueError, match="language"):
        load_sessions(FIXTURES, language="de")


def test_hub_id_offline_fails_fast_with_a_clear_message(monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    start = time.monotonic()
    with pytest.raises(ConnectionError, match="offline"):
        load_sessions("hf:someone/physassistbench")
    assert time.monotonic() - start < 5


def test_hub_id_unreachable_fails_within_the_timeout(monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: refused at once
    with pytest.raises(ConnectionError, match="not reachable"):
        load_sessions("hf:someone/physassistbench")


def test_empty_result_has_the_table_columns(tmp_path: Path) -> None:
    source = write_fixture_dir(
        tmp_path / "d", {sid: (lambda d: d["task_types"].__setitem__(0, "x")) for sid in ALL_IDS}
    )
    loaded = load_sessions(source, lenient=True)
    assert loaded.sessions == [] and loaded.turns.empty
    assert list(loaded.turns.columns) == list(reference_columns())


def reference_columns() -> list[str]:
    from physassist.data.turns import COLUMNS

    return list(COLUMNS)


def test_all_scenarios_are_named_in_the_fixtures() -> None:
    assert {p.stem for p in FIXTURES.glob("*.jsonl")} == set(SCENARIOS)


@pytest.mark.parametrize("as_hf", [False, True], ids=["dir", "hf-dir"])
def test_a_built_folder_is_checked_against_its_manifest_however_it_is_named(
    tmp_path: Path, as_hf: bool
) -> None:
    """``hf:<dir>`` reads the same files as ``<dir>``: a file another build left is refused
    either way, not read into the set."""
    out = tmp_path / "sessions"
    shutil.copytree(SAMPLE_SESSIONS, out)
    source = f"hf:{out}" if as_hf else str(out)
    assert len(load_sessions(source)) == 36
    shutil.copy(out / "med_safety.jsonl", out / "extra.jsonl")
    with pytest.raises(FolderError, match="extra.jsonl was not built with it"):
        load_sessions(source)


def test_a_manifest_whose_hashes_are_damaged_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "sessions"
    shutil.copytree(SAMPLE_SESSIONS, out)
    manifest = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({**manifest, HASHES: sorted(manifest[HASHES])}))
    with pytest.raises(FolderError, match=f"{HASHES} is not a mapping"):
        load_sessions(out)
    (out / MANIFEST).write_text(json.dumps({"name": "another tool's manifest"}))
    assert len(load_sessions(out)) == 36  # no hashes of ours: read as it is
