"""The generation pipeline end to end with the scripted generator (offline): valid sessions,
each gate's rejection path, retry exhaustion, the topic-drift fallback, and the produced
sessions scored by the benchmark with the oracle and the rules judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures_tracking import store_uri
from inspect_ai import eval
from inspect_ai.model import get_model

from generation.cli import run_generation
from generation.run import collect
from generation.scripted import API  # registers the offline generator
from generation.task import generate
from physassist.data import load_sessions

ROOT = Path(__file__).resolve().parents[2]
COHORT = ROOT / "data" / "sample" / "cohort"
pytestmark = pytest.mark.skipif(
    not (COHORT / "phm").is_dir(), reason=f"sample cohort not found at {COHORT}"
)


def run_slot(
    log_dir: Path,
    *,
    scenario: str = "med_safety",
    tier: int = 1,
    attempts: int = 3,
    patient_limit: int = 2,
    **model_args: Any,
) -> dict[str, Any]:
    task = generate(
        scenarios=scenario, tiers=str(tier), attempts=attempts, patient_limit=patient_limit
    )
    log = eval(
        task,
        model=get_model(f"{API}/scripted", memoize=False, **model_args),
        display="none",
        log_dir=str(log_dir),
        log_realtime=False,
        fail_on_error=True,
    )[0]
    assert log.status == "success", log.error
    score = next(iter(log.samples[0].scores.values()))
    return {"log": log, "session": score.metadata["session"], "stats": score.metadata["stats"]}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("generate")
    config = {
        "store": "sample",
        "cache_dir": None,
        "scenarios": ["med_safety", "discharge_planning"],
        "tiers": [1, 2],
        "sessions_per_slot": 1,
        "seed": 3,
        "attempts": 3,
        "patient_limit": 3,
        "output_dir": str(base / "out"),
        "overwrite": False,
        "generator": {"name": f"{API}/scripted"},
        "roles": {},
        "inspect": {"log_dir": str(base / "logs"), "display": "none"},
        "tracking": {"enabled": False},
    }
    return {"manifest": run_generation(config), "out": base / "out", "config": config}


def test_pipeline_writes_valid_sessions_and_manifest(generated: dict[str, Any]) -> None:
    out, manifest = generated["out"], generated["manifest"]
    assert sorted(p.name for p in out.iterdir()) == [
        "discharge_planning.jsonl",
        "manifest.json",
        "med_safety.jsonl",
    ]
    loaded = load_sessions(out)  # strict
    assert len(loaded.sessions) == manifest["sessions"] == 4
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk["seed"] == 3 and on_disk["models"]["checker"] == f"{API}/scripted"
    assert set(on_disk["gates"]) == {"gate1_rules", "gate1_llm", "gate2", "gate3"}
    assert (
        on_disk["gates"]["gate3"]["checked"] == 16
        and on_disk["tokens"]["translator"]["calls"] == 16
    )
    for s in loaded.sessions:
        d = s.to_dict()
        assert d["difficulty_level"] in (1, 2)
        for t, subtype in enumerate(d["turn_subtypes"]):
            # a subtype only where the rewrite changed the question
            assert (subtype is None) == (d["tasks"][t] == d["tasks_explicit"][t]), (s.id, t)
        assert all(c is not None for turn in d["rubric_checks"] for c in turn)
        assert sum(src in ("patient", "mixed") for src in d["tool_sources"]) <= 1
        assert d["tasks_zh"][0].startswith("（译）")


def test_rerun_is_reproducible_and_refuses_to_overwrite(
    generated: dict[str, Any], tmp_path: Path
) -> None:
    from physassist.cli.config import ConfigError

    with pytest.raises(ConfigError, match="already holds sessions"):
        run_generation(generated["config"])
    tracking = {
        "enabled": True,
        "uri": store_uri(tmp_path),
        "experiment": "gen-test",
        "retries": 2,
        "log_eval": False,
    }
    again = {
        **generated["config"],
        "output_dir": str(tmp_path / "again"),
        "scenarios": ["med_safety"],
        "tracking": tracking,
    }
    manifest = run_generation(again)
    assert manifest["tracking_error"] is None
    name = "med_safety.jsonl"
    assert (tmp_path / "again" / name).read_text() == (generated["out"] / name).read_text()
    from physassist.tracking.runs import Tracker

    tracker = Tracker(tracking["uri"], "gen-test")
    (run,) = tracker.find_runs({"physassist.kind": "generate"})
    m = run.data.metrics
    assert m["sessions"] == 2 and m["produced.med_safety.L1"] == 1
    assert m["gate.gate3.failure_rate"] == 0.0 and m["tokens.total"] > 0
    assert run.data.params["generator.name"] == f"{API}/scripted"


def test_generated_sessions_score_full_marks_with_the_oracle(
    generated: dict[str, Any], tmp_path: Path
) -> None:
    from tasks.physassistbench import physassistbench

    out = str(generated["out"])
    log = eval(
        physassistbench(dataset=out, ehr_source="sample", judge="rules"),
        model=get_model("physassist/oracle", dataset=out),
        display="none",
        log_dir=str(tmp_path),
        log_realtime=False,
    )[0]
    assert log.status == "success", log.error
    m = {k: v.value for s in log.results.scores for k, v in s.metrics.items()}
    assert m["mrs"] >= 95 and m["unscored_turns"] == 0 and m["n_sessions"] == 4


@pytest.mark.parametrize("gate", ["gate1_rules", "gate1_llm", "gate2", "gate3"])
def test_each_gate_rejects_then_the_retry_passes(gate: str, tmp_path: Path) -> None:
    mode = {"gate2": "gate2"}.get(gate, gate)
    r = run_slot(tmp_path, fail=mode, fail_times=1)
    stats = r["stats"]
    if gate == "gate2":  # the planner put an empty lookup in the plan: the turn is retried
        assert stats["failed"]["gate2"] >= 1
    else:
        assert stats["failed"][gate] == 1
        assert stats["turn_attempts"][0] == 2
    assert r["session"] is not None
    assert stats["stage_failures"][gate] >= 1


def test_checker_error_is_a_failure_not_a_pass(tmp_path: Path) -> None:
    r = run_slot(tmp_path, fail="gate3_error", fail_times=1)
    assert r["stats"]["failed"]["gate3"] == 1 and "checker" in " ".join(r["stats"]["reasons"])


def test_retry_exhaustion_skips_the_slot_and_counts_it(tmp_path: Path) -> None:
    r = run_slot(tmp_path, fail="gate3", attempts=2, patient_limit=2)
    assert r["session"] is None
    assert r["stats"]["patients_tried"] == 2
    assert r["stats"]["failed"]["gate3"] == 4  # 2 attempts x 2 patients, on turn 0
    sessions, stats = collect(r["log"])
    assert sessions == [] and stats["slots_skipped"] == 1
    assert stats["gates"]["gate3"]["failure_rate"] == 1.0


def test_errored_slot_is_counted_not_lost(tmp_path: Path) -> None:
    task = generate(scenarios="med_safety", tiers="1", patient_limit=1)
    log = eval(
        task,
        model=get_model(f"{API}/scripted", memoize=False, fail="crash"),
        display="none",
        log_dir=str(tmp_path),
        log_realtime=False,
        fail_on_error=False,
    )[0]
    sessions, stats = collect(log)
    assert sessions == [] and stats["slots_errored"] == stats["slots_skipped"] == 1
    assert "scripted provider outage" in stats["errors"][0]


def test_rubric_value_not_in_results_is_rejected(tmp_path: Path) -> None:
    r = run_slot(tmp_path, fail="rubric", fail_times=1)
    assert r["stats"]["stage_failures"]["rubric"] == 1 and r["session"] is not None


def test_invalid_plan_is_retried(tmp_path: Path) -> None:
    r = run_slot(tmp_path, fail="planner", fail_times=1)
    assert r["stats"]["stage_failures"]["planner"] == 1 and r["session"] is not None


def test_topic_drift_falls_back(tmp_path: Path) -> None:
    r = run_slot(tmp_path, fail="drift")
    s = r["session"]
    assert r["stats"]["fallbacks"]
    for t in range(1, 4):
        q, explicit, subtype = s["tasks"][t], s["tasks_explicit"][t], s["turn_subtypes"][t]
        assert q != "How was the weekend?"
        assert (subtype, q == explicit) in (("PE", False), (None, True)), (q, explicit, subtype)
