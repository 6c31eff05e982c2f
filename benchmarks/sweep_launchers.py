"""A 4-job sweep (model x query, one session each) under each launcher, against running the four
jobs one by one as separate commands: wall time and per-job overhead.

    python benchmarks/sweep_launchers.py  # one_by_one, basic, joblib, submitit_local, ray
    python benchmarks/sweep_launchers.py --launchers joblib,ray --limit 2

Every variant logs to its own fresh SQLite store (a parent and four children, or four runs), in
the same run of this script, so the ratios compare like with like. Launchers whose package is
not installed are reported as skipped.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
JOBS = [
    ("oracle", "implicit"),
    ("oracle", "explicit"),
    ("baseline", "implicit"),
    ("baseline", "explicit"),
]
NEEDS = {"submitit_local": "hydra_plugins.hydra_submitit_launcher", "ray": "ray"}
EXTRA = {"joblib": ["hydra.launcher.n_jobs=2"], "ray": ["+hydra.launcher.init.num_cpus=2"]}


def _run(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(
        [str(BIN / "physassist-eval"), *args], cwd=cwd, capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise SystemExit(f"failed: physassist-eval {' '.join(args)}\n{proc.stderr[-2000:]}")
    return time.perf_counter() - start


def measure(variant: str, limit: int, root: Path) -> float:
    work = root / variant
    work.mkdir()
    common = [
        f"inspect.limit={limit}",
        "inspect.display=none",
        f"tracking.uri=sqlite:///{work / 'mlflow.db'}",
        f"inspect.log_dir={work / 'logs'}",
        f"hydra.run.dir={work / 'out'}",
        f"hydra.sweep.dir={work / 'multirun'}",
    ]
    if variant == "one_by_one":
        return sum(_run([f"model={m}", f"query={q}", *common], work) for m, q in JOBS)
    launcher = [] if variant == "basic" else [f"hydra/launcher={variant}", *EXTRA.get(variant, [])]
    return _run(
        ["-m", *launcher, "model=oracle,baseline", "query=implicit,explicit", *common], work
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--launchers", default="one_by_one,basic,joblib,submitit_local,ray")
    parser.add_argument("--limit", type=int, default=1, help="sessions per job")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    results: dict[str, float | str] = {}
    with tempfile.TemporaryDirectory(prefix="physassist-bench-") as tmp:
        for variant in args.launchers.split(","):
            module = NEEDS.get(variant)
            if module and importlib.util.find_spec(module) is None:
                results[variant] = "skipped (not installed)"
                continue
            results[variant] = measure(variant, args.limit, Path(tmp))
            print(f"{variant:15s} {results[variant]:7.1f} s", flush=True)
    base = results.get("one_by_one")
    print(
        f"\n{'variant':15s} {'wall s':>8s} {'s/job':>7s} {'vs one by one':>14s} "
        f"{'overhead s/job':>15s}"
    )
    for variant, wall in results.items():
        if isinstance(wall, str):
            print(f"{variant:15s} {wall}")
            continue
        ratio = f"{wall / base:.2f}x" if isinstance(base, float) else "-"
        over = f"{(wall - base) / len(JOBS):+.1f}" if isinstance(base, float) else "-"
        print(f"{variant:15s} {wall:8.1f} {wall / len(JOBS):7.1f} {ratio:>14s} {over:>15s}")
    print(
        f"\nreproduce: python benchmarks/sweep_launchers.py --launchers {args.launchers} --limit "
        f"{args.limit}"
    )
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
