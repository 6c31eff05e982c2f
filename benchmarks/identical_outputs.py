"""Behaviour stays the same: a canonical digest of what offline runs produce, and a diff of two.

A refactor must not change a run's results. This script runs ``physassist-eval`` on the
embedded sample, offline, in a fresh work directory, for a fixed set of cases (``CASES``):

* ``oracle``: the default experiment (gold replay, strict EHR, rules judge);
* ``explorer-strict`` and ``explorer-compat``: the explorer agent, ``ehr=strict`` / ``ehr=compat``;
* ``explorer-zh``: the explorer agent with ``language=zh``;
* ``sweep``: ``-m model=baseline query=implicit,explicit`` (a parent run and two jobs),

and writes, per case and per MLflow run of it, a digest of:

* the Inspect log: status, every scorer metric, per session and epoch the score value and the
  scorer's per-turn metadata (items, verdicts, reasons, status, end, tools), and the loop's turn
  records (question, answer, end, error, tokens, and per call its name, arguments, shown text
  and raw result: the fields the record had at issue 39; fields added later are not compared);
* the run's turn table as logged (``tables/turns.csv``, without the ``seconds`` column);
* the MLflow run: every metric, its params and the tags that describe results (choices,
  comparability parts, fingerprints, kind, trace counts);
* its traces: per session the spans (name, parent, inputs, outputs, attributes) and the
  assessments (name, value, rationale, error), without ids and times.

Left out, because they differ between two runs of the same results: times and durations, run
and trace ids, paths (the work directory is written ``<work>``), git commit, package versions,
the owner and heartbeat tags, a sweep parent's claim and job params, the EHR fingerprint (it
hashes the source files' mtimes: another checkout has others), the comparability key's scorer
part (a hash of the scorer's code, which a refactor changes by definition) and the key itself,
and the score's ``explanation`` (its wording is presentation).

It imports nothing of the project: it runs the checkout's console script as a subprocess and
reads the outputs with Inspect and MLflow, so one copy of it digests any tree (run it with the
interpreter of the tree's own environment). Typical use, around a refactor::

    git worktree add /tmp/base <base commit>    # + its own venv: pip install -e /tmp/base
    /tmp/base/.venv/bin/python benchmarks/identical_outputs.py --tree /tmp/base --out base.json
    .venv/bin/python benchmarks/identical_outputs.py --out new.json
    python benchmarks/identical_outputs.py --compare base.json new.json   # exit 1 on a difference

``--cases oracle,sweep`` runs a subset; ``--jobs 2`` runs two cases at once (2 cores: ~1.5 min
for all of them on an idle machine, each case ~17 s of CPU); ``--keep`` leaves the work
directory. ``$PHYSASSIST_CACHE`` (the EHR store cache) is used when set, else a cache inside the
work directory (the sample's store is built once, in a few seconds).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
os.environ.setdefault(
    "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false"
)  # one line per download otherwise

#: case -> the overrides of its ``physassist-eval`` command (``-m`` makes it a sweep).
CASES: dict[str, list[str]] = {
    "oracle": ["model=oracle"],
    "explorer-strict": ["model=explorer", "ehr=strict"],
    "explorer-compat": ["model=explorer", "ehr=compat"],
    "explorer-zh": ["model=explorer", "language=zh"],
    "sweep": ["-m", "model=baseline", "query=implicit,explicit"],
}

#: Tags that describe a run's results (prefixes); every other tag is about where and when.
RESULT_TAGS = (
    "choice.",
    "physassist.comparability",
    "physassist.dataset_fingerprint",
    "physassist.ehr_fingerprint",
    "physassist.kind",
    "physassist.inspect_status",
    "physassist.faults",
    "physassist.degenerate",
)
RESULT_TAG_NAMES = ("physassist.traces", "physassist.traces_assessments")
#: Result tags left out: the EHR fingerprint hashes the source files' mtimes (another checkout
#: has others), the scorer part hashes the scorer's source code (a refactor changes it by
#: definition), and the comparability key combines the parts.
UNCOMPARED_TAGS = (
    "physassist.ehr_fingerprint",
    "physassist.comparability.ehr",
    "physassist.comparability.scorer",
    "physassist.comparability_key",
)
#: Params of a sweep's parent run that are bookkeeping: its jobs' claims (owner, pid, time) and
#: run ids.
UNCOMPARED_PARAMS = ("physassist.claim.", "physassist.job.")
#: The record fields compared (those of issue 39's ``TurnRecord``, minus its times).
RECORD_FIELDS = ("turn", "question", "answer", "end", "error", "tokens_in", "tokens_out")
TIMING_COLUMNS = ("seconds",)
TIMING_ATTRIBUTES = ("seconds",)


# -- running ---------------------------------------------------------------------------------
def run_case(name: str, tree: Path, work: Path, python: Path) -> Path:
    """Run one case in ``work/<name>``; returns that directory (its MLflow store is in it)."""
    case = work / name
    case.mkdir(parents=True)
    script = python.parent / "physassist-eval"
    if not script.exists():
        raise SystemExit(
            f"no physassist-eval beside {python}: install the tree (pip install -e {tree})"
        )
    command = [
        str(script),
        *CASES[name],
        f"tracking.uri=sqlite:///{case}/mlruns/mlflow.db",
        f"inspect.log_dir={case}/logs",
        "tracking.plots=false",  # figures are drawn from the logged metrics; they add no result
        f"hydra.run.dir={case}/hydra",
        f"hydra.sweep.dir={case}/hydra",
    ]
    env = {
        **os.environ,
        "PHYSASSIST_CACHE": os.environ.get("PHYSASSIST_CACHE") or str(work / "cache"),
    }
    started = time.perf_counter()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    (case / "output.txt").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise SystemExit(
            f"case {name}: physassist-eval exited {done.returncode}; see {case / 'output.txt'}"
        )
    print(f"  {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return case


# -- digesting -------------------------------------------------------------------------------
def _clean(value: Any, work: str) -> Any:
    """JSON-safe and machine-independent: NaN spelled out, the work directory as ``<work>``."""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else value
    if isinstance(value, str):
        return value.replace(work, "<work>")
    if isinstance(value, dict):
        return {str(k): _clean(v, work) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v, work) for v in value]
    return value


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _call(call: dict[str, Any]) -> dict[str, Any]:
    raw = call.get("raw_json")
    raw = (
        raw
        if isinstance(raw, str)
        else json.dumps(call.get("raw"), ensure_ascii=False, default=str)
    )
    return {
        "name": call.get("name"),
        "arguments": call.get("arguments"),
        "text": _sha(str(call.get("text"))),
        "raw": _sha(raw),
    }


def _records(store: dict[str, Any] | None) -> list[dict[str, Any]]:
    out = []
    for record in (store or {}).get("physassist:turns") or []:
        row = {k: record.get(k) for k in RECORD_FIELDS}
        row["calls"] = [_call(c) for c in record.get("calls") or []]
        out.append(row)
    return out


def inspect_digest(log_path: str) -> dict[str, Any]:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(log_path)
    metrics = {
        f"{score.name}/{name}": metric.value
        for score in (log.results.scores if log.results else [])
        for name, metric in score.metrics.items()
    }
    samples = {}
    for sample in log.samples or []:
        scores = {
            name: {"value": score.value, "metadata": score.metadata}
            for name, score in (sample.scores or {}).items()
        }
        samples[f"{sample.id}/{sample.epoch}"] = {
            "scores": scores,
            "error": None if sample.error is None else sample.error.message,
            "records": _records(sample.store),
        }
    return {"status": log.status, "metrics": metrics, "samples": samples}


def _turn_table(client: Any, run_id: str, tmp: Path) -> list[dict[str, str]]:
    names = {a.path for a in client.list_artifacts(run_id, "tables")}
    if "tables/turns.csv" not in names:
        return []
    path = Path(client.download_artifacts(run_id, "tables/turns.csv", str(tmp)))
    with path.open(newline="") as f:
        rows = [
            {k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(f)
        ]
    return sorted(
        rows, key=lambda r: (r.get("session_id", ""), r.get("epoch", ""), int(r.get("turn") or 0))
    )


def _traces(uri: str, experiment_id: str, run_id: str) -> dict[str, Any]:
    import mlflow

    mlflow.set_tracking_uri(uri)
    out = {}
    for trace in mlflow.search_traces(locations=[experiment_id], run_id=run_id, return_type="list"):
        md = trace.info.trace_metadata
        names = {s.span_id: s.name for s in trace.data.spans}
        spans = [
            {
                "name": s.name,
                "parent": names.get(s.parent_id),
                "inputs": s.inputs,
                "outputs": s.outputs,
                "attributes": {
                    k: v
                    for k, v in sorted(s.attributes.items())
                    if not k.startswith("mlflow.") and k not in TIMING_ATTRIBUTES
                },
            }
            for s in trace.data.spans
        ]
        assessments = [
            {
                "name": a.name,
                "span": names.get(a.span_id),
                "value": getattr(a, "value", None),
                "rationale": a.rationale,
                "error": None if a.error is None else [a.error.error_code, a.error.error_message],
            }
            for a in trace.info.assessments
        ]
        key = f"{md.get('physassist.session_id')}/{md.get('physassist.epoch')}"
        out[key] = {
            "spans": sorted(spans, key=lambda s: json.dumps(s, sort_keys=True, default=str)),
            "assessments": sorted(assessments, key=lambda a: (str(a["span"]), a["name"])),
        }
    return out


def _run_key(run: Any, work: str) -> str:
    tags = run.data.tags
    overrides = [
        o
        for o in tags.get("physassist.overrides", "").split()
        if work not in o and not o.startswith(("tracking.plots", "hydra."))
    ]
    return f"{tags.get('physassist.kind', '?')}:{run.info.run_name}:{' '.join(sorted(overrides))}"


def mlflow_digest(case: Path, work: str) -> dict[str, Any]:
    import mlflow

    uri = f"sqlite:///{case}/mlruns/mlflow.db"
    client = mlflow.MlflowClient(uri)
    runs: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for experiment in client.search_experiments():
            for run in client.search_runs([experiment.experiment_id], max_results=1000):
                tags = run.data.tags
                digest: dict[str, Any] = {
                    "status": run.info.status,
                    "metrics": dict(sorted(run.data.metrics.items())),
                    "params": {
                        k: v
                        for k, v in sorted(run.data.params.items())
                        if not k.startswith(UNCOMPARED_PARAMS)
                    },
                    "tags": {
                        k: v
                        for k, v in sorted(tags.items())
                        if (k.startswith(RESULT_TAGS) or k in RESULT_TAG_NAMES)
                        and k not in UNCOMPARED_TAGS
                    },
                    "turn_table": _turn_table(client, run.info.run_id, Path(tmp) / run.info.run_id),
                    "traces": _traces(uri, experiment.experiment_id, run.info.run_id),
                }
                if tags.get("physassist.inspect_log"):
                    digest["inspect"] = inspect_digest(tags["physassist.inspect_log"])
                key = _run_key(run, work)
                if key in runs:
                    raise SystemExit(f"case {case.name}: two runs with the key {key!r}")
                runs[key] = digest
    return runs


def digest(names: list[str], tree: Path, work: Path, jobs: int) -> dict[str, Any]:
    python = Path(sys.executable)
    print(f"running {', '.join(names)} in {work} ({tree})", file=sys.stderr)
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        cases = dict(
            zip(names, pool.map(lambda n: run_case(n, tree, work, python), names), strict=True)
        )
    return {
        "cases": {
            name: _clean(mlflow_digest(path, str(work)), str(work)) for name, path in cases.items()
        },
        "about": {  # not compared
            "tree": str(tree),
            "commit": _commit(tree),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "cases": {n: CASES[n] for n in names},
        },
    }


def _commit(tree: Path) -> str | None:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or None


# -- comparing -------------------------------------------------------------------------------
def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Every place where ``a`` and ``b`` differ, as ``path: a -> b`` lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b)):
            where = f"{path}/{key}" if path else str(key)
            if key not in a:
                out.append(f"{where}: only in the second")
            elif key not in b:
                out.append(f"{where}: only in the first")
            else:
                out += differences(a[key], b[key], where)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{path}[{i}]")
        ]
    if a != b:
        shown = [json.dumps(v, ensure_ascii=False, default=str) for v in (a, b)]
        start = next((i for i, (x, y) in enumerate(zip(*shown, strict=False)) if x != y), 0)
        start = max(0, min(start, *map(len, shown)) - 60)  # from just before the first difference
        cut = [
            ("..." if start else "")
            + t[start : start + 200]
            + ("..." if len(t) > start + 200 else "")
            for t in shown
        ]
        return [f"{path}: {cut[0]} -> {cut[1]}"]
    return []


def _comparable(cases: dict[str, Any]) -> dict[str, Any]:
    """The digest without what is not compared (also in digests written before a tag or param
    was left out)."""
    for runs in cases.values():
        for run in runs.values():
            run["tags"] = {k: v for k, v in run["tags"].items() if k not in UNCOMPARED_TAGS}
            run["params"] = {
                k: v for k, v in run["params"].items() if not k.startswith(UNCOMPARED_PARAMS)
            }
    return cases


def compare(first: Path, second: Path) -> int:
    a, b = (_comparable(json.loads(p.read_text())["cases"]) for p in (first, second))
    found = differences(a, b)
    for line in found[:200]:
        print(line)
    if len(found) > 200:
        print(f"... and {len(found) - 200} more")
    n_runs = sum(len(runs) for runs in a.values())
    print(
        f"{'identical' if not found else f'{len(found)} differences'}: {len(a)} cases, {n_runs} "
        f"runs ({first} vs {second})"
    )
    return 1 if found else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the digest here (JSON)")
    parser.add_argument(
        "--tree", type=Path, default=HERE, help="the checkout to run (default: this one)"
    )
    parser.add_argument(
        "--cases", default=",".join(CASES), help=f"comma-separated, of: {', '.join(CASES)}"
    )
    parser.add_argument("--jobs", type=int, default=1, help="cases run at once")
    parser.add_argument("--work-dir", type=Path, help="default: a new temporary directory")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    parser.add_argument(
        "--compare", nargs=2, type=Path, metavar=("FIRST", "SECOND"), help="diff two digests"
    )
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("--out is required (or --compare FIRST SECOND)")
    names = [n for n in args.cases.split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; known: {', '.join(CASES)}")
    work = (args.work_dir or Path(tempfile.mkdtemp(prefix="identical-outputs-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    try:
        result = digest(names, args.tree.resolve(), work, args.jobs)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.out.write_text(
        json.dumps(result, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n"
    )
    print(
        f"digest of {len(names)} cases -> {args.out} ({time.perf_counter() - started:.0f} s)",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
