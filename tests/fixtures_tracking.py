"""Shared helpers for the conf / tracking / report / CLI tests.

* ``compose``: the Hydra compose API on the project's conf/ (or another config dir);
* ``synthetic_turns``: a per-turn table shaped like ``physassist.results.turn_table``;
* ``tiny_task``: a throwaway Inspect task (no model calls) whose scorer writes the same
  per-turn metadata as the benchmark's scorer, to test tracking without the benchmark;
* ``cli``: run a console entry point in a subprocess with a bounded time;
* ``store_uri``: a SQLite MLflow store inside a test's tmp_path (never the repo's mlruns/);
* ``mlflow_server``: a real ``mlflow server`` on 127.0.0.1 over such a store, stopped after.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
CONF = Path(
    os.environ.get("PHYSASSIST_CONF_DIR") or REPO / "conf"
)  # conf/ as shipped (tests/shipped_conf.py)
VENV_BIN = Path(sys.executable).parent

TASK_TYPES = ("IL", "DG", "CR", "WU")
SUBTYPES = ("none", "NA", "PE", "AE")


def compose(
    overrides: Sequence[str] = (),
    *,
    config_dir: Path = CONF,
    hydra: bool = False,
    name: str = "eval",
):
    """Compose ``eval`` (or ``name``) with overrides (Hydra's compose API); ``hydra=True`` keeps
    hydra.*."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    import physassist.cli.config  # noqa: F401  (registers the groups' schemas, conf/eval.yaml names them)

    with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
        return hydra_compose(name, overrides=list(overrides), return_hydra_config=hydra)


def store_uri(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'mlruns' / 'mlflow.db'}"


def synthetic_turns(
    n_sessions: int = 12, seed: int = 0, language: str = "en", query: str = "implicit"
) -> pd.DataFrame:
    """A turn table with every breakdown dimension populated and one unscored turn."""
    rng = np.random.default_rng(seed)
    scenarios = ("diagnostic_workup", "med_safety", "treatment_response", "discharge_planning")
    rows = []
    for s in range(n_sessions):
        for t in range(4):
            task = "IL" if t == 0 else ("WU" if t == 3 and s % 2 else TASK_TYPES[1 + (s + t) % 2])
            subtype = "none" if t == 0 or task == "WU" else SUBTYPES[1 + (s + t) % 3]
            source = "write" if task == "WU" else ("patient" if t == 2 and s % 3 == 0 else "ehr")
            score = float(rng.choice([0.0, 0.25, 0.5, 0.6, 0.75, 0.8, 1.0]))
            status = "scored"
            if s == 1 and t == 2:
                score, status = np.nan, "failed"
            rows.append(
                {
                    "session_id": f"s{s:02d}",
                    "epoch": 1,
                    "turn": t,
                    "scenario": scenarios[s % 4],
                    "tier": 1 + s % 3,
                    "language": language,
                    "query": query,
                    "task_type": task,
                    "subtype": subtype,
                    "tool_source": source,
                    "question": f"question {s}.{t}",
                    "score": score,
                    "status": status,
                    "judge": "rules",
                    "n_items": 4,
                    "n_passed": 0 if np.isnan(score) else int(round(score * 4)),
                    "n_undecided": 0,
                    "end": "answered",
                    "n_calls": 2,
                    "tools": ["Observation.search"],
                    "gold_tools": ["Observation.search", "Condition.search"],
                    "tokens_in": 100,
                    "tokens_out": 20,
                    "seconds": 0.1,
                }
            )
    return pd.DataFrame(rows)


def tiny_task(
    n_samples: int = 3,
    score_shift: float = 0.0,
    fail: bool = False,
    fail_flag: Path | None = None,
    executions: Path | None = None,
):
    """A throwaway Inspect task: no model call; scorer ``physassist_scorer`` with turn metadata.

    ``fail=True``: the solver raises, so the eval ends with status ``error``. ``fail_flag``:
    the last sample fails while that file exists. ``executions``: a file that gets one line
    per solved sample (to see which samples a resumed eval recomputes).
    """
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver

    @solver
    def record_turns():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if executions is not None:
                with open(executions, "a") as handle:
                    handle.write(f"{state.sample_id}\n")
            if fail or (
                fail_flag is not None
                and fail_flag.exists()
                and state.sample_id == f"s{n_samples - 1}"
            ):
                raise RuntimeError("tiny task failure")
            turns = [
                {
                    "turn": t,
                    "question": f"q{t}",
                    "answer": "a",
                    "end": "answered",
                    "calls": [],
                    "tokens_in": 1,
                    "tokens_out": 1,
                    "seconds": 0.0,
                }
                for t in range(4)
            ]
            state.store.set("physassist:turns", turns)
            return state

        return solve

    @scorer(metrics=[mean()], name="physassist_scorer")
    def physassist_scorer():
        async def score(state: TaskState, target: Target) -> Score:
            k = int(state.sample_id[1:])
            values = [min(1.0, max(0.0, ((k + t) % 4) / 3 + score_shift)) for t in range(4)]
            turns = [
                {
                    "turn": t,
                    "score": v,
                    "items": [{"passed": v >= 0.5, "reason": ""}],
                    "judge": "rules",
                    "status": "scored",
                }
                for t, v in enumerate(values)
            ]
            return Score(value=float(np.mean(values)), metadata={"turns": turns})

        return score

    samples = [
        Sample(
            id=f"s{k}",
            input="opening",
            metadata={
                "scenario": ("med_safety", "diagnostic_workup")[k % 2],
                "tier": 1 + k % 3,
                "language": "en",
                "query": "implicit",
                "task_types": [
                    "Information Lookup",
                    "Data Gathering",
                    "Clinical Reasoning",
                    "Write/Update",
                ],
                "subtypes": [None, "NA", "AE", None],
                "tool_sources": ["ehr", "patient", "ehr", "write"],
            },
        )
        for k in range(n_samples)
    ]
    return Task(
        dataset=MemoryDataset(samples, name="tiny"),
        solver=record_turns(),
        scorer=physassist_scorer(),
        name="tiny",
    )


def cli(
    args: Sequence[str], *, cwd: Path, timeout: float = 180, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """Run a console script of the venv (``physassist-eval ...``) in ``cwd``, bounded in time."""
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "0", **(env or {})}
    cmd = [str(VENV_BIN / args[0]), *args[1:]]
    return subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full_env
    )


def search_runs(uri: str, experiment: str = "physassist", filter_string: str = "") -> pd.DataFrame:
    """All runs of ``experiment`` in a store (pandas, as mlflow.search_runs returns them)."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    return mlflow.search_runs(
        experiment_names=[experiment], filter_string=filter_string, output_format="pandas"
    )


@contextlib.contextmanager
def mlflow_server(tmp_path: Path) -> Iterator[str]:
    """A real ``mlflow server`` on 127.0.0.1 over a store in ``tmp_path``; yields its base URL."""
    import pytest

    from physassist.tracking.mlflow_store import TrackingError
    from physassist.tracking.server import mlflow_server as serve

    try:
        with serve(store_uri(tmp_path), tmp_path / "art") as base:
            yield base
    except TrackingError as exc:
        pytest.fail(str(exc))
