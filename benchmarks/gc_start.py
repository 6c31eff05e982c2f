"""The collector before a default ``physassist-eval``'s eval: collections and their CPU.

A command's process runs with a young generation of ``gc_freeze.YOUNG_THRESHOLD`` from where
it starts (``gc_freeze.command_start``). Each repeat runs the default command in a fresh
process, in a scratch directory, counting collections per generation and the CPU they take
(``gc.callbacks``) until the eval starts (the first ``frozen_heap``), in three modes measured
back to back:

* ``main``: as shipped, set where the command's ``main()`` starts (after its module's imports);
* ``process``: set as the process starts (what importing ``physassist.cli`` did before);
* ``never``: CPython's default thresholds throughout (until the eval's ``frozen_heap``).

One unmeasured run first builds the sample's store and the sessions' verdict, as a user's
first run does. Figures are medians over the repeats.

    python benchmarks/gc_start.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODES = ("main", "process", "never")

_RUN = """
import gc, json, sys, time
from contextlib import contextmanager
counts, spent, started = [0, 0, 0], [0.0], [0.0]

def count(phase, info):
    if phase == "start":
        started[0] = time.process_time()
    else:
        counts[info["generation"]] += 1
        spent[0] += time.process_time() - started[0]

gc.callbacks.append(count)
from physassist import gc_freeze
mode = sys.argv[1]
if mode == "process":
    gc_freeze.command_start()
elif mode == "never":
    gc_freeze.command_start = lambda: None
frozen, seen = gc_freeze.frozen_heap, []

@contextmanager
def measured():
    if not seen:
        seen.append(dict(young=counts[0], middle=counts[1], full=counts[2], cpu_s=spent[0]))
    with frozen():
        yield

gc_freeze.frozen_heap = measured
from physassist.cli.eval import main
sys.argv = ["physassist-eval", *sys.argv[2:]]
try:
    main()
finally:
    print("GC " + json.dumps(seen[0] if seen else None), file=sys.stderr)
"""


def run(mode: str, cwd: Path, overrides: list[str]) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", _RUN, mode, *overrides],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT), "PHYSASSIST_CACHE": str(cwd / "cache")},
    )
    line = next(x for x in reversed(proc.stderr.splitlines()) if x.startswith("GC "))
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(line[3:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("overrides", nargs="*", help="physassist-eval overrides (default: none)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        run("main", cwd, args.overrides)  # the store, the sessions' verdict, the MLflow store
        results: dict[str, list[dict]] = {mode: [] for mode in MODES}
        for _ in range(args.repeats):
            for mode in MODES:
                results[mode].append(run(mode, cwd, args.overrides))
    print(
        f"{'mode':<8} {'young':>6} {'middle':>6} {'full':>5} {'CPU s':>6}   (medians of "
        f"{args.repeats})"
    )
    for mode, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{mode:<8} {med['young']:>6.0f} {med['middle']:>6.0f} {med['full']:>5.0f} "
            f"{med['cpu_s']:>6.2f}"
        )


if __name__ == "__main__":
    main()
