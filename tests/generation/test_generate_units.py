"""Unit tests of the generation agents' parsing and rule checks (no model calls)."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tomllib
from pathlib import Path

import fixtures_builder as fb
import pytest

from generation.builder.arcs import CR, DG, IL, WU
from generation.pipeline.answer import check_format, evidence, lab_values
from generation.pipeline.gates import plan_rule_problems
from generation.pipeline.llm import AgentOutputError, parse_object
from generation.pipeline.planner import PlanTurn, parse_plan
from generation.pipeline.questions import choose_subtype, settle
from generation.pipeline.rubric import validate_check
from generation.pipeline.tool_planner import Action

ROOT = Path(__file__).resolve().parents[2]


def turn(
    task_type: str = IL, source: str = "ehr", entities: tuple[str, ...] = ("Creatinine",)
) -> PlanTurn:
    return PlanTurn(task_type, "topic", "", source, entities)


def obs(sid: int = 7) -> Action:
    return Action("Observation.search", {"subject_id": sid, "code": "Creatinine"})


def test_parse_object_is_strict() -> None:
    assert parse_object('```json\n{"a": 1}\n```', "k") == {"a": 1}
    with pytest.raises(AgentOutputError, match="not JSON"):
        parse_object('Sure! {"a": 1}', "k")
    with pytest.raises(AgentOutputError, match="object"):
        parse_object("[1]", "k")


def test_gate1_rules() -> None:
    assert plan_rule_problems(turn(IL), [obs()], 7) == []
    assert "exactly 1" in plan_rule_problems(turn(IL), [obs(), obs()], 7)[0]
    assert ">= 2" in plan_rule_problems(turn(DG), [obs()], 7)[0]
    assert plan_rule_problems(turn(CR), [], 7)
    assert any("patient tool" in p for p in plan_rule_problems(turn(CR, "mixed"), [obs()], 7))
    assert any(
        "not offered" in p
        for p in plan_rule_problems(turn(IL), [Action("Flag.create", {"subject_id": 7})], 7)
    )
    assert any(
        "subject_id missing" in p
        for p in plan_rule_problems(turn(IL), [Action("Observation.search", {})], 7)
    )
    assert any("not the session" in p for p in plan_rule_problems(turn(IL), [obs(8)], 7))
    assert any("write tool" in p for p in plan_rule_problems(turn(WU, "write"), [], 7))


def test_plan_rules() -> None:
    rows = [{"topic": "x", "tool_source": "ehr", "entities": []} for _ in range(3)]
    ok = {"clinical_situation": "s", "turns": [*rows, {"topic": "w", "tool_source": "write"}]}
    arc = 2  # IL IL IL WU
    assert parse_plan(ok, arc, False).turns[3].source == "write"
    bad = {
        "clinical_situation": "s",
        "turns": [
            *rows[:2],
            {"topic": "x", "tool_source": "patient"},
            {"topic": "w", "tool_source": "write"},
        ],
    }
    with pytest.raises(AgentOutputError, match="no patient model"):
        parse_plan(bad, arc, False)
    two = {
        "clinical_situation": "s",
        "turns": [
            rows[0],
            {"topic": "x", "tool_source": "mixed"},
            {"topic": "x", "tool_source": "patient"},
            {"topic": "w", "tool_source": "write"},
        ],
    }
    with pytest.raises(AgentOutputError, match="at most one"):
        parse_plan(two, arc, True)


def test_subtypes_and_drift_fallback() -> None:
    rng = random.Random(0)
    assert choose_subtype(0, IL, {"x"}, {}, rng) is None
    assert choose_subtype(3, WU, {"x"}, {}, rng) is None
    assert choose_subtype(2, IL, {"x"}, {"NA": 0, "PE": 0, "AE": 0}, rng) in ("NA", "PE")
    assert choose_subtype(1, CR, set(), {}, rng) == "PE"  # no antecedent, AE needs two turns
    t = turn(CR, entities=("Potassium",))
    kept = settle("Is the potassium worrying?", "Is it worrying?", "NA", t)
    assert (kept.implicit, kept.subtype, kept.fallback) == ("Is it worrying?", "NA", None)
    drift = settle("Is the potassium worrying?", "How was the weekend?", "NA", t)
    assert (drift.implicit, drift.subtype, drift.fallback) == ("Potassium?", "PE", "pe_fragment")
    none = settle("Anything else?", "Weekend plans?", "NA", turn(CR, entities=("Potassium",)))
    assert (none.implicit, none.subtype, none.fallback) == ("Anything else?", None, "explicit")
    same = settle("Potassium?", "potassium?", "PE", t)
    assert same.subtype is None


def test_rubric_checks_are_grounded_and_decimal_safe() -> None:
    bundle = {
        "resourceType": "Bundle",
        "entry": [
            {
                "resource": {
                    "resourceType": "Observation",
                    "code": {"text": "Creatinine"},
                    "valueQuantity": {"value": 1.40, "unit": "mg/dL"},
                }
            }
        ],
    }
    ev = [{"values": lab_values(bundle)}]
    assert ev[0]["values"][0]["value"] == "1.4"
    ok = validate_check(
        {"kind": "value", "label": "Creatinine", "value": "1.40", "unit": "mg/dL"}, ev, [], "i"
    )
    assert ok["value"] == 1.4
    with pytest.raises(AgentOutputError, match="not in the tool results"):
        validate_check({"kind": "value", "label": "Creatinine", "value": 1.41}, ev, [], "i")
    write = Action("ServiceRequest.create", {"subject_id": 1, "service_type": "BMP"})
    assert validate_check({"kind": "write_call", "tool": "ServiceRequest.create"}, ev, [write], "i")
    with pytest.raises(AgentOutputError, match="not an argument"):
        validate_check(
            {
                "kind": "write_arg",
                "tool": "ServiceRequest.create",
                "field": "dose",
                "accepted": ["5 mg"],
            },
            ev,
            [write],
            "i",
        )
    with pytest.raises(AgentOutputError, match="not a write call"):
        validate_check({"kind": "write_call", "tool": "Flag.create"}, ev, [write], "i")


def test_answer_format_counts_sentences_without_breaking_decimals() -> None:
    check_format("Creatinine 1.4 mg/dL is high. It rose from 1.1 mg/dL.", CR)
    with pytest.raises(AgentOutputError):
        check_format("One. Two. Three.", CR)
    with pytest.raises(AgentOutputError):
        check_format("a\nb\nc", IL)


def test_generate_config_composes_and_requires_a_generator() -> None:
    from hydra import compose, initialize_config_dir

    from generation.cli import role_specs
    from physassist.cli.config import ConfigError, conf_dir, resolve

    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose("generate", overrides=["roles.checker=openai/gpt-5.4-mini"])
    with pytest.raises(ConfigError, match="generator.name is required"):
        resolve(cfg)
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = compose(
            "generate", overrides=["generator.name=mockllm/model", "roles.checker=openai/x"]
        )
    config = resolve(cfg)
    generator, roles = role_specs(config)
    assert generator.name == "mockllm/model" and set(roles) == {"checker"}
    assert config["attempts"] == 3 and config["tracking"]["experiment"] == "physassist-generate"
    with pytest.raises(ConfigError, match="roles.judge"):
        role_specs({**config, "roles": {"judge": "x/y"}})


def test_invalid_sessions_leave_no_output(tmp_path) -> None:
    from generation.run import write_output
    from physassist.data import SessionFormatError

    out = tmp_path / "out"
    with pytest.raises(SessionFormatError):
        write_output(
            [{"id": "broken", "clinical_scenario": "med_safety"}], {}, out, overwrite=False
        )
    assert not out.exists()


def test_unknown_store_or_scenario_is_a_config_error(tmp_path) -> None:
    from generation.cli import run_generation
    from physassist.cli.config import ConfigError

    config = {
        "store": str(tmp_path / "nowhere"),
        "scenarios": None,
        "tiers": None,
        "sessions_per_slot": 1,
        "seed": 0,
        "attempts": 3,
        "patient_limit": 2,
        "output_dir": str(tmp_path / "o"),
        "generator": {"name": "mockllm/model"},
        "roles": {},
    }
    with pytest.raises(ConfigError, match="nowhere"):
        run_generation(config)
    with pytest.raises(ConfigError, match="unknown scenario/tier surgery"):
        run_generation({**config, "store": "sample", "scenarios": ["surgery"]})
    with pytest.raises(ConfigError, match=r"^inspect.max_samples=0 must be a positive integer"):
        run_generation(
            {**config, "store": "sample", "inspect": {"max_samples": 0}}
        )  # Inspect would wait forever


def test_console_script_names_the_missing_generator(tmp_path) -> None:
    """The ``physassist-generate`` target pyproject declares (an installed wrapper can predate
    it until the project is reinstalled), run as the console script runs it."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
    module, function = scripts["physassist-generate"].split(":")
    code = (
        f"import sys; sys.argv[0] = 'physassist-generate'; from {module} import {function}; "
        f"{function}()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "tracking=none", f"output_dir={tmp_path / 'o'}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HYDRA_FULL_ERROR": "0"},
    )
    assert done.returncode == 2, done.stderr
    assert "generator.name is required" in done.stderr
    assert not (tmp_path / "o").exists()


