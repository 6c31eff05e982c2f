"""The report's "Noise and calibration" section (physassist/report/trust.py): runs of one
configuration that differ only in ``patient.seed`` are split together, so the patient's share is
measured; every other run is its own group; copied metrics make the noise and calibration tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
from fixtures_tracking import synthetic_turns

from physassist.report.trust import calibration_table, noise_table, replicate_groups, variance_table

BASE = {
    "params.model": "physassist/explorer",
    "params.patient": "live",
    "tags.physassist.sweep_id": "s1",
}


def _run(run_id: str, seed: str, **extra: object) -> dict[str, object]:
    return {
        "run_id": run_id,
        "tags.mlflow.runName": f"explorer seed {seed}",
        **BASE,
        "params.patient.seed": seed,
        **extra,
    }


def test_runs_differing_only_in_the_patient_seed_are_one_group_and_measure_the_patient() -> None:
    runs = pd.DataFrame(
        [_run("a", "0"), _run("b", "1"), _run("c", "2"), _run("d", "0", **{"params.menu": "off"})]
    )
    groups = replicate_groups(runs)
    assert sorted(sorted(g["run_id"]) for g in groups) == [["a", "b", "c"], ["d"]]
    rng = np.random.default_rng(0)

    def turns(
        run_id: str,
    ) -> pd.DataFrame:  # the same sessions, each seed moving each session's scores
        frame = synthetic_turns(12, seed=1)
        shift = rng.choice([-0.25, 0.0, 0.25], size=len(frame))
        return frame.assign(score=(frame["score"] + shift).clip(0, 1))

    table = variance_table(runs, turns, [0.6]).frame
    joint = table[(table["runs"] == 3) & (table["metric"] == "mrs")].set_index("axis")
    assert joint.loc["patient", "repeats"] == 3 and joint.loc["patient", "share %"] > 0
    assert "patient.seed=0,1,2" in joint["group"].iloc[0]
    alone = table[(table["runs"] == 1) & (table["metric"] == "mrs")].set_index("axis")
    assert np.isnan(alone.loc["patient", "variance"]) and alone.loc["patient", "note"].startswith(
        "unmeasured"
    )


def test_noise_and_calibration_tables_copy_the_runs_metrics() -> None:
    runs = pd.DataFrame(
        [
            {
                "run_id": "a",
                "tags.mlflow.runName": "a",
                "metrics.mrs": 43.8,
                "metrics.noise.mrs": 2.0,
                "metrics.mde.mrs": 2.8,
                "metrics.plan.mrs.2pt.sessions": 36,
                "metrics.plan.mrs.2pt.epochs": 6,
                "metrics.plan.mrs.2pt.judgings": 1,
                "metrics.plan.mrs.2pt.tokens": 15.1e6,
                "metrics.n_sessions": 36,
                "metrics.repeats.agent": 3,
                "metrics.mrs_calibrated": 24.3,
                "metrics.mrs_calibrated_ci_low": 10.6,
                "metrics.mrs_calibrated_ci_high": 38.0,
                "metrics.judge_bias": 20.8,
                "metrics.n_labelled": 24,
                "metrics.pass_turn_0.60": 34.5,
            },
            {"run_id": "b", "tags.mlflow.runName": "b", "metrics.mrs": 49.5},
        ]
    )
    noise = noise_table(runs).frame.set_index("run_id")
    assert (
        noise.loc["a", "detects >="] == 2.8
        and noise.loc["a", "to detect 2 pt"] == "36 sessions x 6 epochs x 1 judging, ~15.1M tokens"
    )
    assert noise.loc["a", "repeats (patient, epochs, judgings)"] == "1, 3, 1" and noise.loc[
        "b", "note"
    ].startswith("unmeasured")
    calibration = calibration_table(runs).frame
    assert (
        calibration["run_id"].tolist() == ["a"]
        and calibration["calibrated ci"].iloc[0] == "[10.6, 38.0]"
    )
