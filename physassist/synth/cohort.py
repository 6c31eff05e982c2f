"""`generate_cohort`: the seeded synthetic cohort in MIMIC-IV layout, plus PHMs and metadata.

Subjects are planned one by one (Python) and expanded chunk by chunk (numpy/pyarrow). A chunk's
CSV text depends only on (seed, its subject indices), so the output is byte-identical for a
seed whether chunks are rendered serially or in worker processes; gzip streams use mtime 0.

Layout written under ``out_dir``::

    hosp/*.csv.gz  icu/*.csv.gz  note/{discharge,radiology}.csv.gz
    phm/<subject_id>.json        patient health model per subject
    meta/cohort.json             generator, seed, counts per archetype/tier, rows per table
    meta/subjects.csv            one row per subject: archetype, tier, anchor admission, persona
    meta/facts.jsonl             per subject: the key clinical facts the archetype was built around
"""

from __future__ import annotations

import csv
import io
import json
import multiprocessing
import os
import shutil
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from physassist.synth import chart_quirks, labs, meds, quirks, records
from physassist.synth.planner import build_plan
from physassist.synth.writer import (
    SCHEMAS,
    WRITTEN_TABLES,
    Columns,
    CsvGzWriter,
    Tables,
    conform,
    table_path,
)

GENERATOR_VERSION = 1
DEFAULT_CHUNK = 1000
#: The tables each chunk renders: all but the d_ dictionaries, written once (records.dictionaries).
PER_CHUNK_TABLES = tuple(t for t in WRITTEN_TABLES if not t.startswith("d_"))
SUBJECT_COLUMNS = (
    "subject_id",
    "archetype",
    "tier",
    "anchor_hadm_id",
    "current_date",
    "scenarios",
    "health_literacy",
    "adherence",
    "anxiety_level",
    "info_completeness",
    "withheld_drug",
    "key_drug",
)


@dataclass
class CohortReport:
    out_dir: Path
    n_subjects: int
    seed: int
    rows: dict[str, int] = field(default_factory=dict)
    archetype_tier: dict[str, int] = field(default_factory=dict)

    def __str__(self) -> str:
        big = ", ".join(
            f"{t} {self.rows.get(t, 0):,}"
            for t in ("labevents", "emar", "prescriptions", "chartevents")
        )
        return f"{self.n_subjects} subjects (seed {self.seed}) in {self.out_dir}: {big} rows"


@dataclass
class _Chunk:
    csv: dict[str, bytes]
    rows: dict[str, int]
    phm: list[tuple[int, bytes]]
    subjects: list[dict[str, object]]
    facts: list[bytes]


TEXT_TABLES = frozenset(
    {"discharge", "radiology", "microbiologyevents", "pharmacy", "d_icd_diagnoses"}
)


def _csv_bytes(table: str, data: pa.Table | Columns) -> tuple[bytes, int]:
    """CSV text without header. Like MIMIC-IV's files, values are unquoted unless a string
    column of this chunk holds a comma, quote or newline (then strings are quoted)."""
    tbl = conform(table, data)
    if tbl.num_rows == 0:
        return b"", 0
    buf = io.BytesIO()
    if table not in TEXT_TABLES:
        try:
            pacsv.write_csv(
                tbl, buf, pacsv.WriteOptions(include_header=False, quoting_style="none")
            )
            return buf.getvalue(), tbl.num_rows
        except pa.ArrowInvalid:  # a value holds a comma/quote/newline: quote this chunk's strings
            buf = io.BytesIO()
    pacsv.write_csv(tbl, buf, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
    return buf.getvalue(), tbl.num_rows


def _render_chunk(seed: int, chunk_no: int, start: int, stop: int) -> _Chunk:
    plans = [build_plan(i, seed) for i in range(start, stop)]
    rng = np.random.default_rng([seed, chunk_no, 7])
    tables: Tables = {
        "patients": records.patients(plans),
        "admissions": records.admissions(plans),
        "transfers": records.transfers(plans),
        "diagnoses_icd": records.diagnoses(plans),
        "labevents": labs.lab_table(plans, rng),
        "microbiologyevents": records.microbiology(plans),
        "omr": records.omr(plans),
        "icustays": records.icustays(plans),
        "chartevents": labs.chart_table(plans, rng),
        "discharge": records.notes_table(plans, "discharge"),
        "radiology": records.notes_table(plans, "radiology"),
    }
    tables.update(meds.med_tables(plans, rng))
    quirks.end_of_life(plans, tables["admissions"], tables["patients"])
    tables["labevents"] = quirks.blood_gas_twins(tables["labevents"])
    quirks.icu_doses(tables, plans)
    chart_quirks.split_orders(tables)
    tables["labevents"] = chart_quirks.contaminated_draws(tables["labevents"], plans)
    out, rows = {}, {}
    for name in PER_CHUNK_TABLES:
        data = tables.get(name)
        out[name], rows[name] = _csv_bytes(name, data) if data is not None else (b"", 0)
    phm = [
        (p.subject_id, json.dumps(p.phm, ensure_ascii=False, sort_keys=True).encode("utf-8"))
        for p in plans
    ]
    subjects = [
        {
            "subject_id": p.subject_id,
            "archetype": p.archetype,
            "tier": p.tier,
            "anchor_hadm_id": p.anchor.hadm_id,
            "current_date": p.facts["current_date"],
            "scenarios": ";".join(p.facts["scenarios"]),
            **{
                k: p.phm["persona"][k]
                for k in ("health_literacy", "adherence", "anxiety_level", "info_completeness")
            },
            "withheld_drug": p.facts.get("withheld_drug") or "",
            "key_drug": p.facts.get("key_drug") or "",
        }
        for p in plans
    ]
    facts = [
        json.dumps(
            {"subject_id": p.subject_id, "archetype": p.archetype, "tier": p.tier, **p.facts},
            ensure_ascii=False,
            sort_keys=True,
        ).encode("utf-8")
        for p in plans
    ]
    return _Chunk(out, rows, phm, subjects, facts)


def _chunks(n_subjects: int, chunk_size: int) -> list[tuple[int, int, int]]:
    return [
        (k, s, min(n_subjects, s + chunk_size))
        for k, s in enumerate(range(0, n_subjects, chunk_size))
    ]


def _rendered(seed: int, spans: list[tuple[int, int, int]], workers: int) -> Iterator[_Chunk]:
    if workers <= 1 or len(spans) <= 1:
        for k, s, e in spans:
            yield _render_chunk(seed, k, s, e)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_render_chunk, seed, k, s, e) for k, s, e in spans]
        for f in futures:  # in submission order: output order never depends on scheduling
            yield f.result()


