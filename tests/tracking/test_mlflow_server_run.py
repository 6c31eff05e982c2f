"""A default run logged to a real `mlflow server` on 127.0.0.1, checked over MLflow's REST API:
its dataset inputs, its traces with the judge's assessments, its artifacts."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from fixtures_tracking import cli, mlflow_server

pytestmark = pytest.mark.slow

SESSIONS = 2  # inspect.limit: cheap, and more than one trace


def _get(base: str, endpoint: str, **query: str) -> dict[str, Any]:
    with urllib.request.urlopen(
        f"{base}{endpoint}?{urllib.parse.urlencode(query)}", timeout=30
    ) as r:
        return json.load(r)


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{base}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def test_default_run_has_inputs_traces_with_assessments_and_artifacts(tmp_path: Path) -> None:
    with mlflow_server(tmp_path) as base:
        proc = cli(
            [
                "physassist-eval",
                f"tracking.uri={base}",
                f"inspect.limit={SESSIONS}",
                f"inspect.log_dir={tmp_path / 'logs'}",
                "inspect.display=none",
                f"hydra.run.dir={tmp_path / 'outputs'}",
            ],
            cwd=tmp_path,
            timeout=400,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        experiment = _get(
            base, "/api/2.0/mlflow/experiments/get-by-name", experiment_name="physassist"
        )
        eid = experiment["experiment"]["experiment_id"]
        [listed] = _post(base, "/api/2.0/mlflow/runs/search", {"experiment_ids": [eid]})["runs"]
        run_id = listed["info"]["run_id"]
        run = _get(base, "/api/2.0/mlflow/runs/get", run_id=run_id)["run"]
        tags = {t["key"]: t["value"] for t in run["data"]["tags"]}
        made = f"oracle | inspect.limit={SESSIONS}"  # the name as made; a FINISHED run's carries
        assert run["info"]["status"] == "FINISHED" and tags["physassist.run_name"] == made
        assert run["info"]["run_name"] == f"{made} | mRS 100.0 [100.0, 100.0]"  # its headline
        metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
        assert metrics["n_sessions"] == SESSIONS and tags["physassist.traces"] == str(SESSIONS)

        # dataset inputs: the sessions evaluated and the EHR store, digests = the run's fingerprints
        inputs = {i["dataset"]["name"]: i for i in run["inputs"]["dataset_inputs"]}
        assert set(inputs) == {"sample", "ehr:sample"}
        assert inputs["sample"]["dataset"]["digest"] == tags["physassist.dataset_fingerprint"]
        assert inputs["ehr:sample"]["dataset"]["digest"] == tags["physassist.ehr_fingerprint"]
        assert json.loads(inputs["sample"]["dataset"]["profile"])["num_rows"] == SESSIONS
        assert inputs["sample"]["tags"] == [{"key": "mlflow.data.context", "value": "eval"}]

        # traces of the run, each carrying the judge's verdicts as assessments
        found = _post(
            base,
            "/api/3.0/mlflow/traces/search",
            {
                "locations": [
                    {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": eid}}
                ],
                "filter": f"attribute.run_id = '{run_id}'",
                "max_results": 100,
            },
        )["traces"]
        assert len(found) == SESSIONS
        for info in found:
            trace = _get(base, f"/api/3.0/mlflow/traces/{info['trace_id']}")["trace"]["trace_info"]
            assert trace["trace_metadata"]["mlflow.sourceRun"] == run_id
            names = {a["assessment_name"] for a in trace["assessments"]}
            assert {"T0.1", "T0 score", "T3 score"} <= names
            item = next(a for a in trace["assessments"] if a["assessment_name"] == "T0.1")
            assert item["source"] == {"source_type": "CODE", "source_id": "physassist rules judge"}
            assert item["feedback"]["value"] is True  # the oracle passes; the rules judge says so
            assert item["span_id"]

        # artifacts: resolved config, the Inspect log, the turn table, plots
        listed_paths = {
            f["path"]
            for folder in ("config", "inspect", "tables", "plots")
            for f in _get(base, "/api/2.0/mlflow/artifacts/list", run_id=run_id, path=folder).get(
                "files", []
            )
        }
        assert "config/resolved.yaml" in listed_paths
        assert f"inspect/{Path(tags['physassist.inspect_log']).name}" in listed_paths
        assert {"tables/turns.csv", "tables/turns.json", "plots/pass_vs_tau.png"} <= listed_paths
