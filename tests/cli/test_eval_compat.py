"""With ``semantics="compat"``, replaying a released-format session's gold trajectory
through the task's tools reproduces its recorded gold observations.

The fixture is written the way the benchmark's gold was recorded: the gold calls of a
session on a real MIMIC-IV demo admission are executed in compat mode and their results
stored as the observations (in a temporary JSONL; demo data never enters the repo). The
oracle agent then replays the calls through the loop, and each executed call's raw result
must equal the recorded observation.
"""

from __future__ import annotations

import json
from pathlib import Path

import fixtures_eval as fe
import fixtures_store as fs
from inspect_ai.model import get_model

store_cache = fs.store_cache
demo_store = fs.demo_store


def test_compat_replay_reproduces_gold_observations(demo_store, tmp_path: Path) -> None:
    session = fe.build_session(demo_store, "compat", session_id="compat_fixture_01")
    released = tmp_path / "med_safety.jsonl"
    released.write_text(json.dumps(session, ensure_ascii=False) + "\n", encoding="utf-8")
    oracle = get_model("physassist/oracle", dataset=str(released))
    sample = fe.run_sample(
        session, oracle, demo_store, tmp_path, semantics="compat", render="compat"
    )
    turns = fe.turns_of(sample)
    compared = 0
    for turn, record in enumerate(turns):
        gold = [
            item
            for item in session["answer_list"][turn]
            if item["action"]["name"] != "prepare_to_answer"
        ]
        assert [c.name for c in record.calls] == [g["action"]["name"] for g in gold]
        for call, item in zip(record.calls, gold, strict=True):
            assert call.arguments == item["action"]["arguments"]
            if call.name.startswith("patient."):
                assert call.raw["patient_response"] == item["observation"]["patient_response"]
            else:
                assert call.raw == item["observation"], (turn, call.name)
                compared += 1
        assert record.answer == session["answer_list"][turn][-1]["observation"]
    assert compared == 5
