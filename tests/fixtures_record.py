"""Built sessions read against the raw source CSV tables, independently of the builder.

A reviewer's reading of MIMIC-IV, written from the tables alone with DuckDB (no builder, no
store, no tools): what each session's rubric may say about current orders, doses, latest
lab values, cultures, administrations and the patient's course. ``defects`` lists every
disagreement by category; a clinically sound build has none.

Administrations are counted per order, as a nurse counts them: the eMAR events of the current
order's ``poe_id`` that gave (Administered, Applied) or withheld (Not Given, Hold Dose) a dose; a
dose withheld in the hours before discharge is expected, not missed. The ICU charts most drugs
given there only in ``icu/inputevents`` (MetaVision): an ICU row counts for a drug when its
``d_items.label`` holds the drug word. A turn that states a dose count or the last dose of a
drug with any ICU administration is a defect: the compat tools (the reference's) show the eMAR
only.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

#: What a reviewer accepts as "current" on the discharge day: not stopped before discharge
#: (pharmacy closes orders running at discharge with a stop time after it), give or take an hour.
GRACE = dt.timedelta(hours=1)
#: Line care, never a drug of a session: flushes, locks, catheter clearance, dialysis priming.
LINE_CARE = re.compile(r"flush|dwell|lock\b|catheter|clearance|cathflo|crrt|dialys|priming|iabp|picc|"
                       r"midline", re.IGNORECASE)
NO_FIXED_DOSE = ("PRN", "ONCE", "1X", "X1", "NOW", "STAT", "ASDIR", "AS DIRECTED", "INFUSION")
#: Turn intents (session_plan) that state a dose count or the last dose given.
DOSE_COUNT_KINDS = ("med_and_admin(", "admin_reliability(", "abx_response(")
CATEGORIES = ("current_orders", "zero_doses", "latest_values", "cultures", "administrations",
              "end_of_life")


def _table(con: duckdb.DuckDBPyConnection, source: Path, module: str, name: str) -> None:
    path = source / module / f"{name}.csv.gz"
    if path.is_file():
        # a table, not a view: a view would parse the whole gzipped CSV again for each query
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}', header=true, "
                    "all_varchar=true)")
    else:
        con.execute(f"CREATE VIEW {name} AS SELECT NULL::VARCHAR AS hadm_id, "
                    "NULL::VARCHAR AS itemid, NULL::VARCHAR AS label WHERE false")


@functools.cache  # the tables are only read: one copy per process for every test
def raw(source: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for module, names in (("hosp", ("admissions", "prescriptions", "pharmacy", "labevents",
                                    "d_labitems", "emar", "emar_detail", "microbiologyevents")),
                          ("icu", ("icustays", "inputevents", "d_items"))):
        for name in names:
            _table(con, source, module, name)
    return con


def _ts(text: Any) -> dt.datetime | None:
    return dt.datetime.fromisoformat(str(text)) if text not in (None, "") else None


def _num(text: Any) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


class Record:
    """One admission's raw rows, read on demand."""

    def __init__(self, con: duckdb.DuckDBPyConnection, hadm_id: int, current_date: str) -> None:
        self.con, self.hadm = con, str(hadm_id)
        self.cutoff = dt.datetime.fromisoformat(current_date) + dt.timedelta(days=1)
        adm = con.execute("SELECT dischtime, deathtime, discharge_location, hospital_expire_flag "
                          "FROM admissions WHERE hadm_id = ?", [self.hadm]).fetchone()
        self.disch, self.death, self.location, self.expired = adm

    def rows(self, sql: str, *args: Any) -> list[tuple]:
        return self.con.execute(sql, [self.hadm, *args]).fetchall()

    @property
    def end_of_life(self) -> bool:
        loc = str(self.location or "").upper()
        return self.expired == "1" or bool(self.death) or "DIED" in loc or "HOSPICE" in loc

    def current_orders(self, word: str) -> list[dict[str, Any]] | None:
        """The current orders of ``word`` as a pharmacist reads them: the prescription rows of
        one ``poe_id`` (same drug, start, unit, frequency) are one order, line care (flushes,
        catheter clearance) is none; its dose is the eMAR's ``dose_due`` when that is a row's
        dose or their sum, else the rows' common dose, else their sum. None when one of them has
        no fixed dose."""
        ref = min(_ts(self.disch) or self.cutoff, self.cutoff)
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for i, (drug, start, stop, dose, unit, route, freq, sliding, poe) in enumerate(self.rows(
                "SELECT p.drug, p.starttime, p.stoptime, p.dose_val_rx, p.dose_unit_rx, p.route, "
                "ph.frequency, ph.sliding_scale, p.poe_id FROM prescriptions p "
                "LEFT JOIN pharmacy ph USING (pharmacy_id) "
                "WHERE p.hadm_id = ? AND contains(lower(p.drug), ?)", word.lower())):
            s, e = _ts(start), _ts(stop)
            if (s is not None and s > ref) or (e is not None and e < ref - GRACE):
                continue
            if LINE_CARE.search(drug) or str(route).upper() in ("DWELL", "DIALYS", "IJ"):
                continue
            f = str(freq or "").upper()
            if sliding == "Y" or any(w in f for w in NO_FIXED_DOSE) or not _num(dose):
                return None
            groups[(poe, drug, start, unit, f) if poe else (i,)].append((drug, start, float(dose), poe))
        return [self._order(rows) for rows in groups.values()]

    def _order(self, rows: list[tuple]) -> dict[str, Any]:
        drug, start, _, poe = rows[0]
        doses = [d for _, _, d, _ in rows]
        due = [_num(d) for (d,) in self.rows(
            "SELECT d.dose_due FROM emar e JOIN emar_detail d USING (emar_id) WHERE e.hadm_id = ? "
            "AND e.poe_id = ? AND d.parent_field_ordinal IS NULL AND d.dose_due IS NOT NULL "
            "AND e.charttime < ? ORDER BY e.charttime DESC LIMIT 1", poe, str(self.cutoff))] if poe else []
        total = round(sum(doses), 6)
        if due and due[0] is not None and (due[0] in doses or abs(due[0] - total) < 1e-6):
            dose = due[0]
        else:
            dose = doses[0] if len(set(doses)) == 1 else total
        return {"drug": drug, "start": _ts(start), "dose": dose, "poe": poe}

    def current_doses(self, word: str) -> set[float] | None:
        """Doses of the current orders of ``word``; None when one of them has no fixed dose."""
        orders = self.current_orders(word)
        return None if orders is None else {o["dose"] for o in orders}

    def order_counts(self, word: str) -> list[tuple[int, int]]:
        """(given, missed) eMAR doses of each current order of ``word``, as a nurse counts them:
        only Administered / Applied events give a dose and only Not Given / Hold Dose / Not
        Applied events withhold one (Started, Confirmed, Flushed... are infusion and line care);
        a dose withheld in the 4 h before discharge is expected, not missed."""
        disch = _ts(self.disch)
        out = []
        for order in self.current_orders(word) or []:
            given = missed = 0
            for event, t in self.rows("SELECT event_txt, charttime FROM emar WHERE hadm_id = ? "
                                      "AND poe_id = ?", order["poe"]):
                text = " ".join(str(event or "").lower().replace("delayed ", "")
                                .replace("partial ", "").split())
                when = _ts(t)
                if when >= self.cutoff:
                    continue
                if text.startswith(("administered", "applied", "removed existing / applied new")):
                    given += 1
                elif text.startswith(("not given", "hold dose", "held", "not applied")):
                    missed += disch is None or when < disch - dt.timedelta(hours=4)
            out.append((given, missed))
        return out

    def lab_series(self, label: str) -> list[tuple[dt.datetime, float]]:
        rows = self.rows(
            "SELECT l.charttime, l.valuenum, lower(coalesce(d.category, '')) FROM labevents l "
            "JOIN d_labitems d USING (itemid) WHERE l.hadm_id = ? AND d.label = ? "
            "AND lower(coalesce(d.fluid, 'blood')) = 'blood' AND l.valuenum IS NOT NULL", label)
        rows = [(_ts(t), float(v), c) for t, v, c in rows if _ts(t) < self.cutoff]
        if any(c != "blood gas" for *_, c in rows):
            rows = [r for r in rows if r[2] != "blood gas"]
        return sorted((t, v) for t, v, _ in rows)

    def organisms(self) -> set[str]:
        return {o for (o, t) in self.rows(
            "SELECT org_name, coalesce(charttime, chartdate) FROM microbiologyevents "
            "WHERE hadm_id = ? AND org_name IS NOT NULL") if _ts(t) < self.cutoff}

    def icu_counts(self, word: str) -> tuple[int, int]:
        """(ICU rows, of them given) of ``word`` before the cutoff."""
        rows = [(s, e) for s, e, t in self.rows(
            "SELECT i.statusdescription, i.endtime, i.starttime FROM inputevents i "
            "JOIN d_items d USING (itemid) WHERE i.hadm_id = ? AND contains(lower(d.label), ?)",
            word.lower()) if _ts(t) < self.cutoff]
        given = sum(str(s).lower() in ("finishedrunning", "changedose/rate") or
                    (_ts(e) or self.cutoff) >= self.cutoff for s, e in rows)
        return len(rows), given


