"""Load, validate and save session sets.

Sources: a directory of scenario files (`<scenario>.jsonl`, the released layout), a single
`.jsonl` file, a `.parquet` file, `sample` (the committed sample sessions), or a Hugging Face
dataset (`hf:<hub id>`, `hf:<local dir or file>`; see `physassist.data.hf`). Every source goes
through the same parse -> model -> flatten -> pandera path, so they all give the same table.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import ValidationError

from physassist.data import folder
from physassist.data.models import Problem, Session, SessionFormatError
from physassist.data.records import RawRecord, read_jsonl
from physassist.data.turns import flatten_sessions, resolved_scenario, rows_to_frame
from physassist.fingerprint import fingerprint as digest
from physassist.vocab import LANGUAGES, SCENARIOS

SAMPLE_SESSIONS = Path(__file__).resolve().parents[2] / "data" / "sample" / "sessions"
_PER_TURN_KEYS = frozenset({
    "tasks", "tasks_en", "tasks_explicit", "tasks_en_explicit", "tasks_zh", "tasks_zh_explicit",
    "answer_list", "answer_list_en", "answer_list_zh", "rubrics", "rubrics_zh", "rubric_checks",
    "task_types", "turn_subtypes", "tool_sources", "workup_modes", "turn_types",
})


@dataclass
class SessionSet:
    """Validated sessions, their turn table, and what was skipped (lenient mode)."""

    sessions: list[Session]
    turns: pd.DataFrame
    skipped: list[tuple[str, str | None, str]] = field(default_factory=list)
    source: str = ""
    language: str = "en"

    def __len__(self) -> int:
        return len(self.sessions)

    def __iter__(self) -> Iterator[Session]:
        return iter(self.sessions)

    @property
    def fingerprint(self) -> str:
        """sha256 of the sessions' canonical JSON, independent of key and line order."""
        return fingerprint(self.sessions)

    def by_id(self, session_id: str) -> Session:
        for session in self.sessions:
            if session.id == session_id:
                return session
        raise KeyError(f"no session {session_id!r} in {self.source or 'this set'}")

    def summary(self) -> str:
        counts = Counter(resolved_scenario(s) for s in self.sessions)
        per_scenario = ", ".join(f"{k}: {counts[k]}" for k in sorted(counts, key=str))
        text = (f"{len(self.sessions)} sessions, {len(self.turns)} turns ({self.language}) "
                f"from {self.source}" + (f" [{per_scenario}]" if per_scenario else ""))
        if self.skipped:
            text += f"; skipped {len(self.skipped)} session(s):"
            text += "".join(f"\n  - {file}: session {sid}: {why}" for file, sid, why in self.skipped)
        return text


