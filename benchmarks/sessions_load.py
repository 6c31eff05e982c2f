"""Time loading + validating a session set (the issue's budget: well under 2 s for ~40 sessions).

    python benchmarks/sessions_load.py [SOURCE] [--copies N]

Without SOURCE it builds a set of N x 5 sessions from the released-format test fixtures
(ids made unique) in a temporary directory. Prints the cold time (first load in this
process, imports excluded) and the median of repeated loads.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "released"


def replicate(out: Path, copies: int) -> Path:
    for path in FIXTURES.glob("*.jsonl"):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        lines = [
            json.dumps({**data, "id": f"copy{k}_{data['id']}"}, ensure_ascii=False)
            for k in range(copies)
            for data in records
        ]
        (out / path.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("source", nargs="?")
    parser.add_argument("--copies", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    t0 = time.perf_counter()
    from physassist.data import load_sessions

    imports = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        source = args.source or replicate(Path(tmp), args.copies)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            loaded = load_sessions(source)
            times.append(time.perf_counter() - start)
    print(
        f"{len(loaded.sessions)} sessions / {len(loaded.turns)} turns from "
        f"{args.source or 'fixtures x ' + str(args.copies)}"
    )
    print(
        f"imports {imports:.2f} s; first load {times[0]:.3f} s; median load "
        f"{statistics.median(times):.3f} s"
    )


if __name__ == "__main__":
    main()
