"""Built sessions read against the raw source CSV tables, independently of the builder.

A reviewer's reading of MIMIC-IV, written from the tables alone with DuckDB (no builder, no
store, no tools): what each session's rubric may say about current orders, doses, latest
lab values, cultures, administrations and the patient's course. ``defects`` lists every
disagreement by category; a clinically sound build has none.

What a session may state is what was known at its cutoff (its ``cutoff``, else the end of its
``current_date``): a lab value or a culture result counts from its report time (``storetime``,
else the end of ``storedate``; a row without one was never reported), and the stay's
specimens include those without ``hadm_id`` drawn between ``edregtime`` (else ``admittime``)
and ``dischtime``. ``reported_after`` counts a stated lab value or organism that was drawn by
the cutoff but reported after it; ``culture_kinds`` a culture answer's specimen from which no
culture was sent (a serology, a PCR, an antigen test) or an organism it names from such a test.

Administrations are counted from the eMAR and from ``icu/inputevents`` (the ICU charts most
drugs given there only in MetaVision): an ICU row counts for a drug when its ``d_items.label``
holds the drug word, and as given when it finished running (``FinishedRunning``, or a segment
ended by a dose/rate change). A turn that states a dose count or the last dose of a drug with
any ICU administration is a defect: the compat tools (the reference's) show the eMAR only.
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
NO_FIXED_DOSE = ("PRN", "ONCE", "1X", "X1", "NOW", "STAT", "ASDIR", "AS DIRECTED", "INFUSION")
#: Turn intents (session_plan) that state a dose count or the last dose given.
DOSE_COUNT_KINDS = ("med_and_admin(", "admin_reliability(", "abx_response(")
CATEGORIES = ("current_orders", "zero_doses", "latest_values", "cultures", "reported_after",
              "culture_kinds", "administrations", "end_of_life")
#: A culture, by its test name (a surveillance screen is one); an antigen test, a PCR, a
#: serology or a stain is not, whatever its name holds.
CULTURE_TEST = re.compile(r"CULTURE|SCREEN|^TISSUE$|R/O ", re.IGNORECASE)
NOT_CULTURE = re.compile(r"ANTIGEN|PCR|ANTIBOD|SEROLOGY|REAGIN|STAIN|SMEAR|VIRAL LOAD|NUCLEIC|\bDNA\b"
                         r"|\bIG[GM]\b|\(DFA\)", re.IGNORECASE)
#: A specimen line of a culture answer: "- <specimen> (<YYYY-MM-DD HH:MM>...".
SPECIMEN_LINE = re.compile(r"^- (.+?) \((\d{4}-\d{2}-\d{2} \d{2}:\d{2})")


def is_culture(test_name: Any) -> bool:
    name = str(test_name or "")
    return bool(CULTURE_TEST.search(name)) and not NOT_CULTURE.search(name)


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
                                    "d_labitems", "emar", "microbiologyevents")),
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

    def __init__(self, con: duckdb.DuckDBPyConnection, hadm_id: int, current_date: str,
                 cutoff: str | None = None) -> None:
        self.con, self.hadm = con, str(hadm_id)
        # the first instant not known: after the session's cutoff, else the end of its date
        self.cutoff = (dt.datetime.fromisoformat(cutoff) + dt.timedelta(microseconds=1) if cutoff
                       else dt.datetime.fromisoformat(current_date) + dt.timedelta(days=1))
        adm = con.execute("SELECT dischtime, deathtime, discharge_location, hospital_expire_flag, "
                          "subject_id, coalesce(edregtime, admittime), admittime "
                          "FROM admissions WHERE hadm_id = ?", [self.hadm]).fetchone()
        self.disch, self.death, self.location, self.expired, self.subject, start, admit = adm
        self.start = min(_ts(start) or _ts(admit), _ts(admit))  # the stay's window, ED first
        self.end = _ts(self.disch) or dt.datetime.max

    def rows(self, sql: str, *args: Any) -> list[tuple]:
        return self.con.execute(sql, [self.hadm, *args]).fetchall()

    @property
    def end_of_life(self) -> bool:
        loc = str(self.location or "").upper()
        return self.expired == "1" or bool(self.death) or "DIED" in loc or "HOSPICE" in loc

    def current_doses(self, word: str) -> set[float] | None:
        """Doses of the current orders of ``word``; None when one of them has no fixed dose."""
        ref = min(_ts(self.disch) or self.cutoff, self.cutoff)
        out: set[float] = set()
        for start, stop, dose, freq, sliding in self.rows(
                "SELECT p.starttime, p.stoptime, p.dose_val_rx, ph.frequency, ph.sliding_scale "
                "FROM prescriptions p LEFT JOIN pharmacy ph USING (pharmacy_id) "
                "WHERE p.hadm_id = ? AND contains(lower(p.drug), ?)", word.lower()):
            s, e = _ts(start), _ts(stop)
            if (s is not None and s > ref) or (e is not None and e < ref - GRACE):
                continue
            f = str(freq or "").upper()
            if sliding == "Y" or any(w in f for w in NO_FIXED_DOSE) or not _num(dose):
                return None
            out.add(float(dose))
        return out

    def _stays(self, hadm: Any, drawn: dt.datetime | None, day_only: bool = False) -> bool:
        """A row of this stay: its own, or without ``hadm_id`` drawn in the stay's window."""
        if hadm not in (None, ""):
            return str(hadm) == self.hadm
        if drawn is None:
            return False
        if day_only:
            return self.start.date() <= drawn.date() <= self.end.date()
        return self.start <= drawn <= self.end

    def lab_series(self, label: str, reported: bool = True) -> list[tuple[dt.datetime, float]]:
        """The label's values of the stay drawn before the cutoff and (``reported``) known by
        then, oldest first."""
        rows = self.con.execute(
            "SELECT l.hadm_id, l.charttime, l.storetime, l.valuenum, "
            "lower(coalesce(d.category, '')) FROM labevents l JOIN d_labitems d USING (itemid) "
            "WHERE l.subject_id = ? AND d.label = ? AND lower(coalesce(d.fluid, 'blood')) = 'blood' "
            "AND l.valuenum IS NOT NULL", [self.subject, label]).fetchall()
        rows = [(_ts(t), float(v), c) for h, t, stored, v, c in rows
                if self._stays(h, _ts(t)) and _ts(t) < self.cutoff
                and (not reported or (stored not in (None, "") and _ts(stored) < self.cutoff))]
        if any(c != "blood gas" for *_, c in rows):
            rows = [r for r in rows if r[2] != "blood gas"]
        return sorted((t, v) for t, v, _ in rows)

    @functools.cached_property
    def micro(self) -> list[dict[str, Any]]:
        """The stay's microbiology rows drawn before the cutoff, each with ``known``: its
        result reported by then."""
        rows = self.con.execute(
            "SELECT hadm_id, spec_type_desc, coalesce(charttime, chartdate) AS drawn, "
            "charttime IS NULL AS day_only, test_name, org_name, storetime, storedate "
            "FROM microbiologyevents WHERE subject_id = ?", [self.subject]).fetchall()
        out = []
        for h, spec, drawn, day_only, test, org, stored, store_day in rows:
            when = _ts(drawn)
            if when is None or when >= self.cutoff or not self._stays(h, when, day_only):
                continue
            known = (_ts(stored) < self.cutoff if stored not in (None, "") else
                     store_day not in (None, "") and _ts(store_day) + dt.timedelta(days=1)
                     <= self.cutoff)
            out.append({"specimen": " ".join(str(spec or "").split()), "drawn": when,
                        "test": test, "organism": org, "known": known})
        return out

    def organisms(self) -> set[str]:
        """Organisms the stay's cultures grew, reported by the cutoff."""
        return {r["organism"] for r in self.micro
                if r["organism"] and r["known"] and is_culture(r["test"])
                and r["organism"] not in ("CANCELLED", "POSITIVE")}

    def icu_counts(self, word: str) -> tuple[int, int]:
        """(ICU rows, of them given) of ``word`` before the cutoff."""
        rows = [(s, e) for s, e, t in self.rows(
            "SELECT i.statusdescription, i.endtime, i.starttime FROM inputevents i "
            "JOIN d_items d USING (itemid) WHERE i.hadm_id = ? AND contains(lower(d.label), ?)",
            word.lower()) if _ts(t) < self.cutoff]
        given = sum(str(s).lower() in ("finishedrunning", "changedose/rate") or
                    (_ts(e) or self.cutoff) >= self.cutoff for s, e in rows)
        return len(rows), given

    def emar_counts(self, word: str) -> tuple[int, int]:
        """(given, not given) eMAR events; an event with no text is neither."""
        given = missed = 0
        for event, t in self.rows("SELECT event_txt, charttime FROM emar WHERE hadm_id = ? "
                                  "AND contains(lower(medication), ?)", word.lower()):
            text = str(event or "").lower()
            if not text or _ts(t) >= self.cutoff:
                continue
            if text.startswith("not ") or "held" in text or "hold" in text:
                missed += "stopped" not in text
            elif not text.startswith(("stopped", "delayed")) and any(
                    w in text for w in ("administered", "given", "applied", "started", "confirmed",
                                        "flushed", "assessed", "removed", "read", "rate change",
                                        "reconciliation")):
                given += 1
        return given, missed


