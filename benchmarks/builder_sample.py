"""Benchmark the deterministic session builder.

Times ``build_sample`` (cohort generation + store build + 36 sessions; the issue asks for
under 2 minutes) and ``build_sessions`` on the MIMIC-IV demo when it is present, and
reports qualifying patients per scenario x tier.

    python benchmarks/builder_sample.py [--demo DIR] [--per-slot 3]
    # --demo: default $PHYSASSIST_MIMIC_DEMO (docs/data.md)

Builds into a temporary folder; prints a table and writes JSON (``--out``). Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from generation.builder import build_sample, build_sessions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    demo = os.environ.get("PHYSASSIST_MIMIC_DEMO")
    parser.add_argument(
        "--demo", default=demo, required=demo is None, help="the MIMIC-IV demo (docs/data.md)"
    )
    parser.add_argument("--per-slot", type=int, default=3)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    results: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        report = build_sample(root=Path(tmp) / "sample", seed=0)
        total = time.perf_counter() - started
        print(
            f"build_sample: {report.n_sessions} sessions, {total:.1f} s total "
            f"({report.seconds:.1f} s sessions incl. store build)"
        )
        results["build_sample"] = {
            "seconds": total,
            "session_seconds": report.seconds,
            "sessions": report.n_sessions,
            "qualifying": report.qualifying,
        }
        demo = Path(args.demo)
        if (demo / "hosp").is_dir():
            with tempfile.TemporaryDirectory() as cache:
                started = time.perf_counter()
                report = build_sessions(
                    demo, Path(tmp) / "demo", sessions_per_slot=args.per_slot, cache_dir=cache
                )
                total = time.perf_counter() - started
            print(f"\nMIMIC-IV demo ({total:.1f} s incl. store build):\n{report.summary()}")
            results["demo"] = {
                "seconds": total,
                "qualifying": report.qualifying,
                "built": report.built,
            }
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
