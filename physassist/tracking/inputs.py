"""What a run read, logged as MLflow dataset inputs: the sessions it evaluated and the EHR store.

The run list's Dataset column then shows each input by name and digest, and the run page its
size and source. The digest is the fingerprint (``physassist.fingerprint``) that
``physassist-data validate`` and ``physassist-ehr build`` print and that the run's tags
``physassist.dataset_fingerprint`` / ``physassist.ehr_fingerprint`` hold: one string everywhere.

The session fingerprint is taken over the sessions the run evaluated, read back from the
Inspect log (each sample carries its session), so it equals ``physassist-data validate``'s
when the run evaluated the whole dataset (no ``scenarios``, ``tiers`` or ``inspect.limit``).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from physassist.data.loader import fingerprint as sessions_fingerprint

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog
    from mlflow.data.dataset_source import DatasetSource
    from mlflow.entities import DatasetInput

# MLflow's input tag mlflow.data.context per kind of input (the tags' physassist.<kind>_*)
CONTEXTS = {"dataset": "eval", "ehr": "ehr"}


@dataclass(frozen=True)
class RunInput:
    """One dataset a run read (``kind`` dataset or ehr): a name, its fingerprint, where it lives
    and one row per unit (session, table)."""

    name: str
    fingerprint: str
    source: str
    rows: pd.DataFrame
    kind: str

    def dataset_input(self) -> DatasetInput:
        from mlflow.data.dataset_source_registry import resolve_dataset_source
        from mlflow.data.huggingface_dataset_source import HuggingFaceDatasetSource
        from mlflow.data.pandas_dataset import from_pandas  # what mlflow.data re-exports
        from mlflow.entities import DatasetInput, InputTag
        from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

        with warnings.catch_warnings():
            # MLflow registers its local source twice, and hints that int columns cannot hold NaN
            warnings.filterwarnings("ignore", "The specified dataset source can be interpreted")
            warnings.filterwarnings("ignore", "Hint: Inferred schema contains integer")
            source: DatasetSource
            if self.source.startswith("hf:"):
                source = HuggingFaceDatasetSource(self.source[len("hf:") :])
            else:
                source = resolve_dataset_source(self.source)
            dataset = from_pandas(self.rows, source=source, name=self.name, digest=self.fingerprint)
            entity = dataset._to_mlflow_entity()
        return DatasetInput(entity, [InputTag(MLFLOW_DATASET_CONTEXT, CONTEXTS[self.kind])])


def sessions_input(log: EvalLog, dataset: str, path: Path | None) -> RunInput | None:
    """The sessions a run evaluated, one row each (None when the log's samples carry none)."""
    from physassist.gc_freeze import frozen_heap

    sessions: dict[str, dict[str, Any]] = {}
    rows = []
    with frozen_heap():  # the parsed sessions are ~100k containers: no full collections over the heap
        for sample in log.samples or []:
            meta = sample.metadata or {}
            sid = str(sample.id)
            if meta.get("session") is None or sid in sessions:  # epochs repeat a session
                continue
            raw = meta["session"]
            sessions[sid] = json.loads(raw) if isinstance(raw, str) else raw
            rows.append({"session_id": sid, **{k: str(meta.get(k)) for k in ("scenario", "tier", "language")}})
        digest = sessions_fingerprint(sessions.values()) if sessions else None
    if digest is None:
        return None
    name = "sample" if dataset == "sample" else Path(dataset.removeprefix("hf:")).name or dataset
    source = dataset if dataset.startswith("hf:") or path is None else str(path.resolve())
    return RunInput(name, digest, source, pd.DataFrame(rows), "dataset")


def ehr_input(source: str) -> RunInput:
    """The EHR store a run queried: its fingerprint, and its row count per table when it is
    built (a run that never opened the store, e.g. ``menu=off``, does not build it here)."""
    from physassist.ehr.sources import detect_source
    from physassist.ehr.store import find_store

    built = find_store(source)
    name = "ehr:" + ("sample" if source == "sample" else Path(source).name)
    if built is None:
        src = detect_source(source)
        rows = pd.DataFrame({"table": sorted(src.files), "rows": [None] * len(src.files)})
        return RunInput(name, src.fingerprint(), str(src.root), rows, "ehr")
    return _built_input(name, built, built.stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _built_input(name: str, path: Path, mtime_ns: int) -> RunInput:
    """A built store's input, once per store file (``mtime_ns``: a rebuilt one is read again):
    the tracking agent reads it while the eval runs (``agent._read_ahead``)."""
    from physassist.ehr.store import EHRStore

    with EHRStore(path, prefetch=False) as store:
        counts = store.row_counts()
        rows = pd.DataFrame({"table": list(counts), "rows": [int(n) for n in counts.values()]})
        return RunInput(name, store.fingerprint, str(store.source), rows, "ehr")


def run_inputs(log: EvalLog, dataset: str, dataset_path: Path | None, ehr_source: str) -> list[RunInput]:
    """The session set (when the log carries sessions) and the EHR store of a run."""
    sessions = sessions_input(log, dataset, dataset_path)
    return [*([sessions] if sessions else []), ehr_input(ehr_source)]
