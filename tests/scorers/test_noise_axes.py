"""The repeats that measure noise, end to end: the explorer's seeded sampling (epochs differ,
the same seed repeats them, the default explorer stays deterministic) and the live patient's
seed (``patient.seed`` reaches the patient model; runs that differ only in it measure the
patient's share). Real evals of the offline agents on sample sessions; the live patient is a
scripted ``mockllm`` whose answer depends on the seed it is called with.
"""

from __future__ import annotations

from pathlib import Path

import fixtures_eval as fe
import pandas as pd
import pytest
from inspect_ai import eval as inspect_eval

from physassist.agents._common import Conversation
from physassist.agents.explorer import draws, planned_calls, sampled_calls
from physassist.ehr.tools import to_api_name
from physassist.noise import replicates, split
from physassist.results import turn_table


def _eval(tmp_path: Path, model: str, epochs: int, limit: int, **task_args):
    from physassist.agents import provider  # noqa: F401  (registers the offline agents)
    from tasks.physassistbench import physassistbench

    model_args = task_args.pop("model_args", {})
    roles = task_args.pop("roles", None)
    task = physassistbench(
        scenarios=["med_safety"], tiers=[2], **task_args
    )  # _3_L2 first: a patient turn
    [log] = inspect_eval(
        task,
        model=model,
        model_args=model_args,
        model_roles=roles,
        epochs=epochs,
        limit=limit,
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success"
    return turn_table(log)


@pytest.mark.slow
def test_the_sampled_explorer_differs_between_epochs_and_the_default_does_not(
    tmp_path: Path,
) -> None:
    sampled = _eval(
        tmp_path, "physassist/explorer", 3, 2, model_args={"randomness": 0.5, "seed": 0}
    )
    calls = sampled.pivot_table(index=["session_id", "turn"], columns="epoch", values="n_calls")
    assert (calls.nunique(axis=1) > 1).any(), (
        "no turn made a different number of calls in another epoch"
    )
    agent = {c.axis: c for c in split(replicates(sampled, [0.6]), n_boot=50).components}["agent"]
    assert agent.measured and agent.repeats == 3
    default = _eval(tmp_path, "physassist/explorer", 2, 1)
    by_epoch = default.pivot_table(index=["session_id", "turn"], columns="epoch", values="score")
    assert (by_epoch[1] == by_epoch[2]).all()  # deterministic: its epochs agree


def test_the_sampled_plan_is_seeded_by_seed_session_epoch_and_turn() -> None:
    conv = Conversation(
        "session_id: s1\nsubject_id: 30000001\nhadm_id: 1",
        ["What is his creatinine and potassium?"],
        [],
        False,
    )
    names = {
        to_api_name(n)
        for n in (
            "Observation.search",
            "MedicationRequest.search",
            "Condition.search",
            "DiagnosticReport.search",
        )
    }
    planned = planned_calls(conv, names)

    def plan(seed: int) -> list:
        return sampled_calls(planned, conv, names, draws(seed, conv), 0.5)

    assert (
        plan(0) == plan(0) and planned[0] == plan(0)[0]
    )  # the same draws; the question's first call kept
    assert len({str(plan(seed)) for seed in range(8)}) > 1
    assert (
        sampled_calls(planned, conv, names, draws(0, conv), 0.0) == planned
    )  # no randomness: the plan


class SeededPatient:
    """A live patient whose answers depend on the seed it is called with (``patient.seed``)."""

    def __init__(self) -> None:
        self.seeds: list[int | None] = []

    def __call__(self, input, tools, tool_choice, config):
        self.seeds.append(config.seed)
        if (config.seed or 0) % 2:
            return fe.text(
                "Honestly I stopped taking it and I skip doses; the pain is worse at night."
            )
        return fe.text("I take every medicine as prescribed and I feel fine.")


@pytest.mark.slow
def test_runs_differing_in_the_patient_seed_measure_the_patient(tmp_path: Path) -> None:
    values = []
    for seed in (0, 1):
        patient = SeededPatient()
        turns = _eval(
            tmp_path,
            "physassist/baseline",
            1,
            1,
            patient="live",
            patient_seed=seed,
            roles={"patient": fe.scripted(patient)},
        )
        assert patient.seeds and set(patient.seeds) == {
            seed
        }  # the option reached the patient model
        values.append(replicates(turns, [0.6], patient=str(seed)))
    parts = split(pd.concat(values), n_boot=50)
    by = {c.axis: c for c in parts.components}
    assert parts.repeats["patient"] == 2 and by["patient"].measured and by["patient"].variance > 0
    assert not by["agent"].measured and "epochs" in by["agent"].note
