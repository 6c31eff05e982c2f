"""Cold tool calls and compat's first call per table on a big store (``mimic_scale.py``).

    python benchmarks/scale_calls.py STORE.duckdb [--subjects 500] [--largest 20] \
        [--out results.json]

* **cold calls**: for every read tool in both semantics, a fresh ``EHRStore`` (empty subject
  cache, no chart opened) and one call per subject: ``--subjects`` random subjects plus the
  ``--largest`` subjects with the most lab + chart rows, so nothing of a subject's chart is in
  the process's memory when its call comes (the OS page cache is not dropped: the machine is
  shared). Arguments as ``ehr_tools.make_call`` makes them (a stay of the subject, its
  discharge date as ``current_date``, common lab names). Reports p50 / p99 / max per tool, and
  the largest subjects' own median and max.
* **compat's first call per table**: a fresh process per case opens the store and times
  ``_TableKinds.of`` for each table compat reads, with ``<store>.compat-kinds`` absent (the
  table is measured and the file written) and then present (read from the file).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ehr_tools import make_call, run_ours, subject_facts  # noqa: E402

from physassist.ehr.store import EHRStore  # noqa: E402
from physassist.ehr.tools import compat_kinds_file  # noqa: E402
from physassist.ehr.tools.names import EHR_READ_TOOLS  # noqa: E402

KINDS = """
import json, sys, time
from physassist.ehr.store import EHRStore
from physassist.ehr.tools.compat_frames import _TableKinds
from physassist.ehr.tools.registry import COLUMNS
store = EHRStore(sys.argv[1])
out = {}
for table, columns in COLUMNS.items():
    if store.has_rows(table):
        wall, cpu = time.perf_counter(), time.process_time()
        _TableKinds.of(store, table, columns)
        out[table] = {"rows": store.row_counts()[table],
                      "wall_s": round(time.perf_counter() - wall, 3),
                      "cpu_s": round(time.process_time() - cpu, 3)}
print(json.dumps(out))
"""


def pick_subjects(store: EHRStore, n: int, largest: int, seed: int) -> tuple[list[int], list[int]]:
    """``n`` random subjects and the ``largest`` with the most lab + chart rows."""
    every = [s for (s,) in store.cursor().execute("SELECT subject_id FROM patients").fetchall()]
    big = [
        s
        for (s,) in store.cursor()
        .execute(
            "SELECT subject_id FROM (SELECT subject_id FROM labevents UNION ALL "
            "SELECT subject_id FROM chartevents) GROUP BY 1 ORDER BY count(*) DESC LIMIT ?",
            [largest],
        )
        .fetchall()
    ]
    rest = sorted(set(every) - set(big))
    return random.Random(seed).sample(rest, min(n + 1, len(rest))), big  # + 1 to warm up


def chart_rows(store: EHRStore, subjects: list[int]) -> dict[int, int]:
    cur = store.cursor()
    return {
        s: cur.execute(
            "SELECT (SELECT count(*) FROM labevents WHERE subject_id = $1) "
            "+ (SELECT count(*) FROM chartevents WHERE subject_id = $1)",
            [s],
        ).fetchone()[0]
        for s in subjects
    }


def ms(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50_ms": round(statistics.median(ordered), 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))], 2),
        "max_ms": round(ordered[-1], 2),
    }


def cold_calls(
    path: Path,
    semantics: str,
    random_subjects: list[int],
    big: list[int],
    seed: int,
    tools: list[str],
) -> dict[str, Any]:
    rng = random.Random(seed)
    *random_subjects, spare = random_subjects  # the spare warms each process up, unmeasured
    subjects = random_subjects + big
    with EHRStore(path) as store:
        facts = subject_facts(store, [*subjects, spare])
    out: dict[str, Any] = {}
    for tool in tools:
        with EHRStore(path) as store:
            # once per process (dictionaries; compat's kinds), measured apart: a throwaway subject
            first = run_ours(store, make_call(rng, spare, facts[spare], tool), semantics)[0]
            measured = {
                s: run_ours(store, make_call(rng, s, facts[s], tool), semantics) for s in subjects
            }
        times = {s: wall for s, (wall, _) in measured.items()}
        cpu = ms([c for _, c in measured.values()])
        out[tool] = {
            "first_in_process_ms": round(first, 1),
            **ms(list(times.values())),
            "cpu_p50_ms": cpu["p50_ms"],
            "cpu_p99_ms": cpu["p99_ms"],
            "random_p99_ms": ms([times[s] for s in random_subjects])["p99_ms"],
            "largest_p50_ms": round(statistics.median(times[s] for s in big), 2),
            "largest_max_ms": round(max(times[s] for s in big), 2),
            "largest_cpu_p50_ms": round(statistics.median(measured[s][1] for s in big), 2),
            "largest_cpu_max_ms": round(max(measured[s][1] for s in big), 2),
        }
        print(f"{semantics:6s} {tool:34s} {json.dumps(out[tool])}", flush=True)
    return out


def compat_first_calls(path: Path) -> dict[str, Any]:
    """Per table, a fresh process's ``_TableKinds.of``: file absent (measured), then present."""
    compat_kinds_file.path_for(path).unlink(missing_ok=True)
    out = {}
    for case in ("absent", "present"):
        run = subprocess.run(
            [sys.executable, "-c", KINDS, str(path)], capture_output=True, text=True, check=True
        )
        out[case] = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"compat kinds file {case}: {json.dumps(out[case])}", flush=True)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("store", type=Path, help="a built .duckdb store")
    ap.add_argument("--subjects", type=int, default=500)
    ap.add_argument("--largest", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--semantics", nargs="+", default=["strict", "compat"])
    ap.add_argument("--tools", nargs="+", default=list(EHR_READ_TOOLS), choices=EHR_READ_TOOLS)
    ap.add_argument("--skip-kinds", action="store_true", help="skip compat's first call per table")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    started = time.perf_counter()
    with EHRStore(args.store) as store:
        random_subjects, big = pick_subjects(store, args.subjects, args.largest, args.seed)
        sizes = chart_rows(store, big)
        rows = store.row_counts()
    print(f"largest charts (lab + chart rows): {sorted(sizes.values(), reverse=True)}", flush=True)
    result: dict[str, Any] = {"store": str(args.store), "rows": rows, "largest_chart_rows": sizes}
    if not args.skip_kinds:
        result["compat_first_call_per_table"] = compat_first_calls(args.store)
    result["cold_calls"] = {
        s: cold_calls(args.store, s, random_subjects, big, args.seed, args.tools)
        for s in args.semantics
    }
    result["seconds"] = round(time.perf_counter() - started, 1)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
