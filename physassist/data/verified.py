"""Session files validated once per content: a run builds its task from the same files every
time, and their strict validation (the turn table and its pandera checks: pandera's import and
first ``validate``, 0.2-0.3 s of CPU) and lossless dump (``Session.to_dict``, ~0.1 s) gave the
same answer every time.

What is remembered is a verdict, not data: "these JSONL files, read with this language and
these scenarios by this code, hold valid sessions with these ids, and line i is already the
lossless JSON of its session". Its key is a sha256 of every input of that answer: each file's
path and text as read, the language and scenarios, and the code that reads, validates and
dumps (the source of ``physassist/data/*.py`` and ``physassist/vocab.py``, the Python version,
and the installed pydantic, pandas, pandera and numpy, by their ``__init__`` file's path, size
and mtime, which an install or upgrade rewrites). A changed or added file, an edited schema or
model, another library version is another key, so the files are validated again. A set with a
problem is never remembered: its error is raised on every run. A verdict is trusted only for
the same ids; an unreadable or foreign entry is a miss, and a cache that cannot be written is
left alone (the sessions are the same, only validated again next time). The sessions are
parsed (pydantic) every time: a verdict spares the checks over the whole set, not the models.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sys
import tempfile
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

from physassist.data.loader import (
    checked_arguments,
    in_scenarios,
    jsonl_files,
    load_sessions,
    parse_records,
    validate_records,
)
from physassist.data.models import Session, session_json
from physassist.data.records import RawRecord, jsonl_records

log = logging.getLogger(__name__)

#: verdicts kept in a cache directory (the most recently used; each is a few hundred bytes)
KEEP = 64
ROOT = Path(__file__).resolve().parents[2]
_CODE = ("physassist/data/*.py", "physassist/vocab.py")
_LIBRARIES = ("pydantic", "pydantic_core", "pandas", "pandera", "numpy")

#: A session, its released dict (``Session.to_dict``) and that dict as JSON (``Session.to_json``).
Verified = tuple[Session, dict[str, Any], str]


def verified_sessions(
    source: str | os.PathLike[str],
    *,
    language: str = "en",
    scenarios: Iterable[str] | None = None,
    cache_dir: Path | None = None,
) -> list[Verified]:
    """The sessions of ``source``, strictly valid (``load_sessions``; its ``SessionFormatError``
    listing every problem otherwise), each with its released dict and JSON. A JSONL source
    whose verdict is in ``cache_dir`` is parsed, not validated again (see the module)."""
    scenarios = checked_arguments(language, scenarios)
    found = jsonl_files(source, scenarios) if cache_dir is not None else None
    if cache_dir is None or found is None:
        return [_dumped(s) for s in load_sessions(source, language=language, scenarios=scenarios)]
    files, label = found
    try:
        texts = [(f, f.read_text(encoding="utf-8")) for f in files]
    except UnicodeDecodeError:  # load_sessions names the file
        return [_dumped(s) for s in load_sessions(source, language=language, scenarios=scenarios)]
    key = _key(texts, language, scenarios)
    records = [r for f, text in texts for r in jsonl_records(f, text)]
    read: dict[tuple[str | None, int | None], RawRecord] = {(r.file, r.line): r for r in records}
    verdict = _read(cache_dir / f"{key}.json")
    if verdict is not None:
        sessions, problems = parse_records(records)
        sessions = in_scenarios(sessions, scenarios)
        if not problems and [s.id for s in sessions] == verdict["ids"]:
            return [_as_read(s, read[s.origin]) if same else _dumped(s)
                    for s, same in zip(sessions, verdict["dumps"], strict=True)]
    loaded = validate_records(records, language=language, scenarios=scenarios, source=label)  # raises
    out = [_dumped(s) for s in loaded.sessions]
    same = [read[s.origin].text == text for s, _, text in out]
    _write(cache_dir, key, {"ids": [s.id for s, _, _ in out], "dumps": same})
    return out


def _dumped(session: Session) -> Verified:
    data = session.to_dict()
    return session, data, session_json(data)


def _as_read(session: Session, record: RawRecord) -> Verified:
    """A session whose line is its lossless JSON: the line and its dict, as read."""
    assert record.data is not None and record.text is not None
    return session, record.data, record.text


@cache
def code_digest(root: Path = ROOT) -> str:
    """The code a verdict depends on (see the module), in the source tree at ``root``."""
    h = hashlib.sha256(sys.version.encode())
    for pattern in _CODE:
        for path in sorted(root.glob(pattern)):
            h.update(f"\0{path.relative_to(root)}\0".encode() + path.read_bytes())
    for name in _LIBRARIES:
        spec = importlib.util.find_spec(name)  # not imported (pandera is not, on a verdict)
        origin = Path(spec.origin) if spec and spec.origin else None
        stat = origin.stat() if origin else None
        h.update(f"\0{name}\0{origin}\0{stat and (stat.st_size, stat.st_mtime_ns)}".encode())
    return h.hexdigest()


def _key(texts: list[tuple[Path, str]], language: str, scenarios: list[str] | None) -> str:
    h = hashlib.sha256(f"{code_digest()}\0{language}\0{json.dumps(scenarios)}".encode())
    for path, text in texts:
        data = text.encode()
        h.update(f"\0{path}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def _read(path: Path) -> dict[str, Any] | None:
    """A verdict, or None (none, unreadable, or not one)."""
    try:
        verdict: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        ids, dumps = verdict["ids"], verdict["dumps"]
        if not (isinstance(ids, list) and isinstance(dumps, list) and len(ids) == len(dumps)
                and all(isinstance(d, bool) for d in dumps)):
            return None
    except (OSError, ValueError, TypeError, KeyError):
        return None
    try:
        os.utime(path)  # recently used: kept by _write's pruning
    except OSError:  # a cache we may read but not write
        pass
    return verdict


def _write(cache_dir: Path, key: str, verdict: dict[str, Any]) -> None:
    """Remember a verdict (atomically), keeping the ``KEEP`` most recently used."""
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=cache_dir)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(verdict, handle)
            os.replace(tmp, cache_dir / f"{key}.json")
        finally:
            Path(tmp).unlink(missing_ok=True)
        kept = sorted(cache_dir.glob("*.json"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in kept[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError as exc:  # a cache we cannot write: validated again next time, nothing lost
        log.debug("session verdicts: cannot write %s: %s", cache_dir, exc)
