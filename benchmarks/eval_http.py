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

``--latency`` takes several values (one server per latency, the runs of each in turn).
``--sequential-budget S`` bounds each 1-connection run to about S seconds of latency: the first
N sessions with N x 8 requests x latency <= S (at 2 s per response the whole sample takes ~10
min one request at a time; at 200 ms it fits). The speed-up is taken per chat request,
(wall / requests at 1 connection) / (wall / requests at k): over the same sessions it is the
ratio of the wall times; over fewer, it also carries their mix and the eval's fixed cost
(~1 s of CPU, ~1 % of a 2 s-latency request budget). Next to each speed-up the script prints the
bound CPU sets on one event loop: (latency + CPU per request at 1) / max(CPU per request at k,
latency / k); a run near its bound is CPU-bound, not latency-bound. The lead's re-run on an
idle machine (~5-6 min):

    python benchmarks/eval_http.py --latency 0.2,2 --connections 1,32 --sequential-budget 240 \
        --out r.json

    python benchmarks/eval_http.py [--latency 0.2] [--connections 1,8,32] [--limit N] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
REQUESTS_PER_SESSION = 8  # the oracle on the sample: 288 chat requests for 36 sessions
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


def project_max_samples() -> int | None:
    """``inspect.max_samples`` as ``physassist-eval`` runs it with no overrides (conf/inspect)."""
    from omegaconf import OmegaConf

    return OmegaConf.load(ROOT / "conf" / "inspect" / "default.yaml").max_samples


@contextmanager
def peak_use(every_s: float = 0.1):
    """The process's peak resident memory (MB) and open file descriptors while the block runs,
    sampled every ``every_s`` seconds from /proc (what the sessions in flight hold)."""
    peak = {"rss_mb": 0.0, "fds": 0}
    done = threading.Event()

    def sample() -> None:
        while True:
            rss_kb = next(
                int(line.split()[1])
                for line in Path("/proc/self/status").read_text().splitlines()
                if line.startswith("VmRSS:")
            )
            peak["rss_mb"] = max(peak["rss_mb"], rss_kb / 1024)
            peak["fds"] = max(peak["fds"], len(os.listdir("/proc/self/fd")))
            if done.wait(every_s):
                return

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield peak
    finally:
        done.set()
        thread.join()


