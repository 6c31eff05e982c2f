"""What writing a run's sessions as MLflow traces costs: seconds per session, bytes per trace.

    python benchmarks/trace_writing.py  # evaluates the sample with the oracle first
    python benchmarks/trace_writing.py --log logs/x.eval  # any Inspect log of the benchmark task
    python benchmarks/trace_writing.py --repeats 5 --raw-chars 500

Each repeat writes every session of the log as a trace (``physassist.tracking.traces``) into
a fresh SQLite store (the eval's default) and times it; printed: the median seconds per
session (and per trace written), the verdicts written, the size of the traces' span files
and of the database, and the Inspect log's size for scale. Traces are written after the eval,
so this is added to a run's tracking time, not to the eval.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _sample_log(work: Path) -> Path:
    bin_dir = Path(sys.executable).parent
    subprocess.run(
        [
            str(bin_dir / "physassist-eval"),
            "tracking=none",
            f"inspect.log_dir={work / 'logs'}",
            "inspect.display=none",
            f"hydra.run.dir={work / 'out'}",
        ],
        check=True,
        timeout=1800,
        stdout=subprocess.DEVNULL,
    )
    return next((work / "logs").glob("*.eval"))


def _bytes(store: Path) -> int:
    return sum(p.stat().st_size for p in store.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log", type=Path, default=None, help="an Inspect log (default: run the sample)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--raw-chars", type=int, default=2000, help="tracking.trace_raw_chars")
    args = parser.parse_args()

    import mlflow
    from inspect_ai.log import read_eval_log

    from physassist.tracking.traces import write_traces

    work = Path(tempfile.mkdtemp(prefix="physassist-traces-"))
    log_path = args.log or _sample_log(work)
    log = read_eval_log(str(log_path))
    per_session, cpu_per_session, summary, sizes = [], [], None, {}
    for repeat in range(args.repeats):
        store = work / f"store{repeat}"
        uri = f"sqlite:///{store / 'mlflow.db'}"
        store.mkdir()
        client = mlflow.MlflowClient(uri)
        eid = client.create_experiment("bench", artifact_location=(store / "artifacts").as_uri())
        run_id = client.create_run(eid).info.run_id
        before = _bytes(store)
        cpu = time.process_time()  # every thread of the process: MLflow's exporter threads too
        summary = write_traces(
            log, uri=uri, experiment_id=eid, run_id=run_id, raw_chars=args.raw_chars
        )
        cpu_per_session.append((time.process_time() - cpu) / summary.traces)
        per_session.append(summary.seconds / summary.traces)
        sizes = {"store_bytes": _bytes(store) - before}
    assert summary is not None
    print(f"log: {log_path} ({log_path.stat().st_size / 1e6:.2f} MB, {summary.traces} sessions)")
    print(
        f"trace writing: median {statistics.median(per_session) * 1000:.0f} ms per session over "
        f"{args.repeats} repeats (each: {', '.join(f'{s * 1000:.0f}' for s in per_session)} ms); "
        f"CPU median {statistics.median(cpu_per_session) * 1000:.0f} ms per session; load "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"assessments: {summary.assessments} "
        f"({summary.assessments / summary.traces:.1f} per session)"
    )
    print(
        "store growth (SQLite keeps the spans; WAL and artifacts included): "
        f"{sizes['store_bytes'] / 1e6:.2f} MB, {sizes['store_bytes'] / summary.traces / 1024:.0f} "
        f"KB per session (raw FHIR cut at {args.raw_chars} chars)"
    )
    print(
        f"reproduce: python benchmarks/trace_writing.py --log {log_path} --repeats {args.repeats} "
        f"--raw-chars {args.raw_chars}"
    )


if __name__ == "__main__":
    main()