def _calls(turn: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(a["action"]["name"], a["action"]["arguments"]) for a in turn
            if a["action"]["name"] != "prepare_to_answer"]


def defects(entries: list[dict[str, Any]], source: Path) -> dict[str, list[str]]:
    """Every rubric fact the raw tables contradict, by category (see module docstring)."""
    con = raw(source)
    out: dict[str, list[str]] = defaultdict(list)
    for e in entries:
        rec = Record(con, e["hadm_id"], e["current_date"])
        if rec.end_of_life:
            out["end_of_life"].append(f"{e['id']}: admission ended in death or hospice")
        for t, (turn, checks) in enumerate(zip(e["answer_list"], e["rubric_checks"], strict=True)):
            where = f"{e['id']} turn {t}"
            calls = _calls(turn)
            drugs = {a["medication"].lower() for n, a in calls
                     if n in ("MedicationRequest.search", "MedicationAdministration.search")}
            writes = [a for n, a in calls if n == "MedicationRequest.create"]
            for a in writes:
                if not rec.current_doses(str(a["medication"]).split()[0].lower()):
                    out["current_orders"].append(f"{where}: renews {a['medication']}, not current")
            labs = {a["code"] for n, a in calls if n == "Observation.search" and a.get("code")}
            for c in checks:
                if c["kind"] != "value":
                    continue
                label, value = c["label"], c["value"]
                if label in drugs:
                    if value == 0:
                        out["zero_doses"].append(f"{where}: {label} dose 0")
                    doses = rec.current_doses(label)
                    if not doses or value not in doses:
                        out["current_orders"].append(
                            f"{where}: {label} {value} not a current scheduled dose ({doses})")
                elif label in labs:
                    series = rec.lab_series(label)
                    values = [v for _, v in series]
                    if not series:
                        out["latest_values"].append(f"{where}: no {label} in the record")
                    elif e["task_types"][t] != "Clinical Reasoning" and value != values[-1]:
                        out["latest_values"].append(
                            f"{where}: {label} {value}, latest is {values[-1]}")
                    elif value not in (values[0], values[-1], max(values), min(values)):
                        out["latest_values"].append(
                            f"{where}: {label} {value} is not first, last, peak or nadir")
                elif label in ("given", "not given") and drugs:
                    word = next(iter(drugs))
                    counts = rec.order_counts(word)
                    said = [c[0 if label == "given" else 1] for c in counts]
                    if value not in said:
                        out["administrations"].append(
                            f"{where}: {label} {value}, the record's current orders say "
                            f"(given, not given) {counts}")
            intents = e.get("session_plan", {}).get("turn_intents", [])
            intent = intents[t] if t < len(intents) else ""
            if intent.startswith(DOSE_COUNT_KINDS):
                word = intent.split("(", 1)[1].rstrip(")")
                icu_rows, icu_given = rec.icu_counts(word)
                if icu_rows:
                    out["administrations"].append(
                        f"{where}: {intent} while {word} has {icu_rows} ICU administrations "
                        f"({icu_given} given) that compat cannot show")
            if any(a.get("report_type") == "culture" for n, a in calls
                   if n == "DiagnosticReport.search"):
                orgs = rec.organisms()
                answer = turn[-1]["observation"]
                named = {o for o in orgs if o in answer}
                if orgs and not named:
                    out["cultures"].append(f"{where}: answer names none of {sorted(orgs)}")
                if orgs and any("no organism" in w for c in checks if c["kind"] == "concept"
                                for w in c["any"]["en"]):
                    out["cultures"].append(f"{where}: 'no organism' while {sorted(orgs)} grew")
    return {k: out.get(k, []) for k in CATEGORIES}