def run(
    base_url: str,
    connections: int,
    limit: int | None,
    display: str = "none",
    max_samples: int | None = None,
    epochs: int = 1,
) -> dict[str, float]:
    from inspect_ai import eval
    from inspect_ai.model import get_model

    from physassist.gc_freeze import frozen_heap
    from physassist.results import read_log, turn_table
    from tasks.physassistbench import physassistbench

    task = physassistbench(dataset="sample", ehr_source="sample")
    model = get_model(
        "openai-api/compatible/oracle", base_url=base_url, api_key="EMPTY", memoize=False
    )
    with tempfile.TemporaryDirectory() as logs:
        load = os.getloadavg()[0]
        started, cpu = time.perf_counter(), time.process_time()
        with frozen_heap(), peak_use() as peak:  # as physassist-eval runs it
            [log] = eval(
                task,
                model=model,
                log_dir=logs,
                display=display,
                limit=limit,
                epochs=epochs,
                max_connections=connections,
                max_samples=1 if connections == 1 else max_samples,
                fail_on_error=True,
                score_display=False,
                log_realtime=False,
            )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert log.status == "success", log.error
        log = read_log(log.location if log.samples is None else log)
        requests = sum(
            1 for sample in log.samples for event in sample.events if event.event == "model"
        )
        turns = turn_table(log)
    assert (turns["status"] == "scored").all() and (turns["score"] == 1.0).all(), (
        "oracle must score 1"
    )
    return {
        "connections": connections,
        "wall_s": wall,
        "cpu_s": cpu,
        "turns": len(turns),
        "requests": requests,
        "sessions": turns["session_id"].nunique(),
        "cpu_ms_per_turn": 1000 * cpu / len(turns),
        "cpu_ms_per_request": 1000 * cpu / requests,
        "wall_s_per_request": wall / requests,
        "load_average_before": load,
        "max_samples": 1 if connections == 1 else max_samples,
        "peak_rss_mb": peak["rss_mb"],
        "peak_fds": peak["fds"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", default="0.2", help="seconds per response; several: 0.2,2")
    parser.add_argument("--connections", default="1,8,32")
    parser.add_argument("--limit", type=int, default=None, help="first N sessions only")
    parser.add_argument(
        "--sequential-budget",
        type=float,
        default=None,
        help="seconds of latency a 1-connection run may take (first sessions only)",
    )
    parser.add_argument("--display", default="none", help="Inspect display (none, log, plain)")
    parser.add_argument(
        "--max-samples",
        type=int,
        default=project_max_samples(),
        help="sessions in flight with >1 connection (default: the project's, conf/inspect; "
        "0: Inspect's, = connections)",
    )
    parser.add_argument(
        "--epochs", type=int, default=1, help="epochs (more sessions than the sample's 36)"
    )
    parser.add_argument(
        "--warmup", type=int, default=2, help="sessions of the unmeasured first eval (0: none)"
    )
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    summaries, warmup = [], None
    for latency in (float(x) for x in args.latency.split(",")):
        queue, stop = ctx.Queue(), ctx.Event()
        server = ctx.Process(target=serve, args=(latency, queue, stop), daemon=True)
        server.start()
        base_url = queue.get(timeout=120)
        results = []
        try:
            if args.warmup and warmup is None:
                warmup = run(base_url, 8, args.warmup, args.display)
                print(
                    f"warm-up ({args.warmup} sessions): {warmup['wall_s']:.1f} s wall, "
                    f"{warmup['cpu_s']:.1f} s CPU",
                    flush=True,
                )
            for connections in (int(c) for c in args.connections.split(",")):
                limit = args.limit
                if connections == 1 and args.sequential_budget and latency > 0:
                    fit = max(1, int(args.sequential_budget / (latency * REQUESTS_PER_SESSION)))
                    limit = min(fit, limit) if limit else fit
                result = run(
                    base_url,
                    connections,
                    limit,
                    args.display,
                    args.max_samples or None,
                    args.epochs,
                )
                results.append(result)
                first = results[0]
                result["speedup"] = first["wall_s_per_request"] / result["wall_s_per_request"]
                result["cpu_bound"] = (latency + first["cpu_ms_per_request"] / 1000) / max(
                    result["cpu_ms_per_request"] / 1000, latency / connections
                )
                print(
                    f"latency {latency:g} s, max_connections={connections:>3}: "
                    f"{result['wall_s']:7.1f} s wall, x{result['speedup']:5.1f} vs 1 per request "
                    f"(CPU bound x{result['cpu_bound']:.1f}), {result['cpu_ms_per_turn']:5.1f} ms "
                    f"CPU/turn, {result['cpu_ms_per_request']:5.1f} ms CPU/request "
                    f"({result['requests']} requests, {result['turns']} turns, "
                    f"{result['sessions']} sessions, max_samples={result['max_samples']}; peak "
                    f"{result['peak_rss_mb']:.0f} MB, {result['peak_fds']} fds; load "
                    f"{result['load_average_before']:.1f})",
                    flush=True,
                )
        finally:
            stop.set()
            requests, server_cpu = queue.get(timeout=30)
            server.join(timeout=30)
        summaries.append(
            {
                "latency_s": latency,
                "requests": requests,
                "server_cpu_s": server_cpu,
                "runs": results,
            }
        )
        print(
            f"{requests} chat requests served ({server_cpu:.1f} s server CPU); load average "
            f"{os.getloadavg()[0]:.1f}"
        )
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "display": args.display,
                    "load_average": os.getloadavg(),
                    "warmup": warmup,
                    "latencies": summaries,
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
