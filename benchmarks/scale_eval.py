"""The eval at scale beside the same eval on the sample: wall time, peak RSS of the process
tree, and the tool time per turn read from Inspect's log.

    python benchmarks/scale_eval.py --sessions SESSIONS_DIR --ehr SOURCE --model oracle --out DIR
    python benchmarks/scale_eval.py --model oracle --out DIR        # the sample (dataset=sample)

``SESSIONS_DIR`` comes from ``scale_sessions.py``. The eval runs as ``physassist-eval`` with
tracking off, in a child process measured by ``scale_run.measure``; the tool time of a turn is
the sum of the working time of its ``ToolEvent``s (Inspect records each tool call's start and
end), so per turn = the sum over all samples / the number of turns.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_run import measure  # noqa: E402


def tool_times(log_dir: Path) -> dict[str, Any]:
    from inspect_ai.event import ToolEvent
    from inspect_ai.log import read_eval_log

    (path,) = sorted(log_dir.glob("*.eval"))
    log = read_eval_log(str(path))
    calls = [
        e.working_time or 0.0
        for s in log.samples or []
        for e in s.events
        if isinstance(e, ToolEvent)
    ]
    turns = sum(len(s.metadata["task_types"]) for s in log.samples or [])  # one task per turn
    return {
        "samples": len(log.samples or []),
        "turns": turns,
        "tool_calls": len(calls),
        "tool_s_per_turn": round(sum(calls) / max(1, turns), 4),
        "tool_call_p50_ms": round(statistics.median(calls) * 1000, 2) if calls else None,
        "tool_call_max_ms": round(max(calls) * 1000, 1) if calls else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", type=Path, help="re-pointed sessions (default: the sample's)")
    ap.add_argument("--ehr", help="their EHR source or store")
    ap.add_argument("--model", default="oracle")
    ap.add_argument("--out", type=Path, required=True, help="working directory (logs go under it)")
    ap.add_argument("overrides", nargs="*", help="more physassist-eval overrides")
    args = ap.parse_args(argv)
    logs = args.out / "logs"
    shutil.rmtree(logs, ignore_errors=True)
    logs.mkdir(parents=True)
    data = (
        [
            "dataset=physassistbench",
            f"dataset.source={args.sessions}",
            f"dataset.ehr_source={args.ehr}",
        ]
        if args.sessions
        else ["dataset=sample"]
    )
    eval_cmd = str(Path(sys.executable).with_name("physassist-eval"))  # the one beside this Python
    cmd = [eval_cmd, *data, f"model={args.model}", "tracking.enabled=false",
           f"inspect.log_dir={logs}", *args.overrides]  # fmt: skip
    result = measure(cmd, output=args.out / "eval.out")
    result.update(tool_times(logs))
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
