"""compat's first call on each table: measuring the whole-table kinds vs reading them from
beside the store.

Each run is a fresh process that opens the store and gets the kinds of every table compat
reads. The first run measures them and writes ``<store>.compat-kinds``; the later ones read
that file.

    python benchmarks/compat_kinds.py [SOURCE ...]
    # default: the sample; e.g. "$PHYSASSIST_MIMIC_DEMO"
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

ONE = """
import json, sys, time
from physassist.ehr.store import open_store
from physassist.ehr.tools.compat_frames import _TableKinds
from physassist.ehr.tools.registry import COLUMNS
store = open_store(sys.argv[1])
wall, cpu, rows = time.perf_counter(), time.process_time(), 0
for table, columns in COLUMNS.items():
    if store.has_rows(table):
        _TableKinds.of(store, table, columns)
        rows += store.row_counts()[table]
print(json.dumps({"rows": rows, "wall": time.perf_counter() - wall,
                  "cpu": time.process_time() - cpu}))
"""


def run(source: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", ONE, source], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    from physassist.ehr.store import build_store
    from physassist.ehr.tools import compat_kinds_file

    with open("/proc/loadavg") as handle:
        print(f"load average: {handle.read().split()[0]}")
    for source in sys.argv[1:] or ["sample"]:
        kept = compat_kinds_file.path_for(build_store(source))
        kept.unlink(missing_ok=True)
        started = time.perf_counter()
        first, *later = (run(source) for _ in range(3))
        reads = ", ".join(f"{r['cpu'] * 1000:.1f}" for r in later)
        print(
            f"{source}: {first['rows']:,d} rows; measured {first['cpu']:.3f} s CPU "
            f"({first['wall']:.3f} s wall), read {reads} ms CPU; file {kept.stat().st_size:,d} "
            f"bytes; {time.perf_counter() - started:.0f} s in all"
        )


if __name__ == "__main__":
    main()
