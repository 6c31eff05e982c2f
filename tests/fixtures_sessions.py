"""Shared helpers for the session tests: the released-format fixtures and broken variants.

`tests/fixtures/released/` holds small project-made sessions in the released format (one
file per scenario): a main-pipeline session with a Write/Update T3 and rubric checks (two,
in med_safety.jsonl), a diagnostic session with a mixed patient turn and ZH trajectories, a
discharge-planning-pipeline session (`session_id: null`, no persona), and a session with
string observations and most optional keys absent.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "released"
MED_SAFETY = "physassistbench_MedRecon_med_safety_0_L2"
MED_SAFETY_L1 = "physassistbench_MedRecon_med_safety_3_L1"
DIAGNOSTIC = "physassistbench_LabInterp_diagnostic_workup_1_L3"
DISCHARGE = "dp_19990003_0_L1"
TREATMENT = "physassistbench_ICUReasoning_treatment_response_2_L1"
ALL_IDS = (DIAGNOSTIC, MED_SAFETY, MED_SAFETY_L1, TREATMENT, DISCHARGE)

Mutation = Callable[[dict[str, Any]], None]


def fixture_lines() -> dict[str, list[str]]:
    """file name -> the JSONL lines of that fixture file."""
    return {
        p.name: p.read_text(encoding="utf-8").splitlines() for p in sorted(FIXTURES.glob("*.jsonl"))
    }


def fixture_dicts() -> dict[str, list[dict[str, Any]]]:
    return {name: [json.loads(line) for line in lines] for name, lines in fixture_lines().items()}


def session_dict(session_id: str) -> dict[str, Any]:
    for sessions in fixture_dicts().values():
        for data in sessions:
            if data["id"] == session_id:
                return data
    raise KeyError(session_id)


def write_fixture_dir(
    directory: Path,
    mutations: dict[str, Mutation] | None = None,
    *,
    extra_lines: dict[str, list[str]] | None = None,
) -> Path:
    """Copy the fixtures to `directory`, applying `mutations[session_id]` to those sessions
    and appending raw `extra_lines[file name]` (to inject malformed lines)."""
    directory.mkdir(parents=True, exist_ok=True)
    mutations = mutations or {}
    for name, sessions in fixture_dicts().items():
        lines = []
        for data in sessions:
            data = copy.deepcopy(data)
            if data["id"] in mutations:
                mutations[data["id"]](data)
            lines.append(json.dumps(data, ensure_ascii=False))
        lines += (extra_lines or {}).get(name, [])
        (directory / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return directory


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` with its bytes (to prove a command wrote nothing)."""
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }
