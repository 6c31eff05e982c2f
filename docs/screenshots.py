"""Make the MLflow screenshots of docs/mlflow.md the way a user sees them: a menu sweep of the offline
explorer (4 jobs) and the default run in a fresh store, served by `mlflow server` on 127.0.0.1,
photographed with headless Chromium.

    pip install playwright        # the Python driver only: it runs the system's Chromium
    python docs/screenshots.py    # writes docs/mlflow_{runs,sweep,run,traces}.png
    python docs/screenshots.py /tmp/physassist-shots-xxxx   # photograph a store made before

Chromium: /usr/bin/chromium (Debian: apt-get install chromium), or $CHROMIUM. The run list's
columns are the browser's choice (MLflow keeps them in localStorage, per experiment): the script
sets the view docs/mlflow.md describes before the page loads (``VIEW``) and expands the sweep's parent.
Not part of the tests (CI has no browser). Every step is bounded in time.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from physassist.tracking.server import mlflow_server

DOCS = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
LIMIT = "inspect.limit=8"  # 8 sessions per run: the screens, not the numbers, are the point
#: The run list's columns (docs/mlflow.md, "A readable run list"): the headline, then the swept params.
VIEW = [
    "metrics.`mrs`",
    "metrics.`mrs_ci_low`",
    "metrics.`mrs_ci_high`",
    "metrics.`pass_turn_0.60`",
    "metrics.`pass_session_0.60`",
    "metrics.`unscored_turns`",
    "params.`model`",
    "params.`menu`",
]


def _eval(args: list[str], work: Path, uri: str) -> None:
    common = [f"tracking.uri={uri}", f"inspect.log_dir={work / 'logs'}", "inspect.display=none",
              f"hydra.run.dir={work / 'out'}", f"hydra.sweep.dir={work / 'multirun'}"]
    subprocess.run([str(BIN / "physassist-eval"), *args, *common], cwd=work, check=True, timeout=3600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def _view_script(experiment_id: str, expanded: list[str]) -> str:
    """localStorage as MLflow 3.17's run list keeps a user's view (columns, expanded parents),
    and the assistant panel closed; run before the app's own scripts."""
    key = f"MLflowLocalStorage-1.1-ExperimentPage-{json.dumps([experiment_id])}-ReactComponentState"
    state = {"selectedColumns": VIEW, "runsExpanded": {run_id: True for run_id in expanded}}
    return (
        f"localStorage.setItem({json.dumps(key)}, {json.dumps(json.dumps(state))});"
        "localStorage.setItem('mlflow.assistant.panelOpen', 'false');"
        "localStorage.setItem('mlflow.assistant.fab.autoOpenedOnFirstLoad', 'true');"
    )


def _shoot(page, url: str, out: Path, wait_for: str) -> None:
    page.goto(url, timeout=120_000)
    page.get_by_text(wait_for, exact=False).first.wait_for(timeout=120_000)
    page.wait_for_timeout(2500)  # charts and lazy cells settle
    close = page.get_by_label("Close")
    if close.count() and close.first.is_visible():
        close.first.click()
        page.wait_for_timeout(500)
    page.screenshot(path=str(out))
    from PIL import Image  # matplotlib's dependency: shrink to a palette PNG (< 200 KB)

    Image.open(out).convert("RGB").quantize(colors=128).save(out, optimize=True)
    print(f"{out.name}: {out.stat().st_size // 1024} KB")


def main() -> None:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        sys.exit(f"{CHROMIUM} not found (Debian: apt-get install chromium; or set $CHROMIUM)")
    reuse = len(sys.argv) > 1
    work = Path(sys.argv[1]) if reuse else Path(tempfile.mkdtemp(prefix="physassist-shots-"))
    uri = f"sqlite:///{work / 'mlruns' / 'mlflow.db'}"
    if not reuse:
        _eval(["-m", "menu=on,off,scenario,gold", "model=explorer", LIMIT], work, uri)
        _eval([LIMIT], work, uri)  # the default run
    with mlflow_server(uri, work / "artifacts") as base:
        eid = _json(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=physassist")["experiment"]["experiment_id"]
        runs = _json(f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [eid]})["runs"]

        def kind(run: dict) -> str:
            return {t["key"]: t["value"] for t in run["data"]["tags"]}.get("physassist.kind", "")

        parent = next(r["info"]["run_id"] for r in runs if kind(r) == "sweep")
        gold = next(r["info"] for r in runs if r["info"]["run_name"].startswith("menu=gold"))
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS[1:], timeout=120_000)
            context = browser.new_context(viewport={"width": 1500, "height": 860})
            context.add_init_script(_view_script(eid, [parent]))
            page = context.new_page()
            home = f"{base}/#/experiments/{eid}"
            _shoot(page, f"{home}/runs", DOCS / "mlflow_runs.png", "menu=gold")
            _shoot(page, f"{home}/runs/{parent}", DOCS / "mlflow_sweep.png", "mrs/menu-gold")
            _shoot(page, f"{home}/runs/{gold['run_id']}", DOCS / "mlflow_run.png", "mrs_ci_low")
            _shoot(page, f"{home}/runs/{gold['run_id']}/traces", DOCS / "mlflow_traces.png", "T0 score")
            browser.close()
    print(f"store kept in {work}")


if __name__ == "__main__":
    main()
