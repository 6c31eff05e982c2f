"""What checking a source against its spec (``physassist/ehr/source_check.py``) costs a build.

Builds the store of each source (``build_store(..., force=True)`` into a scratch cache) and
times, inside the same builds, the parts that are the check: reading and checking every file's
header (``check_headers``), counting empty keys over each loaded table (``check_keys``) and
listing what the source lacks (``gaps``); the rest of the build is the load it guards. Then,
on a copy of the source's ``labevents`` whose last row has a value that does not parse, how
long the build takes to fail and name it (the error path reads that file again, as text).

    python benchmarks/source_check.py --source "$PHYSASSIST_MIMIC_DEMO" --cohort 100000 \
        [--repeat 3] [--no-failing] [--work-dir DIR] [--out results.json]

``--cohort N`` is the synthetic cohort of N subjects, generated once and kept (``cohorts.py``).
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cohorts import cohort

import physassist.ehr.store as store_module
from physassist.ehr.source_check import SourceTableError
from physassist.ehr.sources import detect_source
from physassist.ehr.store import build_store

PARTS = ("check_headers", "check_keys", "gaps")


def _timed(spent: dict[str, float], name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.perf_counter() - started

    return wrapper


def build_once(source: str, cache: Path) -> dict[str, float]:
    """One forced build: its wall time and the seconds spent in each part of the check."""
    spent: dict[str, float] = {}
    originals = {name: getattr(store_module, name) for name in PARTS}
    for name, function in originals.items():
        setattr(store_module, name, _timed(spent, name, function))
    try:
        started = time.perf_counter()
        build_store(source, cache_dir=cache, force=True)
        spent["build"] = time.perf_counter() - started
    finally:
        for name, function in originals.items():
            setattr(store_module, name, function)
    return spent


def failing_copy(source: str, scratch: Path) -> Path:
    """``source``'s labevents alone, with one more row at its end (a second gzip member) whose
    ``valuenum`` is text: the worst case, where the load reads the whole file before it stops
    and the error path then reads it again to count and name what is bad."""
    lab = detect_source(source).files["labevents"][0]
    target = scratch / "broken" / lab.rel
    target.parent.mkdir(parents=True)
    shutil.copyfile(lab.path, target)
    with gzip.open(lab.path, "rt", newline="") as raw:
        reader = csv.reader(raw)
        header, row = next(reader), next(reader)
    row[header.index("valuenum")] = "n/a"
    line = io.StringIO()
    csv.writer(line).writerow(row)
    with open(target, "ab") as out:
        out.write(gzip.compress(line.getvalue().encode()))
    return target.parent.parent


def measure(source: str, repeat: int, scratch: Path, failing: bool) -> dict[str, Any]:
    runs = [build_once(source, scratch / "cache") for _ in range(repeat)]
    med = {k: statistics.median(r.get(k, 0.0) for r in runs) for k in ("build", *PARTS)}
    check = sum(med[p] for p in PARTS)
    result = {
        "source": source,
        "repeat": repeat,
        **{f"{k}_s": round(v, 3) for k, v in med.items()},
        "check_s": round(check, 3),
        "check_share": round(check / med["build"], 4),
    }
    if not failing:
        return result
    broken = failing_copy(source, scratch)
    started = time.perf_counter()
    try:
        build_store(broken, cache_dir=scratch / "cache-broken", force=True)
        error = "built (no bad value written)"
    except SourceTableError as exc:
        error = str(exc)
    fail = time.perf_counter() - started
    return {**result, "failing_build_s": round(fail, 2), "failing_build_error": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", action="append", default=[], help="an EHR source (repeatable)")
    parser.add_argument(
        "--cohort",
        action="append",
        type=int,
        default=[],
        help="a synthetic cohort of N subjects, kept (cohorts.py)",
    )
    parser.add_argument("--repeat", type=int, default=3, help="forced builds per source (median)")
    parser.add_argument("--work-dir", default=None, help="scratch directory (default: a temp dir)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--no-failing", action="store_true", help="skip the failing build")
    args = parser.parse_args()
    if not args.source and not args.cohort:
        parser.error("give at least one --source or --cohort")
    for size in args.cohort:
        path, seconds = cohort(size)
        print(
            f"cohort of {size}: {path}"
            + (f" (generated in {seconds} s)" if seconds is not None else " (kept)")
        )
        args.source.append(str(path))
    import physassist.ehr.tools  # noqa: F401  - the tools' declarations, imported once, outside the timing

    with open("/proc/loadavg") as handle:
        print(f"load average: {handle.read().split()[0]}")
    results = []
    for i, source in enumerate(args.source):
        with tempfile.TemporaryDirectory(dir=args.work_dir) as scratch:
            result = measure(source, args.repeat, Path(scratch) / str(i), not args.no_failing)
        results.append(result)
        print(json.dumps(result))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
