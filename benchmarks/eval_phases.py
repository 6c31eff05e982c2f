"""Where the wall time of a default ``physassist-eval`` goes: a phase breakdown.

Each repeat runs ``physassist-eval`` with no overrides (or the given ones) in a fresh process,
in a scratch working directory, so the run is exactly the default: the oracle on the sample,
the rules judge, MLflow to ``sqlite:///mlruns/mlflow.db`` in that directory, with traces,
tables and plots. One unmeasured run first creates the store (a new SQLite store pays its
schema migrations once) and, as a user's first run of the sessions does, their verdict
(``physassist.data.verified``: later runs parse them, not validate them again). Inside the
process the functions the run goes through are wrapped (exclusive time: a phase nested in
another is taken out of it):

* start-up: process start to the run (interpreter, the command's imports, Hydra's composition);
* task: importing the task's module (Inspect with it), reading the sessions and building the
  Inspect task; store open: the EHR store;
* eval: Inspect's eval (the samples, the scorer, Inspect's own log);
* metrics: the turn table and every metric;
* MLflow, as the command waits for its tracking agent (``physassist.tracking.agent``: MLflow is
  imported, the store opened, the traces written and the plots drawn in that process, on the
  other core): start (the agent's process started), open (waiting until the store is open and
  abandoned runs ended), claim (the run made), logging (the log's views handed over; params,
  tags, metrics, inputs, artifacts, plots, the table, the traces the eval did not stream),
  close (the agent's end); report: the printed table;
* exit: the command's return to the process's end (MLflow's exit hooks included);
* other: the rest of the run (the config check with pandas' import, fingerprints of the
  inputs, staging).

A wrapped module is wrapped when the run imports it (``_WrapOnImport``), so each import falls
in the phase where the run makes it (before 2026-12-05 11:20, ``start-up`` also held Inspect's,
pandas' and matplotlib's imports, which the wrapping made up front).

Figures are medians over the repeats, with the ratio (all but the eval) / wall, and the same
for a ``python -c pass`` measured in the same run. ``--dump DIR`` also writes the metrics and
the turn table of the last repeat (before/after checks of behaviour).

**The floor** (after each repeat, ``--no-floor`` to skip): the same sessions through a bare
Inspect eval in a fresh process, no Hydra, no MLflow, no metrics: the minimal task of
``eval_harness_share.py`` (each session's four turns, the project's tool schemas, tool results
of the run's mean size) with an in-process model that makes as many tool calls per turn as the
measured run's oracle did, with the run's Inspect options. Its phases: start-up (interpreter,
Inspect's import), task (build), eval, exit; its not-eval share is what Python, Inspect and
this many sessions leave to any run that evaluates in its own process. The floor's process also
composes the project's config with Hydra twice (as ``physassist-eval``'s Hydra does: once for
the mode, once for the run) and imports pandas (the scorer's metrics need it), timed apart:
**the stack's floor** is its time outside the eval with these, set beside the measured run's
eval: the least not-eval share a run on this stack (Inspect, Hydra, pandas) can have.

``--latency S``: the model is the oracle behind the scripted OpenAI-compatible server of the
tests, each response delayed ``S`` seconds (``eval_http.py``'s server, in its own process), as
``model=openai_compatible`` reaches a real model: the eval then mostly waits, as with one.

    python benchmarks/eval_phases.py [--repeats 5] [--dump DIR] [--no-floor] [--latency S] \
        [override ...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: (module, attribute, phase): what is wrapped in the measured process; a name that is not
#: there (moved, renamed) stops the benchmark, so no phase is silently left out.
PHASES = [
    ("physassist.cli.eval", "run_experiment", "other"),
    ("physassist.cli.eval", "build_task", "task"),
    ("tasks.physassistbench", "cached_store", "store open"),
    ("physassist.staging", "evaluate", "eval"),
    ("physassist.staging", "results", "metrics"),
    ("physassist.staging", "EvalRun.__post_init__", "MLflow start"),
    ("physassist.staging", "EvalRun._open", "MLflow open"),
    ("physassist.staging", "EvalRun._claim", "MLflow claim"),
    ("physassist.staging", "EvalRun._log", "MLflow logging"),
    ("physassist.staging", "EvalRun.close", "MLflow close"),
    ("physassist.cli.eval", "report", "report"),
]
ORDER = [
    "start-up",
    "task",
    "store open",
    "eval",
    "metrics",
    "MLflow start",
    "MLflow open",
    "MLflow claim",
    "MLflow logging",
    "MLflow close",
    "report",
    "other",
    "exit",
]


def check_phases() -> None:
    """Every wrapped function exists: one moved or renamed stops the benchmark (in this process:
    the measured one wraps a module only when the run imports it)."""
    import importlib

    for name, qualname, _ in PHASES:
        owner = importlib.import_module(name)
        for part in qualname.split("."):
            owner = getattr(owner, part)


def child(dump: str | None, reuse_log: str | None) -> None:
    """The measured process: wrap the phases, run ``physassist-eval``, print the times as JSON.
    With ``reuse_log`` the eval is not run: its log (a finished run's ``.eval``) is read instead."""
    import threading

    entered = time.time()
    from physassist import staging
    from physassist.cli import eval as cli_eval

    if reuse_log:

        def reused(*args, **kwargs):  # as staging.evaluate runs the eval
            from inspect_ai.log import read_eval_log

            from physassist.gc_freeze import frozen_heap

            with frozen_heap():
                return read_eval_log(reuse_log)

        staging.evaluate = reused

    spent: dict[str, list[float]] = {}
    stack: list[list[float]] = []  # [start wall, start cpu, child wall, child cpu]
    lock = threading.Lock()
    marks: dict[str, float] = {"imported": time.time(), "entered": entered}
    captured: dict[str, Any] = {}

    def wrap(fn, phase):
        def timed(*args, **kwargs):
            main_thread = threading.current_thread() is threading.main_thread()
            if not main_thread:  # a worker thread's time is inside its caller's phase
                return fn(*args, **kwargs)
            if phase == "other" and "run" not in marks:
                marks["run"] = time.time()
                marks["run_cpu"] = time.process_time()
            stack.append([time.perf_counter(), time.process_time(), 0.0, 0.0])
            try:
                out = fn(*args, **kwargs)
                if phase == "metrics":
                    captured["results"] = out
                return out
            finally:
                start, cpu, inner, inner_cpu = stack.pop()
                wall, used = time.perf_counter() - start, time.process_time() - cpu
                with lock:
                    total = spent.setdefault(phase, [0.0, 0.0])
                    total[0] += wall - inner
                    total[1] += used - inner_cpu
                if stack:
                    stack[-1][2] += wall
                    stack[-1][3] += used
                if phase == "other":
                    marks["ran"] = time.time()

        return timed

    def wrap_module(module) -> None:
        for name, qualname, phase in PHASES:
            if name != module.__name__:
                continue
            *path, attr = qualname.split(".")
            owner = module
            for part in path:
                owner = getattr(owner, part)
            setattr(owner, attr, wrap(getattr(owner, attr), phase))

    # A module is wrapped when the run imports it, not before: importing it here would move
    # its imports (Inspect, pandas, matplotlib) into the start-up, or into a run that never
    # makes them (tracking=none and the figures).
    pending = {name for name, _, _ in PHASES} - set(sys.modules)
    for name in {name for name, _, _ in PHASES} - pending:
        wrap_module(sys.modules[name])
    sys.meta_path.insert(0, _WrapOnImport(pending, wrap_module))
    sys.argv = ["physassist-eval", *sys.argv[sys.argv.index("--") + 1 :]]
    code = 0
    try:
        cli_eval.main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    marks["returned"] = time.time()
    marks["returned_cpu"] = time.process_time()
    agent = os.times()  # the tracking agent's CPU (on the other core), once it has ended
    marks["agent_cpu"] = agent.children_user + agent.children_system
    if dump and "results" in captured:
        turns, metrics = captured["results"]
        out = Path(dump)
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(
            json.dumps(metrics, indent=1, sort_keys=True, default=str) + "\n"
        )
        from physassist.tracking.runs import loggable_table

        loggable_table(turns).to_csv(out / "turns.csv", index=False)
    print(
        "PHASES " + json.dumps({"spent": spent, "marks": marks, "code": code}),
        file=sys.__stdout__,
        flush=True,
    )


class _WrapOnImport:
    """A meta path finder that lets the other finders find a ``pending`` module and calls
    ``then(module)`` once the module has run (its functions exist, nothing has bound them)."""

    def __init__(self, pending: set[str], then) -> None:
        self.pending, self.then = pending, then

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending:
            return None
        self.pending.discard(name)
        for finder in sys.meta_path:
            spec = (
                finder.find_spec(name, path, target)
                if finder is not self and hasattr(finder, "find_spec")
                else None
            )
            if spec is not None and spec.loader is not None:
                run = spec.loader.exec_module

                def exec_module(module, run=run):
                    run(module)
                    self.then(module)

                spec.loader.exec_module = exec_module
                return spec
        return None


def _spawn(cmd: list[str], cwd: Path | None, marker: str):
    """Run ``cmd``; (its line starting with ``marker``, as JSON; the process; wall; CPU; spawn
    and end time)."""
    started, spawned = time.perf_counter(), time.time()
    before = os.times()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    ended = time.time()
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    line = next((x for x in proc.stdout.splitlines() if x.startswith(marker)), None)
    if line is None:
        raise SystemExit(
            f"the run failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        )
    return json.loads(line[len(marker) :]), proc, wall, cpu, spawned, ended


def measure(
    cwd: Path, overrides: list[str], dump: str | None, reuse_log: str | None = None
) -> dict[str, Any]:
    """One ``physassist-eval`` in a fresh process: wall, CPU and the phases."""
    cmd = [
        sys.executable,
        __file__,
        "--child",
        *(["--dump", dump] if dump else []),
        *(["--reuse-log", reuse_log] if reuse_log else []),
        "--",
        *overrides,
    ]
    data, proc, wall, cpu, spawned, ended = _spawn(cmd, cwd, "PHASES ")
    if data["code"] not in (0, None):
        raise SystemExit(f"physassist-eval exited {data['code']}:\n{proc.stderr[-3000:]}")
    marks = data["marks"]
    phases = {name: values[0] for name, values in data["spent"].items()}
    phases["start-up"] = marks["run"] - spawned
    phases["exit"] = ended - marks["returned"]
    phases["report"] = phases.get("report", 0.0)
    cpus = {name: values[1] for name, values in data["spent"].items()}
    cpus["start-up"] = marks["run_cpu"]  # the process's CPU until the run began
    cpus["exit"] = cpu - marks["returned_cpu"]  # after the command returned (atexit, teardown)
    cpus["exit"] -= marks["agent_cpu"]  # the agent's CPU is on the other core: its own line
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "phases": phases,
        "phase_cpu": cpus,
        "agent_cpu_s": marks["agent_cpu"],
        "import_s": marks["imported"] - marks["entered"],
    }


def floor_child(spec_file: str) -> None:
    """The floor's measured process: import Inspect, build the minimal task, evaluate it."""
    entered = time.time()
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import (
        ChatMessageTool,
        ChatMessageUser,
        ModelAPI,
        ModelOutput,
        ModelUsage,
        get_model,
        modelapi,
    )

    imported = time.time()
    import pandas  # noqa: F401 - what the benchmark's scorer computes its metrics with

    with_pandas = time.time()
    from hydra import compose, initialize_config_dir

    import physassist.cli.config  # noqa: F401 - the config's schemas (the project's own import: not counted)

    schemas = time.time()
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        for _ in range(
            2
        ):  # as physassist-eval's Hydra does: once for the run's mode, once for the run
            compose("eval", return_hydra_config=True)
    stacked = time.time()
    sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]
    from eval_harness_share import baseline_task

    spec = json.loads(Path(spec_file).read_text())

    class Bare(ModelAPI):
        """As many tool calls as the turn asks (``[calls=N]``), then an answer, in-process."""

        async def generate(self, input, tools, tool_choice, config):  # noqa: A002 - Inspect's name
            asked = next(m for m in reversed(input) if isinstance(m, ChatMessageUser))
            wanted = int(str(asked.content).rsplit("[calls=", 1)[-1].split("]")[0])
            done = 0
            for m in reversed(input):
                if isinstance(m, ChatMessageUser):
                    break
                done += isinstance(m, ChatMessageTool)
            usage = ModelUsage(input_tokens=1000, output_tokens=20, total_tokens=1020)
            if done < wanted:
                out = ModelOutput.for_tool_call(
                    "floor/bare", "Observation__search", {"subject_id": 1, "code": "Creatinine"}
                )
            else:
                out = ModelOutput.from_content("floor/bare", "The creatinine is stable.")
            out.usage = usage
            return out

    modelapi(name="floor")(lambda: Bare)
    calls = {(key, int(turn)): n for key, turn, n in spec["calls"]}
    task = baseline_task(calls, spec["result_chars"])
    built = time.time()
    built_cpu = time.process_time()
    from physassist.gc_freeze import frozen_heap

    with tempfile.TemporaryDirectory() as logs, frozen_heap():
        [log] = inspect_eval(
            task,
            model=get_model("floor/bare"),
            log_dir=logs,
            display="none",
            score_display=False,
            log_realtime=False,
            max_samples=spec["max_samples"],
        )
    evaluated, evaluated_cpu = time.time(), time.process_time()
    assert log.status == "success", log.error
    print(
        "FLOOR "
        + json.dumps(
            {
                "entered": entered,
                "imported": imported,
                "with_pandas": with_pandas,
                "schemas": schemas,
                "stacked": stacked,
                "built": built,
                "built_cpu": built_cpu,
                "evaluated": evaluated,
                "evaluated_cpu": evaluated_cpu,
            }
        ),
        file=sys.__stdout__,
        flush=True,
    )


