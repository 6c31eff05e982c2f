"""Make the MLflow screenshots of docs/mlflow.md the way a first-time user sees them: a menu sweep
of the offline explorer (4 jobs) and the default run in a fresh store, served by `mlflow server`
on 127.0.0.1, photographed with headless Chromium in a new, empty browser profile.

    pip install playwright        # the Python driver only: it runs the system's Chromium
    python docs/screenshots.py    # writes docs/mlflow_{runs,sweep,run,traces}.png
    python docs/screenshots.py /tmp/physassist-shots-xxxx   # photograph a store made before

Chromium: /usr/bin/chromium (Debian: apt-get install chromium), or $CHROMIUM. Nothing is set in
the browser before a page loads (no localStorage, no column choice): the script clicks what a
user clicks (the experiment, "Evaluation runs", a run; it closes the assistant panel and the
first-visit tips) and FAILS when a screen does not show the result by itself: the run list
without each run's mRS and interval and the sweep's jobs, the sweep's parent without each job's
mRS, a run's page without its headline. Not part of the tests (CI has no browser). Every step is
bounded in time.
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
#: What the run list must show by itself: the headline's columns, as MLflow lists them.
HEADLINE_COLUMNS = ("mrs", "mrs_ci_low", "mrs_ci_high")
WAIT_MS = 120_000


class NotShown(RuntimeError):
    """A screen does not show the result without the user choosing anything."""


def _eval(args: list[str], work: Path, uri: str) -> None:
    common = [
        f"tracking.uri={uri}",
        f"inspect.log_dir={work / 'logs'}",
        "inspect.display=none",
        f"hydra.run.dir={work / 'out'}",
        f"hydra.sweep.dir={work / 'multirun'}",
    ]
    subprocess.run(
        [str(BIN / "physassist-eval"), *args, *common],
        cwd=work,
        check=True,
        timeout=3600,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _json(url: str, body: dict | None = None) -> dict:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def _dismiss(page) -> None:
    """Close what a first visit pops up (a tip, the assistant panel), as a user would."""
    for name in ("Got it", "Close"):
        for control in page.get_by_role("button", name=name, exact=True).all():
            if control.is_visible():
                control.click()
                page.wait_for_timeout(500)


def _settle(page, wait_for: str) -> None:
    page.get_by_text(wait_for, exact=False).first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(2500)  # charts and lazy cells settle
    _dismiss(page)


def _require(page, texts: list[str], screen: str) -> None:
    body = page.inner_text("body")
    missing = [t for t in texts if t not in body]
    if missing:
        raise NotShown(
            f"{screen}: does not show {missing} without choosing anything; not photographed"
        )


def _shoot(page, out: Path) -> None:
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
        eid = _json(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=physassist")[
            "experiment"
        ]["experiment_id"]
        runs = _json(f"{base}/api/2.0/mlflow/runs/search", {"experiment_ids": [eid]})["runs"]

        def tags(run: dict) -> dict[str, str]:
            return {t["key"]: t["value"] for t in run["data"]["tags"]}

        parent = next(r["info"] for r in runs if tags(r).get("physassist.kind") == "sweep")
        jobs = [
            r
            for r in runs
            if tags(r).get("physassist.sweep_id") and tags(r).get("physassist.kind") == "job"
        ]
        gold = next(r["info"] for r in jobs if r["info"]["run_name"].startswith("menu=gold"))
        scores = [
            f"{m['value']:g}"
            for r in runs
            for m in r["data"].get("metrics", [])
            if m["key"] == "mrs"
        ]
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_FLAGS[1:], timeout=WAIT_MS
            )
            page = browser.new_context(
                viewport={"width": 1500, "height": 860}
            ).new_page()  # a new, empty profile
            page.goto(f"{base}/", timeout=WAIT_MS)  # MLflow's home, as `mlflow ui` opens it
            page.get_by_role("link", name="physassist", exact=True).first.click(timeout=WAIT_MS)
            _settle(page, "Evaluation runs")
            page.get_by_text("Evaluation runs", exact=True).first.click()
            _settle(page, HEADLINE_COLUMNS[0])
            _require(page, [*HEADLINE_COLUMNS, *scores, parent["run_name"][:4]], "the run list")
            _shoot(page, DOCS / "mlflow_runs.png")
            page.goto(f"{base}/#/experiments/{eid}/runs/{parent['run_id']}", timeout=WAIT_MS)
            _settle(page, "mRS [95% CI] of each job")
            _require(
                page, ["menu=gold", "menu=off", "menu=on", "menu=scenario"], "the sweep's parent"
            )
            _shoot(page, DOCS / "mlflow_sweep.png")
            page.goto(f"{base}/#/experiments/{eid}/runs/{gold['run_id']}", timeout=WAIT_MS)
            _settle(page, "mrs_ci_low")
            _require(page, [gold["run_name"]], "a run's page")
            _shoot(page, DOCS / "mlflow_run.png")
            page.goto(f"{base}/#/experiments/{eid}/runs/{gold['run_id']}/traces", timeout=WAIT_MS)
            _settle(page, "T0 score")
            _shoot(page, DOCS / "mlflow_traces.png")
            browser.close()
    print(f"store kept in {work}")


if __name__ == "__main__":
    main()