def _calls(turn: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(a["action"]["name"], a["action"]["arguments"]) for a in turn
            if a["action"]["name"] != "prepare_to_answer"]


def defects(entries: list[dict[str, Any]], source: Path) -> dict[str, list[str]]:
    """Every rubric fact the raw tables contradict, by category (see module docstring)."""
    con = raw(source)
    out: dict[str, list[str]] = defaultdict(list)
    for e in entries:
        rec = Record(con, e["hadm_id"], e["current_date"], e.get("cutoff"))
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
                    if value not in values and value in [v for _, v in rec.lab_series(label, False)]:
                        out["reported_after"].append(
                            f"{where}: {label} {value} was drawn by the cutoff, reported after it")
                    elif not series:
                        out["latest_values"].append(f"{where}: no {label} in the record")
                    elif e["task_types"][t] != "Clinical Reasoning" and value != values[-1]:
                        out["latest_values"].append(
                            f"{where}: {label} {value}, latest is {values[-1]}")
                    elif value not in (values[0], values[-1], max(values), min(values)):
                        out["latest_values"].append(
                            f"{where}: {label} {value} is not first, last, peak or nadir")
                elif label in ("given", "not given") and drugs:
                    word = next(iter(drugs))
                    given, missed = rec.emar_counts(word)
                    given += rec.icu_counts(word)[1]
                    if value != (given if label == "given" else missed):
                        out["administrations"].append(
                            f"{where}: {label} {value}, the record says {given} given, "
                            f"{missed} not")
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
                for kind, problem in _culture_lines(rec, answer):
                    out[kind].append(f"{where}: {problem}")
    return {k: out.get(k, []) for k in CATEGORIES}


