"""Time hostile tool calls: every tool, both semantics, arguments a model should never send.

Target: every call (``call_tool`` + rendering in all three modes) under 50 ms whatever the
input. The inputs are those of ``tests/ehr/test_faults_tools.py`` (which only guards at 0.5 s):
megabyte strings (ids, names, filters, parameter names), 100k keys, 100k-deep objects and
JSON text, 5,000-digit integers.

    python benchmarks/tool_hostile.py [--source sample] [--repeats 5]
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import time

from physassist.ehr.store import open_store
from physassist.ehr.tools import TOOL_NAMES, ToolContext, call_tool, render

MEGA = 1_000_000


def deep(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return value


def hostile(subject: int) -> dict[str, object]:
    return {
        "1 MB subject_id": {"subject_id": "9" * MEGA},
        "1 MB subject_id as JSON": json.dumps({"subject_id": "x" * MEGA}),
        "1 MB medication": {"subject_id": subject, "medication": "a" * MEGA},
        "1,000 open parentheses": {"subject_id": subject, "medication": "(" * 1000},
        "1 MB code": {"subject_id": subject, "code": "x" * MEGA},
        "1 MB parameter name": {"subject_id": subject, "k" * MEGA: 1},
        "100k keys": {"subject_id": subject, **{f"k{i}": i for i in range(100_000)}},
        "100k-deep JSON text": '{"code": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "100k-deep object": {"subject_id": subject, "code": deep(100_000)},
        "5,000-digit integer": '{"subject_id": ' + "9" * 5_000 + "}",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="sample")
    parser.add_argument("--subject", type=int, default=30000001)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    logging.disable(logging.ERROR)  # measured here: whether calls log errors is the test's job
    store = open_store(args.source)
    per_case: dict[str, list[float]] = {}
    all_ms: list[float] = []
    for semantics in ("strict", "compat"):
        ctx = ToolContext(store=store, subject_id=args.subject, semantics=semantics)
        call_tool(ctx, "Patient.read", {"subject_id": args.subject})
        for case, arguments in hostile(args.subject).items():
            for tool in TOOL_NAMES:
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    result = call_tool(ctx, tool, arguments)
                    for mode in ("compat", "full", "json"):
                        render(result, mode)
                    ms = (time.perf_counter() - t0) * 1000
                    all_ms.append(ms)
                    per_case.setdefault(f"{semantics} {case}", []).append(ms)
    for key, times in sorted(per_case.items(), key=lambda kv: -max(kv[1])):
        print(f"median {statistics.median(times):7.3f} ms  max {max(times):7.2f} ms  {key}")
    print(
        f"{len(all_ms)} calls: median {statistics.median(all_ms):.3f} ms, "
        f"max {max(all_ms):.2f} ms (target: every call < 50 ms)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
