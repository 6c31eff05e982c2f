"""Benchmark the EHR store and tools against the reference's per-call CSV reading.

For each cohort size: a synthetic cohort (``physassist.synth.generate_cohort``, generated once
and kept: ``cohorts.py``), build its store, and time

* store build time and size on disk;
* tool-call latency (``call_tool``, raw FHIR, no rendering) over mixed read calls to random
  subjects, and within sessions as the evaluation runs them (the chart opened at the start,
  ``--model-turn-ms`` before the first call): a subject's first call, its other first-time
  calls, and repeats of calls already made in the session;
* the same calls answered the reference way (docs/compat.md#per-tool): every call
  reads that subject's per-patient ``<module>_<table>.csv.csv.gz`` with pandas and filters
  it. The per-subject split is written for a random subset of subjects only, since the cost
  of a per-call read depends on the subject's file, not on the cohort size. Compared twice:
  cold (one call per subject, nothing of it in memory), and session by session as the
  evaluation runs them (chart opened, ``--model-turn-ms``, then the subject's calls in a row,
  ``--pause-ms`` apart).

Every part starts from a fresh ``EHRStore``, i.e. an empty subject cache.

    python benchmarks/ehr_tools.py --sizes 1000,10000,100000
    python benchmarks/ehr_tools.py --source "$PHYSASSIST_MIMIC_DEMO"   # an existing source

Results print as a table and are written as JSON (``--out``). Not part of the test suite.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from physassist.ehr.manifest import damage, file_sha256
from physassist.ehr.store import EHRStore, build_store, open_store
from physassist.ehr.tables import DICTIONARY_TABLES, SUBJECT_TABLES, TABLES
from physassist.ehr.tools import ToolContext, call_tool, open_chart
from physassist.ehr.tools.names import EHR_READ_TOOLS

LAB_NAMES = ("Creatinine", "Potassium", "Sodium", "Hemoglobin", "White Blood Cells", "Glucose")

Call = tuple[int, int | None, str | None, str, dict[str, Any]]  # subject, hadm, date, tool, args


# --------------------------------------------------------------------------- call plans


def subject_facts(store: EHRStore, subjects: list[int]) -> dict[int, list[tuple[int, str]]]:
    """Each subject's admissions as (hadm_id, discharge date), for realistic arguments."""
    out: dict[int, list[tuple[int, str]]] = {s: [] for s in subjects}
    cur = store.cursor()
    cur.execute("CREATE TEMP TABLE bench_subjects (subject_id BIGINT)")
    cur.executemany("INSERT INTO bench_subjects VALUES (?)", [[s] for s in subjects])
    for sid, hadm, disch in cur.execute(
        "SELECT a.subject_id, a.hadm_id, CAST(CAST(a.dischtime AS DATE) AS VARCHAR) "
        "FROM admissions a JOIN bench_subjects USING (subject_id) ORDER BY 1, a.admittime"
    ).fetchall():
        out[sid].append((hadm, disch))
    cur.close()
    return out


def make_call(rng: random.Random, sid: int, stays: list[tuple[int, str]], tool: str) -> Call:
    hadm, date = rng.choice(stays) if stays else (None, None)
    args: dict[str, Any] = {"subject_id": sid}
    with_hadm = hadm is not None and rng.random() < 0.6
    if tool == "Observation.search":
        if rng.random() < 0.8:
            args["code"] = rng.choice(LAB_NAMES)
        else:
            args["category"] = "vital-signs"
    elif tool == "Condition.search" and rng.random() < 0.3:
        args["code"] = rng.choice(("I48", "N18", "E87", "I10", "J18", "K70"))
    elif tool == "MedicationRequest.search" and rng.random() < 0.3:
        args["medication"] = rng.choice(("furosemide", "apixaban", "metformin", "insulin"))
    elif tool == "DocumentReference.search":
        args["type_code"] = rng.choice(("discharge-summary", "radiology"))
    if with_hadm and tool not in ("Patient.read",):
        args["hadm_id"] = hadm
    return (sid, hadm, date, tool, args)