def floor_spec(log_dir: Path, out: Path) -> Path:
    """The floor's task, from the newest log of the measured runs: the calls per turn the
    oracle made (its control call aside) and the mean size of their results."""
    from inspect_ai.log import read_eval_log

    from physassist.turn_records import TURNS_KEY
    from physassist.vocab import PREPARE_TO_ANSWER

    log = read_eval_log(str(max(log_dir.rglob("*.eval"), key=lambda p: p.stat().st_mtime)))
    calls, sizes = [], []
    for sample in log.samples or []:
        for record in sample.store.get(TURNS_KEY) or []:
            made = [c for c in record.get("calls") or [] if c.get("name") != PREPARE_TO_ANSWER]
            calls.append((str(sample.id), int(record["turn"]), len(made)))
            sizes += [len(str(c.get("text") or "")) for c in made]
    out.write_text(
        json.dumps(
            {
                "calls": calls,
                "result_chars": int(statistics.mean(sizes)) if sizes else 1000,
                "max_samples": log.eval.config.max_samples,
            }
        )
    )
    return out


def measure_floor(spec: Path) -> dict[str, Any]:
    """One floor run in a fresh process: wall, CPU and its phases."""
    m, _, wall, cpu, spawned, ended = _spawn(
        [sys.executable, __file__, "--floor-child", str(spec)], None, "FLOOR "
    )
    phases = {
        "start-up": m["imported"] - spawned,
        "pandas": m["with_pandas"] - m["imported"],
        "hydra": m["stacked"] - m["schemas"],
        "task": m["built"] - m["stacked"],
        "eval": m["evaluated"] - m["built"],
        "exit": ended - m["evaluated"],
    }
    cpus = {
        "start-up + task": m["built_cpu"],
        "eval": m["evaluated_cpu"] - m["built_cpu"],
        "exit": cpu - m["evaluated_cpu"],
    }
    bare = wall - (m["stacked"] - m["imported"])  # without pandas, the schemas' import and Hydra
    stack = bare + phases["pandas"] + phases["hydra"]
    return {
        "wall_s": bare,
        "cpu_s": cpu,
        "phases": phases,
        "phase_cpu": cpus,
        "not_eval": 1 - phases["eval"] / bare,
        "stack_s": stack - phases["eval"],
    }


