"""Session files validated once per content (``physassist.data.verified``): a verdict spares the
checks only for the same files, language, scenarios and code; anything else is validated again,
and a file with a problem fails with its one-line message every time."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from physassist.data import verified
from physassist.data.loader import SAMPLE_SESSIONS
from physassist.data.models import SessionFormatError
from physassist.data.verified import code_digest, verified_sessions


@pytest.fixture(scope="module")
def base() -> dict:
    """One released-format session of the sample (med_safety, first line)."""
    return json.loads(
        (SAMPLE_SESSIONS / "med_safety.jsonl").read_text(encoding="utf-8").split("\n")[0]
    )


def write(path: Path, *sessions: dict, compact: bool = False) -> Path:
    separators = (",", ":") if compact else None  # compact: a line that is not its session's dump
    path.write_text(
        "".join(json.dumps(s, ensure_ascii=False, separators=separators) + "\n" for s in sessions),
        encoding="utf-8",
    )
    return path


def as_dumped(loaded) -> list[tuple[dict, dict, str]]:
    return [(s.to_dict(), d, j) for s, d, j in loaded]


def no_checks(*args, **kwargs):
    raise AssertionError("validated again")


@pytest.mark.parametrize("compact", [False, True])
def test_a_verdict_spares_the_checks_with_the_same_sessions(
    base: dict, tmp_path: Path, monkeypatch, compact: bool
) -> None:
    second = {**copy.deepcopy(base), "id": base["id"] + "_2"}
    path = write(tmp_path / "med_safety.jsonl", base, second, compact=compact)
    cache = tmp_path / "cache"
    first = verified_sessions(path, cache_dir=cache)
    assert [j for _, _, j in first] == [s.to_json() for s, _, _ in first]
    assert len(list(cache.glob("*.json"))) == 1
    monkeypatch.setattr(verified, "validate_records", no_checks)
    again = verified_sessions(path, cache_dir=cache)
    assert as_dumped(again) == as_dumped(first)
    lines = path.read_text(encoding="utf-8").split("\n")[:2]
    assert (
        [j for _, _, j in again] == lines
    ) is not compact  # the lines themselves when they are the dumps
    assert [s.origin for s, _, _ in again] == [(str(path), 1), (str(path), 2)]


def test_a_changed_file_is_validated_again_and_its_problem_named(
    base: dict, tmp_path: Path
) -> None:
    path = write(tmp_path / "med_safety.jsonl", base)
    cache = tmp_path / "cache"
    verified_sessions(path, cache_dir=cache)
    bad = copy.deepcopy(base)
    bad["task_types"][0] = "Not A Task Type"  # only the turn table's checks see it
    write(path, bad)
    for _ in range(2):  # a set with a problem is never remembered
        with pytest.raises(SessionFormatError) as err:
            verified_sessions(path, cache_dir=cache)
        assert (
            f"{path}:1: session {base['id']}, turn 0, field task_types: 'Not A Task Type' is not "
            "one of" in str(err.value)
        )
    assert len(list(cache.glob("*.json"))) == 1  # the valid content's verdict only


def test_another_language_or_scenario_filter_is_another_verdict(
    base: dict, tmp_path: Path, monkeypatch
) -> None:
    path = write(tmp_path / "med_safety.jsonl", base)
    cache = tmp_path / "cache"
    verified_sessions(path, cache_dir=cache)
    calls = []
    real = verified.validate_records
    monkeypatch.setattr(
        verified, "validate_records", lambda *a, **k: calls.append(k) or real(*a, **k)
    )
    verified_sessions(path, language="zh", cache_dir=cache)
    assert verified_sessions(path, scenarios=["diagnostic_workup"], cache_dir=cache) == []
    assert [k["language"] for k in calls] == ["zh", "en"]


def test_the_code_is_part_of_the_key(tmp_path: Path) -> None:
    """The schema, the models or the vocabulary edited: another digest, so another key."""
    data = tmp_path / "physassist" / "data"
    data.mkdir(parents=True)
    files = [data / "schema.py", data / "models.py", tmp_path / "physassist" / "vocab.py"]
    for f in files:
        f.write_text("X = 1\n")
    digests = {code_digest(tmp_path)}
    for f in files:
        f.write_text(f.read_text() + "Y = 2\n")
        code_digest.cache_clear()
        digests.add(code_digest(tmp_path))
    assert len(digests) == 1 + len(files)


def test_a_broken_or_foreign_entry_is_a_miss(base: dict, tmp_path: Path) -> None:
    path = write(tmp_path / "med_safety.jsonl", base)
    cache = tmp_path / "cache"
    first = verified_sessions(path, cache_dir=cache)
    [entry] = cache.glob("*.json")
    for text in ("{not json", '{"ids": ["other"], "dumps": [true]}', '{"ids": [], "dumps": [1]}'):
        entry.write_text(text)
        assert as_dumped(verified_sessions(path, cache_dir=cache)) == as_dumped(first)
    assert json.loads(entry.read_text()) == {"ids": [base["id"]], "dumps": [True]}  # written again


def test_a_cache_that_cannot_be_written_still_loads(base: dict, tmp_path: Path) -> None:
    path = write(tmp_path / "med_safety.jsonl", base)
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert [s.id for s, _, _ in verified_sessions(path, cache_dir=blocked / "cache")] == [
        base["id"]
    ]
