"""Benchmark the synthetic cohort generator: wall time, rows and bytes per cohort size.

    python benchmarks/synth_cohort.py --sizes 1000 10000 100000 --out /path/to/scratch \
        [--json results.json]

Each size is generated into ``<out>/synth_<n>`` (kept, so store benchmarks can reuse it) with the
generator's defaults (automatic workers and gzip level); prints one line per size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from physassist.synth import generate_cohort  # noqa: E402


def du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None, help="append results as JSON lines")
    args = ap.parse_args()
    for n in args.sizes:
        target = args.out / f"synth_{n}"
        t0 = time.perf_counter()
        cpu0 = os.times()
        report = generate_cohort(target, n, seed=args.seed, workers=args.workers)
        wall = time.perf_counter() - t0
        cpu1 = os.times()
        cpu = (
            (cpu1.user - cpu0.user)
            + (cpu1.system - cpu0.system)
            + (cpu1.children_user - cpu0.children_user)
            + (cpu1.children_system - cpu0.children_system)
        )
        res = {
            "subjects": n,
            "seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1),
            "labevents": report.rows["labevents"],
            "emar": report.rows["emar"],
            "chartevents": report.rows["chartevents"],
            "prescriptions": report.rows["prescriptions"],
            "bytes": du(target),
            "load_avg_1m": round(os.getloadavg()[0], 1),
            "cpus": os.cpu_count(),
        }
        print(json.dumps(res), flush=True)
        if args.json:
            with args.json.open("a") as fh:
                fh.write(json.dumps(res) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
