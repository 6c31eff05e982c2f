"""Sessions through Hugging Face `datasets`: Parquet files, dataset directories, Hub ids.

Arrow cannot hold a session losslessly as native columns (observations are a dict in one
session and a string in the next; FHIR payloads have open key sets). The project's encoding
therefore stores the full session JSON in one string column, `session_json`, next to a few
plain columns for browsing (`id`, `scenario`, `tier`, `subject_id`). Datasets with native
columns (someone else's export) are decoded best effort: JSON-encoded strings in nested keys
are parsed and nulls that Arrow filled in for absent keys are dropped.

Hub ids are only tried online: `HF_HUB_OFFLINE`/`HF_DATASETS_OFFLINE` or an unreachable Hub
fail at once with a clear message instead of hanging.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from physassist.data import folder
from physassist.data.models import Session
from physassist.data.records import RawRecord, read_jsonl

JSON_COLUMN = "session_json"
HUB_TIMEOUT_S = 3.0
# keys whose value may legitimately be null in released data (kept when decoding native rows)
_NULLABLE_KEYS = frozenset({"hadm_id", "session_id", "session_plan"})
_NESTED_KEYS = frozenset(
    {
        "tools",
        "tools_en",
        "tools_zh",
        "tasks",
        "tasks_en",
        "tasks_explicit",
        "tasks_en_explicit",
        "tasks_zh",
        "tasks_zh_explicit",
        "messages",
        "messages_en",
        "messages_zh",
        "answer_list",
        "answer_list_en",
        "answer_list_zh",
        "turn_types",
        "task_types",
        "task_sequence",
        "turn_subtypes",
        "tool_sources",
        "workup_modes",
        "dep_graph",
        "session_plan",
        "rubrics",
        "rubrics_zh",
        "rubric_checks",
        "patient_agent_annotations",
        "persona_config",
        "patient_model",
        "note_grounding",
        "write_gold_params",
    }
)


def is_hf_source(source: str) -> bool:
    return source.startswith("hf:")


def _saved_to_disk(path: Path) -> bool:
    """A directory written by `Dataset.save_to_disk` (or `DatasetDict.save_to_disk`)."""
    return (path / "dataset_info.json").exists() or (path / "state.json").exists()


def is_dataset_dir(path: Path) -> bool:
    """A directory written by `Dataset.save_to_disk` or holding Parquet data files."""
    if _saved_to_disk(path):
        return True
    return not any(path.glob("*.jsonl")) and any(path.rglob("*.parquet"))


def _strip_scheme(source: str) -> str:
    rest = source[len("hf:") :]
    return rest[2:] if rest.startswith("//") else rest


def read_hf_records(source: str) -> list[RawRecord]:
    """Records of `hf:<hub id>`, `hf:<local path>` or a local dataset directory."""

    target = _strip_scheme(source) if is_hf_source(source) else source
    path = Path(target)
    if not path.exists():
        path = _download_hub_dataset(target)
    if path.is_file():
        if path.suffix == ".parquet":
            return _records_from_dataset(_load_parquet([path]), str(path))
        if path.suffix in (".jsonl", ".json"):
            return read_jsonl(path)
        raise ValueError(f"unsupported dataset file {path}: expected .jsonl or .parquet")
    folder.check(path)  # a built session folder read as hf:<dir> is checked as the loader does
    if _saved_to_disk(path):
        import datasets

        with _quiet_datasets():
            loaded = datasets.load_from_disk(str(path))
        if isinstance(loaded, datasets.DatasetDict):
            loaded = datasets.concatenate_datasets(list(loaded.values()))
        return _records_from_dataset(loaded, str(path))
    parquet = sorted(path.rglob("*.parquet"))
    if parquet:
        return _records_from_dataset(_load_parquet(parquet), str(path))
    jsonl = sorted(path.rglob("*.jsonl"))
    if jsonl:
        return [r for f in jsonl for r in read_jsonl(f)]
    raise FileNotFoundError(f"no .parquet or .jsonl session files in dataset {path}")


def read_parquet_records(path: Path) -> list[RawRecord]:
    return _records_from_dataset(_load_parquet([path]), str(path))


@contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No progress bars on stderr while we use `datasets` (restored afterwards)."""
    import datasets

    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def _load_parquet(files: list[Path]) -> Any:
    """Load through `datasets` into memory, with a throwaway cache (reading writes nothing)."""
    import tempfile

    import datasets

    with tempfile.TemporaryDirectory(prefix="physassist-hf-") as cache, _quiet_datasets():
        return datasets.load_dataset(
            "parquet",
            data_files=[str(f) for f in files],
            split="train",
            cache_dir=cache,
            keep_in_memory=True,
        )


