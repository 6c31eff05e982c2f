"""A run's datasets as MLflow inputs, and one fingerprint string from the CLIs to the run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import compose, store_uri

import physassist.cli.eval as ev
from physassist.cli import data as data_cli
from physassist.cli import ehr as ehr_cli
from physassist.fingerprint import FINGERPRINT_CHARS

SAMPLE = Path(ev.SAMPLE_SESSIONS)


def _printed_fingerprint(text: str) -> str:
    [value] = re.findall(r"^fingerprint:\s+(\S+)$", text, flags=re.M)
    return value


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory) -> Path:
    """A released-format dataset of two sample sessions (cheap to evaluate whole)."""
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    out = tmp_path_factory.mktemp("released")
    lines = (SAMPLE / "med_safety.jsonl").read_text().splitlines()[:2]
    (out / "med_safety.jsonl").write_text("\n".join(lines) + "\n")
    return out


def test_validate_build_tags_and_digests_print_one_fingerprint(two_sessions: Path, tmp_path: Path, capsys) -> None:
    assert data_cli.main(["validate", str(two_sessions)]) == 0
    dataset_fp = _printed_fingerprint(capsys.readouterr().out)
    assert ehr_cli.main(["build", "sample"]) == 0
    ehr_fp = _printed_fingerprint(capsys.readouterr().out)
    assert len(dataset_fp) == len(ehr_fp) == FINGERPRINT_CHARS

    cfg = compose(
        [
            "model=oracle",
            "dataset=physassistbench",
            f"dataset.source={two_sessions}",
            "dataset.ehr_source=sample",
            f"tracking.uri={store_uri(tmp_path)}",
            f"inspect.log_dir={tmp_path / 'logs'}",
            "inspect.display=none",
            "tracking.plots=false",
        ]
    )
    out = ev.run_experiment(cfg, ev.JobContext())
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    run = mlflow.MlflowClient(store_uri(tmp_path)).get_run(out.run_id)
    assert run.data.tags["physassist.dataset_fingerprint"] == dataset_fp
    assert run.data.tags["physassist.ehr_fingerprint"] == ehr_fp
    inputs = {i.dataset.name: i for i in run.inputs.dataset_inputs}
    assert set(inputs) == {two_sessions.name, "ehr:sample"}
    sessions, ehr = inputs[two_sessions.name], inputs["ehr:sample"]
    assert sessions.dataset.digest == dataset_fp and ehr.dataset.digest == ehr_fp
    assert json.loads(sessions.dataset.profile)["num_rows"] == 2  # sessions evaluated
    assert json.loads(sessions.dataset.source)["uri"] == str(two_sessions.resolve())
    assert [(t.key, t.value) for t in sessions.tags] == [("mlflow.data.context", "eval")]
    assert [(t.key, t.value) for t in ehr.tags] == [("mlflow.data.context", "ehr")]
    assert json.loads(ehr.dataset.profile)["num_rows"] == 18  # one row per EHR table
