"""Evaluation harness speed: per-turn overhead and concurrency speed-up.

1. Overhead: every sample of the dataset through the full loop (tools, scorer, logging)
   with a zero-latency scripted model that makes one ``Observation.search`` call and then
   answers with ``prepare_to_answer``; the median of the per-turn ``seconds`` the loop
   records is the harness overhead per turn (target <= 20 ms).
2. Throughput: the same script with every model call taking a fixed 200 ms, run
   sequentially (``max_connections=1, max_samples=1``) and with ``max_connections=16``
   (``max_samples=16``, and ``max_samples`` = all samples, still 16 connections); the
   ratio of wall times is the speed-up (target >= 8x).

    python benchmarks/eval_throughput.py [--dataset sample] [--ehr-source sample] [--latency 0.2]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from typing import Any

import anyio
from inspect_ai import eval
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    get_model,
    modelapi,
)
from inspect_ai.tool import ToolCall

from physassist.gc_freeze import frozen_heap
from physassist.turn_records import TURNS_KEY
from tasks.physassistbench import physassistbench

USAGE = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)


def _output(content: str, calls: list[ToolCall]) -> ModelOutput:
    message = ChatMessageAssistant(content=content, tool_calls=calls or None)
    return ModelOutput(
        model="mockllm/model",
        choices=[
            ChatCompletionChoice(message=message, stop_reason="tool_calls" if calls else "stop")
        ],
        usage=USAGE,
    )


def make_script(latency: float) -> Any:
    """One lab search per turn, then an answer; ``latency`` seconds per call."""
    counter = iter(range(10**9))

    async def script(
        input: list[Any], tools: list[Any], tool_choice: Any, config: Any
    ) -> ModelOutput:
        if latency:
            await anyio.sleep(latency)
        if tool_choice == "none":
            return _output("Final answer.", [])
        opening = next(m for m in input if isinstance(m, ChatMessageUser)).text
        subject = int(re.search(r"subject_id:\s*(\d+)", opening).group(1))  # type: ignore[union-attr]
        if isinstance(input[-1], ChatMessageUser):
            call = ToolCall(
                id=f"c{next(counter)}",
                function="Observation__search",
                arguments={"subject_id": subject, "code": "Creatinine", "category": "laboratory"},
            )
            return _output("", [call])
        done = ToolCall(id=f"c{next(counter)}", function="prepare_to_answer", arguments={})
        return _output("Creatinine reviewed; see values above.", [done])

    return script


class ScriptedAPI(ModelAPI):
    """The same script as a bare provider: unlike ``mockllm`` it records no request
    payload (``ModelCall``) per call, so the numbers show the harness alone."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        latency: float = 0.0,
        **_: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        self.script = make_script(float(latency))

    async def generate(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        return await self.script(input, tools, tool_choice, config)

    async def count_text_tokens(self, text: str) -> int:
        return len(text) // 4 + 1

    def max_connections(self) -> int:
        return 16


@modelapi(name="scripted")
def scripted() -> type[ModelAPI]:
    return ScriptedAPI


def run(
    dataset: str,
    ehr_source: str,
    latency: float,
    connections: int,
    provider: str = "mockllm",
    samples_in_flight: int | None = None,
) -> tuple[float, list[float], int, float]:
    """(wall seconds, per-turn seconds, samples, process CPU seconds) of one eval;
    ``samples_in_flight`` is ``max_samples`` (default: ``connections``)."""
    task = physassistbench(dataset=dataset, ehr_source=ehr_source)
    if provider == "mockllm":
        model = get_model("mockllm/model", custom_outputs=make_script(latency), memoize=False)
    else:
        model = get_model("scripted/model", latency=latency, memoize=False)
    with tempfile.TemporaryDirectory() as logs:
        started, cpu = time.perf_counter(), time.process_time()
        with frozen_heap():  # as physassist-eval runs it
            log = eval(
                task,
                model=model,
                log_dir=logs,
                display="none",
                max_connections=connections,
                max_samples=samples_in_flight or connections,
                fail_on_error=True,
                # nothing is displayed, so the running metrics (bootstrap CIs recomputed
                # every ~0.9 s while samples complete) would be computed for no one
                log_realtime=False,
                score_display=False,
            )[0]
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        assert log.status == "success", log.error
        samples = log.samples or []
        turns = [t["seconds"] for s in samples for t in s.store[TURNS_KEY]]
    return wall, turns, len(samples), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="sample")
    parser.add_argument("--ehr-source", default="sample")
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--parallel", type=int, default=16)
    args = parser.parse_args()

    run(args.dataset, args.ehr_source, 0.0, 4)  # warm-up: store build/open, imports
    print(f"load average: {os.getloadavg()[0]:.1f}")
    for provider in ("mockllm", "scripted"):
        wall0, turns0, n, cpu0 = run(args.dataset, args.ehr_source, 0.0, 1, provider)
        p90 = sorted(turns0)[int(0.9 * (len(turns0) - 1))]
        print(
            f"[{provider}] {n} sessions, {len(turns0)} turns; overhead per turn (zero latency): "
            f"median {1000 * statistics.median(turns0):.1f} ms, p90 {1000 * p90:.1f} ms; "
            f"whole eval {wall0:.2f} s wall, {1000 * cpu0 / len(turns0):.1f} ms CPU per turn"
        )
        seq, _, _, _ = run(args.dataset, args.ehr_source, args.latency, 1, provider)
        par, _, _, _ = run(args.dataset, args.ehr_source, args.latency, args.parallel, provider)
        # every sample in flight, model calls still capped at max_connections: samples in
        # set-up, scoring or log writing hold a sample slot but no connection
        full, _, _, _ = run(args.dataset, args.ehr_source, args.latency, args.parallel, provider, n)
        print(
            f"[{provider}] {int(args.latency * 1000)} ms/call: sequential {seq:.2f} s, "
            f"max_connections={args.parallel} (max_samples={args.parallel}) {par:.2f} s, "
            f"speed-up {seq / par:.1f}x; max_samples={n} {full:.2f} s, "
            f"speed-up {seq / full:.1f}x"
        )


if __name__ == "__main__":
    main()
