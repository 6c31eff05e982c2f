"""The committed sample benchmark: reproducible, valid, rule-abiding, self-consistent."""

from __future__ import annotations

import filecmp
from pathlib import Path

import fixtures_builder as fb
import pytest

from generation.builder import build_sample
from generation.builder.arcs import IL, WU
from physassist.data.loader import load_sessions
from physassist.data.stats import session_stats

SESSIONS = fb.SAMPLE / "sessions"


@pytest.fixture(scope="module")
def entries() -> list[dict]:
    if not SESSIONS.is_dir():
        pytest.skip(f"sample sessions not found at {SESSIONS}")
    return fb.read_entries(SESSIONS)


@pytest.mark.slow
def test_committed_sample_equals_a_fresh_build(tmp_path: Path) -> None:
    if not SESSIONS.is_dir():
        pytest.skip(f"sample sessions not found at {SESSIONS}")
    report = build_sample(root=tmp_path, seed=0)
    assert report.n_sessions == 36
    fresh = sorted(p.name for p in (tmp_path / "sessions").iterdir())
    assert fresh == sorted(p.name for p in SESSIONS.iterdir())
    for name in fresh:
        assert filecmp.cmp(tmp_path / "sessions" / name, SESSIONS / name, shallow=False), name
    fresh_cohort, committed_cohort = tmp_path / "cohort", fb.SAMPLE / "cohort"

    def cohort_files(root: Path) -> list[Path]:
        return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())

    assert cohort_files(fresh_cohort) == cohort_files(committed_cohort)  # none missing or stale
    for rel in cohort_files(fresh_cohort):
        assert filecmp.cmp(fresh_cohort / rel, committed_cohort / rel, shallow=False), (
            f"cohort/{rel}"
        )


def test_sample_loads_strictly_and_covers_every_slot_language_and_type(entries) -> None:
    for lang in ("en", "zh"):
        loaded = load_sessions(SESSIONS, language=lang)
        assert len(loaded.sessions) == len(entries) >= 36 and not loaded.skipped
    stats = session_stats(load_sessions(SESSIONS))
    assert stats["n_turns"] == 4 * stats["n_sessions"] >= 144
    assert all(n >= 3 for row in stats["scenario_x_tier"].values() for n in row.values())
    by_turn = stats["task_type_x_turn"]
    assert by_turn[IL]["0"] == stats["n_sessions"]  # IL owns T0 (Table G2)
    assert sum(by_turn[WU][t] for t in ("0", "1", "2")) == 0 and by_turn[WU]["3"] > 0
    assert all(sum(row.values()) > 0 for row in by_turn.values())  # all four task types
    sub = stats["subtype_x_turn"]
    assert all(sum(sub[s].values()) > 0 for s in ("NA", "PE", "AE"))
    assert sub["none"]["0"] == stats["n_sessions"] and sub["AE"]["1"] == 0
    assert stats["languages"] == {
        "en": len(entries),
        "zh": len(entries),
        "en_explicit": len(entries),
        "zh_explicit": len(entries),
    }
    assert stats["all_gold_observations_non_empty"], stats["empty_gold_observations"][:3]
    assert stats["sessions_with_rubric_checks"] == len(entries)
    assert stats["tool_source"]["write"] > 0 and stats["tool_source"]["ehr"] > 0


def test_sample_sessions_obey_arc_tier_and_diversity_rules(entries) -> None:
    for entry in entries:
        assert fb.rule_problems(entry) == [], entry["id"]


def test_every_rubric_item_has_a_check_that_the_gold_answer_passes(entries) -> None:
    for entry in entries:
        for t in range(4):
            n = len(entry["rubrics"][t])
            assert n == len(entry["rubrics_zh"][t]) == len(entry["rubric_checks"][t])
            assert all(check is not None for check in entry["rubric_checks"][t])
            size = {
                "Information Lookup": (3, 3),
                "Data Gathering": (4, 5),
                "Clinical Reasoning": (5, 6),
                "Write/Update": (4, 6),
            }[entry["task_types"][t]]
            if entry["tool_sources"][t] in ("patient", "mixed"):
                size = (4, 6)  # 4: a low-literacy reply gives no scores to score
            assert size[0] <= n <= size[1], (entry["id"], t, n)
    failures = [f for entry in entries for f in fb.gold_check_failures(entry)]
    assert failures == []


def test_subtypes_are_recorded_only_where_the_question_was_rewritten(entries) -> None:
    for entry in entries:
        for t, subtype in enumerate(entry["turn_subtypes"]):
            implicit, explicit = entry["tasks"][t], entry["tasks_explicit"][t]
            if t == 0 or entry["task_types"][t] == WU:
                assert subtype is None and implicit == explicit
            if subtype is None:
                assert implicit == explicit, (entry["id"], t)
            else:
                assert implicit != explicit, (entry["id"], t)
                assert entry["tasks_zh"][t] != entry["tasks_zh_explicit"][t]
            if subtype == "NA":
                edges = entry["dep_graph"]["edges"]
                assert any(e["to"] == t and e["type"] == "NA" for e in edges), (entry["id"], t)
            if subtype == "AE":
                assert t >= 2 and entry["task_types"][t] != IL


def test_released_shape_details(entries) -> None:
    sep = "=" * 60
    for entry in entries:
        n_tools = 18 if "Write/Update" in entry["task_types"] else 15
        assert len(entry["tools"]) == n_tools == len(entry["tools_en"])
        assert entry["messages"].count(sep) == 3 and sep not in entry["messages_zh"]
        assert entry["id"].endswith(f"_L{entry['difficulty_level']}")
        assert entry["env_info"].startswith(f"session_id: {entry['session_id']}\n")
        assert f"Current date: {entry['current_date']}." in entry["env_info"]
        for key in ("answer_list", "answer_list_zh"):
            for turn in entry[key]:
                assert turn[-1]["action"]["name"] == "prepare_to_answer"
                assert turn[-1]["dependency_list"] == list(range(len(turn) - 1))
                assert [a["idx"] for a in turn] == list(range(len(turn)))
        for t, source in enumerate(entry["tool_sources"]):
            names = [a["action"]["name"] for a in entry["answer_list"][t][:-1]]
            patient = [n for n in names if n.startswith("patient.")]
            assert bool(patient) == (source in ("patient", "mixed"))
            for a_en, a_zh in zip(entry["answer_list"][t], entry["answer_list_zh"][t], strict=True):
                if a_en["action"]["name"].startswith("patient."):
                    assert set(a_en["observation"]) >= {
                        "patient_response",
                        "patient_responses_all_literacy",
                    }
                    assert (
                        a_zh["observation"]["patient_response"]
                        != a_en["observation"]["patient_response"]
                    )
        assert entry["generated_at"].startswith("2026-01-01T")
        facts = [f for node in entry["dep_graph"]["nodes"].values() for f in node["facts"]]
        assert not any(f.rstrip().endswith(tuple("0123456789")) and f.endswith(".") for f in facts)
