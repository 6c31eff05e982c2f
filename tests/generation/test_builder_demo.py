"""The builder on real MIMIC-IV tables (the open demo): valid, rule-abiding, self-consistent."""

from __future__ import annotations

from pathlib import Path

import fixtures_builder as fb
import fixtures_store as fx
import pytest

from generation.builder import BuildReport, build_sessions
from generation.builder.prefilter import qualify
from physassist.data.loader import load_sessions

store_cache = fx.store_cache
demo_store = fx.demo_store


@pytest.fixture(scope="module")
def demo_build(demo_store, tmp_path_factory: pytest.TempPathFactory) -> tuple[BuildReport, Path]:
    out = tmp_path_factory.mktemp("demo_sessions")
    return build_sessions(demo_store, out, sessions_per_slot=1, seed=0), out


def test_prefilter_counts_are_nested_where_rules_nest(demo_store) -> None:
    q = qualify(demo_store.cursor())
    for scenario in ("med_safety", "treatment_response"):
        l1, l2, l3 = ({c.subject_id for c in q[(scenario, t)]} for t in (1, 2, 3))
        assert l3 <= l2 <= l1, scenario  # these scenarios' tiers only add conditions
    # The demo has no note module: discharge planning needs a discharge note.
    assert all(not q[("discharge_planning", t)] for t in (1, 2, 3))
    assert len(q[("med_safety", 1)]) > 50


def test_demo_sessions_load_strictly_in_both_languages(demo_build) -> None:
    report, out = demo_build
    assert report.n_sessions >= 9
    for scenario in ("diagnostic_workup", "med_safety", "treatment_response"):
        for tier in (1, 2, 3):
            assert report.built[scenario][tier] == 1, (scenario, tier, report.summary())
    for lang in ("en", "zh"):
        loaded = load_sessions(out, language=lang)
        assert len(loaded.sessions) == report.n_sessions
        assert not loaded.skipped


def test_demo_sessions_obey_rules_and_pass_their_own_checks(demo_build) -> None:
    _, out = demo_build
    entries = fb.read_entries(out)
    for entry in entries:
        assert fb.rule_problems(entry) == [], entry["id"]
        assert fb.gold_check_failures(entry) == []
        for turn in entry["answer_list"]:
            for action in turn[:-1]:
                assert action["observation"].get("resourceType") != "OperationOutcome"


def test_slot_gets_only_its_tier_patients(demo_store, demo_build) -> None:
    _, out = demo_build
    q = qualify(demo_store.cursor())
    for entry in fb.read_entries(out):
        pool = {c.subject_id for c in q[(entry["clinical_scenario"], entry["difficulty_level"])]}
        assert entry["subject_id"] in pool, entry["id"]