def _records_from_dataset(dataset: Any, label: str) -> list[RawRecord]:

    records = []
    for row_number, row in enumerate(dataset, start=1):
        if row.get(JSON_COLUMN) is not None:
            try:
                data = json.loads(row[JSON_COLUMN])
            except json.JSONDecodeError as err:
                records.append(
                    RawRecord(
                        label, row_number, None, f"column {JSON_COLUMN}: invalid JSON ({err.msg})"
                    )
                )
                continue
            if not isinstance(data, dict):
                records.append(
                    RawRecord(label, row_number, None, f"column {JSON_COLUMN}: not a JSON object")
                )
                continue
            records.append(RawRecord(label, row_number, data))
        else:
            records.append(RawRecord(label, row_number, _decode_native_row(row)))
    return records


def _decode_native_row(row: dict[str, Any]) -> dict[str, Any]:
    data = {}
    for key, value in row.items():
        if value is None and key not in _NULLABLE_KEYS:
            continue  # Arrow fills absent keys with null
        if key in _NESTED_KEYS and isinstance(value, str) and value[:1] in ("[", "{"):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass  # kept as text: validation then fails naming the session and this field
        data[key] = value
    return data


def sessions_to_dataset(sessions: Iterable[Session]) -> Any:
    """A `datasets.Dataset` in the project's lossless encoding (one row per session)."""
    import datasets

    items = list(sessions)
    return datasets.Dataset.from_dict(
        {
            "id": [s.id for s in items],
            "scenario": [s.scenario for s in items],
            "tier": [s.tier for s in items],
            "subject_id": [s.subject_id for s in items],
            JSON_COLUMN: [s.to_json() for s in items],
        },
        features=datasets.Features(
            {
                "id": datasets.Value("string"),
                "scenario": datasets.Value("string"),
                "tier": datasets.Value("int64"),
                "subject_id": datasets.Value("int64"),
                JSON_COLUMN: datasets.Value("string"),
            }
        ),
    )


def save_parquet(sessions: Iterable[Session], path: Path) -> None:
    """Write sessions as one Parquet file through `datasets`, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with _quiet_datasets():
            sessions_to_dataset(sessions).to_parquet(str(tmp))
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _offline() -> bool:
    return any(
        os.environ.get(var, "").strip().lower() in ("1", "true", "yes", "on")
        for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    )


def _hub_reachable(endpoint: str, timeout: float) -> bool:
    """TCP reachability of the Hub, bounded in time (DNS included, hence the thread)."""
    parsed = urlparse(endpoint)
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme != "http" else 80)
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=probe, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(result and result[0])


def _download_hub_dataset(repo_id: str) -> Path:
    if "/" not in repo_id or repo_id.startswith(("/", ".")):
        raise FileNotFoundError(
            f"dataset not found: {repo_id} is neither a local path nor a Hub id (<owner>/<name>)"
        )
    if _offline():
        raise ConnectionError(
            f"cannot load Hub dataset {repo_id}: offline mode is set "
            f"(HF_HUB_OFFLINE/HF_DATASETS_OFFLINE); use a local path instead"
        )
    endpoint = os.environ.get("HF_ENDPOINT", "https://huggingface.co")
    if not _hub_reachable(endpoint, HUB_TIMEOUT_S):
        raise ConnectionError(
            f"cannot load Hub dataset {repo_id}: {endpoint} is not reachable "
            f"within {HUB_TIMEOUT_S:.0f} s (offline?); use a local path instead"
        )
    from huggingface_hub import snapshot_download

    os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", "10")
    local = snapshot_download(
        repo_id,
        repo_type="dataset",
        allow_patterns=["*.jsonl", "*.parquet", "**/*.jsonl", "**/*.parquet"],
    )
    return Path(local)
