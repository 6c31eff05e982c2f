"""Evaluation over HTTP: throughput against an OpenAI-compatible server, and harness CPU.

The committed sample through the scripted OpenAI-compatible server of the tests
(``tests/fixtures_http.py``, the oracle policy: each turn's gold calls, then the gold answer)
running in its own process, every response delayed by a fixed ``--latency`` (200 ms), reached
through Inspect's generic OpenAI-API provider and the ``openai`` client over TCP, exactly as
``model=openai_compatible`` runs. For ``max_connections`` 1, 8 and 32 (1: one sample at a
time; otherwise every sample in flight, the connections being the limit) it reports the wall
time, the speed-up over 1 connection, and the eval process's CPU per turn (the harness: loop,
tools, HTTP client, scoring, log writing; the server's CPU is in the other process). A
warm-up eval of ``--warmup`` sessions runs first, so that no measured run pays the process's
one-time costs (lazy imports, first use of the store); its figures are reported apart.

    python benchmarks/eval_http.py [--latency 0.2] [--connections 1,8,32] [--limit N] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def serve(latency: float, queue: Any, stop: Any) -> None:
    """The scripted server (oracle policy) in this process until ``stop`` is set."""
    from fixtures_http import ScriptedServer, agent_policy

    from physassist.agents._common import sessions_by_key
    from physassist.agents.oracle import OracleAgent

    sessions_by_key("sample")
    with ScriptedServer({"oracle": agent_policy(OracleAgent())}, latency=latency) as server:
        queue.put(server.base_url)
        stop.wait()
        queue.put((len(server.log), time.process_time()))


def run(base_url: str, connections: int, limit: int | None, display: str = "none") -> dict[str, float]:
    from inspect_ai import eval
    from inspect_ai.model import get_model

    from physassist.gc_freeze import frozen_heap
    from physassist.results import turn_table
    from tasks.physassistbench import physassistbench

    task = physassistbench(dataset="sample", ehr_source="sample")
    model = get_model("openai-api/compatible/oracle", base_url=base_url, api_key="EMPTY", memoize=False)
    with tempfile.TemporaryDirectory() as logs:
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), time.process_time()
        with frozen_heap():  # as physassist-eval runs it
            [log] = eval(
                task, model=model, log_dir=logs, display=display, limit=limit,
                max_connections=connections, max_samples=1 if connections == 1 else None,
                fail_on_error=True, score_display=False, log_realtime=False,
            )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert log.status == "success", log.error
        turns = turn_table(log.location if log.samples is None else log)
    assert (turns["status"] == "scored").all() and (turns["score"] == 1.0).all(), "oracle must score 1"
    return {
        "connections": connections, "wall_s": wall, "cpu_s": cpu, "turns": len(turns),
        "sessions": turns["session_id"].nunique(), "cpu_ms_per_turn": 1000 * cpu / len(turns),
        "load_average_before": load,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--limit", type=int, default=None, help="first N sessions only")
    parser.add_argument("--display", default="none", help="Inspect display (none, log, plain)")
    parser.add_argument("--warmup", type=int, default=2, help="sessions of the unmeasured first eval (0: none)")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    queue, stop = ctx.Queue(), ctx.Event()
    server = ctx.Process(target=serve, args=(args.latency, queue, stop), daemon=True)
    server.start()
    base_url = queue.get(timeout=120)
    results, warmup = [], None
    try:
        if args.warmup:
            warmup = run(base_url, 8, args.warmup, args.display)
            print(f"warm-up ({args.warmup} sessions): {warmup['wall_s']:.1f} s wall, {warmup['cpu_s']:.1f} s CPU", flush=True)
        for connections in (int(c) for c in args.connections.split(",")):
            result = run(base_url, connections, args.limit, args.display)
            results.append(result)
            base = results[0]["wall_s"]
            print(
                f"max_connections={connections:>3}: {result['wall_s']:7.1f} s wall, "
                f"x{base / result['wall_s']:5.1f} vs 1, {result['cpu_ms_per_turn']:5.1f} ms CPU/turn "
                f"({result['turns']} turns, {result['sessions']} sessions; load {result['load_average_before']:.1f})",
                flush=True,
            )
    finally:
        stop.set()
        requests, server_cpu = queue.get(timeout=30)
        server.join(timeout=30)
    for result in results:
        result["speedup"] = results[0]["wall_s"] / result["wall_s"]
    summary = {
        "latency_s": args.latency, "display": args.display, "requests": requests, "server_cpu_s": server_cpu,
        "load_average": os.getloadavg(), "warmup": warmup, "runs": results,
    }
    print(f"{requests} chat requests served ({server_cpu:.1f} s server CPU); load average {os.getloadavg()[0]:.1f}")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1) + "\n")


if __name__ == "__main__":
    main()
