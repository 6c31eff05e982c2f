"""``judge.repeats``: each turn judged k times; its score is their mean, their spread the judge's
noise; a judging that fails leaves the turn unscored (a repeat never turns a fault into a score).

The source is the offline baseline on one sample session (rubrics of 3, 3, 3, 4 items); the
graders are scripted ``mockllm`` models whose verdict changes from call to call.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
    get_model,
)

from physassist.experiment import JudgeSettings
from physassist.metrics import summarize
from physassist.noise import replicates, split
from physassist.results import turn_table
from scorers.rescoring import judge_label, judge_spec, rescore_log

USAGE = ModelUsage(input_tokens=50, output_tokens=20, total_tokens=70)


@pytest.fixture(scope="module")
def source_log(tmp_path_factory) -> Path:
    from physassist.agents import provider  # noqa: F401  (registers physassist/baseline)
    from tasks.physassistbench import physassistbench

    task = physassistbench(scenarios=["treatment_response"], tiers=[1], judge_repeats=3)
    [log] = inspect_eval(
        task,
        model="physassist/baseline",
        limit=1,
        log_dir=str(tmp_path_factory.mktemp("logs")),
        display="none",
    )
    assert log.status == "success"
    return Path(log.location)


def _reply(text: str) -> ModelOutput:
    message = ChatMessageAssistant(content=text)
    return ModelOutput(
        model="mockllm/model",
        choices=[ChatCompletionChoice(message=message, stop_reason="stop")],
        usage=USAGE,
    )


def changing_grader(garbage_after_first: str | None = None):
    """Call k passes the first (k mod 3 + 1) thirds of each rubric's items (of 3 items: 1, 2,
    3), so the turn's score differs between calls at any rubric size.
    With ``garbage_after_first``, every call on that question after the first answers prose."""
    calls = itertools.count()
    seen: dict[str, int] = {}

    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        prompt = messages[1].text
        n = int(re.search(r"## Rubric items \((\d+)\)", prompt).group(1))
        if garbage_after_first and f"## Physician's question\n{garbage_after_first}\n" in prompt:
            seen[garbage_after_first] = seen.get(garbage_after_first, 0) + 1
            if seen[garbage_after_first] > 1:
                return _reply("Looks fine to me.")
        k = next(calls) % 3
        return _reply(
            json.dumps(
                {
                    "items": [
                        {"id": i, "pass": 3 * i <= (k + 1) * n, "reason": "scripted"}
                        for i in range(1, n + 1)
                    ]
                }
            )
        )

    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


def test_rules_judged_three_times_agree_and_measure_a_judge_without_noise(source_log) -> None:
    turns = turn_table(source_log)
    assert [len(s) for s in turns["judge_scores"]] == [3, 3, 3, 3]
    assert all(
        len(set(s)) == 1 and s[0] == score
        for s, score in zip(turns["judge_scores"], turns["score"], strict=True)
    )
    judge = {c.axis: c for c in split(replicates(turns, [0.6]), n_boot=20).components}["judge"]
    assert judge.measured and judge.variance == 0.0 and judge.repeats == 3


def test_an_llm_judge_repeated_three_times_scores_the_mean_of_its_judgings(source_log) -> None:
    judge = JudgeSettings("llm", "gold_answer", model="mockllm/model", repeats=3)
    log = rescore_log(
        read_eval_log(str(source_log)), judge, [0.6], roles={"grader": changing_grader()}
    )
    turns = turn_table(log)
    for scores, score, status in zip(
        turns["judge_scores"], turns["score"], turns["status"], strict=True
    ):
        assert status == "scored" and len(scores) == 3 and len(set(scores)) > 1
        assert score == pytest.approx(sum(scores) / 3)
    parts = {c.axis: c for c in split(replicates(turns, [0.6]), n_boot=20).components}
    assert parts["judge"].variance > 0
    assert judge_spec(judge)["repeats"] == 3 and judge_label(judge).endswith("x3")
    assert "repeats" not in judge_spec(
        JudgeSettings("llm", "gold_answer", model="m")
    )  # one judging: the key as before


def test_one_failed_judging_leaves_the_turn_unscored_and_counted(source_log) -> None:
    log = read_eval_log(str(source_log))
    question = turn_table(log)["question"][1]
    judge = JudgeSettings("llm", "gold_answer", model="mockllm/model", repeats=3)
    turns = turn_table(
        rescore_log(
            log, judge, [0.6], roles={"grader": changing_grader(garbage_after_first=question)}
        )
    )
    assert turns["status"].tolist() == ["scored", "failed", "scored", "scored"]
    assert turns["judge_scores"][1] is None and turns["error_kind"][1] == "unparseable"
    m = summarize(turns)
    assert m["unscored_turns.failed"] == 1 and m["judge_unparseable"] == 1
