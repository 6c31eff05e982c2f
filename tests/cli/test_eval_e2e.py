"""End to end on the committed sample: registration, option validation, and the sanity
ordering of the offline agents under the rules judge (oracle >= 95 with no unscored turn,
baseline clearly lower, empty answers near 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import fixtures_eval as fe
import pytest
from inspect_ai import eval
from inspect_ai._util.registry import registry_lookup
from inspect_ai.log import EvalLog
from inspect_ai.model import get_model

import physassist._registry  # noqa: F401  (what the entry point loads)
from physassist.agents.baseline import BaselineAgent
from physassist.agents.provider import PhysAssistAgents
from tasks.physassistbench import build_dataset, physassistbench

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "sessions"

pytestmark = pytest.mark.skipif(
    not any(SAMPLE.glob("*.jsonl")), reason=f"sample sessions not found at {SAMPLE}"
)


def metrics(log: EvalLog) -> dict[str, float]:
    assert log.status == "success", log.error
    assert log.results is not None
    return {k: m.value for s in log.results.scores for k, m in s.metrics.items()}


def run(task: Any, model: Any, log_dir: Path, **kwargs: Any) -> EvalLog:
    return eval(
        task,
        model=model,
        log_dir=str(log_dir),
        display="none",
        log_realtime=False,
        fail_on_error=True,
        **kwargs,
    )[0]


def one_per_scenario() -> list[str]:
    task = physassistbench()
    first: dict[str, str] = {}
    for sample in task.dataset:
        first.setdefault(sample.metadata["scenario"], str(sample.id))
    return sorted(first.values())


def test_registered_under_the_package_namespace() -> None:
    assert registry_lookup("task", "physassist/physassistbench") is not None
    assert isinstance(get_model("physassist/oracle").api, PhysAssistAgents)
    assert isinstance(get_model("physassist/baseline").api.agent, BaselineAgent)
    with pytest.raises(ValueError, match="physassist/oracle, physassist/baseline"):
        get_model("physassist/clever", memoize=False)


def test_menu_off_from_the_command_line_means_the_menu_option() -> None:
    """``inspect eval ... -T menu=off``: Inspect reads the value as YAML 1.1, where off is False."""
    from inspect_ai._util.config import parse_cli_args

    for raw, spelled in (("menu=off", "off"), ("menu=on", "on"), ("menu=gold", "gold")):
        args = parse_cli_args([raw])
        assert isinstance(args["menu"], bool) == (spelled != "gold")
        assert physassistbench(**args).metadata["physassist"]["menu"] == spelled
    with pytest.raises(ValueError, match="nudge=.off. is not valid"):
        physassistbench(nudge="off")


def test_invalid_options_name_the_valid_ones() -> None:
    with pytest.raises(
        ValueError, match=r"menu='sometimes' is not valid; valid options: on, off, scenario, gold"
    ):
        physassistbench(menu="sometimes")
    with pytest.raises(ValueError, match="judge_context"):
        physassistbench(judge_context="vibes")
    with pytest.raises(ValueError, match=r"tiers: 7 is not valid; valid options: 1, 2, 3"):
        physassistbench(tiers="7")
    with pytest.raises(ValueError, match="no sessions"):
        build_dataset("sample", language="en", query="implicit", settings={}, tiers=[7])


def test_task_file_and_sample_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # Inspect resolves task files relative to the working directory
    log = run(
        "tasks/physassistbench.py",
        "physassist/oracle",
        tmp_path,
        limit=1,
        task_args={"menu": "gold", "terminal": "submit"},
    )
    sample = log.samples[0]
    meta = sample.metadata
    assert {
        "session",
        "language",
        "query",
        "scenario",
        "tier",
        "task_types",
        "subtypes",
        "tool_sources",
        "settings",
    } <= set(meta)
    assert meta["settings"]["menu"] == "gold" and meta["settings"]["terminal"] == "submit"
    assert log.eval.task_args["menu"] == "gold"
    assert [t.end for t in fe.turns_of(sample)] == ["answered"] * 4
    assert sample.scores["physassist_scorer"].value >= 0.95


def test_oracle_scores_full_marks_on_the_sample(tmp_path: Path) -> None:
    log = run("physassist/physassistbench", "physassist/oracle", tmp_path)
    m = metrics(log)
    assert {"mrs", "mrs_ci_low", "pass_turn_0.60_ci_high", "n_turns"} <= set(m) and len(
        m
    ) < 30  # the headline
    sample = log.samples[0]  # Inspect View's TARGET: each turn's gold answer
    assert (
        isinstance(sample.target, list)
        and len(sample.target) == 4
        and sample.target[0].startswith("T0: ")
    )
    assert m["mrs"] >= 95.0
    assert m["unscored_turns"] == 0
    assert m["n_sessions"] == len(log.samples)
    for sample in log.samples:
        turns = fe.turns_of(sample)
        assert len(turns) == 4 and all(t.end == "answered" for t in turns), sample.id
        assert all(t.calls for t in turns), sample.id  # gold calls really executed


def test_baseline_clearly_lower_and_empty_answers_near_zero(tmp_path: Path) -> None:
    ids = one_per_scenario()
    task = physassistbench()
    oracle = metrics(run(task, "physassist/oracle", tmp_path, sample_id=ids))
    baseline = metrics(run(task, "physassist/baseline", tmp_path, sample_id=ids))
    empty = metrics(run(task, fe.Script([], default="").model(), tmp_path, sample_id=ids))
    assert oracle["mrs"] >= 95.0
    assert baseline["mrs"] <= oracle["mrs"] - 30.0
    assert empty["mrs"] <= 10.0
    assert baseline["unscored_turns"] == 0 and empty["unscored_turns"] == 0