def test_evidence_carries_the_record_at_the_cutoff() -> None:
    """The agents see the lab concept's values only (no blood-gas glucose beside the
    chemistry one), its latest and peak, and that a stopped drug has no current order."""

    def obs(item: int, value: float, when: str) -> dict:
        return {
            "resourceType": "Observation",
            "valueQuantity": {"value": value, "unit": "mg/dL"},
            "code": {"coding": [{"code": str(item)}], "text": "Glucose"},
            "effectiveDateTime": when,
        }

    record = {
        "admissions": [{"subject_id": 1, "hadm_id": 2, "dischtime": "2150-03-06 12:00:00"}],
        "d_labitems": [
            {"itemid": 50931, "label": "Glucose", "fluid": "Blood", "category": "Chemistry"},
            {"itemid": 50809, "label": "Glucose", "fluid": "Blood", "category": "Blood Gas"},
        ],
        "labevents": fb.labevents(
            (50931, "2150-03-02 06:00:00", 210.0),
            (50931, "2150-03-05 06:00:00", 114.0),
            (50809, "2150-03-05 09:00:00", 173.0),
        ),
        "prescriptions": [
            {
                "subject_id": 1,
                "hadm_id": 2,
                "drug": "Warfarin",
                "dose_val_rx": "2",
                "dose_unit_rx": "mg",
                "starttime": "2150-03-01 16:00:00",
                "stoptime": "2150-03-03 13:00:00",
            }
        ],
    }
    tl = fb.timeline_of(record)
    glucose = {
        "resourceType": "Bundle",
        "entry": [
            {"resource": r}
            for r in (
                obs(50809, 173.0, "2150-03-05T09:00:00"),
                obs(50931, 114.0, "2150-03-05T06:00:00"),
            )
        ],
    }
    ev = evidence(
        [
            Action("Observation.search", {"subject_id": 1, "code": "Glucose"}),
            Action("MedicationRequest.search", {"subject_id": 1, "medication": "warfarin"}),
        ],
        [glucose, {"resourceType": "Bundle", "entry": []}],
        tl,
    )
    assert [v["value"] for v in ev[0]["values"]] == ["114.0"]
    assert (
        ev[0]["record"]["latest"]["value"] == "114.0"
        and ev[0]["record"]["peak"]["value"] == "210.0"
    )
    assert ev[1]["record"]["current_scheduled_order"] is None
