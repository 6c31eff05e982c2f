"""Patient pre-filtering per scenario x tier (docs/generation.md#pre-filter), in DuckDB.

One feature query over the whole store computes, for every subject's primary (latest)
admission, the counts the paper's content rules need; each scenario x tier is then a SQL
predicate over those features. Tiers are evaluated independently, so an L3 slot only ever
receives L3-qualified patients (the reference merged pools; docs/generation.md#pre-filter). The reference's
stage-1 byte thresholds on per-subject files have no equivalent in a database, so row-count
thresholds of the same order stand in for them.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from physassist.vocab import SCENARIOS, TIERS

from .vocab import (
    ANTIBIOTIC_CLASSES,
    CIRRHOSIS_ICD_PREFIXES,
    DRUG_CLASSES,
    DRUG_LEVEL_SYSTEM,
    INFECTION_MARKERS,
    LABS,
    MONITORING_LABS,
    PNEUMONIA_ICD_PREFIXES,
    SEPSIS_ICD_PREFIXES,
)


@dataclass(frozen=True)
class Candidate:
    """A qualified (subject, primary admission) pair and its admission's discharge date."""

    subject_id: int
    hadm_id: int
    current_date: str  # YYYY-MM-DD, the discharge date: the session's cutoff day


def _values(rows: list[tuple[str, ...]]) -> str:
    """A SQL VALUES list of string tuples (the vocabulary is ours, but quote anyway)."""

    def q(s: str) -> str:
        return "'" + s.replace("'", "''") + "'"

    return ", ".join("(" + ", ".join(q(c) for c in row) + ")" for row in rows)


def _prefix_any(column: str, prefixes: tuple[str, ...]) -> str:
    return "(" + " OR ".join(f"starts_with({column}, '{p}')" for p in prefixes) + ")"


