"""The harness's own share of a model call, against a same-size minimal Inspect task.

Both run in one process against the scripted OpenAI-compatible server of the tests
(``tests/fixtures_http.py``, in its own process, no latency), through Inspect's
``openai-api/compatible`` provider and the ``openai`` client, with no display as
``physassist-eval`` runs it (``staging.quiet_display``):

* **physassistbench**: the committed sample (36 sessions x 4 turns), the oracle policy (each
  turn's gold calls, then the gold answer), strict tools, rules judge; ``physassist-eval``'s
  options (``log_realtime=False``, ``score_display=False``, inside ``frozen_heap``, Inspect's
  ``log`` display held back), no MLflow;
* **baseline**: a minimal task with the same sessions and turns: the turn's question, the
  project's own 18 tool schemas (``physassist.ehr.tools.tool_schemas``, the request size), a
  tool that answers with a text of the mean size the physassistbench run's tool results had,
  and Inspect's ``generate`` loop; the server's ``bare`` policy calls the same number of tools
  per turn as the oracle did on average (rounded per turn), then answers.

* **tracked** (``--tracked``): physassistbench as ``physassist-eval`` tracks it: a tracking agent
  (``physassist.tracking.agent``, its own process) has claimed a run in a scratch SQLite store and
  writes each session's trace as it ends (Inspect's sample-end hook hands it over,
  ``trace_stream.Feed``); the agent's CPU during the eval is reported beside the run's.

Each run's process CPU over its model calls (as the server counted them) is the CPU per call;
the ratio physassistbench / baseline is the harness's own share on top of what Inspect and the
client cost for requests of this size. Runs alternate, ``--repeats`` times, after a warm-up of
each; medians. MLflow's fixed cost per run comes on top (``eval_phases.py``: the waits for the
tracking agent in a default run).

    python benchmarks/eval_harness_share.py [--repeats 3] [--limit N] [--tracked] [--out f.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def bare_policy(body: dict[str, Any]) -> dict[str, Any]:
    """Call ``Observation__search`` as often as the turn's first user message asks
    (``[calls=N]``), then answer."""
    messages = body["messages"]
    asked = next(m for m in reversed(messages) if m["role"] == "user")
    wanted = int(str(asked["content"]).rsplit("[calls=", 1)[-1].split("]")[0])
    done = 0
    for m in reversed(messages):
        if m["role"] == "user":
            break
        done += m["role"] == "tool"
    if done < wanted:
        return {
            "content": "",
            "tool_calls": [("Observation__search", {"subject_id": 1, "code": "Creatinine"})],
            "usage": (1000, 20),
        }
    return {"content": "The creatinine is stable.", "tool_calls": [], "usage": (1000, 20)}


def serve(queue: Any, stop: Any, counts: Any) -> None:
    from fixtures_http import ScriptedServer, agent_policy

    from physassist.agents._common import sessions_by_key
    from physassist.agents.oracle import OracleAgent

    sessions_by_key("sample")
    with ScriptedServer({"oracle": agent_policy(OracleAgent()), "bare": bare_policy}) as server:
        queue.put(server.base_url)
        while not stop.is_set():
            if not counts.empty():
                counts.get()
                queue.put(len(server.served()))
            time.sleep(0.01)


def baseline_task(calls_per_turn: dict[tuple[str, int], int], result_chars: int):
    """The minimal task: one sample per session of ``calls_per_turn``, four turns each."""
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ChatMessageUser
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.tool import ToolDef

    from physassist.ehr.tools import to_api_name, tool_schemas
    from physassist.ehr.tools.schemas import SCHEMAS

    text = "x" * result_chars
    schemas = [
        s["function"]
        for s in tool_schemas()
        if SCHEMAS[s["function"]["name"]].group in ("read", "patient", "write")
    ]

    def make(fn: dict[str, Any]) -> ToolDef:
        async def run(**kwargs: Any) -> str:
            return text

        from inspect_ai.tool import ToolParams

        return ToolDef(
            run,
            name=to_api_name(fn["name"]),
            description=fn["description"],
            parameters=ToolParams.model_validate(fn["parameters"]),
        )

    tools = [make(fn) for fn in schemas]
    ids = sorted({key for key, _ in calls_per_turn})
    samples = [
        Sample(
            id=key,
            input="session",
            metadata={"calls": [calls_per_turn.get((key, t), 1) for t in range(4)]},
        )
        for key in ids
    ]

    @solver
    def turns():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            state.tools = tools
            state.messages = []
            for turn, calls in enumerate(state.metadata["calls"]):
                state.messages.append(ChatMessageUser(content=f"Question {turn}. [calls={calls}]"))
                state = await generate(state, tool_calls="loop")
            return state

        return solve

    return Task(dataset=MemoryDataset(samples), solver=turns(), name="baseline")


def run(
    task, model_name: str, base_url: str, queue: Any, counts: Any, tracked: bool = False
) -> dict[str, Any]:
    from inspect_ai import eval
    from inspect_ai.log import read_eval_log
    from inspect_ai.model import get_model

    from physassist.gc_freeze import frozen_heap
    from physassist.staging import quiet_display
    from physassist.tracking.trace_stream import streaming

    counts.put(1)
    before = queue.get(timeout=60)
    model = get_model(
        f"openai-api/compatible/{model_name}", base_url=base_url, api_key="EMPTY", memoize=False
    )
    with tempfile.TemporaryDirectory() as logs:
        agent, feed, run_id = _tracking(logs) if tracked else (None, None, None)
        agent_cpu = _cpu(agent)
        cpu = time.process_time()
        with frozen_heap(), quiet_display({"display": "none"}) as shown, streaming(feed):
            [log] = eval(
                task,
                model=model,
                log_dir=logs,
                display=shown["display"],
                max_connections=8,
                fail_on_error=True,
                score_display=False,
                log_realtime=False,
            )
        cpu = time.process_time() - cpu
        agent_cpu = _cpu(agent) - agent_cpu
        if agent is not None:
            agent.call("end", run_id, "KILLED", "benchmark over")
            agent.close()
        assert log.status == "success", log.error
        log = read_eval_log(log.location)  # while the file is there (not measured)
    counts.put(1)
    calls = queue.get(timeout=60) - before
    return {
        "cpu_s": cpu,
        "calls": calls,
        "cpu_ms_per_call": 1000 * cpu / calls,
        "log": log,
        "agent_cpu_ms_per_call": 1000 * agent_cpu / calls,
    }


def _tracking(logs: str):
    """A tracking agent holding a run of a scratch store, fed each session as it ends."""
    from physassist.experiment import TrackingSettings
    from physassist.tracking.agent import Agent
    from physassist.tracking.trace_stream import Feed

    agent = Agent.start()
    agent.call(
        "open",
        TrackingSettings(
            enabled=True, uri=f"sqlite:///{logs}/mlflow.db", experiment="share", retries=8
        ),
    )
    run_id = agent.call("claim", "share", {}, None, None).run_id
    agent.post("stream_to", run_id, 2000)
    agent.call("hold", run_id)  # answered: the agent is ready, its warm-up imports started
    time.sleep(3)  # and done: not counted in the eval's window
    return agent, Feed(agent), run_id


def _cpu(agent) -> float:
    """The agent process's CPU seconds so far (0 without one)."""
    if agent is None:
        return 0.0
    import psutil

    times = psutil.Process(agent._proc.pid).cpu_times()
    return times.user + times.system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--tracked", action="store_true", help="also physassistbench with its tracking agent"
    )
    args = parser.parse_args()
    ctx = multiprocessing.get_context("spawn")
    queue, stop, counts = ctx.Queue(), ctx.Event(), ctx.Queue()
    server = ctx.Process(target=serve, args=(queue, stop, counts), daemon=True)
    server.start()
    base_url = queue.get(timeout=300)
    from physassist.turn_records import TURNS_KEY
    from tasks.physassistbench import physassistbench

    bench = physassistbench(dataset="sample", ehr_source="sample")
    if args.limit:
        bench.dataset = bench.dataset[: args.limit]
    log = run(bench, "oracle", base_url, queue, counts)["log"]  # warm-up; it also gives the sizes
    calls, sizes = {}, []
    for sample in log.samples:
        for record in sample.store[TURNS_KEY]:
            made = [c for c in record.get("calls") or [] if c.get("name") != "prepare_to_answer"]
            calls[(str(sample.id), int(record["turn"]))] = len(made)
            sizes += [len(str(c.get("text") or "")) for c in made]
    result_chars = int(statistics.mean(sizes)) if sizes else 1000
    base = baseline_task(calls, result_chars)
    run(base, "bare", base_url, queue, counts)  # warm-up
    arms = [("physassistbench", bench, "oracle", False), ("baseline", base, "bare", False)]
    if args.tracked:
        arms.append(("tracked", bench, "oracle", True))
    results: dict[str, list[dict[str, float]]] = {name: [] for name, *_ in arms}
    for i in range(args.repeats):
        for name, task, model, tracked in arms:
            r = run(task, model, base_url, queue, counts, tracked)
            r.pop("log")
            results[name].append(r)
            agent = f" (+ agent {r['agent_cpu_ms_per_call']:.1f} ms/call)" if tracked else ""
            print(
                f"repeat {i + 1} {name:<16} {r['calls']:>4} calls {r['cpu_s']:6.2f} s CPU "
                f"{r['cpu_ms_per_call']:6.1f} ms/call{agent}; load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
    stop.set()
    med = {
        name: statistics.median(r["cpu_ms_per_call"] for r in rs) for name, rs in results.items()
    }
    print(
        f"mean tool result {result_chars} chars; medians: physassistbench "
        f"{med['physassistbench']:.1f} ms/call, baseline {med['baseline']:.1f} ms/call, ratio "
        f"{med['physassistbench'] / med['baseline']:.2f}"
    )
    if args.tracked:
        agent_med = statistics.median(r["agent_cpu_ms_per_call"] for r in results["tracked"])
        print(
            f"tracked: {med['tracked']:.1f} ms/call in the run's process, ratio "
            f"{med['tracked'] / med['baseline']:.2f}; the agent {agent_med:.1f} ms/call on the "
            f"other core (both: {(med['tracked'] + agent_med) / med['baseline']:.2f}x the baseline)"
        )
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "result_chars": result_chars,
                    "runs": results,
                    "median_ms_per_call": med,
                    "load_average": os.getloadavg(),
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
