"""Session files at their edges: Unicode line separators inside strings, deep nesting, bad
dates, negative ids, empty ids and empty gold answers.

Each bad file gives the usual message naming file, line, session, turn and field; the
released-format fixtures and the sample still load.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from physassist.data import load_sessions, save_sessions
from physassist.data.loader import SAMPLE_SESSIONS
from physassist.data.models import SessionFormatError

REPO = Path(__file__).resolve().parents[2]
RELEASED = REPO / "tests" / "fixtures" / "released"
SEPARATORS = {"U+2028": "\u2028", "U+2029": "\u2029", "U+0085": "\u0085"}


@pytest.fixture(scope="module")
def base() -> dict:
    """One released-format session of the sample (med_safety, first line)."""
    line = (SAMPLE_SESSIONS / "med_safety.jsonl").read_text(encoding="utf-8").split("\n")[0]
    return json.loads(line)


def write(path: Path, *sessions: dict) -> Path:
    path.write_text(
        "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in sessions), encoding="utf-8"
    )
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(SessionFormatError) as err:
        load_sessions(path)
    return [str(p) for p in err.value.problems]


@pytest.mark.parametrize("name", list(SEPARATORS))
def test_line_separators_inside_strings_load_with_right_line_numbers(
    base: dict, name: str, tmp_path: Path
) -> None:
    first = copy.deepcopy(base)
    first["tasks_en"][0] = f"Creatinine{SEPARATORS[name]}today?"
    second = copy.deepcopy(base)
    second["id"] = base["id"] + "_second"
    second["rubrics"] = []  # a real problem on line 2, to check the line number
    path = write(tmp_path / "med_safety.jsonl", first, second)
    assert SEPARATORS[name] in path.read_text(encoding="utf-8")  # written raw, not escaped
    [problem, *_] = problems(path)
    assert problem.startswith(f"{path}:2: session {second['id']}")
    del second["rubrics"]
    write(path, first)
    [session] = load_sessions(path).sessions
    assert session.question(0) == f"Creatinine{SEPARATORS[name]}today?"
    assert session.origin == (str(path), 1)


def test_save_then_load_round_trip_keeps_separators(base: dict, tmp_path: Path) -> None:
    sessions = load_sessions(write(tmp_path / "in.jsonl", base)).sessions
    text = "a\u2028b\u2029c\u0085d"
    sessions[0].tasks_en[0] = text  # type: ignore[index]
    sessions[0].env_info += "\u2028"
    out = tmp_path / "out.jsonl"
    save_sessions(sessions, out)
    again = load_sessions(out)
    assert again.sessions[0].question(0) == text
    assert again.fingerprint == load_sessions(out).fingerprint
    assert again.sessions[0].to_dict() == sessions[0].to_dict()


def _deep_line(levels: int) -> str:
    return '{"id": "deep", "x": ' + "[" * levels + "]" * levels + "}"


def test_deep_nesting_is_one_message_naming_file_and_line(base: dict, tmp_path: Path) -> None:
    path = tmp_path / "med_safety.jsonl"
    path.write_text(json.dumps(base) + "\n" + _deep_line(100_000) + "\n", encoding="utf-8")
    [problem] = problems(path)
    assert problem.startswith(f"{path}:2:") and "nested too deeply" in problem


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=180,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
    )


def test_deep_nesting_from_validate_and_eval(base: dict, tmp_path: Path) -> None:
    released = tmp_path / "released"
    released.mkdir()
    path = released / "med_safety.jsonl"
    path.write_text(json.dumps(base) + "\n" + _deep_line(100_000) + "\n", encoding="utf-8")
    validate = _cli("-m", "physassist.cli.data", "validate", str(released), cwd=tmp_path)
    assert validate.returncode != 0
    assert "RecursionError" not in validate.stderr + validate.stdout
    assert f"{path}:2" in validate.stderr + validate.stdout
    evaluate = _cli(
        "-m",
        "physassist.cli.eval",
        "dataset=physassistbench",
        f"dataset.source={released}",
        "dataset.ehr_source=sample",
        "tracking=none",
        "inspect.display=none",
        f"inspect.log_dir={tmp_path / 'logs'}",
        f"hydra.run.dir={tmp_path / 'out'}",
        cwd=tmp_path,
    )
    assert evaluate.returncode == 2, evaluate.stderr
    assert "RecursionError" not in evaluate.stderr and "Traceback" not in evaluate.stderr
    assert f"{path}:2" in evaluate.stderr and "nested too deeply" in evaluate.stderr


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("current_date", "tomorrow", "must be a date YYYY-MM-DD, got 'tomorrow'"),
        ("current_date", "2166-02-30", "must be a date YYYY-MM-DD, got '2166-02-30'"),
        ("current_date", "02/01/2166", "must be a date YYYY-MM-DD"),
        ("env_info", "Current date: 2166-13-01\nPatient ...", "must be a date YYYY-MM-DD"),
        ("subject_id", -5, "greater than 0"),
        ("id", "", "must not be empty"),
        ("id", "   ", "must not be empty"),
    ],
)
def test_bad_identity_fields_are_named(
    base: dict, tmp_path: Path, field: str, value: object, message: str
) -> None:
    bad = copy.deepcopy(base)
    bad[field] = value
    path = write(tmp_path / "med_safety.jsonl", bad)
    [problem] = problems(path)
    assert problem.startswith(f"{path}:1: session ")
    assert f"field {field}: " in problem and message in problem


@pytest.mark.parametrize("key", ["answer_list", "answer_list_zh"])
def test_empty_gold_answer_is_named_with_its_turn(base: dict, tmp_path: Path, key: str) -> None:
    bad = copy.deepcopy(base)
    assert bad[key][2][-1]["action"]["name"] == "prepare_to_answer"
    bad[key][2][-1]["observation"] = "  "
    path = write(tmp_path / "med_safety.jsonl", bad)
    found = problems(path)
    assert any(
        p.startswith(f"{path}:1: session {base['id']}, turn 2, field {key}: ")
        and "empty gold answer" in p
        for p in found
    ), found


def test_released_fixtures_and_sample_still_load() -> None:
    assert len(load_sessions(RELEASED)) == 5
    assert len(load_sessions(RELEASED, language="zh", lenient=True)) == 4  # one has no ZH
    for language in ("en", "zh"):
        assert len(load_sessions("sample", language=language)) > 0
    dates = [s.effective_date for s in load_sessions("sample").sessions]
    assert all(dates)
