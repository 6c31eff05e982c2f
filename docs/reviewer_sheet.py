"""Make the reviewer's sheet: built turns beside their record, for a physician to judge.

    python docs/reviewer_sheet.py [--source DIR] [--build DIR] [--per-slot 3] [--build-seed 1]
                                  [--turns 20] [--seed 29]
    # --source (or --demo): default $PHYSASSIST_MIMIC_DEMO (docs/data.md)

Reads the sessions of ``--build`` (a folder of ``<scenario>.jsonl``), or builds them from
``--source`` as ``physassist-data build --store SOURCE --per-slot N --seed S`` does, picks
``--turns`` turns at random (``--seed``) and writes ``docs/reviewer-sheet.md``. Per session: the
admission (dates, type, destination, outcome), its first coded diagnoses and what the session
was built on (the chart's safety signal or measured treatment response, for the scenarios that
need one). Per turn: the question, the gold answer, each rubric item with its check, and the raw
CSV rows a physician needs to accept or reject it, read here with DuckDB from the source's
tables, not through the builder: the lab series (a value that spikes and comes back within hours
is marked), the orders and their eMAR events per order (``poe_id``), ICU inputs, cultures,
diagnoses.
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
from generation.builder.answers import RESPONSE_KINDS, SIGNAL_KINDS
from physassist.lab_artifacts import spikes

DOCS = Path(__file__).resolve().parent
TABLES = (
    ("hosp", "admissions"),
    ("hosp", "prescriptions"),
    ("hosp", "pharmacy"),
    ("hosp", "labevents"),
    ("hosp", "d_labitems"),
    ("hosp", "emar"),
    ("hosp", "microbiologyevents"),
    ("hosp", "diagnoses_icd"),
    ("hosp", "d_icd_diagnoses"),
    ("icu", "inputevents"),
    ("icu", "d_items"),
)
SERIES_SHOWN = 6  # lab rows shown per series: the newest ones, plus the first, peak and nadir
#: Turn kinds a session of these scenarios is built on (the chart's signal or response).
BUILT_ON = tuple(sorted({"drug_lab_safety", *SIGNAL_KINDS, *RESPONSE_KINDS}))


def _connect(source: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for module, name in TABLES:
        path = source / module / f"{name}.csv.gz"
        if path.is_file():
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_csv('{path}', header=true)")
    return con


def _table(header: list[str], rows: list[tuple]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += [
        "| " + " | ".join("" if v is None else str(v).replace("|", "/") for v in r) + " |"
        for r in rows
    ]
    return out


class _P:
    """A lab row as lab_artifacts reads it."""

    def __init__(self, row: tuple) -> None:
        self.time, self.value = row[0], float(row[3])


def _lab_rows(con: duckdb.DuckDBPyConnection, hadm: int, label: str, cutoff: str) -> list[str]:
    rows = con.execute(
        "SELECT l.charttime, l.itemid, d.category, l.valuenum, l.valueuom, l.ref_range_lower, "
        "l.ref_range_upper FROM labevents l JOIN d_labitems d USING (itemid) "
        "WHERE l.hadm_id = ? AND d.label = ? AND lower(coalesce(d.fluid, 'Blood')) = 'blood' "
        "AND l.valuenum IS NOT NULL AND l.charttime < CAST(? AS DATE) + INTERVAL 1 DAY "
        "ORDER BY l.charttime",
        [hadm, label, cutoff],
    ).fetchall()
    if not rows:
        return [f"No {label} in labevents for this admission."]
    chem = [r for r in rows if str(r[2]).lower() != "blood gas"] or rows
    spiked = {chem[i][0] for i, _ in spikes([_P(r) for r in chem])}
    keep = {
        0,
        len(rows) - 1,
        rows.index(max(chem, key=lambda r: r[3])),
        rows.index(min(chem, key=lambda r: r[3])),
    } | set(range(len(rows) - SERIES_SHOWN, len(rows)))
    keep |= {i for i, r in enumerate(rows) if r[0] in spiked}
    shown = [
        (*r, "spike: back within hours" if r[0] in spiked else "")
        for i, r in enumerate(rows)
        if i in keep
    ]
    return [
        f"labevents, {label}: {len(rows)} values in the admission ({len(chem)} outside "
        "blood gas); first, peak, nadir, spikes and newest shown:",
        "",
        *_table(["charttime", "itemid", "category", "value", "unit", "low", "high", "note"], shown),
    ]


def _drug_rows(con: duckdb.DuckDBPyConnection, hadm: int, word: str) -> list[str]:
    rx = con.execute(
        "SELECT p.poe_id, p.starttime, p.stoptime, p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, "
        "ph.frequency, ph.sliding_scale, ph.status FROM prescriptions p "
        "LEFT JOIN pharmacy ph USING (pharmacy_id) WHERE p.hadm_id = ? "
        "AND contains(lower(p.drug), ?) ORDER BY p.starttime",
        [hadm, word.lower()],
    ).fetchall()
    mar = con.execute(
        "SELECT poe_id, medication, coalesce(event_txt, '(empty)'), count(*), min(charttime), "
        "max(charttime) FROM emar WHERE hadm_id = ? AND contains(lower(medication), ?) "
        "GROUP BY ALL ORDER BY 5",
        [hadm, word.lower()],
    ).fetchall()
    icu = con.execute(
        "SELECT d.label, i.ordercategorydescription, i.statusdescription, count(*), "
        "min(i.starttime), max(i.starttime) FROM inputevents i JOIN d_items d USING (itemid) "
        "WHERE i.hadm_id = ? AND contains(lower(d.label), ?) GROUP BY ALL ORDER BY 4 DESC",
        [hadm, word.lower()],
    ).fetchall()
    out = [
        f"prescriptions + pharmacy, '{word}' (rows of one poe_id are one order):",
        "",
        *_table(
            [
                "poe_id",
                "start",
                "stop",
                "drug",
                "dose",
                "unit",
                "route",
                "frequency",
                "sliding",
                "pharmacy status",
            ],
            rx,
        ),
        "",
        f"emar events, '{word}', per order (a nurse counts Administered / Not Given / Hold Dose):",
        "",
        *_table(["poe_id", "medication", "event", "count", "first", "last"], mar),
    ]
    if icu:
        out += [
            "",
            f"ICU administrations (icu/inputevents, d_items label containing '{word}'; "
            "a drug with any has no dose-count item, physassist/timeline.py):",
            "",
            *_table(["label", "method", "status", "count", "first", "last"], icu),
        ]
    return out


def _culture_rows(con: duckdb.DuckDBPyConnection, hadm: int, cutoff: str) -> list[str]:
    """Each test of the stay's specimens (those without hadm_id drawn from edregtime on
    included) drawn by the end of ``cutoff``, with its report time: a result reported after
    that was not known to the session."""
    rows = con.execute(
        "SELECT coalesce(m.charttime, m.chartdate) AS t, m.spec_type_desc, m.hadm_id IS NULL, "
        "m.test_name, m.storetime, CASE WHEN m.storetime IS NULL OR m.storetime >= "
        "CAST(? AS DATE) + INTERVAL 1 DAY THEN 'after the session' ELSE '' END, "
        "string_agg(DISTINCT m.org_name, ', ' ORDER BY m.org_name), "
        "string_agg(DISTINCT m.ab_name || ' ' || m.interpretation, ', ' "
        "ORDER BY m.ab_name || ' ' || m.interpretation) "
        "FROM microbiologyevents m JOIN admissions a ON a.subject_id = m.subject_id "
        "WHERE a.hadm_id = ? AND (m.hadm_id = a.hadm_id OR (m.hadm_id IS NULL AND "
        "coalesce(m.charttime, m.chartdate) BETWEEN coalesce(a.edregtime, a.admittime) "
        "AND a.dischtime)) AND coalesce(m.charttime, m.chartdate) < CAST(? AS DATE) + INTERVAL 1 "
        "DAY "
        "GROUP BY ALL ORDER BY t, m.test_name",
        [cutoff, hadm, cutoff],
    ).fetchall()
    return [
        "microbiologyevents (every test of the stay's specimens; no hadm_id: the ED's):",
        "",
        *_table(
            [
                "drawn",
                "specimen",
                "no hadm_id",
                "test",
                "reported",
                "known",
                "organisms",
                "antibiotics",
            ],
            rows,
        ),
    ]


def _dx_rows(con: duckdb.DuckDBPyConnection, hadm: int, n: int = 3) -> list[tuple]:
    return con.execute(
        "SELECT d.seq_num, d.icd_code, d.icd_version, t.long_title FROM diagnoses_icd d "
        "LEFT JOIN d_icd_diagnoses t USING (icd_code, icd_version) WHERE d.hadm_id = ? "
        "ORDER BY d.seq_num LIMIT ?",
        [hadm, n],
    ).fetchall()


def _session(con: duckdb.DuckDBPyConnection, e: dict[str, Any]) -> list[str]:
    """The session-level facts: admission and outcome, diagnoses, what it was built on."""
    adm = con.execute(
        "SELECT admittime, dischtime, admission_type, admission_location, "
        "discharge_location, deathtime, hospital_expire_flag FROM admissions "
        "WHERE hadm_id = ?",
        [e["hadm_id"]],
    ).fetchone()
    intents = e.get("session_plan", {}).get("turn_intents", [])
    built_on = [i for i in intents if i.startswith(BUILT_ON)]
    outcome = "died" if adm[5] or str(adm[6]) == "1" else f"discharged to {adm[4]}"
    fit = (
        ("built on " + "; ".join(built_on))
        if built_on
        else (
            "no signal required"
            if e["clinical_scenario"] in ("diagnostic_workup", "discharge_planning")
            else "NO signal or response asked"
        )
    )
    return [
        f"## {e['id']}",
        "",
        f"Subject {e['subject_id']}, admission {e['hadm_id']} ({adm[2]}, from {adm[3]}): "
        f"admitted {adm[0]}, {outcome} at {adm[1]}; the session's date is "
        f"{e['current_date']}. Scenario {e['clinical_scenario']}, tier "
        f"L{e['difficulty_level']}, {fit}.",
        "",
        "Turns: " + " -> ".join(intents),
        "",
        *_table(["seq_num", "icd_code", "version", "title"], _dx_rows(con, e["hadm_id"])),
        "",
    ]


def _turn(con: duckdb.DuckDBPyConnection, e: dict[str, Any], t: int) -> list[str]:
    hadm, cutoff = e["hadm_id"], e["current_date"]
    calls = [a["action"] for a in e["answer_list"][t] if a["action"]["name"] != "prepare_to_answer"]
    out = [
        f"### {e['id']}, turn {t + 1} ({e['task_types'][t]})",
        "",
        f"**Question:** {e['tasks_en'][t]}",
        "",
        "**Gold answer:**",
        "",
        *[f"> {line}" for line in e["answer_list"][t][-1]["observation"].splitlines()],
        "",
        "**Gold calls:** "
        + "; ".join(
            f"`{c['name']}` "
            f"{json.dumps({k: v for k, v in c['arguments'].items() if k not in ('subject_id', 'hadm_id')})}"
            for c in calls
        ),
        "",
        "**Rubric:**",
        "",
        *_table(
            ["#", "item", "check"],
            [
                (i + 1, item, json.dumps(check, ensure_ascii=False)[:160])
                for i, (item, check) in enumerate(
                    zip(e["rubrics"][t], e["rubric_checks"][t], strict=True)
                )
            ],
        ),
        "",
        "**Record rows:**",
        "",
    ]
    for c in calls:
        args = c["arguments"]
        if c["name"] == "Observation.search" and args.get("code"):
            out += _lab_rows(con, hadm, args["code"], cutoff) + [""]
        elif args.get("medication") and c["name"].endswith("search"):
            out += _drug_rows(con, hadm, str(args["medication"])) + [""]
        elif c["name"] == "MedicationRequest.create":
            out += _drug_rows(con, hadm, str(args["medication"]).split()[0]) + [""]
        elif c["name"] == "Condition.search":
            out += [
                "diagnoses_icd (first three by seq_num):",
                "",
                *_table(["seq_num", "icd_code", "version", "title"], _dx_rows(con, hadm)),
                "",
            ]
        elif c["name"] == "DiagnosticReport.search" and args.get("report_type") == "culture":
            out += _culture_rows(con, hadm, cutoff) + [""]
        elif (lab := _written_lab(c)) is not None:
            out += _lab_rows(con, hadm, lab, cutoff) + [""]
    return out


def _written_lab(call: dict[str, Any]) -> str | None:
    """The lab a write is about: a repeat lab ordered ("Repeat X") or flagged ("Abnormal X")."""
    args = call["arguments"]
    for field, prefix in (("service_type", "Repeat "), ("code", "Abnormal ")):
        text = str(args.get(field) or "")
        if text.startswith(prefix):
            return text[len(prefix) :]
    return None


def _entries(folder: Path) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for p in sorted(folder.glob("*.jsonl"))
        for line in p.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def main(argv: list[str] | None = None) -> Path:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    demo = os.environ.get("PHYSASSIST_MIMIC_DEMO")
    ap.add_argument(
        "--source",
        "--demo",
        type=Path,
        default=demo,
        required=demo is None,
        help="the EHR source the sessions were built from (MIMIC-IV layout; "
        "default $PHYSASSIST_MIMIC_DEMO, docs/data.md)",
    )
    ap.add_argument(
        "--build",
        type=Path,
        default=None,
        help="a folder of built sessions (default: build them from --source)",
    )
    ap.add_argument("--per-slot", type=int, default=3)
    ap.add_argument("--build-seed", type=int, default=1)
    ap.add_argument("--turns", type=int, default=20)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--out", type=Path, default=DOCS / "reviewer-sheet.md")
    args = ap.parse_args(argv)
    if args.build is not None:
        entries, made = _entries(args.build), f"`{args.build}`"
    else:
        with tempfile.TemporaryDirectory() as tmp:
            build_sessions(args.source, tmp, sessions_per_slot=args.per_slot, seed=args.build_seed)
            entries = _entries(Path(tmp))
        store = '"$PHYSASSIST_MIMIC_DEMO"' if str(args.source) == demo else args.source
        made = (
            f"`physassist-data build --store {store} --per-slot {args.per_slot} "
            f"--seed {args.build_seed}`"
        )
    pool = [(i, t) for i, e in enumerate(entries) for t in range(len(e["tasks_en"]))]
    turns = sorted(random.Random(args.seed).sample(pool, min(args.turns, len(pool))))
    con = _connect(args.source)
    lines = [
        "# Reviewer's sheet: built turns beside their record",
        "",
        f"Made by `python docs/reviewer_sheet.py` (seed {args.seed}): {len(turns)} turns "
        f"picked at random from the {len(entries)} sessions of {made}. Each session "
        "shows its admission and outcome, its first coded diagnoses and what it was built "
        "on; each turn the question, the gold answer, every rubric item with its machine "
        "check, and the raw CSV rows that support it, read directly from the source's "
        "tables. The session's current date is the discharge day; an order counts as "
        "current when it was not stopped before discharge, give or take an hour "
        "(physassist/timeline.py).",
        "",
    ]
    shown: set[int] = set()
    for i, t in turns:
        if i not in shown:
            lines += _session(con, entries[i])
            shown.add(i)
        lines += _turn(con, entries[i], t) + [""]
    args.out.write_text("\n".join(lines).rstrip() + "\n", encoding="utf-8")
    return args.out


if __name__ == "__main__":
    print(main())
