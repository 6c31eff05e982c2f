"""Raw records of session files: one per JSONL line (or dataset row), before validation.

Both the file loader (``physassist.data.loader``) and the HF reader (``physassist.data.hf``)
produce them, so a bad line is reported the same way whatever the source.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class RawRecord:
    """One session as read from a source, before validation."""

    file: str
    line: int
    data: dict[str, Any] | None  # None when the line is not a JSON object
    error: str | None = None
    text: str | None = None  # the JSONL line as read (``physassist.data.verified`` compares it)


def read_jsonl(path: Path) -> list[RawRecord]:
    """The records of one JSONL file; an unreadable line becomes a record with its error."""
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        return [RawRecord(str(path), 1, None, f"not UTF-8 text ({err})")]
    return jsonl_records(path, text)


def jsonl_records(path: Path, text: str) -> list[RawRecord]:
    """The records of a JSONL file's ``text`` (as ``read_jsonl`` reads it)."""
    records = []
    # "\n" only: str.splitlines() also breaks at U+2028, U+2029, U+0085, ..., which JSON
    # (and our own save_sessions, ensure_ascii=False) leaves raw inside strings
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            records.append(
                RawRecord(
                    str(path), number, None, f"invalid JSON ({err.msg} at column {err.colno})"
                )
            )
            continue
        except RecursionError:
            records.append(
                RawRecord(
                    str(path),
                    number,
                    None,
                    "JSON nested too deeply to read (beyond Python's recursion "
                    f"limit of {sys.getrecursionlimit()} levels)",
                )
            )
            continue
        if not isinstance(data, dict):
            records.append(
                RawRecord(
                    str(path), number, None, f"expected a JSON object, got {type(data).__name__}"
                )
            )
            continue
        records.append(RawRecord(str(path), number, data, text=line))
    return records
