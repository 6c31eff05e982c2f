"""physassist-eval against a real OpenAI-compatible HTTP server on 127.0.0.1 (``fixtures_http``),
through Inspect's own generic OpenAI-API provider and the ``openai`` client: chat completions
only, scores like the in-process oracle, retried rate limits and errors, faults never scored,
the grader role through the same server, usage from the server in the records and MLflow."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fixtures_http import (
    PATIENT_ANSWER,
    ScriptedServer,
    agent_policy,
    grader_policy,
    patient_policy,
)
from fixtures_tracking import cli, compose, search_runs, store_uri
from inspect_ai.log import read_eval_log

import physassist.cli.eval as ev
from physassist.agents._common import sessions_by_key
from physassist.agents.oracle import OracleAgent
from physassist.results import turn_table
from physassist.turn_records import stored_turns

KEY = {"OPENAI_COMPATIBLE_API_KEY": "EMPTY"}


@pytest.fixture(scope="module", autouse=True)
def warm_policy() -> None:
    sessions_by_key("sample")  # load once, so no first request waits on it


@pytest.fixture
def key(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", "EMPTY")


def served_model(server: ScriptedServer, limit: int, *extra: str) -> list[str]:
    return [
        "model=openai_compatible",
        "model.name=oracle",
        f"model.base_url={server.base_url}",
        f"inspect.limit={limit}",
        "inspect.display=none",
        *extra,
    ]


def run(tmp_path: Path, overrides: list[str]) -> ev.Outcome:
    cfg = compose([*overrides, "tracking=none", f"inspect.log_dir={tmp_path / 'logs'}"])
    return ev.run_experiment(cfg, ev.JobContext())


def prices_dir(tmp_path: Path) -> Path:
    """A price table as a user writes one: ``prices=test`` from ``--config-dir``."""
    (tmp_path / "conf" / "prices").mkdir(parents=True)
    (tmp_path / "conf" / "prices" / "test.yaml").write_text(
        "models:\n  openai-api/compatible/oracle: {input: 0.5, output: 2.0}\n"
    )
    return tmp_path / "conf"


def scores(log_path: str) -> dict[tuple[str, int], float]:
    df = turn_table(log_path)
    return {(r.session_id, int(r.turn)): float(r.score) for r in df.itertuples()}


@pytest.mark.slow
def test_http_run_scores_like_the_in_process_oracle_and_reports_server_usage(tmp_path, key) -> None:
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}) as server:
        uri = store_uri(tmp_path)
        proc = cli(
            [
                "physassist-eval",
                "--config-dir",
                str(prices_dir(tmp_path)),
                *served_model(server, 2),
                f"tracking.uri={uri}",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"hydra.run.dir={tmp_path / 'out'}",
                "prices=test",
            ],
            cwd=tmp_path,
            env=KEY,
        )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert server.other_paths == []  # chat completions only: no /v1/responses
    assert {r.model for r in server.log} == {"oracle"} and {r.status for r in server.log} == {200}
    offered = {name for r in server.log for name in r.tools}
    assert {"Observation__search", "prepare_to_answer"} <= offered  # API-safe names
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name) for name in offered)
    [mlrun] = search_runs(uri).to_dict("records")
    log_path = mlrun["tags.physassist.inspect_log"]
    reference = run(tmp_path / "oracle", ["model=oracle", "inspect.limit=2", "inspect.display=none"])
    assert len(scores(log_path)) == 8 and scores(log_path) == scores(reference.log_path)
    assert mlrun["metrics.mrs"] == round(reference.metrics["mrs"], 1)  # MLflow keeps 0.1 point
    # the usage the server reported reaches the per-turn records and MLflow
    turns = turn_table(log_path)
    sent_in = sum(r.usage[0] for r in server.log)
    sent_out = sum(r.usage[1] for r in server.log)
    assert (turns["tokens_in"].sum(), turns["tokens_out"].sum()) == (sent_in, sent_out)
    assert (mlrun["metrics.tokens/tokens_input"], mlrun["metrics.tokens/tokens_output"]) == (sent_in, sent_out)
    assert (mlrun["metrics.tokens/tokens.assistant.input"], mlrun["metrics.tokens/tokens.assistant.output"]) == (sent_in, sent_out)
    assert mlrun["metrics.cost_usd"] == pytest.approx((sent_in * 0.5 + sent_out * 2.0) / 1e6, abs=1e-6)


@pytest.mark.slow
def test_rate_limits_errors_and_slow_answers_are_retried_and_model_mistakes_are_scored(tmp_path, key) -> None:
    faults = {1: "429", 2: "500", 4: "slow", 6: "malformed_args", 10: "unknown_tool", 12: "429"}
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, faults=faults, retry_after="1", slow_seconds=6) as server:
        out = run(tmp_path, served_model(server, 2, "inspect.attempt_timeout=2"))
    assert out.status == "FINISHED" and out.faults is None, out.faults
    assert out.metrics["error_turns"] == 0 and out.metrics["unscored_turns"] == 0
    reference = run(tmp_path / "oracle", ["model=oracle", "inspect.limit=2", "inspect.display=none"])
    assert scores(out.log_path) == scores(reference.log_path)  # retried: the scores are unchanged
    assert [r.status for r in server.log if r.fault in ("429", "500")] == [429, 500, 429]
    samples = read_eval_log(out.log_path).samples
    answered = sum(1 for sample in samples for e in sample.events if e.event == "model" and not e.error)
    assert len(server.log) >= answered + 4  # 429, 500, slow, 429: each cost a request, then retried
    # a malformed or unknown call is the model's mistake: answered with an OperationOutcome
    calls = [c for sample in samples for record in stored_turns(sample.store) for c in record.calls]
    outcomes = [c for c in calls if c.raw.get("resourceType") == "OperationOutcome"]
    texts = " ".join(c.raw_json for c in outcomes)
    assert len(outcomes) == 2 and "Lab__search_everything" in texts and "Could not parse" in texts


@pytest.mark.slow
def test_server_errors_after_retries_and_empty_choices_are_unscored_faults(tmp_path, key) -> None:
    always = ScriptedServer({"oracle": agent_policy(OracleAgent())}, faults=lambda n, m: "500")
    with always as server:
        out = run(tmp_path / "500", served_model(server, 1, "inspect.max_retries=1", "+model.args.max_retries=0"))
    assert out.metrics["error_turns"] == 4 and out.metrics["scored_turns"] == 0
    # (past 20 s of failures, on a loaded machine, the breaker names the endpoint first: physassist/calls.py)
    assert "4 of 4 turns ended in a system fault" in out.faults and "InternalServerError" in out.faults
    assert out.run_status == "FAILED"

    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, faults={1: "empty_choices"}) as server:
        out = run(tmp_path / "empty", served_model(server, 1))
    df = turn_table(out.log_path).set_index("turn")
    assert df.loc[0, "status"] == "error" and "returned no choices" in df.loc[0, "error"]
    assert (df.loc[1:, "status"] == "scored").all() and out.metrics["error_turns"] == 1


def test_grader_and_patient_roles_through_the_same_server(tmp_path, key) -> None:
    policies = {"oracle": agent_policy(OracleAgent()), "grader": grader_policy, "patient": patient_policy}
    with ScriptedServer(policies) as server:
        roles = [
            f"{group}.{key}={value}"
            for group, model in (("judge", "grader"), ("patient", "patient"))
            for key, value in (
                ("provider", "openai-api/compatible"),
                ("model", model),
                ("base_url", server.base_url),
                ("api_key_env", "OPENAI_COMPATIBLE_API_KEY"),
            )
        ]
        # the sample's tier-2 diagnostic workups: the second has a patient-interview turn
        narrow = ("scenarios=[diagnostic_workup]", "tiers=[2]")
        out = run(tmp_path, served_model(server, 2, "judge=llm", "patient=live", *narrow, *roles))
    assert out.faults is None and out.metrics["scored_turns"] == 8 and out.metrics["mrs"] == 100
    assert len(server.served("grader")) == 8 and set(turn_table(out.log_path)["judge"]) == {"llm"}
    assert server.served("patient") and server.other_paths == []
    patient_calls = [
        c
        for sample in read_eval_log(out.log_path).samples
        for record in stored_turns(sample.store)
        for c in record.calls
        if c.name.startswith("patient.")
    ]
    assert patient_calls and all(c.raw["patient_response"] == PATIENT_ANSWER for c in patient_calls)
    for role, model in (("assistant", "oracle"), ("grader", "grader"), ("patient", "patient")):
        sent = [r.usage for r in server.served(model)]  # the server's usage, per role
        assert out.metrics[f"tokens.{role}.input"] == sum(u[0] for u in sent) > 0
        assert out.metrics[f"tokens.{role}.output"] == sum(u[1] for u in sent) > 0


def test_missing_provider_client_is_one_plain_line(tmp_path, monkeypatch) -> None:
    """google-genai is not a dependency: the run stops before anything runs, naming the extra."""
    monkeypatch.setenv("GOOGLE_API_KEY", "x")
    with pytest.raises(ev.ConfigError) as error:
        run(tmp_path, ["model=openai", "model.name=google/gemini-2.5-flash", "model.api_key_env=null"])
    message = str(error.value)
    assert message == (
        "model: cannot create google/gemini-2.5-flash: Google API requires optional dependencies. "
        'Install with: pip install -e ".[google]" (or pip install google-genai)'
    )
    assert not (tmp_path / "logs").exists()
