"""Commands answer at once: importing a console script's module, and the answers that need no
evaluation (``--help``, ``--cfg job``, a config error), load none of the heavy libraries.

Inspect, MLflow, pandas and DuckDB cost seconds to import (``physassist-eval --help`` took
13-15 s on the loaded development machine when they came with it; benchmarks/README.md). Each
case runs in a fresh interpreter and reads ``sys.modules`` afterwards.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("inspect_ai", "mlflow", "pandas", "duckdb", "matplotlib")
#: The module of each console script (pyproject.toml [project.scripts]).
ENTRY_MODULES = ("physassist.cli.eval", "physassist.cli.report", "physassist.cli.rescore", "physassist.cli.label",
                 "physassist.cli.data", "physassist.cli.ehr", "generation.cli")

_RUN = """
import contextlib, io, json, sys
module, argv, heavy = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
import importlib
entry = importlib.import_module(module)
out, err, code = io.StringIO(), io.StringIO(), None
if argv is not None:
    sys.argv = [module, *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            entry.main()
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"loaded": [m for m in heavy if m in sys.modules], "code": code,
                  "out": out.getvalue(), "err": err.getvalue()}))
"""


def _run(module: str, argv: list[str] | None, heavy: tuple[str, ...] = HEAVY) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, module, json.dumps(argv), json.dumps(list(heavy))],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_entry_modules_loads_neither_inspect_nor_mlflow():
    for module in ENTRY_MODULES:
        heavy = ("inspect_ai", "mlflow", "pandas") if module == "physassist.cli.ehr" else HEAVY
        assert _run(module, None, heavy)["loaded"] == [], module


@pytest.mark.parametrize(
    ("module", "argv", "says"),
    [
        ("physassist.cli.eval", ["--help"], "== Judges"),
        ("physassist.cli.eval", ["--cfg", "job"], "tracking:"),
        ("physassist.cli.eval", ["inspect.max_samples=0"], "must be a positive integer"),
        ("physassist.cli.eval", ["model=openai"], "needs the environment variable"),
        ("physassist.cli.eval", ["dataset.source=/nonexistent/sessions"], "does not exist"),
        ("physassist.cli.rescore", ["--help"], "rescore"),
        ("generation.cli", ["--help"], "generate"),
        ("physassist.cli.report", ["--help"], "--tracking-uri"),
        ("physassist.cli.label", ["--help"], "draw"),
    ],
)
def test_answers_without_an_evaluation_load_no_heavy_library(module, argv, says):
    result = _run(module, argv)
    assert says in result["out"] + result["err"], result
    assert result["loaded"] == [], result