def _check_replaceable(out: Path) -> None:
    """Refuse to overwrite a non-empty directory that is not a synthetic cohort (e.g. MIMIC-IV)."""
    if not out.is_dir() or not any(out.iterdir()):
        return
    meta = out / "meta" / "cohort.json"
    try:
        ours = json.loads(meta.read_text(encoding="utf-8")).get("generator") == "physassist.synth"
    except (OSError, ValueError, AttributeError):
        ours = False
    if not ours:
        raise FileExistsError(
            f"cohort output {out} is not empty and is not a synthetic cohort "
            f"(no {meta} from physassist.synth); choose an empty or new directory"
        )


def generate_cohort(
    out_dir: str | os.PathLike[str],
    n_subjects: int,
    seed: int = 0,
    *,
    chunk_size: int = DEFAULT_CHUNK,
    workers: int | None = None,
    compresslevel: int | None = None,
) -> CohortReport:
    """Write a synthetic cohort of ``n_subjects`` patients (MIMIC-IV layout) into ``out_dir``.

    Same ``(n_subjects, seed, chunk_size, compresslevel)`` -> byte-identical files, whatever
    ``workers`` is (default: up to 4 processes when there is more than one chunk).
    ``compresslevel`` defaults to 6 up to 5,000 subjects and 1 (fast) above. Subject ``i`` has archetype ``ARCHETYPES[i % 7]`` and tier ``(i // 7) % 3 + 1``,
    so any 21 consecutive subjects cover every archetype x tier.
    """
    if isinstance(n_subjects, bool) or not isinstance(n_subjects, int) or n_subjects < 1:
        raise ValueError(f"n_subjects must be a positive integer, got {n_subjects!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk_size must be a positive integer, got {chunk_size!r}")
    if compresslevel is None:
        compresslevel = 6 if n_subjects <= 5000 else 1
    if workers is None:
        workers = min(4, os.cpu_count() or 1) if n_subjects > chunk_size else 1
    if multiprocessing.current_process().daemon:  # daemonic workers cannot start a process pool
        workers = 1
    if not isinstance(compresslevel, int) or not 0 <= compresslevel <= 9:
        raise ValueError(f"compresslevel must be in 0..9, got {compresslevel!r}")
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NotADirectoryError(f"cohort output {out} exists and is not a directory")
    _check_replaceable(out)
    for sub in ("hosp", "icu", "note", "phm", "meta"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
        (out / sub).mkdir(parents=True)

    streams: dict[str, CsvGzWriter] = {}
    report = CohortReport(out, n_subjects, seed, rows=dict.fromkeys(SCHEMAS, 0))
    counts: Counter[str] = Counter()
    try:
        for name in SCHEMAS:
            streams[name] = CsvGzWriter(table_path(out, name), name, compresslevel)
        for name, data in records.dictionaries().items():
            body, n = _csv_bytes(name, data)
            streams[name].write(body)
            report.rows[name] = n
        with (
            open(out / "meta" / "subjects.csv", "w", newline="", encoding="utf-8") as sfh,
            open(out / "meta" / "facts.jsonl", "wb") as ffh,
        ):
            sw = csv.DictWriter(sfh, fieldnames=SUBJECT_COLUMNS, lineterminator="\n")
            sw.writeheader()
            for chunk in _rendered(seed, _chunks(n_subjects, chunk_size), workers):
                for name in PER_CHUNK_TABLES:
                    streams[name].write(chunk.csv[name])
                    report.rows[name] += chunk.rows[name]
                for sid, body in chunk.phm:
                    (out / "phm" / f"{sid}.json").write_bytes(body + b"\n")
                for row in chunk.subjects:
                    sw.writerow(row)
                    counts[f"{row['archetype']}:{row['tier']}"] += 1
                for line in chunk.facts:
                    ffh.write(line + b"\n")
    finally:
        for stream in streams.values():
            stream.close()
    report.archetype_tier = dict(sorted(counts.items()))
    meta = {
        "generator": "physassist.synth",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "n_subjects": n_subjects,
        "chunk_size": chunk_size,
        "compresslevel": compresslevel,
        "archetype_tier": report.archetype_tier,
        "rows": report.rows,
    }
    (out / "meta" / "cohort.json").write_text(
        json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    return report