def _feature_sql() -> str:
    lab_rows = _values([(lab.label, lab.system) for lab in LABS.values()])
    drug_rows = _values([(cls.name, pat) for cls in DRUG_CLASSES for pat in cls.patterns])
    drug_lab_rows = _values([(cls.name, lab) for cls in DRUG_CLASSES for lab in cls.labs])
    abx_rows = _values([(cls, name) for cls, names in ANTIBIOTIC_CLASSES.items() for name in names])
    monitor = ", ".join(f"'{x}'" for x in MONITORING_LABS)
    markers = ", ".join(f"'{x}'" for x in INFECTION_MARKERS)
    icd = "replace(d.icd_code, '.', '')"
    return f"""
WITH adm AS (
    SELECT subject_id, hadm_id, admittime, dischtime, deathtime, discharge_location,
           hospital_expire_flag,
           CAST(COALESCE(dischtime, admittime) AS DATE) AS cut_day,
           CAST(COALESCE(dischtime, admittime) AS DATE) + INTERVAL 1 DAY AS cut_ts
    FROM admissions
    QUALIFY row_number() OVER (PARTITION BY subject_id ORDER BY admittime DESC, hadm_id DESC) = 1
),
labmap(label, system) AS (VALUES {lab_rows}),
lab AS (
    SELECT l.subject_id, m.label, m.system, l.charttime
    FROM labevents l JOIN d_labitems di USING (itemid) JOIN labmap m ON m.label = di.label
    JOIN adm a ON a.hadm_id = l.hadm_id
    WHERE l.valuenum IS NOT NULL AND l.charttime < a.cut_ts
      AND (di.fluid IS NULL OR lower(di.fluid) = 'blood')
),
labf AS (
    SELECT subject_id,
           count(DISTINCT system) FILTER (WHERE system <> '{DRUG_LEVEL_SYSTEM}') AS n_systems,
           count(DISTINCT label) FILTER (WHERE label IN ({monitor})) AS n_monitor,
           count(*) FILTER (WHERE label IN ({markers})) AS n_marker,
           count(DISTINCT charttime) FILTER (WHERE label = 'White Blood Cells') AS n_wbc,
           bool_or(label = 'Urea Nitrogen') AND bool_or(label = 'Creatinine') AS has_bun_cr,
           bool_or(label = 'Bilirubin, Total') AND bool_or(label = 'Albumin')
               AND bool_or(label = 'INR(PT)') AS has_hepatic,
           bool_or(label = 'Platelet Count') AND bool_or(label = 'Bilirubin, Total')
               AND bool_or(label = 'Creatinine') AS has_sofa_labs
    FROM lab GROUP BY subject_id
),
laball AS (
    SELECT l.subject_id, count(*) AS n_lab_rows
    FROM labevents l JOIN adm a ON a.hadm_id = l.hadm_id
    WHERE l.charttime < a.cut_ts GROUP BY l.subject_id
),
dx AS (
    SELECT d.subject_id, count(*) AS n_dx,
           bool_or({_prefix_any(icd, PNEUMONIA_ICD_PREFIXES)}) AS has_pneumonia,
           bool_or({_prefix_any(icd, CIRRHOSIS_ICD_PREFIXES)}) AS has_cirrhosis,
           bool_or({_prefix_any(icd, SEPSIS_ICD_PREFIXES)}) AS has_sepsis
    FROM diagnoses_icd d JOIN adm a ON a.hadm_id = d.hadm_id GROUP BY d.subject_id
),
rx AS (
    SELECT p.subject_id, p.drug FROM prescriptions p JOIN adm a ON a.hadm_id = p.hadm_id
    WHERE p.drug IS NOT NULL AND (p.starttime IS NULL OR p.starttime < a.cut_ts)
),
rxf AS (
    SELECT subject_id, count(*) AS n_rx, count(DISTINCT lower(drug)) AS n_drugs
    FROM rx GROUP BY subject_id
),
drugpat(cls, pat) AS (VALUES {drug_rows}),
druglab(cls, label) AS (VALUES {drug_lab_rows}),
pairs AS (
    SELECT r.subject_id, count(DISTINCT dp.cls) AS n_pairs
    FROM rx r JOIN drugpat dp ON contains(lower(r.drug), dp.pat)
    JOIN druglab dl ON dl.cls = dp.cls
    JOIN (SELECT DISTINCT subject_id, label FROM lab) lb
      ON lb.subject_id = r.subject_id AND lb.label = dl.label
    GROUP BY r.subject_id
),
emarf AS (
    SELECT e.subject_id, count(*) AS n_emar FROM emar e JOIN adm a ON a.hadm_id = e.hadm_id
    WHERE e.charttime < a.cut_ts GROUP BY e.subject_id
),
abxpat(cls, pat) AS (VALUES {abx_rows}),
abx AS (
    SELECT e.subject_id, count(DISTINCT ap.cls) AS n_abx_classes
    FROM emar e JOIN adm a ON a.hadm_id = e.hadm_id
    JOIN abxpat ap ON contains(lower(e.medication), ap.pat)
    WHERE e.charttime < a.cut_ts GROUP BY e.subject_id
),
rad AS (
    SELECT r.subject_id, count(*) AS n_rad FROM radiology r JOIN adm a ON a.hadm_id = r.hadm_id
    WHERE r.charttime < a.cut_ts GROUP BY r.subject_id
),
micro AS (
    SELECT m.subject_id, count(DISTINCT (m.spec_type_desc, m.charttime)) AS n_micro
    FROM microbiologyevents m JOIN adm a ON a.hadm_id = m.hadm_id
    WHERE COALESCE(m.charttime, m.chartdate) < a.cut_ts GROUP BY m.subject_id
),
dis AS (
    SELECT n.subject_id, count(*) AS n_discharge FROM discharge n
    JOIN adm a ON a.hadm_id = n.hadm_id GROUP BY n.subject_id
)
SELECT a.subject_id, a.hadm_id, strftime(a.cut_day, '%Y-%m-%d') AS current_date,
       COALESCE(a.hospital_expire_flag, 0) = 1 OR a.deathtime IS NOT NULL
         OR upper(COALESCE(a.discharge_location, '')) LIKE '%DIED%'
         OR upper(COALESCE(a.discharge_location, '')) LIKE '%HOSPICE%' AS died_or_hospice,
       COALESCE(labf.n_systems, 0) AS n_systems, COALESCE(labf.n_monitor, 0) AS n_monitor,
       COALESCE(labf.n_marker, 0) AS n_marker, COALESCE(labf.n_wbc, 0) AS n_wbc,
       COALESCE(labf.has_bun_cr, false) AS has_bun_cr,
       COALESCE(labf.has_hepatic, false) AS has_hepatic,
       COALESCE(labf.has_sofa_labs, false) AS has_sofa_labs,
       COALESCE(laball.n_lab_rows, 0) AS n_lab_rows,
       COALESCE(dx.n_dx, 0) AS n_dx, COALESCE(dx.has_pneumonia, false) AS has_pneumonia,
       COALESCE(dx.has_cirrhosis, false) AS has_cirrhosis,
       COALESCE(dx.has_sepsis, false) AS has_sepsis,
       COALESCE(rxf.n_rx, 0) AS n_rx, COALESCE(rxf.n_drugs, 0) AS n_drugs,
       COALESCE(pairs.n_pairs, 0) AS n_pairs, COALESCE(emarf.n_emar, 0) AS n_emar,
       COALESCE(abx.n_abx_classes, 0) AS n_abx_classes,
       COALESCE(rad.n_rad, 0) + COALESCE(micro.n_micro, 0) AS n_reports,
       COALESCE(dis.n_discharge, 0) AS n_discharge
FROM adm a
LEFT JOIN labf USING (subject_id) LEFT JOIN laball USING (subject_id)
LEFT JOIN dx USING (subject_id) LEFT JOIN rxf USING (subject_id)
LEFT JOIN pairs USING (subject_id) LEFT JOIN emarf USING (subject_id)
LEFT JOIN abx USING (subject_id) LEFT JOIN rad USING (subject_id)
LEFT JOIN micro USING (subject_id) LEFT JOIN dis USING (subject_id)
"""


