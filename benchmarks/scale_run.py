"""Run a command and measure it as a whole process tree: wall time, CPU time, peak RSS (the
sum over the tree, sampled with psutil), and the peak size of a directory it writes into.

    python benchmarks/scale_run.py --disk CACHE_DIR [--kill-after S] [--json out.json] -- CMD ...

``physassist-ehr build SOURCE --cache-dir CACHE_DIR`` measured this way gives the build's
temporary disk (the ``.building`` file, its WAL and DuckDB's spill directory all live in the
cache directory). ``--kill-after S`` sends SIGKILL to the whole tree after S seconds, as a
crash half-way would, and reports what the cache directory holds afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil


def tree_size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += (
                    os.lstat(os.path.join(root, name)).st_blocks * 512
                )  # space used, not length
            except FileNotFoundError:
                pass
    return total


def measure(cmd: list[str], disk: Path | None = None, kill_after: float | None = None,
            every: float = 0.5, output: Path | None = None) -> dict[str, Any]:  # fmt: skip
    """Run ``cmd`` to its end (or kill it after ``kill_after`` seconds) and measure it; its
    stdout and stderr go to ``output`` if given."""
    disk_before = tree_size(disk) if disk else 0
    started = time.perf_counter()
    sink = open(output, "wb") if output else None  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, start_new_session=True, stdout=sink, stderr=sink)
    root = psutil.Process(proc.pid)
    peak_rss = peak_disk = 0
    cpu: dict[int, float] = {}
    killed = False
    while proc.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        rss = 0
        for p in procs:
            try:
                rss += p.memory_info().rss
                t = p.cpu_times()
                cpu[p.pid] = t.user + t.system + t.children_user + t.children_system
            except psutil.NoSuchProcess:
                pass
        peak_rss = max(peak_rss, rss)
        if disk:
            peak_disk = max(peak_disk, tree_size(disk) - disk_before)
        if kill_after is not None and time.perf_counter() - started > kill_after:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
            proc.wait()
            break
        time.sleep(every)
    code = proc.wait()
    if sink:
        sink.close()
    res = psutil.Process().cpu_times()
    wall = time.perf_counter() - started
    out = {
        "cmd": cmd, "exit": code, "killed": killed, "wall_s": round(wall, 1),
        # CPU: the children's own accounting once reaped (covers processes gone between samples)
        "cpu_s": round(max(sum(cpu.values()), res.children_user + res.children_system), 1),
        "peak_rss_mib": round(peak_rss / 2**20), "load_avg_1m": round(os.getloadavg()[0], 1),
    }  # fmt: skip
    if disk:
        out["peak_disk_mib"] = round(peak_disk / 2**20)
        out["disk_after"] = (
            {p.name: p.stat().st_size for p in sorted(disk.iterdir())} if disk.is_dir() else {}
        )
    return out


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--disk", type=Path, help="directory whose growth to measure")
    ap.add_argument("--kill-after", type=float, help="SIGKILL the tree after this many seconds")
    ap.add_argument("--json", type=Path, help="append the result as a JSON line")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    result = measure(cmd, args.disk, args.kill_after)
    print(json.dumps(result), flush=True)
    if args.json:
        with args.json.open("a") as handle:
            handle.write(json.dumps(result) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