# --------------------------------------------------------------------------- our tools


def run_ours(store: EHRStore, call: Call, semantics: str) -> tuple[float, float]:
    """Wall and thread-CPU milliseconds of one ``call_tool`` (DuckDB runs in this thread)."""

    sid, hadm, date, tool, args = call
    ctx = ToolContext(
        store=store, subject_id=sid, hadm_id=hadm, current_date=date, semantics=semantics
    )
    started, cpu = time.perf_counter(), time.thread_time()
    result = call_tool(ctx, tool, args)
    elapsed, cpu = time.perf_counter() - started, time.thread_time() - cpu
    if "error" in result:  # compat's bare error object
        raise RuntimeError(f"{tool} {args} was refused: {result['error']}")
    if result.get("resourceType") == "OperationOutcome":  # a refused call would skew timings
        issue = (result.get("issue") or [{}])[0]
        if issue.get("code", "not-found") != "not-found":  # compat's empty results carry no code
            raise RuntimeError(f"{tool} {args} was refused: {issue}")
    return elapsed * 1000, cpu * 1000


# --------------------------------------------------------------------------- the reference way


def write_split(store: EHRStore, subjects: list[int], root: Path) -> Path:
    """Per-subject split in the reference's naming, plus dictionaries in ``mimiciv/``."""
    split = root / "split_data_each_patient"
    cur = store.cursor()
    for sid in subjects:
        folder = split / str(sid)
        folder.mkdir(parents=True, exist_ok=True)
        for table in SUBJECT_TABLES:
            if not store.has_rows(table):
                continue
            n = cur.execute(
                f'SELECT count(*) FROM "{table}" WHERE subject_id = ?', [sid]
            ).fetchone()[0]
            if n:
                path = folder / f"{TABLES[table].module}_{table}.csv.csv.gz"
                cur.execute(
                    f'COPY (SELECT * EXCLUDE (_row) FROM "{table}" WHERE subject_id = {int(sid)} '
                    f"ORDER BY _row) TO '{path}' (HEADER, DELIMITER ',', COMPRESSION gzip)"
                )
    for table in DICTIONARY_TABLES:
        path = root / "mimiciv" / TABLES[table].module / f"{table}.csv.gz"
        path.parent.mkdir(parents=True, exist_ok=True)
        cur.execute(
            f"COPY (SELECT * EXCLUDE (_row) FROM \"{table}\") TO '{path}' "
            "(HEADER, COMPRESSION gzip)"
        )
    cur.close()
    return split


