"""Make the reviewer's sheet: built demo turns with each rubric item beside the record rows.

    python docs/reviewer_sheet.py [--demo DIR] [--turns 20] [--seed 29]   # --demo: default $PHYSASSIST_MIMIC_DEMO (docs/data.md)

Builds sessions from the open MIMIC-IV demo as issue 29 does (3 per slot, seed 1), picks
``--turns`` turns at random (seeded) and writes ``docs/reviewer-sheet.md``: per turn the
question, the gold answer, each rubric item with its check, and the raw CSV rows (read here
with DuckDB, not through the builder) that a physician needs to accept or reject it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from generation.builder import build_sessions

DOCS = Path(__file__).resolve().parent
TABLES = (("hosp", "admissions"), ("hosp", "prescriptions"), ("hosp", "pharmacy"),
          ("hosp", "labevents"), ("hosp", "d_labitems"), ("hosp", "emar"),
          ("hosp", "microbiologyevents"), ("hosp", "diagnoses_icd"), ("hosp", "d_icd_diagnoses"),
          ("icu", "inputevents"), ("icu", "d_items"))
SERIES_SHOWN = 6  # lab rows shown per series: the newest ones, plus the first, peak and nadir


def _connect(demo: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for module, name in TABLES:
        con.execute(f"CREATE VIEW {name} AS SELECT * FROM "
                    f"read_csv('{demo / module / name}.csv.gz', header=true)")
    return con


def _table(header: list[str], rows: list[tuple]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join("" if v is None else str(v).replace("|", "/") for v in r) + " |"
            for r in rows]
    return out


def _lab_rows(con: duckdb.DuckDBPyConnection, hadm: int, label: str, cutoff: str) -> list[str]:
    rows = con.execute(
        "SELECT l.charttime, l.itemid, d.category, l.valuenum, l.valueuom, l.ref_range_lower, "
        "l.ref_range_upper FROM labevents l JOIN d_labitems d USING (itemid) "
        "WHERE l.hadm_id = ? AND d.label = ? AND lower(coalesce(d.fluid, 'Blood')) = 'blood' "
        "AND l.valuenum IS NOT NULL AND l.charttime < CAST(? AS DATE) + INTERVAL 1 DAY "
        "ORDER BY l.charttime", [hadm, label, cutoff]).fetchall()
    if not rows:
        return [f"No {label} in labevents for this admission."]
    chem = [r for r in rows if str(r[2]).lower() != "blood gas"] or rows
    keep = {0, len(rows) - 1, rows.index(max(chem, key=lambda r: r[3])),
            rows.index(min(chem, key=lambda r: r[3]))} | set(range(len(rows) - SERIES_SHOWN, len(rows)))
    shown = [r for i, r in enumerate(rows) if i in keep]
    return [f"labevents, {label}: {len(rows)} values in the admission ({len(chem)} outside "
            "blood gas); first, peak, nadir and newest shown:", "",
            *_table(["charttime", "itemid", "category", "value", "unit", "low", "high"], shown)]


def _drug_rows(con: duckdb.DuckDBPyConnection, hadm: int, word: str) -> list[str]:
    rx = con.execute(
        "SELECT p.starttime, p.stoptime, p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, "
        "ph.frequency, ph.sliding_scale, ph.status FROM prescriptions p "
        "LEFT JOIN pharmacy ph USING (pharmacy_id) WHERE p.hadm_id = ? "
        "AND contains(lower(p.drug), ?) ORDER BY p.starttime", [hadm, word.lower()]).fetchall()
    mar = con.execute(
        "SELECT coalesce(event_txt, '(empty)'), count(*), min(charttime), max(charttime) "
        "FROM emar WHERE hadm_id = ? AND contains(lower(medication), ?) GROUP BY 1 ORDER BY 2 DESC",
        [hadm, word.lower()]).fetchall()
    icu = con.execute(
        "SELECT d.label, i.ordercategorydescription, i.statusdescription, count(*), "
        "min(i.starttime), max(i.starttime) FROM inputevents i JOIN d_items d USING (itemid) "
        "WHERE i.hadm_id = ? AND contains(lower(d.label), ?) GROUP BY ALL ORDER BY 4 DESC",
        [hadm, word.lower()]).fetchall()
    out = [f"prescriptions + pharmacy, '{word}':", "",
           *_table(["start", "stop", "drug", "dose", "unit", "route", "frequency", "sliding",
                    "pharmacy status"], rx), "", f"emar events, '{word}':", "",
           *_table(["event", "count", "first", "last"], mar)]
    if icu:
        out += ["", f"ICU administrations (icu/inputevents, d_items label containing '{word}'; "
                "a drug with any has no dose-count item, physassist/timeline.py):", "",
                *_table(["label", "method", "status", "count", "first", "last"], icu)]
    return out


def _culture_rows(con: duckdb.DuckDBPyConnection, hadm: int, cutoff: str) -> list[str]:
    """Each test of the stay's specimens (those without hadm_id drawn from edregtime on
    included) drawn by the end of ``cutoff``, with its report time: a result reported after
    that was not known to the session."""
    rows = con.execute(
        "SELECT coalesce(m.charttime, m.chartdate) AS t, m.spec_type_desc, m.hadm_id IS NULL, "
        "m.test_name, m.storetime, CASE WHEN m.storetime IS NULL OR m.storetime >= "
        "CAST(? AS DATE) + INTERVAL 1 DAY THEN 'after the session' ELSE '' END, "
        "string_agg(DISTINCT m.org_name, ', '), "
        "string_agg(DISTINCT m.ab_name || ' ' || m.interpretation, ', ') "
        "FROM microbiologyevents m JOIN admissions a ON a.subject_id = m.subject_id "
        "WHERE a.hadm_id = ? AND (m.hadm_id = a.hadm_id OR (m.hadm_id IS NULL AND "
        "coalesce(m.charttime, m.chartdate) BETWEEN coalesce(a.edregtime, a.admittime) "
        "AND a.dischtime)) AND coalesce(m.charttime, m.chartdate) < CAST(? AS DATE) + INTERVAL 1 DAY "
        "GROUP BY ALL ORDER BY t, m.test_name", [cutoff, hadm, cutoff]).fetchall()
    return ["microbiologyevents (every test of the stay's specimens; no hadm_id: the ED's):", "",
            *_table(["drawn", "specimen", "no hadm_id", "test", "reported", "known", "organisms",
                     "antibiotics"], rows)]


def _dx_rows(con: duckdb.DuckDBPyConnection, hadm: int) -> list[str]:
    rows = con.execute(
        "SELECT d.seq_num, d.icd_code, d.icd_version, t.long_title FROM diagnoses_icd d "
        "LEFT JOIN d_icd_diagnoses t USING (icd_code, icd_version) WHERE d.hadm_id = ? "
        "ORDER BY d.seq_num LIMIT 3", [hadm]).fetchall()
    return ["diagnoses_icd (first three by seq_num):", "",
            *_table(["seq_num", "icd_code", "version", "title"], rows)]


def _turn(con: duckdb.DuckDBPyConnection, e: dict[str, Any], t: int) -> list[str]:
    hadm, cutoff = e["hadm_id"], e["current_date"]
    adm = con.execute("SELECT admittime, dischtime, deathtime, discharge_location "
                      "FROM admissions WHERE hadm_id = ?", [hadm]).fetchone()
    calls = [a["action"] for a in e["answer_list"][t] if a["action"]["name"] != "prepare_to_answer"]
    out = [f"### {e['id']}, turn {t + 1} ({e['task_types'][t]})", "",
           f"Subject {e['subject_id']}, admission {hadm}: admitted {adm[0]}, discharged {adm[1]} "
           f"to {adm[3]}{', died ' + str(adm[2]) if adm[2] else ''}; current date {cutoff}.", "",
           f"**Question:** {e['tasks_en'][t]}", "",
           "**Gold answer:**", "", *[f"> {line}" for line in e["answer_list"][t][-1]["observation"].splitlines()],
           "", "**Gold calls:** " + "; ".join(
               f"`{c['name']}` {json.dumps({k: v for k, v in c['arguments'].items() if k not in ('subject_id', 'hadm_id')})}"
               for c in calls), "", "**Rubric:**", "",
           *_table(["#", "item", "check"], [
               (i + 1, item, json.dumps(check, ensure_ascii=False)[:160])
               for i, (item, check) in enumerate(zip(e["rubrics"][t], e["rubric_checks"][t], strict=True))]),
           "", "**Record rows:**", ""]
    for c in calls:
        args = c["arguments"]
        if c["name"] == "Observation.search" and args.get("code"):
            out += _lab_rows(con, hadm, args["code"], cutoff) + [""]
        elif args.get("medication") and c["name"].endswith("search"):
            out += _drug_rows(con, hadm, str(args["medication"])) + [""]
        elif c["name"] == "MedicationRequest.create":
            out += _drug_rows(con, hadm, str(args["medication"]).split()[0]) + [""]
        elif c["name"] == "Condition.search":
            out += _dx_rows(con, hadm) + [""]
        elif c["name"] == "DiagnosticReport.search" and args.get("report_type") == "culture":
            out += _culture_rows(con, hadm, cutoff) + [""]
    return out


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    demo = os.environ.get("PHYSASSIST_MIMIC_DEMO")
    ap.add_argument("--demo", type=Path, default=demo, required=demo is None, help="the MIMIC-IV demo (docs/data.md)")
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--out", type=Path, default=DOCS / "reviewer-sheet.md")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        report = build_sessions(args.demo, tmp, sessions_per_slot=3, seed=1)
        entries = [json.loads(line) for p in sorted(Path(tmp).glob("*.jsonl"))
                   for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    turns = sorted(random.Random(args.seed).sample(
        [(i, t) for i, e in enumerate(entries) for t in range(len(e["tasks_en"]))], args.turns))
    con = _connect(args.demo)
    lines = ["# Reviewer's sheet: built demo turns beside their record", "",
             f"Made by `python docs/reviewer_sheet.py` (seed {args.seed}): {args.turns} turns "
             f"picked at random from the {report.n_sessions} sessions that "
             "`physassist-data build --store \"$PHYSASSIST_MIMIC_DEMO\" --per-slot 3 --seed 1` "
             "builds from the open MIMIC-IV demo ([data you bring](data.md); rejected by the record check: "
             f"{sum(report.rejects.values())}). Each turn shows the question, the gold answer, "
             "every rubric item with its machine check, and the raw CSV rows that support it, "
             "read directly from the demo tables. The session's current date is the "
             "discharge day; an order counts as current when it was not stopped before "
             "discharge, give or take an hour (physassist/timeline.py).", ""]
    for i, t in turns:
        lines += _turn(con, entries[i], t) + [""]
    args.out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return args.out


if __name__ == "__main__":
    print(main())