def _culture_lines(rec: Record, answer: str) -> list[tuple[str, str]]:
    """What each specimen line of a culture answer gets wrong: a specimen the stay does not
    have, one no culture was sent from, an organism named from another test, one reported after
    the cutoff, one the specimen never grew."""
    every = {r["organism"] for r in rec.micro if r["organism"]}
    found = []
    for line in answer.splitlines():
        m = SPECIMEN_LINE.match(line)
        if m is None:
            continue
        title, minute = m.group(1), m.group(2)
        rows = [r for r in rec.micro if r["specimen"] == " ".join(title.split())
                and str(r["drawn"])[:16] == minute]
        if not rows:
            found.append(("cultures", f"{title} {minute}: no such specimen of the stay"))
            continue
        if not any(is_culture(r["test"]) for r in rows):
            found.append(("culture_kinds", f"{title} {minute}: no culture was sent "
                          f"({sorted({r['test'] for r in rows})})"))
        for org in sorted(o for o in every if o in line):
            grew = [r for r in rows if r["organism"] == org]
            cultured = [r for r in grew if is_culture(r["test"])]
            if grew and not cultured:
                found.append(("culture_kinds", f"{title} {minute}: {org} is a "
                              f"{grew[0]['test']} result, not a culture's growth"))
            elif cultured and not any(r["known"] for r in cultured):
                found.append(("reported_after", f"{title} {minute}: {org} reported after the "
                              "cutoff"))
            elif not cultured and not any(org in o and org != o for o in every if o in line):
                found.append(("cultures", f"{title} {minute}: {org} did not grow there"))
    return found
