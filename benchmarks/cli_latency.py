"""How long the commands that need no evaluation take: ``--help`` of every console script, a
config error, ``--cfg job`` and ``physassist-data validate sample``.

Each command runs ``--repeats`` times in a fresh process (the console script's ``main`` through
``python -c``, so a source tree given with ``PYTHONPATH`` is measured the same way as the
installed one), interleaved with ``python -c pass``; it prints the medians of the wall time and
of the process's CPU time (user + system: other work on a shared machine stretches the wall
time much more than the CPU), and the ratio of each to ``python -c pass`` in the same run.

    python benchmarks/cli_latency.py [--repeats 5] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

#: (label, module of the console script, arguments)
COMMANDS = [
    ("physassist-eval --help", "physassist.cli.eval", ["--help"]),
    ("physassist-eval --cfg job", "physassist.cli.eval", ["--cfg", "job"]),
    ("physassist-eval modle=oracle (config error)", "physassist.cli.eval", ["modle=oracle"]),
    (
        "physassist-eval inspect.max_samples=0 (config error)",
        "physassist.cli.eval",
        ["inspect.max_samples=0"],
    ),
    ("physassist-rescore --help", "physassist.cli.rescore", ["--help"]),
    ("physassist-generate --help", "generation.cli", ["--help"]),
    ("physassist-report --help", "physassist.cli.report", ["--help"]),
    ("physassist-data --help", "physassist.cli.data", ["--help"]),
    ("physassist-data validate sample", "physassist.cli.data", ["validate", "sample"]),
    ("physassist-ehr --help", "physassist.cli.ehr", ["--help"]),
]
RUN = (
    "import sys; from importlib import import_module; m = sys.argv[1]; sys.argv = sys.argv[1:]; "
    "sys.exit(import_module(m).main())"
)


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    env_note = os.environ.get("PYTHONPATH", "installed tree")
    base, rows = {"wall": [], "cpu": []}, {}
    for _ in range(args.repeats):
        for label, module, argv in COMMANDS:
            wall, cpu = timed([sys.executable, "-c", "pass"])
            base["wall"].append(wall)
            base["cpu"].append(cpu)
            wall, cpu = timed([sys.executable, "-c", RUN, module, *argv])
            rows.setdefault(label, {"wall": [], "cpu": []})
            rows[label]["wall"].append(wall)
            rows[label]["cpu"].append(cpu)
    pass_wall, pass_cpu = statistics.median(base["wall"]), statistics.median(base["cpu"])
    print(f"source: {env_note}; {args.repeats} repeats; load {os.getloadavg()[0]:.1f}")
    print(f"{'command':<56}{'wall s':>8}{'x pass':>8}{'CPU s':>8}{'x pass':>8}")
    print(f"{'python -c pass':<56}{pass_wall:>8.3f}{1:>8.1f}{pass_cpu:>8.3f}{1:>8.1f}")
    summary = {
        "python_pass": {"wall_s": pass_wall, "cpu_s": pass_cpu},
        "load_average": os.getloadavg(),
    }
    for label, values in rows.items():
        wall, cpu = statistics.median(values["wall"]), statistics.median(values["cpu"])
        print(
            f"{label:<56}{wall:>8.2f}{wall / pass_wall:>8.1f}"
            f"{cpu:>8.2f}{cpu / max(pass_cpu, 1e-3):>8.1f}"
        )
        summary[label] = {"wall_s": wall, "cpu_s": cpu}
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
