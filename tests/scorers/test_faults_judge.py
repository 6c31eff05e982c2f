"""judge=llm against a grader whose replies never parse (docs/real-models.md's
compatible-server grader recipe, with the defaults): the run is no result. One line with the
counts, the MLflow run FAILED with the ``physassist.faults`` tag, exit status 4."""

from __future__ import annotations

from fixtures_http import ScriptedServer, agent_policy
from fixtures_tracking import cli, search_runs, store_uri

from physassist.agents.oracle import OracleAgent
from physassist.faults import EXIT_FAULTS, FAULT_TAG


def _prose(body: dict) -> dict:
    return {"content": "All items look fine to me.", "tool_calls": [], "usage": (50, 8)}


def test_a_judge_whose_replies_never_parse_fails_the_run_with_exit_4(tmp_path) -> None:
    uri = store_uri(tmp_path)
    env = {"OPENAI_COMPATIBLE_API_KEY": "EMPTY"}
    with ScriptedServer({"oracle": agent_policy(OracleAgent()), "grader": _prose}) as server:
        judge = [
            "judge=llm",
            "judge.provider=openai-api/compatible",
            "judge.model=grader",
            f"judge.base_url={server.base_url}",
            "judge.api_key_env=OPENAI_COMPATIBLE_API_KEY",
        ]
        proc = cli(
            [
                "physassist-eval",
                "model=openai_compatible",
                "model.name=oracle",
                f"model.base_url={server.base_url}",
                *judge,
                "inspect.limit=1",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"tracking.uri={uri}",
                f"hydra.run.dir={tmp_path / 'out'}",
            ],
            cwd=tmp_path,
            env=env,
        )
        # the same grader rescoring that log in a sweep (two judge contexts): exit 4 at its end too
        [source] = search_runs(uri).to_dict("records")
        log = source["tags.physassist.inspect_log"]
        sweep = cli(
            [
                "physassist-rescore",
                "-m",
                f"source={log}",
                *judge,
                "judge.context=gold_answer,evidence",
                f"tracking.uri={uri}",
                f"hydra.sweep.dir={tmp_path / 'rescore'}",
            ],
            cwd=tmp_path,
            env=env,
        )
    assert sweep.returncode == EXIT_FAULTS, sweep.stderr[-3000:]
    assert (
        len(
            [
                ln
                for ln in sweep.stderr.splitlines()
                if ln.startswith("physassist-rescore: system faults in ")
            ]
        )
        == 2
    )
    assert proc.returncode == EXIT_FAULTS, proc.stderr[-3000:]
    [line] = [ln for ln in proc.stderr.splitlines() if "system faults" in ln]
    assert line.startswith(
        "physassist-eval: system faults: the judge could not grade 4 of 4 turns (4 unparseable "
        "replies): 4x "
    )
    [run] = [r for r in search_runs(uri).to_dict("records") if r["run_id"] == source["run_id"]]
    assert run["status"] == "FAILED" and run[f"tags.{FAULT_TAG}"].startswith(
        "the judge could not grade 4 of 4"
    )
    assert run["metrics.counts/judge_unparseable"] == 4  # a count, under its section (metric_names)