def stack_share(floor: dict[str, Any], run: dict[str, Any]) -> float:
    """The least not-eval share of ``run`` on this stack: its eval beside what the floor's process
    spent outside its eval with Hydra's two compositions and pandas' import added."""
    return floor["stack_s"] / (floor["stack_s"] + run["phases"]["eval"])


def python_pass(repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--dump", default=None, help="write metrics.json and turns.csv of the last repeat here"
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument(
        "--reuse-log",
        default=None,
        help="skip the eval: read this finished .eval instead (measures everything else)",
    )
    parser.add_argument(
        "--no-floor",
        action="store_true",
        help="skip the floor (a bare Inspect eval of the same sessions)",
    )
    parser.add_argument("--floor-child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(
        "--latency",
        type=float,
        default=None,
        help="the oracle over HTTP, each response this many seconds late (no floor)",
    )
    parser.add_argument("overrides", nargs="*")
    args, _ = parser.parse_known_args(
        sys.argv[1 : sys.argv.index("--")] if "--" in sys.argv else None
    )
    if args.child:
        child(args.dump, args.reuse_log)
        return
    if args.floor_child:
        floor_child(args.floor_child)
        return
    check_phases()
    if args.dump:  # the runs' working directory is a scratch one
        args.dump = str(Path(args.dump).resolve())
    floors: list[dict[str, Any]] = []
    if args.latency:  # the oracle over HTTP, each response late by --latency
        import multiprocessing

        sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT / "tests"), str(ROOT)]
        from eval_http import serve

        ctx = multiprocessing.get_context("spawn")
        queue, stop = ctx.Queue(), ctx.Event()
        server = ctx.Process(target=serve, args=(args.latency, queue, stop), daemon=True)
        server.start()
        os.environ["OPENAI_COMPATIBLE_API_KEY"] = "EMPTY"
        args.overrides += [
            "model=openai_compatible",
            "model.name=oracle",
            f"model.base_url={queue.get(timeout=300)}",
        ]
        args.no_floor = True  # the floor's model is in-process
    with tempfile.TemporaryDirectory(prefix="physassist-phases-") as scratch:
        cwd = Path(scratch)
        reuse = str(Path(args.reuse_log).resolve()) if args.reuse_log else None
        first = measure(
            cwd, args.overrides, None, reuse
        )  # creates mlruns/ (migrations): not counted
        print(f"store creation run: {first['wall_s']:.1f} s wall (not counted)", flush=True)
        spec = None if args.no_floor or reuse else floor_spec(cwd / "logs", cwd / "floor.json")
        runs = []
        for i in range(args.repeats):
            runs.append(
                measure(cwd, args.overrides, args.dump if i == args.repeats - 1 else None, reuse)
            )
            r = runs[-1]
            share = 1 - r["phases"].get("eval", 0.0) / r["wall_s"]
            print(
                f"repeat {i + 1}: {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU, eval "
                f"{r['phases'].get('eval', 0.0):.1f} s, not eval {100 * share:.0f}%; load "
                f"{os.getloadavg()[0]:.1f}",
                flush=True,
            )
            if spec is not None:  # right after the run it is compared with
                floors.append(measure_floor(spec))
                f = floors[-1]
                f["stack_share"] = stack_share(f, r)
                print(
                    f"  floor {i + 1}: {f['wall_s']:.1f} s wall, eval {f['phases']['eval']:.1f} s, "
                    f"not eval {100 * f['not_eval']:.0f}%; with the stack (+ Hydra "
                    f"{f['phases']['hydra']:.2f} s, pandas {f['phases']['pandas']:.2f} s) beside "
                    f"the run's eval: {100 * f['stack_share']:.0f}%",
                    flush=True,
                )
    if args.latency:
        stop.set()
    baseline = python_pass(args.repeats)
    med = {name: statistics.median(r["phases"].get(name, 0.0) for r in runs) for name in ORDER}
    med_cpu = {
        name: statistics.median(r["phase_cpu"].get(name, 0.0) for r in runs) for name in ORDER
    }
    wall = statistics.median(r["wall_s"] for r in runs)
    shares = [1 - r["phases"].get("eval", 0.0) / r["wall_s"] for r in runs]
    print(f"\n{'phase':<16}{'wall s':>9}{'share':>8}{'CPU s':>8}")
    for name in ORDER:
        print(
            f"{name:<16}{med[name]:>9.2f}{100 * med[name] / wall:>7.1f}%"
            f"{med_cpu.get(name, 0.0):>8.2f}"
        )
    print(
        f"{'run (median)':<16}{wall:>9.2f}   "
        f"100.0%{statistics.median(r['cpu_s'] for r in runs):>8.2f}  (of it the tracking agent, on "
        f"the other core: {statistics.median(r['agent_cpu_s'] for r in runs):.2f})"
    )
    print(
        f"not eval: median {100 * statistics.median(shares):.1f}% of the wall time (range "
        f"{100 * min(shares):.1f}-{100 * max(shares):.1f}%); python -c pass {baseline:.3f} s; load "
        f"{os.getloadavg()[0]:.1f}"
    )
    floor = None
    if floors:
        floor = {
            "wall_s": statistics.median(f["wall_s"] for f in floors),
            "cpu_s": statistics.median(f["cpu_s"] for f in floors),
            "phases": {
                k: statistics.median(f["phases"][k] for f in floors) for k in floors[0]["phases"]
            },
            "phase_cpu": {
                k: statistics.median(f["phase_cpu"][k] for f in floors)
                for k in floors[0]["phase_cpu"]
            },
            "not_eval": [f["not_eval"] for f in floors],
            "stack_share": [f["stack_share"] for f in floors],
        }
        print(
            "floor (bare Inspect eval of the same sessions, no Hydra, MLflow or metrics), medians: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in floor["phases"].items())
            + f"; run {floor['wall_s']:.2f} s wall without "
            "Hydra and pandas, "
            f"{floor['cpu_s']:.2f} s CPU ("
            + ", ".join(f"{k} {v:.2f}" for k, v in floor["phase_cpu"].items())
            + ")"
        )
        print(
            f"floor not eval: median {100 * statistics.median(floor['not_eval']):.1f}% of the wall "
            f"time (range {100 * min(floor['not_eval']):.1f}-{100 * max(floor['not_eval']):.1f}%)"
        )
        print(
            "the stack's floor (+ Hydra's two compositions and pandas' import) beside the run's "
            f"eval: median {100 * statistics.median(floor['stack_share']):.1f}% (range "
            f"{100 * min(floor['stack_share']):.1f}-{100 * max(floor['stack_share']):.1f}%)"
        )
    if args.out:
        Path(args.out).write_text(
            json.dumps(
                {
                    "overrides": args.overrides,
                    "runs": runs,
                    "median": med,
                    "median_cpu": med_cpu,
                    "python_pass_s": baseline,
                    "floor": floor,
                    "floor_runs": floors,
                    "load_average": os.getloadavg(),
                },
                indent=1,
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