# Scenario x tier content rules over the feature columns. Each tier is self-contained.
_DW_BASE = "n_systems >= {s} AND n_reports >= {r} AND n_dx >= {d}"
_CURB65 = "(has_pneumonia AND has_bun_cr)"
_CHILD_PUGH = "(has_cirrhosis AND has_hepatic)"
RULES: dict[str, dict[int, str]] = {
    "diagnostic_workup": {
        1: _DW_BASE.format(s=2, r=1, d=3),
        2: f"{_DW_BASE.format(s=2, r=1, d=3)} AND ({_DW_BASE.format(s=3, r=2, d=5)} "
        f"OR {_CURB65} OR {_CHILD_PUGH})",
        3: f"{_DW_BASE.format(s=2, r=1, d=3)} AND ({_DW_BASE.format(s=4, r=3, d=8)} "
        f"OR {_CHILD_PUGH} OR (has_sepsis AND n_marker > 0))",
    },
    "med_safety": {
        1: "n_monitor >= 1 AND n_rx >= 3",
        2: "n_monitor >= 1 AND n_rx >= 10 AND n_pairs >= 1",
        3: "n_monitor >= 1 AND n_rx >= 20 AND n_pairs >= 2",
    },
    "treatment_response": {
        1: "n_marker > 0 AND n_emar > 0",
        2: "n_marker > 0 AND n_emar > 0 AND n_wbc >= 2 AND n_abx_classes >= 1",
        3: "n_marker > 0 AND n_emar > 0 AND n_wbc >= 3 AND n_abx_classes >= 2 AND n_dx >= 5 "
        "AND (has_sofa_labs OR has_sepsis)",
    },
    "discharge_planning": {
        1: "n_discharge > 0 AND n_drugs >= 10 AND n_dx >= 5 AND n_lab_rows > 0",
        2: "n_discharge > 0 AND n_drugs >= 20 AND n_dx >= 12 AND n_lab_rows > 50",
        3: "n_discharge > 0 AND n_drugs >= 30 AND n_dx >= 18 AND n_lab_rows > 150",
    },
}


def qualify(
    con: duckdb.DuckDBPyConnection,
    scenarios: tuple[str, ...] | list[str] = SCENARIOS,
    tiers: tuple[int, ...] | list[int] = TIERS,
) -> dict[tuple[str, int], list[Candidate]]:
    """Qualified candidates per (scenario, tier), each list sorted by subject_id."""
    for s in scenarios:
        if s not in RULES:
            raise ValueError(f"unknown scenario {s!r}; expected one of {', '.join(SCENARIOS)}")
    for t in tiers:
        if t not in TIERS:
            raise ValueError(f"unknown tier {t!r}; expected 1, 2 or 3")
    features = con.sql(_feature_sql()).to_arrow_table()
    # The store is read-only: filter the (small, one row per subject) features in memory.
    local = duckdb.connect()
    local.register("features", features)
    out: dict[tuple[str, int], list[Candidate]] = {}
    for s in scenarios:
        for t in tiers:
            rows = local.execute(
                f"SELECT subject_id, hadm_id, current_date FROM features "
                f"WHERE NOT died_or_hospice AND ({RULES[s][t]}) ORDER BY subject_id"
            ).fetchall()
            out[(s, t)] = [Candidate(int(a), int(b), str(c)) for a, b, c in rows]
    local.close()
    return out
