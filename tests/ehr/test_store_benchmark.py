"""Smoke run of ``benchmarks/ehr_tools.py`` on a 200-subject synthetic cohort (seconds)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "ehr_tools.py"


def test_benchmark_smoke_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(SCRIPT.parent))  # its sibling ``cohorts``, as a script has
    monkeypatch.setenv("PHYSASSIST_COHORTS", str(tmp_path / "cohorts"))  # not the user's cache
    spec = importlib.util.spec_from_file_location("ehr_tools_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path / "results.json"
    argv = ["--sizes", "200", "--calls", "60", "--sessions", "8", "--reference-subjects", "10"]
    assert module.main([*argv, "--work-dir", str(tmp_path / "work"), "--out", str(out)]) == 0
    (result,) = json.loads(out.read_text())
    assert result["subjects"] == 200
    assert result["rows"]["labevents"] > 0
    assert result["random_calls"]["n"] == 60
    assert result["session_first_call"]["n"] == 8
    assert result["session_repeated_calls"]["n"] == 8 * 9
    assert result["same_calls_ours"]["median_ms"] > 0
    assert result["same_calls_reference_pandas"]["median_ms"] > 0
    assert result["speedup_median"] > 0
    assert result["calls_per_session"] == 6
    assert result["cold_calls_ours"]["n"] == result["cold_calls_reference_pandas"]["n"] == 10
    assert result["same_calls_ours"]["n"] == 60
    assert result["cold_speedup_median"] > 0
    split = tmp_path / "work" / "split-200" / "split_data_each_patient"
    assert len(list(split.iterdir())) == 10
    assert any(p.name == "hosp_labevents.csv.csv.gz" for p in next(split.iterdir()).iterdir())
    assert "| 200 | 200 |" in capsys.readouterr().out