class ReferenceWay:
    """Answers the read tools as docs/compat.md#per-tool describes: pandas reads the subject's CSVs on every call.

    Dictionaries are loaded once (the reference caches its label maps); everything else is
    re-read per call. Outputs are plain record dicts, roughly the work of building FHIR.
    """

    def __init__(self, split: Path) -> None:
        self.split = split
        ref = split.parent / "mimiciv"
        self.labels = pd.read_csv(ref / "hosp" / "d_labitems.csv.gz").set_index("itemid")["label"]
        self.items = pd.read_csv(ref / "icu" / "d_items.csv.gz").set_index("itemid")
        icd = pd.read_csv(ref / "hosp" / "d_icd_diagnoses.csv.gz", dtype={"icd_code": str})
        self.icd = {(c.strip(), str(v)): t for c, v, t in icd.itertuples(index=False)}

    def _read(self, sid: int, module: str, table: str) -> pd.DataFrame:
        path = self.split / str(sid) / f"{module}_{table}.csv.csv.gz"
        if not path.exists():
            return pd.DataFrame()
        return pd.read_csv(path, low_memory=False)

    @staticmethod
    def _hadm(df: pd.DataFrame, args: dict[str, Any]) -> pd.DataFrame:
        if args.get("hadm_id") and not df.empty:
            df = df[df["hadm_id"] == args["hadm_id"]]
        return df

    def __call__(self, call: Call) -> tuple[float, float]:
        """Wall and thread-CPU milliseconds of one call answered the reference way."""
        sid, _, date, tool, args = call
        started, cpu = time.perf_counter(), time.thread_time()
        getattr(self, tool.replace(".", "_"))(sid, date, args)
        return (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000

    def Patient_read(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        df = self._read(sid, "hosp", "patients")
        return df.head(1).to_dict("records")

    def Encounter_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        return self._hadm(self._read(sid, "hosp", "admissions"), args).to_dict("records")

    def Condition_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        df = self._hadm(self._read(sid, "hosp", "diagnoses_icd"), args)
        if df.empty:
            return []
        df = df.assign(icd_code=df["icd_code"].astype(str))
        if args.get("code"):
            df = df[df["icd_code"].str.upper().str.startswith(args["code"].upper())]
        df = df.sort_values(["hadm_id", "seq_num"])
        titles = [
            self.icd.get((c.strip(), str(v)), c)
            for c, v in zip(df.icd_code, df.icd_version, strict=True)
        ]
        return df.assign(title=titles).to_dict("records")

    def Observation_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        if args.get("category") == "vital-signs":
            df = self._read(sid, "icu", "chartevents")
            if df.empty:
                df = self._read(sid, "hosp", "omr")
                return (
                    df.sort_values("chartdate", ascending=False).head(20).to_dict("records")
                    if not df.empty
                    else []
                )
            return df.sort_values("charttime", ascending=False).head(20).to_dict("records")
        df = self._hadm(self._read(sid, "hosp", "labevents"), args)
        if df.empty:
            return []
        if args.get("code"):
            hits = self.labels[
                self.labels.str.contains(args["code"], case=False, na=False, regex=False)
            ]
            if len(hits):
                df = df[df["itemid"].isin(hits.index)]
        if date:
            df = df[df["charttime"].astype(str) < date]
        df = df.sort_values("charttime", ascending=False).head(20)
        return df.assign(label=df["itemid"].map(self.labels)).to_dict("records")

    def MedicationRequest_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        df = self._hadm(self._read(sid, "hosp", "prescriptions"), args)
        if df.empty:
            return []
        if args.get("medication"):
            df = df[df["drug"].astype(str).str.contains(args["medication"], case=False, na=False)]
        return df.sort_values("starttime", ascending=False).to_dict("records")

    def MedicationAdministration_search(
        self, sid: int, date: str | None, args: dict[str, Any]
    ) -> Any:
        df = self._hadm(self._read(sid, "hosp", "emar"), args)
        if df.empty:
            return []
        df = df.sort_values("charttime", ascending=False)
        return (df if args.get("hadm_id") else df.head(100)).to_dict("records")

    def DiagnosticReport_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        rad = self._hadm(self._read(sid, "note", "radiology"), args)
        out = (
            rad.sort_values("charttime", ascending=False).head(5).to_dict("records")
            if not rad.empty
            else []
        )
        micro = self._hadm(self._read(sid, "hosp", "microbiologyevents"), args)
        if not micro.empty:
            micro = micro.sort_values("charttime", ascending=False)
            micro = micro.drop_duplicates(["spec_type_desc", "charttime"])
            out += micro.head(max(0, 10 - len(out))).to_dict("records")
        return out

    def DocumentReference_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        table = "discharge" if args.get("type_code") == "discharge-summary" else "radiology"
        df = self._hadm(self._read(sid, "note", table), args)
        return (
            df.sort_values("charttime", ascending=False).head(5).to_dict("records")
            if not df.empty
            else []
        )

    def CarePlan_search(self, sid: int, date: str | None, args: dict[str, Any]) -> Any:
        df = self._hadm(self._read(sid, "note", "discharge"), args)
        plans = []
        for text in df.head(3)["text"].astype(str) if not df.empty else []:
            for title in ("Discharge Instructions", "Discharge Condition", "Followup Instructions"):
                m = re.search(rf"{title}:?\s*(.{{0,1000}})", text, re.S)
                if m:
                    plans.append({"category": title, "text": m.group(1)})
        return plans


# --------------------------------------------------------------------------- measurement


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    """Median / p99 / mean of wall milliseconds, and the median of thread-CPU milliseconds
    (much less sensitive than wall time to other processes on a shared machine)."""
    wall = sorted(w for w, _ in samples)
    return {
        "n": len(wall),
        "median_ms": round(statistics.median(wall), 3),
        "p99_ms": round(wall[min(len(wall) - 1, int(len(wall) * 0.99))], 3),
        "mean_ms": round(statistics.fmean(wall), 3),
        "cpu_median_ms": round(statistics.median(c for _, c in samples), 3),
    }


def time_open(source: Path, cache: Path, path: Path, repeats: int = 20) -> dict[str, float]:
    """Opening the cached store as a run does (``open_store``: fingerprint the source, check
    the store against its manifest, connect), next to a bare ``EHRStore`` connect, the
    manifest check alone (a ``stat`` when the file is untouched) and a full SHA-256 of the
    file (what the check costs when the file's stamp changed)."""

    def median_ms(fn: Callable[[], Any], n: int = repeats) -> float:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1000)
        return round(statistics.median(times), 3)

    return {
        "open_store_ms": median_ms(lambda: open_store(source, cache_dir=cache).close()),
        "bare_connect_ms": median_ms(lambda: EHRStore(path).close()),
        "manifest_check_ms": median_ms(lambda: damage(path), 200),
        "full_sha256_ms": median_ms(lambda: file_sha256(path), 5),
    }


def dir_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def bench_source(
    source: Path,
    *,
    label: str,
    work: Path,
    calls: int,
    sessions: int,
    ref_subjects: int,
    semantics: str,
    seed: int,
    pause_ms: float,
    model_turn_ms: float,
    log: Callable[[str], None],
) -> dict[str, Any]:
    rng = random.Random(seed)
    result: dict[str, Any] = {
        "label": label,
        "source": str(source),
        "source_bytes": dir_size(source),
    }
    started = time.perf_counter()
    path = build_store(source, cache_dir=work / "stores", force=True)
    result["build_seconds"] = round(time.perf_counter() - started, 2)
    result["store_bytes"] = path.stat().st_size
    result["open"] = time_open(source, work / "stores", path)
    store = EHRStore(path)
    result["rows"] = store.row_counts()
    log(
        f"[{label}] store built in {result['build_seconds']}s, {result['store_bytes'] / 2**20:.1f} "
        f"MiB, {result['rows']['labevents']:,} lab rows; opening it from the cache: "
        f"{result['open']}"
    )
    subjects = [
        s
        for (s,) in store.cursor().execute("SELECT subject_id FROM patients ORDER BY 1").fetchall()
    ]
    result["subjects"] = len(subjects)
    order = subjects[:]
    rng.shuffle(order)

    # each part starts with a fresh EHRStore, i.e. an empty subject cache
    # 1. sessions as the evaluation runs them: the chart is opened at the start, the first
    #    call comes after the model's first turn; then the other first-time calls and repeats
    store.close()
    store = EHRStore(path)
    session_subjects = order[:sessions]
    facts = subject_facts(store, session_subjects)
    first, later, repeat = [], [], []
    for sid in session_subjects:
        plan = [
            make_call(rng, sid, facts[sid], tool)
            for tool in rng.sample(EHR_READ_TOOLS, len(EHR_READ_TOOLS))
        ]
        # the session opens the chart, then the model takes its first turn
        open_chart(ToolContext(store=store, subject_id=sid, semantics=semantics))
        time.sleep(model_turn_ms / 1000)
        for i, call in enumerate(plan):
            (first if i == 0 else later).append(run_ours(store, call, semantics))
        for call in plan:
            repeat.append(run_ours(store, call, semantics))
    result["session_first_call"] = summary(first)
    result["session_other_first_time_calls"] = summary(later)
    result["session_repeated_calls"] = summary(repeat)

    # 2. mixed calls to random subjects (untouched by the sessions above)
    store.close()
    store = EHRStore(path)
    pool = order[sessions:] or order
    random_subjects = [rng.choice(pool) for _ in range(calls)]
    facts = subject_facts(store, sorted(set(random_subjects)))
    plan = [make_call(rng, s, facts[s], rng.choice(EHR_READ_TOOLS)) for s in random_subjects]
    result["random_calls"] = summary([run_ours(store, c, semantics) for c in plan])
    log(f"[{label}] random calls {result['random_calls']}")

    # 3. the reference way vs ours on the same calls, for a subset of subjects
    ref_pool = rng.sample(subjects, min(ref_subjects, len(subjects)))
    split_root = work / f"split-{label}"
    shutil.rmtree(split_root, ignore_errors=True)
    t0 = time.perf_counter()
    split = write_split(store, ref_pool, split_root)
    result["split_seconds"] = round(time.perf_counter() - t0, 2)
    reference = ReferenceWay(split)
    facts = subject_facts(store, ref_pool)

    # 3a. cold: one call per subject, nothing of it in memory and no chart opened
    store.close()
    store = EHRStore(path)
    cold_ours, cold_ref = [], []
    for sid in ref_pool:  # interleaved, so machine noise hits both alike
        call = make_call(rng, sid, facts[sid], rng.choice(EHR_READ_TOOLS))
        cold_ours.append(run_ours(store, call, semantics))
        cold_ref.append(reference(call))
    result["cold_calls_ours"] = summary(cold_ours)
    result["cold_calls_reference_pandas"] = summary(cold_ref)
    result["cold_speedup_median"] = round(
        result["cold_calls_reference_pandas"]["median_ms"] / result["cold_calls_ours"]["median_ms"],
        1,
    )

    # 3b. sessions as the evaluation runs them: chart opened, the model's first turn, then the
    #     session's calls in a row (``pause_ms`` apart)
    store.close()
    store = EHRStore(path)
    per_session = max(1, calls // len(ref_pool))
    ref_plan = [
        make_call(rng, s, facts[s], rng.choice(EHR_READ_TOOLS))
        for s in ref_pool
        for _ in range(per_session)
    ]
    ours_ms, ref_ms = [], []
    for i, call in enumerate(ref_plan):
        if i % per_session == 0:
            open_chart(ToolContext(store=store, subject_id=call[0], semantics=semantics))
            time.sleep(model_turn_ms / 1000)
        elif pause_ms:
            time.sleep(pause_ms / 1000)
        ours_ms.append(run_ours(store, call, semantics))
        ref_ms.append(reference(call))
    result["calls_per_session"] = per_session
    result["pause_ms"] = pause_ms
    result["model_turn_ms"] = model_turn_ms
    result["same_calls_ours"] = summary(ours_ms)
    result["same_calls_reference_pandas"] = summary(ref_ms)
    result["speedup_median"] = round(
        result["same_calls_reference_pandas"]["median_ms"] / result["same_calls_ours"]["median_ms"],
        1,
    )
    result["speedup_cpu_median"] = round(
        result["same_calls_reference_pandas"]["cpu_median_ms"]
        / result["same_calls_ours"]["cpu_median_ms"],
        1,
    )
    result["speedup_p99"] = round(
        result["same_calls_reference_pandas"]["p99_ms"] / result["same_calls_ours"]["p99_ms"], 1
    )
    per_tool: dict[str, dict[str, float]] = {}
    for tool in EHR_READ_TOOLS:
        idx = [i for i, c in enumerate(ref_plan) if c[3] == tool]
        if idx:
            o = statistics.median(ours_ms[i][0] for i in idx)
            r = statistics.median(ref_ms[i][0] for i in idx)
            per_tool[tool] = {
                "ours_median_ms": round(o, 3),
                "reference_median_ms": round(r, 3),
                "speedup": round(r / o, 1),
            }
    result["per_tool"] = per_tool
    log(
        f"[{label}] ours {result['same_calls_ours']} reference "
        f"{result['same_calls_reference_pandas']} speedup x{result['speedup_median']}"
    )
    store.close()
    return result


def render_table(results: list[dict[str, Any]]) -> str:
    """Markdown table: wall-clock medians (ms) unless marked cpu."""
    cols = (
        "cohort",
        "subjects",
        "lab rows",
        "build s",
        "store MiB",
        "open ms: open_store / connect / sha256",
        "random calls med / p99",
        "first call med",
        "other first-time med",
        "repeated med",
        "same calls: ours med (cpu)",
        "pandas per-call med (cpu)",
        "speedup med (cpu)",
        "cold calls: ours / pandas med",
        "cold speedup",
    )
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in results:
        ours, ref = r["same_calls_ours"], r["same_calls_reference_pandas"]
        cells = (
            r["label"],
            f"{r['subjects']:,}",
            f"{r['rows']['labevents']:,}",
            r["build_seconds"],
            f"{r['store_bytes'] / 2**20:.1f}",
            f"{r['open']['open_store_ms']} / {r['open']['bare_connect_ms']} / "
            f"{r['open']['full_sha256_ms']}",
            f"{r['random_calls']['median_ms']} / {r['random_calls']['p99_ms']}",
            r["session_first_call"]["median_ms"],
            r["session_other_first_time_calls"]["median_ms"],
            r["session_repeated_calls"]["median_ms"],
            f"{ours['median_ms']} ({ours['cpu_median_ms']})",
            f"{ref['median_ms']} ({ref['cpu_median_ms']})",
            f"x{r['speedup_median']} (x{r['speedup_cpu_median']})",
            f"{r['cold_calls_ours']['median_ms']} / "
            f"{r['cold_calls_reference_pandas']['median_ms']}",
            f"x{r['cold_speedup_median']}",
        )
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--sizes", default="1000,10000,100000", help="cohort sizes (subjects), comma-separated"
    )
    parser.add_argument(
        "--source", action="append", default=[], help="benchmark an existing source instead"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calls", type=int, default=3000, help="mixed calls per measurement")
    parser.add_argument("--sessions", type=int, default=300, help="subjects run as sessions")
    parser.add_argument(
        "--reference-subjects", type=int, default=300, help="subjects split for pandas"
    )
    parser.add_argument("--semantics", choices=("strict", "compat"), default="strict")
    parser.add_argument(
        "--model-turn-ms",
        type=float,
        default=50.0,
        help="in the sessions part, time between opening the chart and the first call (the "
        "model's first turn; real models take seconds)",
    )
    parser.add_argument(
        "--pause-ms",
        type=float,
        default=0.0,
        help="pause between two calls of a session in the comparison, standing in for the "
        "model's turn (untimed; 0 = back to back)",
    )
    parser.add_argument(
        "--work-dir", default=None, help="cohorts, stores, splits (default: a temp dir)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the work dir")
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    args = parser.parse_args(argv)

    work = (
        Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="physassist-bench-"))
    )
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("PHYSASSIST_DUCKDB_MEMORY", "8GB")

    def log(msg: str) -> None:
        print(f"{dt.datetime.now():%H:%M:%S} {msg}", file=sys.stderr, flush=True)

    results = []
    try:
        sources: list[tuple[str, Path, float | None]] = [
            (Path(s).name, Path(s), None) for s in args.source
        ]
        if not args.source:
            from cohorts import cohort

            for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
                path, gen = cohort(size, seed=args.seed)  # kept between runs (cohorts.py)
                log(
                    f"[{size}] " + (f"generated in {gen}s" if gen is not None else f"reused {path}")
                )
                sources.append((str(size), path, gen))
        for label, source, gen in sources:
            res = bench_source(
                source,
                label=label,
                work=work,
                calls=args.calls,
                sessions=args.sessions,
                ref_subjects=args.reference_subjects,
                semantics=args.semantics,
                seed=args.seed,
                pause_ms=args.pause_ms,
                model_turn_ms=args.model_turn_ms,
                log=log,
            )
            res["generate_seconds"] = gen
            results.append(res)
    finally:
        if not args.keep and not args.work_dir:
            shutil.rmtree(work, ignore_errors=True)
    print(render_table(results))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
