"""System faults are never scores: a turn that a provider outage (or any fault) ended is
unscored with its reason, counted, flagged in MLflow, and changes the exit status; a model that
answered badly is still scored."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
from fixtures_http import ScriptedServer, agent_policy
from fixtures_scoring import gold_records, make_session, sample_metadata, scripted, verdict
from fixtures_tracking import cli, search_runs, store_uri
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import get_model
from inspect_ai.solver import Generate, TaskState, solver
from tenacity import RetryError, Retrying, stop_after_attempt

from physassist.agents.oracle import OracleAgent
from physassist.faults import EXIT_FAULTS, FAULT_TAG, describe
from physassist.metrics import summarize
from physassist.results import turn_table
from scorers import physassist_scorer

OUTAGE = "APIConnectionError: Connection error."


@solver
def replay(records: list[dict]):
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.store.set("physassist:turns", copy.deepcopy(records))
        return state

    return solve


def _records() -> tuple[dict, list[dict]]:
    session = make_session("s1")
    session["rubric_checks"][2][4] = {"kind": "concept", "any": {"en": ["dose"]}}  # all decidable
    records = gold_records(session)
    records[1].update(answer="", end="error", calls=[], error=OUTAGE)  # the provider was down
    records[2].update(answer="")  # the model answered, with nothing: a score of 0
    return session, records


def _log(tmp_path: Path, scorer, **kwargs):
    session, records = _records()
    task = Task(
        dataset=[Sample(id="s1", input="opening", metadata=sample_metadata(session))],
        solver=replay(records),
        scorer=scorer,
    )
    [log] = eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none", **kwargs)
    assert log.status == "success", log.error
    return log


def test_fault_turn_is_unscored_with_its_reason_and_an_empty_answer_is_scored(tmp_path):
    df = turn_table(_log(tmp_path, physassist_scorer(judge="rules"))).set_index("turn")
    assert df.loc[1, "status"] == "error" and df.loc[1, "error"] == OUTAGE
    assert df.loc[1, "score"] != df.loc[1, "score"]  # NaN: unscored, never 0
    assert (
        df.loc[2, "status"] == "scored"
        and df.loc[2, "score"] < 1.0
        and df.loc[2, "end"] == "answered"
    )
    summary = summarize(df.reset_index())
    assert summary["error_turns"] == 1 and summary["unscored_turns.error"] == 1
    assert summary["unscored_turns"] >= 1 and summary["end.error"] == 1


def test_llm_judge_never_grades_a_fault_turn(tmp_path):
    asked: list[str] = []

    def grade(messages, tools, tool_choice, config):
        asked.append(messages[-1].text)
        n = int(re.search(r"## Rubric items \((\d+)\)", messages[-1].text).group(1))
        return scripted(verdict([True] * n))

    grader = get_model("mockllm/model", custom_outputs=grade, memoize=False)
    log = _log(tmp_path, physassist_scorer(judge="llm"), model_roles={"grader": grader})
    turns = log.samples[0].scores["physassist_scorer"].metadata["turns"]
    assert [t["status"] for t in turns] == ["scored", "error", "scored", "scored"]
    assert turns[1]["items"][0] == {"passed": None, "reason": f"system fault: {OUTAGE}"}
    assert len(asked) == 3  # the fault turn was not sent to the grader


def test_grader_outage_is_a_fault_and_a_bad_verdict_is_a_judge_failure(tmp_path):
    def down(*_):
        raise ConnectionError("grader endpoint refused the connection")

    grader = get_model("mockllm/model", custom_outputs=down, memoize=False)
    log = _log(
        tmp_path / "down",
        physassist_scorer(judge="llm", max_attempts=2),
        model_roles={"grader": grader},
    )
    turns = log.samples[0].scores["physassist_scorer"].metadata["turns"]
    assert {t["status"] for t in turns} == {"error"}
    assert turns[0]["error"].startswith("grader call failed: ConnectionError: grader endpoint")

    babble = get_model(
        "mockllm/model", custom_outputs=lambda *_: scripted("no json"), memoize=False
    )
    log = _log(
        tmp_path / "babble",
        physassist_scorer(judge="llm", max_attempts=2),
        model_roles={"grader": babble},
    )
    turns = log.samples[0].scores["physassist_scorer"].metadata["turns"]
    assert [t["status"] for t in turns] == ["failed", "error", "failed", "failed"]


def test_describe_names_the_root_cause_on_one_bounded_line():
    def attempt():
        raise ConnectionError("refused\n<html>" + "x" * 1000)

    with pytest.raises(RetryError) as wrapped:
        Retrying(stop=stop_after_attempt(2))(attempt)
    line = describe(wrapped.value)
    assert line.startswith("ConnectionError: refused <html>xxx") and len(line) == 500
    assert "\n" not in line
    assert describe(ExceptionGroup("g", [KeyError("k")])) == "KeyError: 'k'"


@pytest.mark.slow
def test_failing_model_calls_give_unscored_turns_a_failed_run_and_exit_4(tmp_path):
    """The whole command against a server that lists its models (the pre-flight passes) and
    answers every chat request with HTTP 500."""
    uri = store_uri(tmp_path)
    proc = _against_a_failing_server(tmp_path, uri, f"hydra.run.dir={tmp_path / 'out'}")
    assert proc.returncode == EXIT_FAULTS, proc.stderr[-3000:]
    assert "error_turns        4" in proc.stdout
    [line] = [ln for ln in proc.stderr.splitlines() if "system fault" in ln]
    assert "4 of 4 turns ended in a system fault and are unscored: 4x InternalServerError" in line
    [run] = search_runs(uri).to_dict("records")
    assert run["status"] == "FAILED" and run["metrics.error_turns"] == 4
    assert run["metrics.unscored_turns"] == 4 and run["metrics.scored_turns"] == 0
    assert run[f"tags.{FAULT_TAG}"].startswith("4 of 4 turns")
    assert Path(run["tags.physassist.inspect_log"]).is_file()


@pytest.mark.slow
def test_a_sweep_whose_jobs_met_system_faults_exits_4(tmp_path):
    """Sweep jobs run in other processes: their faults still reach the sweep's exit code."""
    uri = store_uri(tmp_path)
    proc = _against_a_failing_server(
        tmp_path, uri, "-m", "query=implicit,explicit", f"hydra.sweep.dir={tmp_path / 'multirun'}"
    )
    assert proc.returncode == EXIT_FAULTS, proc.stderr[-3000:]
    [line] = [ln for ln in proc.stderr.splitlines() if "system faults in" in ln]
    assert "system faults in 2 job(s) of the sweep" in line and "InternalServerError" in line
    runs = search_runs(uri)
    children = runs[runs["tags.mlflow.parentRunId"].notna()]
    assert len(children) == 2 and set(children["status"]) == {"FAILED"}
    assert set(runs[runs["tags.mlflow.parentRunId"].isna()]["status"]) == {"FAILED"}  # the parent


def _against_a_failing_server(tmp_path: Path, uri: str, *extra: str):
    """``physassist-eval`` with the assistant on a server whose chat requests all fail (500)."""
    with ScriptedServer(
        {"oracle": agent_policy(OracleAgent())}, faults=lambda n, m: "500"
    ) as server:
        return cli(
            [
                "physassist-eval",
                *extra,
                "model=openai_compatible",
                "model.name=oracle",
                f"model.base_url={server.base_url}",
                "+model.args.max_retries=0",  # the OpenAI SDK's own retries
                "inspect.limit=1",
                "inspect.max_retries=0",
                "inspect.display=none",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"tracking.uri={uri}",
            ],
            cwd=tmp_path,
            env={"OPENAI_COMPATIBLE_API_KEY": "EMPTY"},
        )
