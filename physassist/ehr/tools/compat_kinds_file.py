"""compat's split-read column kinds, kept in a file beside the store (``<store>.compat-kinds``).

Measuring them scans the whole table once (about 0.5 µs of CPU per lab row: ~75 s for full
MIMIC-IV's labevents), so every process that answers in ``compat`` would pay it before its first
call on each table. The store is immutable and the kinds follow from it, so the first process
writes them here and later ones read them. The file is a cache: a missing, unreadable or
stale one is measured again; one that cannot be written (a read-only store directory) is
skipped with a log line, never an error. Entries are checked against the store's
fingerprint, the table's row count and width, and the columns read. Two processes adding
tables at the same moment may each drop the other's newest entry; it is measured again later.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SUFFIX = ".compat-kinds"


def path_for(store_path: Path) -> Path:
    """Beside the store, sharing its stem (``_remove_superseded`` removes it with the store)."""
    return store_path.with_suffix(SUFFIX)


def _read(path: Path, fingerprint: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring unreadable compat kinds %s (%s); measuring again", path, exc)
        return {}
    if (
        not isinstance(data, dict)
        or data.get("fingerprint") != fingerprint
        or not isinstance(data.get("tables"), dict)
    ):
        return {}
    tables: dict[str, Any] = data["tables"]
    return tables


def load(
    store_path: Path, fingerprint: str, table: str, key: dict[str, Any]
) -> dict[str, Any] | None:
    """The stored entry of ``table`` if it was measured for this ``key`` (columns, width, rows)."""
    entry = _read(path_for(store_path), fingerprint).get(table)
    if not isinstance(entry, dict) or any(entry.get(k) != v for k, v in key.items()):
        return None
    return entry


def save(store_path: Path, fingerprint: str, table: str, entry: dict[str, Any]) -> None:
    """Add ``table``'s entry (atomically: a reader sees the old file or the new one)."""
    path = path_for(store_path)
    tables = {**_read(path, fingerprint), table: entry}
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(
                    {"fingerprint": fingerprint, "tables": tables}, handle, separators=(",", ":")
                )
            os.replace(tmp, path)
        finally:
            Path(tmp).unlink(missing_ok=True)
    except OSError as exc:
        log.info(
            "compat kinds not kept beside %s (%s); each process measures them", store_path, exc
        )


def blocks_to_json(blocks: dict[str, dict[int, str]]) -> dict[str, list[list[Any]]]:
    return {c: sorted([b, k] for b, k in kinds.items()) for c, kinds in blocks.items()}


def blocks_from_json(blocks: dict[str, Sequence[Sequence[Any]]]) -> dict[str, dict[int, str]]:
    return {c: {int(b): str(k) for b, k in pairs} for c, pairs in blocks.items()}