def fingerprint(sessions: Iterable[Session | Mapping[str, Any]]) -> str:
    """The dataset fingerprint (``physassist.fingerprint``) of sessions or their released dicts:
    their canonical JSON, sorted, so key and line order do not matter; the same for every
    language of the set."""
    lines = sorted(
        json.dumps(
            s.to_dict() if isinstance(s, Session) else s,
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for s in sessions
    )
    return digest(line + "\n" for line in lines)


# ---- reading ------------------------------------------------------------------------------


def _scenario_files(directory: Path, scenarios: Iterable[str] | None) -> list[Path]:
    files = sorted(directory.glob("*.jsonl"))
    order = {name: i for i, name in enumerate(SCENARIOS)}
    files.sort(key=lambda p: (order.get(p.stem, len(order)), p.name))
    if scenarios is not None:
        wanted = set(scenarios)
        files = [p for p in files if p.stem in wanted or p.stem not in order]
    return files


def jsonl_files(source: str | os.PathLike[str], scenarios: Iterable[str] | None = None
                ) -> tuple[list[Path], str] | None:
    """The JSONL files a local source is read from and a label naming it; None for a source
    read otherwise (a Hugging Face dataset, Parquet). Raises FileNotFoundError/ValueError."""
    from physassist.data import hf

    text = os.fspath(source)
    if hf.is_hf_source(text):
        return None
    path = SAMPLE_SESSIONS if text == "sample" else Path(source)
    if not path.exists():
        raise FileNotFoundError(f"session source not found: {path}")
    if path.is_dir():
        if hf.is_dataset_dir(path):
            return None
        folder.check(path)  # a folder with a manifest must hold what it lists (FolderError)
        files = _scenario_files(path, scenarios)
        if not files:
            raise FileNotFoundError(f"no .jsonl session files in {path} (expected "
                                    f"<scenario>.jsonl, e.g. {SCENARIOS[0]}.jsonl)")
        return files, str(path)
    if path.suffix == ".parquet":
        return None
    if path.suffix in (".jsonl", ".json"):
        return [path], str(path)
    raise ValueError(f"unsupported session source {path}: expected a directory, a .jsonl or "
                     f".parquet file, 'sample', or hf:<dataset>")


def read_records(source: str | os.PathLike[str], scenarios: Iterable[str] | None = None
                 ) -> tuple[list[RawRecord], str]:
    """Raw records of a source and a label naming it; raises FileNotFoundError/ValueError."""
    from physassist.data import hf

    found = jsonl_files(source, scenarios)
    if found is not None:
        files, label = found
        return [r for f in files for r in read_jsonl(f)], label
    text = os.fspath(source)
    if hf.is_hf_source(text):
        return hf.read_hf_records(text), text
    path = Path(source)  # a Hugging Face dataset directory or a Parquet file
    if path.is_dir():
        return hf.read_hf_records(str(path)), str(path)
    return hf.read_parquet_records(path), str(path)


def _validation_problems(record: RawRecord, err: ValidationError) -> list[Problem]:
    session_id = record.data.get("id") if record.data else None
    problems = []
    for item in err.errors():
        loc = item["loc"]
        turn = loc[1] if len(loc) > 1 and loc[0] in _PER_TURN_KEYS and isinstance(loc[1], int) \
            else None
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        message = item["msg"]
        if item["type"] == "missing":
            message = "missing required key"
        elif item["type"] == "value_error":
            message = message.removeprefix("Value error, ")
        problems.append(Problem(record.file, record.line,
                                str(session_id) if session_id is not None else None, turn,
                                path or None, message))
    return problems


def parse_records(records: list[RawRecord]) -> tuple[list[Session], list[Problem]]:
    """Typed sessions from raw records; records that do not fit the model become problems."""
    sessions, problems = [], []
    for record in records:
        if record.data is None:
            problems.append(Problem(record.file, record.line, None, None, None,
                                    record.error or "unreadable"))
            continue
        try:
            session = Session.model_validate(record.data)
        except ValidationError as err:
            problems.extend(_validation_problems(record, err))
            continue
        session.set_origin(record.file, record.line)
        sessions.append(session)
    return sessions, problems


def load_sessions(
    source: str | os.PathLike[str],
    *,
    language: str = "en",
    lenient: bool = False,
    scenarios: Iterable[str] | None = None,
) -> SessionSet:
    """Read and validate sessions from `source` (see the module docstring).

    Strict (default): any problem raises SessionFormatError listing all problems.
    Lenient: sessions with problems are left out and listed in `SessionSet.skipped`.
    """
    scenarios = checked_arguments(language, scenarios)
    records, label = read_records(source, scenarios)
    return validate_records(records, language=language, lenient=lenient, scenarios=scenarios,
                            source=label)


def checked_arguments(language: str, scenarios: Iterable[str] | None) -> list[str] | None:
    """``scenarios`` as a list; ValueError for a language or scenario we do not know."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, got {language!r}")
    if scenarios is None:
        return None
    scenarios = list(scenarios)
    unknown = sorted(set(scenarios) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"unknown scenario(s) {unknown}; expected {', '.join(SCENARIOS)}")
    return scenarios


def in_scenarios(sessions: list[Session], scenarios: Iterable[str] | None) -> list[Session]:
    """The sessions of the given scenarios (all when None)."""
    if scenarios is None:
        return sessions
    wanted = set(scenarios)
    return [s for s in sessions if resolved_scenario(s) in wanted]


def validate_records(
    records: list[RawRecord],
    *,
    language: str = "en",
    lenient: bool = False,
    scenarios: Iterable[str] | None = None,
    source: str = "",
) -> SessionSet:
    from physassist.data.schema import validate_turns  # pandera: only where a table is checked

    sessions, problems = parse_records(records)
    sessions = in_scenarios(sessions, scenarios)
    frame, structural = flatten_sessions(sessions, language)
    problems += structural + validate_turns(frame)
    if problems and not lenient:
        raise SessionFormatError.from_problems(problems, source)
    bad = {(p.file, p.line) for p in problems}
    skipped = _skipped(problems)
    kept = [s for s in sessions if s.origin not in bad]
    if bad:
        keep_rows = [(f, ln) not in bad for f, ln in zip(frame["file"], frame["line"], strict=True)]
        frame = frame[keep_rows].reset_index(drop=True)
    if frame.empty and not kept:
        frame = rows_to_frame([])
    return SessionSet(kept, frame, skipped, source, language)


def _skipped(problems: list[Problem]) -> list[tuple[str, str | None, str]]:
    reasons: dict[tuple[Any, Any, Any], list[str]] = {}
    for p in problems:
        where = []
        if p.turn is not None:
            where.append(f"turn {p.turn}")
        if p.field is not None:
            where.append(f"field {p.field}")
        prefix = ", ".join(where)
        reasons.setdefault((p.file, p.line, p.session_id), []).append(
            f"{prefix}: {p.message}" if prefix else p.message)
    return [
        (f"{file}:{line}" if line is not None else str(file), sid, "; ".join(why))
        for (file, line, sid), why in reasons.items()
    ]


# ---- writing ------------------------------------------------------------------------------


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def to_jsonl(sessions: Iterable[Session]) -> str:
    return "".join(s.to_json() + "\n" for s in sessions)


def save_sessions(sessions: Iterable[Session] | SessionSet, path: str | os.PathLike[str]
                  ) -> list[Path]:
    """Write sessions losslessly (UTF-8, original key order), atomically; returns the files.

    `path` ending in `.jsonl` gets all sessions; `.parquet` gets the HF encoding (see
    `physassist.data.hf`); anything else is a directory with one `<scenario>.jsonl` per
    scenario (scenario files not among the sessions are left untouched).
    """
    items = list(sessions)
    target = Path(path)
    if target.suffix == ".jsonl":
        _atomic_write(target, to_jsonl(items))
        return [target]
    if target.suffix == ".parquet":
        from physassist.data.hf import save_parquet

        save_parquet(items, target)
        return [target]
    groups: dict[str, list[Session]] = {}
    for session in items:
        scenario = resolved_scenario(session)
        if scenario is None:
            raise SessionFormatError(f"session {session.id}: no scenario (clinical_scenario or "
                                     f"id) to choose its file in {target}")
        groups.setdefault(scenario, []).append(session)
    written = []
    for scenario, group in groups.items():
        file = target / f"{scenario}.jsonl"
        _atomic_write(file, to_jsonl(group))
        written.append(file)
    return written
