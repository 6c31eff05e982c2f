"""Make the README's MLflow screenshots: a small 2x2 sweep and one single run in a fresh store,
served by `mlflow server` on 127.0.0.1 and photographed with headless Chromium.

    python docs/screenshots.py            # writes docs/mlflow_*.png (needs `chromium` on PATH)

Not part of the tests (CI has no browser). Every step is bounded in time.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from physassist.tracking.server import mlflow_server

DOCS = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
]


def _eval(args: list[str], work: Path, uri: str) -> None:
    common = [f"tracking.uri={uri}", f"inspect.log_dir={work / 'logs'}", "inspect.display=none",
              f"hydra.run.dir={work / 'out'}", f"hydra.sweep.dir={work / 'multirun'}"]
    subprocess.run([str(BIN / "physassist-eval"), *args, *common], cwd=work, check=True, timeout=1800,
                   stdout=subprocess.DEVNULL)


def _json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def _shoot(url: str, out: Path, size: str = "1400,820") -> None:
    subprocess.run(["chromium", *CHROMIUM_FLAGS, f"--window-size={size}", "--virtual-time-budget=25000",
                    f"--screenshot={out}", url], check=True, timeout=180, capture_output=True)
    from PIL import Image  # matplotlib's dependency: shrink to a palette PNG (< 200 KB)

    Image.open(out).convert("RGB").quantize(colors=128).save(out, optimize=True)
    print(f"{out.name}: {out.stat().st_size // 1024} KB")


def main() -> None:
    if shutil.which("chromium") is None:
        sys.exit("chromium not found (Debian: apt-get install chromium)")
    work = Path(tempfile.mkdtemp(prefix="physassist-shots-"))
    db = work / "mlruns" / "mlflow.db"
    uri = f"sqlite:///{db}"
    _eval(["-m", "model=oracle,baseline", "query=implicit,explicit", "inspect.limit=8"], work, uri)
    _eval(["model=baseline", "menu=off", "language=zh", "inspect.limit=8"], work, uri)
    with mlflow_server(uri, work / "artifacts") as base:
        eid = _json(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=physassist")["experiment"]["experiment_id"]
        runs = _json(f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [eid]})["runs"]
        jobs = [r for r in runs if {"key": "physassist.kind", "value": "job"} in r["data"]["tags"]]
        oracle = [r["info"]["run_id"] for r in jobs if r["info"]["run_name"].startswith("oracle")]
        trace = _json(f"{base}/api/3.0/mlflow/traces/search", {
            "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": eid}}],
            "filter": f"attribute.run_id = '{oracle[0]}'", "max_results": 1})["traces"][0]["trace_id"]
        compare = urllib.parse.quote(json.dumps(oracle))
        _shoot(f"{base}/#/experiments/{eid}/runs", DOCS / "mlflow_runs.png")
        _shoot(f"{base}/#/experiments/{eid}/runs/{oracle[0]}", DOCS / "mlflow_run.png")
        _shoot(f"{base}/#/compare-runs?runs={compare}&experiments={urllib.parse.quote(json.dumps([eid]))}",
               DOCS / "mlflow_compare.png")
        _shoot(f"{base}/#/experiments/{eid}/traces?selectedEvaluationId={trace}", DOCS / "mlflow_trace.png")
        for r in jobs:
            tags = {x["key"]: x["value"] for x in r["data"]["tags"]}
            print(f"{r['info']['run_name']}: {tags['physassist.traces']} traces in {tags['physassist.traces_seconds']} s")
    print(f"store kept in {work}")


if __name__ == "__main__":
    main()
