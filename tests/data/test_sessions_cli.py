"""`physassist-data`: exit codes, readable errors, nothing written, stats, delegation."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest
from fixtures_sessions import ALL_IDS, FIXTURES, MED_SAFETY, snapshot, write_fixture_dir

from physassist.cli.data import main


def test_validate_ok(capsys) -> None:
    assert main(["validate", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: 5 sessions, 20 turns (en)")
    assert "fingerprint: " in out


def test_validate_fails_with_readable_message_and_writes_nothing(tmp_path: Path, capsys) -> None:
    source = write_fixture_dir(
        tmp_path / "data", {MED_SAFETY: lambda d: d["task_types"].__setitem__(1, "Write/Update")}
    )
    before = snapshot(tmp_path)
    assert main(["validate", str(source)]) == 1
    err = capsys.readouterr().err
    assert (
        f"session {MED_SAFETY}, turn 1, field task_types: Write/Update is allowed only at "
        "turn 3" in err
    )
    assert snapshot(tmp_path) == before


def test_validate_lenient_reports_skips(tmp_path: Path, capsys) -> None:
    source = write_fixture_dir(
        tmp_path / "data", {MED_SAFETY: lambda d: d["rubrics"].__setitem__(0, [])}
    )
    before = snapshot(tmp_path)
    assert main(["validate", str(source), "--lenient"]) == 0
    out = capsys.readouterr().out
    assert "4 sessions, 16 turns" in out and "skipped 1 session(s)" in out
    assert snapshot(tmp_path) == before


def test_validate_zh_language(capsys) -> None:
    assert main(["validate", str(FIXTURES), "--language", "zh"]) == 1
    assert "field tasks_zh: ZH question missing" in capsys.readouterr().err
    assert (
        main(
            [
                "validate",
                str(FIXTURES),
                "--language",
                "zh",
                "--scenarios",
                "med_safety",
                "discharge_planning",
                "diagnostic_workup",
            ]
        )
        == 0
    )


def test_missing_source_and_bad_usage(tmp_path: Path, capsys) -> None:
    assert main(["validate", str(tmp_path / "nope")]) == 1
    assert "not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["validate", str(FIXTURES), "--language", "fr"])
    assert info.value.code == 2


def test_stats_text_and_json(capsys) -> None:
    assert main(["stats", str(FIXTURES)]) == 0
    text = capsys.readouterr().out
    assert "Sessions by scenario x tier" in text and "Turns by implicitness x turn" in text
    assert "Every gold observation is non-empty" in text
    assert main(["stats", str(FIXTURES), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["n_sessions"] == len(ALL_IDS) and stats["n_turns"] == 4 * len(ALL_IDS)
    assert stats["scenario_x_tier"]["med_safety"] == {"1": 1, "2": 1, "3": 0}
    assert stats["task_type_x_turn"]["Write/Update"] == {"0": 0, "1": 0, "2": 0, "3": 3}
    assert stats["task_type_x_turn"]["Information Lookup"]["0"] == len(ALL_IDS)
    assert stats["subtype_x_turn"]["none"]["0"] == len(ALL_IDS)
    assert stats["subtype_x_turn"]["PE"] == {"0": 0, "1": 2, "2": 0, "3": 0}
    assert stats["tool_source"] == {"ehr": 15, "patient": 1, "mixed": 1, "write": 3}
    assert stats["languages"] == {"en": 5, "zh": 4, "en_explicit": 4, "zh_explicit": 4}
    assert stats["all_gold_observations_non_empty"] is True


def test_stats_flags_empty_observations(tmp_path: Path, capsys) -> None:
    def empty(d: dict) -> None:
        d["answer_list"][2][0]["observation"] = {}

    source = write_fixture_dir(tmp_path / "data", {MED_SAFETY: empty})
    assert main(["stats", str(source), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["all_gold_observations_non_empty"] is False
    assert stats["empty_gold_observations"] == [
        {
            "session_id": MED_SAFETY,
            "list": "answer_list",
            "turn": 2,
            "idx": 0,
            "tool": "Condition.search",
        }
    ]


def test_stats_invalid_data_exits_1(tmp_path: Path, capsys) -> None:
    source = write_fixture_dir(
        tmp_path / "data", {MED_SAFETY: lambda d: d["turn_subtypes"].__setitem__(0, "AE")}
    )
    assert main(["stats", str(source)]) == 1
    assert "turn 0, field turn_subtypes" in capsys.readouterr().err


def test_synth_build_and_build_sample_delegate(monkeypatch, tmp_path: Path, capsys) -> None:
    calls: dict[str, tuple] = {}
    synth = types.ModuleType("physassist.synth")
    synth.generate_cohort = lambda out, n, seed=0, **kw: calls.setdefault(
        "synth", (out, n, seed, kw)
    )
    builder = types.ModuleType("generation.builder")
    builder.build_sessions = lambda store, out, **kw: calls.setdefault("build", (store, out, kw))
    builder.build_sample = lambda root, seed: calls.setdefault("sample", (root, seed))
    monkeypatch.setitem(sys.modules, "physassist.synth", synth)
    monkeypatch.setitem(sys.modules, "generation.builder", builder)

    assert main(["synth", "--out", str(tmp_path / "c"), "--subjects", "7", "--seed", "3"]) == 0
    assert calls["synth"] == (str(tmp_path / "c"), 7, 3, {})
    del calls["synth"]
    assert (
        main(
            [
                "synth",
                "--out",
                "x",
                "--subjects",
                "7",
                "--workers",
                "1",
                "--chunk-size",
                "5",
                "--compresslevel",
                "0",
            ]
        )
        == 0
    )
    assert calls["synth"] == ("x", 7, 0, {"chunk_size": 5, "workers": 1, "compresslevel": 0})
    assert (
        main(
            [
                "build",
                "--store",
                "sample",
                "--out",
                str(tmp_path / "s"),
                "--per-slot",
                "2",
                "--scenarios",
                "med_safety",
                "--tiers",
                "1",
                "3",
            ]
        )
        == 0
    )
    assert calls["build"] == (
        "sample",
        str(tmp_path / "s"),
        {
            "sessions_per_slot": 2,
            "seed": 0,
            "scenarios": ["med_safety"],
            "tiers": [1, 3],
            "timepoint": "discharge",
            "force": False,
        },
    )
    del calls["build"]
    assert main(["build", "--store", "sample", "--out", "s", "--timepoint", "in-stay"]) == 0
    assert calls["build"][2]["timepoint"] == "in-stay"
    assert main(["build-sample", "--root", str(tmp_path / "r")]) == 0
    assert calls["sample"] == (str(tmp_path / "r"), 0)
    with pytest.raises(SystemExit):
        main(["synth", "--out", str(tmp_path), "--subjects", "0"])


def test_build_in_stay_through_the_cli(monkeypatch, tmp_path: Path, capsys) -> None:
    """`--timepoint in-stay` builds sessions at 08:00 inside the stay, carrying that instant as
    ``cutoff``; the default (discharge) builds them with no cutoff."""
    monkeypatch.setenv("PHYSASSIST_CACHE", str(tmp_path / "stores"))
    cohort = str(Path(__file__).resolve().parents[2] / "data" / "sample" / "cohort")
    common = [
        "build",
        "--store",
        cohort,
        "--per-slot",
        "1",
        "--scenarios",
        "diagnostic_workup",
        "--tiers",
        "1",
    ]
    assert main([*common, "--out", str(tmp_path / "in"), "--timepoint", "in-stay"]) == 0
    assert main([*common, "--out", str(tmp_path / "dis")]) == 0
    capsys.readouterr()
    (in_stay,) = [
        json.loads(line)
        for line in (tmp_path / "in" / "diagnostic_workup.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    (discharge,) = [
        json.loads(line)
        for line in (tmp_path / "dis" / "diagnostic_workup.jsonl")
        .read_text(encoding="utf-8")
        .splitlines()
    ]
    assert in_stay["cutoff"] == f"{in_stay['current_date']}T08:00:00"
    assert "Current time: 08:00." in in_stay["env_info"]
    assert discharge.get("cutoff") is None and "Current time" not in discharge["env_info"]
    manifests = [
        json.loads((tmp_path / d / "manifest.json").read_text(encoding="utf-8"))
        for d in ("in", "dis")
    ]
    assert [m["timepoint"] for m in manifests] == ["in-stay", "discharge"]


def test_synth_refuses_a_non_cohort_output_with_exit_1(tmp_path: Path, capsys) -> None:
    (tmp_path / "precious.txt").write_text("not a cohort", encoding="utf-8")
    assert main(["synth", "--out", str(tmp_path), "--subjects", "1"]) == 1
    assert "is not a synthetic cohort" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["precious.txt"]
