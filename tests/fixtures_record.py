"""Built sessions read against the raw source CSV tables, independently of the builder.

A reviewer's reading of MIMIC-IV, written from the tables alone with DuckDB (no builder, no
store, no tools): what each session's rubric may say about current orders, doses, latest
lab values, cultures, administrations and the patient's course; that no spurious lab value
(a spike reversed within hours, physassist/lab_artifacts.py) is cited; that the trend words a
rubric accepts are the documented table's (``generation/builder/vocab.py`` TRENDS, judged here
on the raw values); and that a build uses an admission once per scenario, asks no question
twice and looks no lab up right after the turn that gave it. ``defects`` lists every disagreement by category; a clinically sound build has none.

A treatment-response turn (``responses``) says a drug "is being given" or is to be continued
only while it still runs at the session's reference moment (discharge, or the cutoff if
earlier; a finished course is asked as one): a dose given within
``vocab.ACTING_WITHIN_HOURS`` of it, or an order of it not stopped before then (give or take
:data:`GRACE`; without any order, ICU or eMAR doses only) and a dose given within
``vocab.RUNNING_WITHIN_HOURS`` of it. Its answer calls the latest value
"now" only when drawn within ``vocab.CURRENT_VALUE_HOURS`` of that moment, and reviews an
antibiotic "against the culture results" only where a culture was sent in the stay.

What a session may state is what was known at its cutoff (its ``cutoff``, else the end of its
``current_date``): a lab value or a culture result counts from its report time (``storetime``,
else the end of ``storedate``; a row without one was never reported), and the stay's
specimens include those without ``hadm_id`` drawn between ``edregtime`` (else ``admittime``)
and ``dischtime``. ``reported_after`` counts a stated lab value or organism that was drawn by
the cutoff but reported after it; ``culture_kinds`` a culture answer's specimen from which no
culture was sent (a serology, a PCR, an antigen test) or an organism it names from such a test;
``contaminated_cultures`` an organism whose laboratory comment reports contamination, mixed
flora or uncertain significance, named without that caveat or required as the organism grown;
``spurious_in_course`` a value called spurious that its own series reaches elsewhere;
``known_cause_worked_up`` a severe cytopenia with a coded marrow disease sent to "look for the
cause"; ``procedural_draws`` a lab value cited that an operation drew before a direct
admission (no ED registration) began, on its day and outside the range of the stay's own values
(an on-bypass haemoglobin); ``positive_tests`` a culture answer that leaves out a positive
non-culture test (an organism named by a PCR, antigen or toxin test: a C. difficile PCR)
reported by the cutoff, or names it as anything but "<test> positive". ``rechecks`` also
counts a repeat INR without warfarin in the admission or a coded liver failure (an INR on a
DOAC monitors nothing).

Administrations are counted per order, as a nurse counts them: the eMAR events of the current
order's ``poe_id`` that gave (Administered, Applied) or withheld (Not Given, Hold Dose) a dose; a
dose withheld in the hours before discharge is expected, not missed. The ICU charts most drugs
given there only in ``icu/inputevents`` (MetaVision): an ICU row counts for a drug when its
``d_items.label`` holds the drug word, and as given when it finished running
(``FinishedRunning``, or a segment ended by a dose/rate change). A turn that states a dose
count or the last dose of a drug with any ICU administration is a defect: the compat tools
(the reference's) show the eMAR only.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb

from generation.builder.vocab import (
    ACTING_WITHIN_HOURS,
    CURRENT_VALUE_HOURS,
    DIALYSIS_LABS,
    DRUG_CLASSES,
    DRUG_LEVELS,
    ESRD_ICD_PREFIXES,
    HEME_MALIGNANCY_ICD_PREFIXES,
    LIVER_FAILURE_ICD_PREFIXES,
    MARROW_FAILURE_ICD_PREFIXES,
    PLATEAU_DRAWS,
    RECENT_COURSE_HOURS,
    RENAL_DOSING,
    RUNNING_WITHIN_HOURS,
    SEVERE_CYTOPENIA,
    STALE_DAYS,
    TRENDS,
    UNSAFE_WHEN,
)
from physassist.ehr.tables import TABLES
from physassist.lab_artifacts import INTERVENTIONS, PANEL_LABS, RAISED_BY_BAD_DRAW

MARROW_CODES = HEME_MALIGNANCY_ICD_PREFIXES + MARROW_FAILURE_ICD_PREFIXES
#: What a reviewer accepts as "current" on the discharge day: not stopped before discharge
#: (pharmacy closes orders running at discharge with a stop time after it), give or take an hour.
GRACE = dt.timedelta(hours=1)
#: Line care, never a drug of a session: flushes, locks, catheter clearance, dialysis priming.
LINE_CARE = re.compile(
    r"flush|dwell|lock\b|catheter|clearance|cathflo|crrt|dialys|priming|iabp|picc|"
    r"midline",
    re.IGNORECASE,
)
NO_FIXED_DOSE = ("PRN", "ONCE", "1X", "X1", "NOW", "STAT", "ASDIR", "AS DIRECTED", "INFUSION")
#: Turn intents (session_plan) that state a dose count or the last dose given.
DOSE_COUNT_KINDS = ("med_and_admin(", "admin_reliability(", "abx_response(")
CATEGORIES = (
    "current_orders",
    "zero_doses",
    "latest_values",
    "cultures",
    "reported_after",
    "culture_kinds",
    "administrations",
    "end_of_life",
    "artifacts",
    "spurious_in_course",
    "contaminated_cultures",
    "known_cause_worked_up",
    "trends",
    "responses",
    "repeats",
    "renal_dose",
    "rechecks",
    "procedural_draws",
    "positive_tests",
)
#: Turn intents that ask whether a treatment works ("is the X working?": it must still run).
RESPONSE_INTENTS = ("abx_response(", "treatment_effect(")
#: A culture, by its test name (a surveillance screen is one); an antigen test, a PCR, a
#: serology or a stain is not, whatever its name holds.
CULTURE_TEST = re.compile(r"CULTURE|SCREEN|^TISSUE$|R/O ", re.IGNORECASE)
NOT_CULTURE = re.compile(
    r"ANTIGEN|PCR|ANTIBOD|SEROLOGY|REAGIN|STAIN|SMEAR|VIRAL LOAD|NUCLEIC|\bDNA\b"
    r"|\bIG[GM]\b|\(DFA\)",
    re.IGNORECASE,
)
#: A rubric item that calls a lab value spurious (``trend_artifact``).
CALLED_SPURIOUS = re.compile(r"^The answer treats the (.+) of (-?[\d.]+) \S* ?as spurious")
#: A laboratory comment on a culture's isolate that doubts it: contamination, mixed flora, a
#: significance the laboratory calls uncertain.
DOUBTED = re.compile(
    r"contaminat|mixed (bacterial |skin|.{0,20}flora)|significance .{0,20}uncertain",
    re.IGNORECASE,
)
#: A specimen line of a culture answer: "- <specimen> (<YYYY-MM-DD HH:MM>...".
SPECIMEN_LINE = re.compile(r"^- (.+?) \((\d{4}-\d{2}-\d{2} \d{2}:\d{2})")


def is_culture(test_name: Any) -> bool:
    name = str(test_name or "")
    return bool(CULTURE_TEST.search(name)) and not NOT_CULTURE.search(name)


def _table(con: duckdb.DuckDBPyConnection, source: Path, module: str, name: str) -> None:
    path = source / module / f"{name}.csv.gz"
    if path.is_file():
        # a table, not a view: a view would parse the whole gzipped CSV again for each query
        con.execute(
            f"CREATE TABLE {name} AS SELECT * FROM read_csv('{path}', header=true, "
            "all_varchar=true)"
        )
    else:
        # a table the record lacks: empty, with the columns the store's schema gives it
        columns = ", ".join(f"NULL::VARCHAR AS {c}" for c in TABLES[name].columns)
        con.execute(f"CREATE VIEW {name} AS SELECT {columns} WHERE false")


@functools.cache  # the tables are only read: one copy per process for every test
def raw(source: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for module, names in (
        (
            "hosp",
            (
                "admissions",
                "prescriptions",
                "pharmacy",
                "labevents",
                "d_labitems",
                "emar",
                "emar_detail",
                "microbiologyevents",
                "patients",
                "omr",
                "diagnoses_icd",
            ),
        ),
        ("icu", ("icustays", "inputevents", "d_items")),
    ):
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

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        hadm_id: int,
        current_date: str,
        cutoff: str | None = None,
    ) -> None:
        self.con, self.hadm = con, str(hadm_id)
        # the first instant not known: after the session's cutoff, else the end of its date
        self.cutoff = (
            dt.datetime.fromisoformat(cutoff) + dt.timedelta(microseconds=1)
            if cutoff
            else dt.datetime.fromisoformat(current_date) + dt.timedelta(days=1)
        )
        adm = con.execute(
            "SELECT dischtime, deathtime, discharge_location, hospital_expire_flag, "
            "subject_id, coalesce(edregtime, admittime), admittime "
            "FROM admissions WHERE hadm_id = ?",
            [self.hadm],
        ).fetchone()
        self.disch, self.death, self.location, self.expired, self.subject, start, admit = adm
        self.start = min(_ts(start) or _ts(admit), _ts(admit))  # the stay's window, ED first
        self.admitted = _ts(admit)
        self.end = _ts(self.disch) or dt.datetime.max

    def rows(self, sql: str, *args: Any) -> list[tuple]:
        return self.con.execute(sql, [self.hadm, *args]).fetchall()

    @property
    def end_of_life(self) -> bool:
        loc = str(self.location or "").upper()
        return self.expired == "1" or bool(self.death) or "DIED" in loc or "HOSPICE" in loc

    @functools.cached_property
    def marrow_disease(self) -> bool:
        """A coded haematological malignancy or marrow failure (leukaemia, MDS, MPN, aplastic
        anaemia): the known cause of a severe cytopenia."""
        codes = self.rows("SELECT icd_code FROM diagnoses_icd WHERE hadm_id = ?")
        return any(str(c).replace(".", "").upper().startswith(MARROW_CODES) for (c,) in codes if c)

    def current_orders(self, word: str) -> list[dict[str, Any]] | None:
        """The current orders of ``word`` as a pharmacist reads them: the prescription rows of
        one ``poe_id`` (same drug, start, unit, frequency) are one order, line care (flushes,
        catheter clearance) is none; its dose is the eMAR's ``dose_due`` when that is a row's
        dose or their sum, else the rows' common dose, else their sum. None when one of them has
        no fixed dose."""
        ref = min(_ts(self.disch) or self.cutoff, self.cutoff)
        groups: dict[tuple, list[tuple]] = defaultdict(list)
        for i, (drug, start, stop, dose, unit, route, freq, sliding, poe) in enumerate(
            self.rows(
                "SELECT p.drug, p.starttime, p.stoptime, p.dose_val_rx, p.dose_unit_rx, p.route, "
                "ph.frequency, ph.sliding_scale, p.poe_id FROM prescriptions p "
                "LEFT JOIN pharmacy ph USING (pharmacy_id) "
                "WHERE p.hadm_id = ? AND contains(lower(p.drug), ?)",
                word.lower(),
            )
        ):
            s, e = _ts(start), _ts(stop)
            if (s is not None and s > ref) or (e is not None and e < ref - GRACE):
                continue
            if LINE_CARE.search(drug) or str(route).upper() in ("DWELL", "DIALYS", "IJ"):
                continue
            f = str(freq or "").upper()
            if sliding == "Y" or any(w in f for w in NO_FIXED_DOSE) or not _num(dose):
                return None
            groups[(poe, drug, start, unit, f) if poe else (i,)].append(
                (drug, start, float(dose), poe)
            )
        return [self._order(rows) for rows in groups.values()]

    def _order(self, rows: list[tuple]) -> dict[str, Any]:
        drug, start, _, poe = rows[0]
        doses = [d for _, _, d, _ in rows]
        due = (
            [
                _num(d)
                for (d,) in self.rows(
                    "SELECT d.dose_due FROM emar e JOIN emar_detail d USING (emar_id) WHERE "
                    "e.hadm_id = ? "
                    "AND e.poe_id = ? AND d.parent_field_ordinal IS NULL AND d.dose_due IS NOT "
                    "NULL "
                    "AND e.charttime < ? ORDER BY e.charttime DESC LIMIT 1",
                    poe,
                    str(self.cutoff),
                )
            ]
            if poe
            else []
        )
        total = round(sum(doses), 6)
        if due and due[0] is not None and (due[0] in doses or abs(due[0] - total) < 1e-6):
            dose = due[0]
        else:
            dose = doses[0] if len(set(doses)) == 1 else total
        return {"drug": drug, "start": _ts(start), "dose": dose, "poe": poe}

    def warfarin_dose(self) -> set[float]:
        """The dose of the newest warfarin order, when it ran within 36 h of discharge:
        MIMIC-IV orders warfarin a dose a day ("ONCE"), by the INR."""
        ref = min(_ts(self.disch) or self.cutoff, self.cutoff)
        rows = sorted(
            (
                (_ts(s), _ts(e), _num(d))
                for s, e, d in self.rows(
                    "SELECT starttime, stoptime, dose_val_rx FROM prescriptions WHERE hadm_id = ? "
                    "AND contains(lower(drug), 'warfarin')"
                )
            ),
            key=lambda r: r[0] or ref,
        )
        rows = [r for r in rows if r[2] and (r[0] is None or r[0] <= ref)]
        recent = rows and (rows[-1][1] is None or rows[-1][1] >= ref - dt.timedelta(hours=36))
        return {rows[-1][2]} if recent else set()

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
            for event, t in self.rows(
                "SELECT event_txt, charttime FROM emar WHERE hadm_id = ? AND poe_id = ?",
                order["poe"],
            ):
                text = " ".join(
                    str(event or "").lower().replace("delayed ", "").replace("partial ", "").split()
                )
                when = _ts(t)
                if when >= self.cutoff:
                    continue
                if text.startswith(("administered", "applied", "removed existing / applied new")):
                    given += 1
                elif text.startswith(("not given", "hold dose", "held", "not applied")):
                    missed += disch is None or when < disch - dt.timedelta(hours=4)
            out.append((given, missed))
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

    @functools.cache  # noqa: B019 (one Record per session)
    def lab_series(self, label: str, reported: bool = True) -> list[tuple[dt.datetime, float]]:
        """The label's values of the stay drawn before the cutoff and (``reported``) known by
        then, oldest first."""
        rows = self.con.execute(
            "SELECT l.hadm_id, l.charttime, l.storetime, l.valuenum, "
            "lower(coalesce(d.category, '')) FROM labevents l JOIN d_labitems d USING (itemid) "
            "WHERE l.subject_id = ? AND d.label = ? AND lower(coalesce(d.fluid, 'blood')) = "
            "'blood' "
            "AND l.valuenum IS NOT NULL",
            [self.subject, label],
        ).fetchall()
        rows = [
            (_ts(t), float(v), c)
            for h, t, stored, v, c in rows
            if self._stays(h, _ts(t))
            and _ts(t) < self.cutoff
            and (not reported or (stored not in (None, "") and _ts(stored) < self.cutoff))
        ]
        if any(c != "blood gas" for *_, c in rows):
            rows = [r for r in rows if r[2] != "blood gas"]
        return sorted((t, v) for t, v, _ in rows)

    def before_treatment(self, label: str, words: list[str]) -> float | None:
        """The value of ``label`` last drawn before the first dose of a drug (eMAR Administered
        or ICU input), within two days of it: a treatment's baseline."""
        if not words:
            return None
        given = [
            _ts(t)
            for (t,) in self.rows(
                "SELECT charttime FROM emar WHERE hadm_id = ? AND contains(lower(medication), ?) "
                "AND lower(event_txt) SIMILAR TO '(delayed )?(administered|applied).*'",
                words[0],
            )
        ]
        given += [
            _ts(t)
            for (t,) in self.rows(
                "SELECT i.starttime FROM inputevents i JOIN d_items d USING (itemid) "
                "WHERE i.hadm_id = ? AND contains(lower(d.label), ?)",
                words[0],
            )
        ]
        given = [t for t in given if t is not None and t < self.cutoff]
        if not given:
            return None
        first, suspect = min(given), self.suspect(label)
        before = [
            v
            for t, v in self.lab_series(label)
            if first - dt.timedelta(days=2) <= t <= first and t not in suspect
        ]
        return before[-1] if before else None

    def latest_range(self, label: str) -> tuple[float | None, float | None]:
        """The reference range charted with the newest value of ``label``."""
        rows = self.rows(
            "SELECT l.ref_range_lower, l.ref_range_upper FROM labevents l JOIN d_labitems d "
            "USING (itemid) WHERE l.hadm_id = ? AND d.label = ? AND l.valuenum IS NOT NULL "
            "AND lower(coalesce(d.fluid, 'blood')) = 'blood' AND l.charttime < ? "
            "AND lower(coalesce(d.category, '')) <> 'blood gas' "
            "ORDER BY l.charttime DESC LIMIT 1",
            label,
            str(self.cutoff),
        )
        return (_num(rows[0][0]), _num(rows[0][1])) if rows else (None, None)

    def suspect(self, label: str) -> set[dt.datetime]:
        """Chart times of ``label``'s spurious values: a spike 40% away from both neighbours,
        back within 12 h, with no treatment given around it; and, in a draw where two panel
        analytes spiked (one at least untreated), a value 15% below both neighbours (or above,
        for what a bad draw can raise) that the next draw within 12 h brings back half way
        (physassist/lab_artifacts.py). Never a value inside the range of the rest of its
        series: one the course reaches elsewhere is consistent with it."""
        own = {t for t, treated in self._spikes(label).items() if not treated}
        panel = defaultdict(list)
        for other in PANEL_LABS:
            for t, treated in self._spikes(other).items():
                panel[t].append(treated)
        series = self.lab_series(label)
        apart = {
            t
            for (_, a), (t, v), (tb, b) in zip(series, series[1:], series[2:], strict=False)
            if (v < min(a, b) or (v > max(a, b) and label in RAISED_BY_BAD_DRAW))
            and min(_away(v, a), _away(v, b)) >= 0.15
            and tb - t <= dt.timedelta(hours=12)
            and abs(b - a) <= abs(v - a) / 2
        }
        found = own | {
            t
            for t, treated in panel.items()
            if len(treated) >= 2 and not all(treated) and t in apart
        }
        return {t for t in found if not self.in_course(label, t)}

    def procedural(self, label: str) -> set[dt.datetime]:
        """Chart times of ``label``'s values an operation drew before a direct admission (no
        ED registration) began: on its day, before its admission time, outside the range of
        the values drawn after it (an on-bypass haemoglobin)."""
        series = self.lab_series(label)
        after = [v for t, v in series if t >= self.admitted]
        if self.start < self.admitted or not after:
            return set()
        return {
            t
            for t, v in series
            if t.date() == self.admitted.date()
            and t < self.admitted
            and not min(after) <= v <= max(after)
        }

    def liver_failure(self) -> bool:
        """Cirrhosis or hepatic failure coded: the INR is followed without warfarin."""
        codes = self.rows("SELECT icd_code FROM diagnoses_icd WHERE hadm_id = ?")
        return any(
            str(c).replace(".", "").upper().startswith(LIVER_FAILURE_ICD_PREFIXES) for (c,) in codes
        )

    def warfarin_ordered(self) -> bool:
        """Warfarin prescribed in the admission (a vitamin K antagonist the INR monitors)."""
        rows = self.rows("SELECT drug FROM prescriptions WHERE hadm_id = ?")
        return any("warfarin" in str(d).lower() for (d,) in rows)

    def positives(self) -> list[dict[str, Any]]:
        """The stay's non-culture tests (PCR, antigen, toxin, serology) that named an
        organism, reported by the cutoff."""
        return [
            r
            for r in self.micro
            if r["organism"]
            and r["known"]
            and not is_culture(r["test"])
            and not re.search(r"STAIN|SMEAR|PREP", str(r["test"]), re.IGNORECASE)
        ]

    def in_course(self, label: str, when: dt.datetime) -> bool:
        """Whether ``label``'s value at ``when`` lies within the range of its other values."""
        series = self.lab_series(label)
        others = [v for t, v in series if t != when]
        value = next((v for t, v in series if t == when), None)
        return value is not None and bool(others) and min(others) <= value <= max(others)

    @functools.cache  # noqa: B019 (one Record per session, a few labels each)
    def _spikes(self, label: str) -> dict[dt.datetime, bool]:
        """Chart time of each spike of ``label`` -> whether a treatment given around it
        explains it."""
        series = self.lab_series(label)
        out = {}
        for (ta, a), (t, v), (tb, b) in zip(series, series[1:], series[2:], strict=False):
            up, down = v > max(a, b), v < min(a, b)
            if not (up or down) or tb - t > dt.timedelta(hours=12):
                continue
            if min(_away(v, a), _away(v, b)) >= 0.4 and abs(b - a) <= abs(v - a) / 2:
                words = INTERVENTIONS.get((label, "high" if up else "low"), ())
                out[t] = self.treated(words, ta, tb)
        return out

    def treated(self, words: tuple[str, ...], start: dt.datetime, end: dt.datetime) -> bool:
        """A drug named by one of ``words`` given (eMAR or ICU) between ``start`` and ``end``."""
        if not words:
            return False
        given = self.rows(
            "SELECT medication FROM emar WHERE hadm_id = ? AND charttime BETWEEN ? AND ? "
            "AND lower(event_txt) SIMILAR TO '(delayed )?(administered|applied).*'",
            str(start),
            str(end),
        )
        given += self.rows(
            "SELECT d.label FROM inputevents i JOIN d_items d USING (itemid) WHERE i.hadm_id = ? "
            "AND i.starttime <= ? AND coalesce(i.endtime, i.starttime) >= ?",
            str(end),
            str(start),
        )
        return any(w in str(m).lower() for (m,) in given for w in words)

    @functools.cached_property
    def micro(self) -> list[dict[str, Any]]:
        """The stay's microbiology rows drawn before the cutoff, each with ``known``: its
        result reported by then."""
        rows = self.con.execute(
            "SELECT hadm_id, spec_type_desc, coalesce(charttime, chartdate) AS drawn, "
            "charttime IS NULL AS day_only, test_name, org_name, storetime, storedate, "
            "comments "
            "FROM microbiologyevents WHERE subject_id = ?",
            [self.subject],
        ).fetchall()
        out = []
        for h, spec, drawn, day_only, test, org, stored, store_day, comment in rows:
            when = _ts(drawn)
            if when is None or when >= self.cutoff or not self._stays(h, when, day_only):
                continue
            known = (
                _ts(stored) < self.cutoff
                if stored not in (None, "")
                else store_day not in (None, "")
                and _ts(store_day) + dt.timedelta(days=1) <= self.cutoff
            )
            out.append(
                {
                    "specimen": " ".join(str(spec or "").split()),
                    "drawn": when,
                    "test": test,
                    "organism": org,
                    "known": known,
                    "doubted": bool(org) and bool(DOUBTED.search(str(comment or ""))),
                }
            )
        return out

    def organisms(self) -> set[str]:
        """Organisms the stay's cultures grew, reported by the cutoff."""
        return {
            r["organism"]
            for r in self.micro
            if r["organism"]
            and r["known"]
            and is_culture(r["test"])
            and r["organism"] not in ("CANCELLED", "POSITIVE")
        }

    @property
    def ref(self) -> dt.datetime:
        """The moment orders are judged at: discharge, or the cutoff if earlier."""
        return min(_ts(self.disch) or self.cutoff, self.cutoff)

    def running(self, word: str) -> bool:
        """The drug runs at :attr:`ref` (module docstring): a dose within ACTING_WITHIN_HOURS,
        or an order of it not stopped by then (without any order, its doses alone) and a dose
        within RUNNING_WITHIN_HOURS."""
        ref, w = self.ref, word.lower()
        orders = [
            (_ts(s), _ts(e))
            for drug, s, e in self.rows(
                "SELECT drug, starttime, stoptime FROM prescriptions "
                "WHERE hadm_id = ? AND contains(lower(drug), ?)",
                w,
            )
            if not LINE_CARE.search(str(drug))
        ]
        current = any(
            (s is None or s <= ref) and (e is None or e >= ref - GRACE) for s, e in orders
        )
        doses = [
            _ts(t)
            for t, event in self.rows(
                "SELECT charttime, event_txt FROM emar WHERE hadm_id = ? "
                "AND contains(lower(medication), ?)",
                w,
            )
            if str(event or "")
            .lower()
            .replace("delayed ", "")
            .startswith(("administered", "applied"))
        ] + [
            _ts(t)
            for (t,) in self.rows(
                "SELECT i.starttime FROM inputevents i JOIN d_items d USING (itemid) "
                "WHERE i.hadm_id = ? AND contains(lower(d.label), ?)",
                w,
            )
        ]
        doses = [t for t in doses if t is not None and t < self.cutoff]
        if not doses:
            return False
        since = ref - max(doses)
        if since <= dt.timedelta(hours=ACTING_WITHIN_HOURS):
            return True
        return since <= dt.timedelta(hours=RUNNING_WITHIN_HOURS) and (current or not orders)

    def cultured(self) -> bool:
        """A culture was sent in the stay by the cutoff (not only a PCR, antigen or serology)."""
        return any(is_culture(r["test"]) for r in self.micro)

    def icu_counts(self, word: str) -> tuple[int, int]:
        """(ICU rows, of them given) of ``word`` before the cutoff."""
        rows = [
            (s, e)
            for s, e, t in self.rows(
                "SELECT i.statusdescription, i.endtime, i.starttime FROM inputevents i "
                "JOIN d_items d USING (itemid) WHERE i.hadm_id = ? AND contains(lower(d.label), ?)",
                word.lower(),
            )
            if _ts(t) < self.cutoff
        ]
        given = sum(
            str(s).lower() in ("finishedrunning", "changedose/rate")
            or (_ts(e) or self.cutoff) >= self.cutoff
            for s, e in rows
        )
        return len(rows), given


def _away(value: float, other: float) -> float:
    scale = max(abs(value), abs(other))
    return abs(value - other) / scale if scale else 0.0


def _calls(turn: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (a["action"]["name"], a["action"]["arguments"])
        for a in turn
        if a["action"]["name"] != "prepare_to_answer"
    ]


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
            drugs = {
                a["medication"].lower()
                for n, a in calls
                if n in ("MedicationRequest.search", "MedicationAdministration.search")
            }
            writes = [a for n, a in calls if n == "MedicationRequest.create"]
            for a in writes:
                if not rec.current_doses(str(a["medication"]).split()[0].lower()):
                    out["current_orders"].append(f"{where}: renews {a['medication']}, not current")
            intents = e.get("session_plan", {}).get("turn_intents", [])
            intent = intents[t] if t < len(intents) else ""
            labs = {a["code"] for n, a in calls if n == "Observation.search" and a.get("code")}
            drugs_given = [
                a["medication"].lower()
                for n, a in calls
                if n == "MedicationAdministration.search" and a.get("medication")
            ]
            for c in checks:
                if c["kind"] != "value":
                    continue
                label, value = c["label"], c["value"]
                if label in drugs:
                    if value == 0:
                        out["zero_doses"].append(f"{where}: {label} dose 0")
                    doses = (
                        rec.current_doses(label)
                        if not intent.startswith("anticoag_bridge(") or label != "warfarin"
                        else rec.warfarin_dose()
                    )
                    if not doses or value not in doses:
                        out["current_orders"].append(
                            f"{where}: {label} {value} not a current scheduled dose ({doses})"
                        )
                elif label in labs:
                    series = rec.lab_series(label)
                    drawn = rec.procedural(label)
                    suspect = rec.suspect(label) | drawn
                    values = [v for t, v in series if t not in suspect]
                    if any(v == value and t in drawn for t, v in series) and value not in values:
                        out["procedural_draws"].append(
                            f"{where}: {label} {value} cited, drawn during a procedure before "
                            "the direct admission began"
                        )
                    elif (
                        any(v == value and t in suspect for t, v in series) and value not in values
                    ):
                        out["artifacts"].append(
                            f"{where}: {label} {value} cited, a spurious "
                            "value reversed within hours"
                        )
                    elif value not in [v for _, v in series] and value in [
                        v for _, v in rec.lab_series(label, False)
                    ]:
                        out["reported_after"].append(
                            f"{where}: {label} {value} was drawn by the cutoff, reported after it"
                        )
                    elif not series:
                        out["latest_values"].append(f"{where}: no {label} in the record")
                    elif e["task_types"][t] != "Clinical Reasoning" and value != values[-1]:
                        out["latest_values"].append(
                            f"{where}: {label} {value}, latest is {values[-1]}"
                        )
                    elif value not in (
                        values[0],
                        values[-1],
                        max(values),
                        min(values),
                        rec.before_treatment(label, drugs_given),
                    ):
                        out["latest_values"].append(
                            f"{where}: {label} {value} is not first, "
                            "last, peak, nadir or before the treatment"
                        )
                elif label in ("given", "not given") and drugs:
                    word = next(iter(drugs))
                    counts = rec.order_counts(word)
                    said = [c[0 if label == "given" else 1] for c in counts]
                    if value not in said:
                        out["administrations"].append(
                            f"{where}: {label} {value}, the record's current orders say "
                            f"(given, not given) {counts}"
                        )
            if intent.startswith(DOSE_COUNT_KINDS):
                word = intent.split("(", 1)[1].rstrip(")")
                icu_rows, icu_given = rec.icu_counts(word)
                if icu_rows:
                    out["administrations"].append(
                        f"{where}: {intent} while {word} has {icu_rows} ICU administrations "
                        f"({icu_given} given) that compat cannot show"
                    )
            items = e["rubrics"][t] if "rubrics" in e else []
            for item in items:
                m = CALLED_SPURIOUS.match(item)
                if m is None:
                    continue
                label, said = m.group(1), float(m.group(2))
                if any(
                    v == said and rec.in_course(label, when) for when, v in rec.lab_series(label)
                ):
                    out["spurious_in_course"].append(
                        f"{where}: {label} {m.group(2)} called spurious, within its own course"
                    )
            severe = {
                lab
                for lab in labs
                if lab in SEVERE_CYTOPENIA
                and rec.lab_series(lab)
                and rec.lab_series(lab)[-1][1] < SEVERE_CYTOPENIA[lab].value
            }
            if severe and rec.marrow_disease and "look for the cause" in turn[-1]["observation"]:
                out["known_cause_worked_up"].append(
                    f"{where}: a severe {sorted(severe)} with a coded marrow disease, "
                    "told to look for the cause"
                )
            if intent.startswith(RESPONSE_INTENTS) and len(labs) == 1:
                out["responses"] += _response_defects(
                    rec, where, intent, next(iter(labs)), turn[-1]["observation"], e["rubrics"][t]
                )
            if intent.startswith("lab_trend(") and len(labs) == 1:
                out["trends"] += _trend_defects(
                    rec, where, next(iter(labs)), e["rubrics"][t], checks
                )
            if any(
                a.get("report_type") == "culture"
                for n, a in calls
                if n == "DiagnosticReport.search"
            ):
                orgs = rec.organisms()
                answer = turn[-1]["observation"]
                named = {o for o in orgs if o in answer}
                if orgs and not named:
                    out["cultures"].append(f"{where}: answer names none of {sorted(orgs)}")
                if orgs and any(
                    "no organism" in w
                    for c in checks
                    if c["kind"] == "concept"
                    for w in c["any"]["en"]
                ):
                    out["cultures"].append(f"{where}: 'no organism' while {sorted(orgs)} grew")
                for r in rec.positives():
                    if f"{str(r['test']).strip()} positive" not in answer:
                        out["positive_tests"].append(
                            f"{where}: leaves out the positive {str(r['test']).strip()} "
                            f"({r['specimen']} {str(r['drawn'])[:16]})"
                        )
                for kind, problem in _culture_lines(rec, answer):
                    out[kind].append(f"{where}: {problem}")
                out["contaminated_cultures"] += [
                    f"{where}: {problem}" for problem in _doubted_lines(rec, answer, items)
                ]
        out["renal_dose"] += _renal_defects(rec, e)
        out["rechecks"] += _recheck_defects(rec, e)
    out["repeats"] = _repeats(entries)
    return {k: out.get(k, []) for k in CATEGORIES}


#: Turn intents that look a lab up (a value the turn before already gave is asked again).
LOOKUPS = ("lab_latest(", "lab_pair(", "lab_and_med(")


def _repeats(entries: list[dict[str, Any]]) -> list[str]:
    """Within one build: an admission used twice in a scenario, a question asked twice, a lab
    looked up right after the turn that gave it."""
    found = []
    seen: dict[tuple[str, int], str] = {}
    asked: dict[str, str] = {}
    for e in entries:
        key = (e.get("clinical_scenario", ""), e["hadm_id"])
        if key in seen:
            found.append(f"{e['id']}: admission {e['hadm_id']} already used by {seen[key]}")
        seen.setdefault(key, e["id"])
        intents = e.get("session_plan", {}).get("turn_intents", [])
        labs = [
            {a["code"] for n, a in _calls(turn) if n == "Observation.search" and a.get("code")}
            for turn in e["answer_list"]
        ]
        for t, text in enumerate(e.get("tasks_en", [])):
            if text in asked:
                found.append(f"{e['id']} turn {t}: {text!r} already asked in {asked[text]}")
            asked.setdefault(text, f"{e['id']} turn {t}")
            if t and t < len(intents) and intents[t].startswith(LOOKUPS) and labs[t] & labs[t - 1]:
                found.append(f"{e['id']} turn {t}: asks {sorted(labs[t] & labs[t - 1])} again")
        found += _earlier_repeats(e, intents, labs)
    return found


def _earlier_repeats(e: dict[str, Any], intents: list[str], labs: list[set[str]]) -> list[str]:
    """A turn that looks a lab up or trends it after any earlier turn gave it, or looks a
    drug's orders up after any earlier turn searched them ("enoxaparin bridge?" then
    "enoxaparin?")."""
    found = []
    searched = [
        {
            str(a.get("medication", "")).lower()
            for n, a in _calls(turn)
            if n == "MedicationRequest.search"
        }
        for turn in e["answer_list"]
    ]
    for t in range(1, min(len(intents), len(labs))):
        before_labs = set().union(*labs[:t])
        before_drugs = set().union(*searched[:t])
        if intents[t].startswith((*LOOKUPS, "lab_trend(")) and labs[t] & before_labs:
            found.append(f"{e['id']} turn {t}: {intents[t]} repeats an earlier turn's lab")
        if intents[t].startswith("med_current(") and searched[t] & before_drugs:
            found.append(f"{e['id']} turn {t}: {intents[t]} repeats an earlier turn's drug")
    return found


def _response_defects(
    rec: Record, where: str, intent: str, label: str, answer: str, items: list[str]
) -> list[str]:
    """A treatment-response turn against the record (module docstring)."""
    word = intent.split("(", 1)[1].rstrip(")").split(", ")[-1]  # kind(lab, drug)
    found = []
    said = [i for i in items if "being given" in i or "continuing" in i] + [
        a for a in (answer,) if "continue" in a.lower()
    ]
    if said and not rec.running(word):
        found.append(
            f"{where}: {intent}: {word} not running at {rec.ref:%Y-%m-%d %H:%M}, yet {said[0]!r}"
        )
    suspect = rec.suspect(label)
    series = [t for t, _ in rec.lab_series(label) if t not in suspect]
    stale = bool(series) and series[-1] < rec.ref - dt.timedelta(hours=CURRENT_VALUE_HOURS)
    if stale and " now (" in answer:
        found.append(f"{where}: {label} of {series[-1]:%Y-%m-%d %H:%M} called now")
    if "culture results" in answer and not rec.cultured():
        found.append(f"{where}: reviewed against cultures, none sent in the stay")
    return found


def _trend_defects(
    rec: Record, where: str, label: str, items: list[str], checks: list[dict[str, Any]]
) -> list[str]:
    """The trend words a turn accepts, against the documented table (``vocab.TRENDS``, read
    here on the record's values without its spurious ones and a procedure's draws)."""
    rule = TRENDS.get(label)
    suspect = rec.suspect(label) | rec.procedural(label)
    points = [(t, v) for t, v in rec.lab_series(label) if t not in suspect]
    said = [c for i, c in zip(items, checks, strict=True) if i.startswith("The answer describes")]
    if rule is None or len(points) < 2 or not said:
        return [f"{where}: a {label} trend the table cannot judge"]
    direction, size, shape = _reviewer_trend(points, rule, rec.latest_range(label))
    words = {w.lower() for w in said[0]["any"]["en"]}
    opposite = {"rising": "falling", "falling": "rising"}.get(direction, "")
    if shape == "plateau":  # levelled off after its turn: stable, neither direction required
        fair = {"stable"}
    elif shape == "turned":  # the last days move against the course: every word is fair
        fair = {direction, opposite, "stable"}
    else:
        fair = {direction} | ({"stable"} if size == "slight" else set())
    unfair = {"rising", "falling", "stable"} - fair
    if not fair <= words or unfair & words:
        return [
            f"{where}: {label} {[v for _, v in points]} is {size} {direction} {shape} by the "
            f"table; the rubric accepts {sorted(words & {'rising', 'falling', 'stable'})}"
        ]
    return []


def _size(a: float, b: float, rule: Any, limits: tuple[float | None, ...] = ()) -> str:
    diff, small = abs(b - a), min(abs(a), abs(b))
    rel = diff / small if small else float("inf")
    if diff >= rule.delta or (rel >= rule.rel and diff >= rule.delta / 2):
        return "clear"
    crossed = any(x is not None and min(a, b) < x < max(a, b) for x in limits)
    return "none" if diff < rule.delta / 2 and rel < rule.rel and not crossed else "slight"


def _reviewer_trend(
    points: list[tuple[dt.datetime, float]], rule: Any, limits: tuple[float | None, float | None]
) -> tuple[str, str, str]:
    """Direction, size and shape: since the later of a clear interior peak or nadir, else last
    vs first, a move across the reference range at least slight (the documented rule). After a
    turn, a course whose furthest value came before its last PLATEAU_DRAWS values, which lie
    within no clear move, is a plateau; without a clear move end to end, an interior extreme
    beyond both ends, more than no move from the other extreme before it and from the last
    value, is a bump coming back (a slight move from it); a course whose
    values of the last RECENT_COURSE_HOURS move against its direction has turned."""
    values = [v for _, v in points]
    first, last = values[0], values[-1]
    top, bottom = values.index(max(values)), values.index(min(values))
    turns = []
    if (
        max(values) > max(first, last)
        and _size(max(values), last, rule) == "clear"
        and _size(first, max(values), rule) != "none"
    ):
        turns.append((top, "falling"))
    if (
        min(values) < min(first, last)
        and _size(min(values), last, rule) == "clear"
        and _size(first, min(values), rule) != "none"
    ):
        turns.append((bottom, "rising"))
    if turns:
        at, direction = max(turns)
        since = values[at + 1 :]
        far = since.index(max(since) if direction == "rising" else min(since))
        tail = since[-PLATEAU_DRAWS:]
        if (
            len(since) >= PLATEAU_DRAWS
            and far != len(since) - 1
            and _size(min(tail), max(tail), rule) != "clear"
        ):
            return direction, "slight", "plateau"
        return _reviewer_turned(points[at:], direction, "clear", rule)
    size = _size(first, last, rule, limits)
    if size != "clear":
        bumps = [
            (i, direction)
            for i, direction, beyond, back in (
                (top, "falling", max(values) > max(first, last), min),
                (bottom, "rising", min(values) < min(first, last), max),
            )
            if beyond
            and i > 0
            and _size(back(values[:i]), values[i], rule) != "none"
            and _size(values[i], last, rule) != "none"
        ]
        if bumps:
            return max(bumps)[1], "slight", ""
    if size == "none":
        return "stable", "none", ""
    return _reviewer_turned(points, "rising" if last > first else "falling", size, rule)


def _reviewer_turned(
    points: list[tuple[dt.datetime, float]], direction: str, size: str, rule: Any
) -> tuple[str, str, str]:
    t_last, last = points[-1]
    window = [v for t, v in points[:-1] if t_last - t <= dt.timedelta(hours=RECENT_COURSE_HOURS)]
    if window:
        back = min(window) if direction == "falling" else max(window)
        against = last > back if direction == "falling" else last < back
        if against and _size(back, last, rule) != "none":
            return direction, "slight", "turned"
    return direction, size, ""


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
        rows = [
            r
            for r in rec.micro
            if r["specimen"] == " ".join(title.split()) and str(r["drawn"])[:16] == minute
        ]
        if not rows:
            found.append(("cultures", f"{title} {minute}: no such specimen of the stay"))
            continue
        said = [r for r in rows if f"{str(r['test']).strip()} positive" in line]
        if not any(is_culture(r["test"]) for r in rows) and not said:
            found.append(
                (
                    "culture_kinds",
                    f"{title} {minute}: no culture was sent ({sorted({r['test'] for r in rows})})",
                )
            )
        for org in sorted(o for o in every if o in line):
            grew = [r for r in rows if r["organism"] == org]
            cultured = [r for r in grew if is_culture(r["test"])]
            if any(r["organism"] == org for r in said):
                continue  # a positive non-culture test, named as the test it is
            if grew and not cultured:
                found.append(
                    (
                        "culture_kinds",
                        f"{title} {minute}: {org} is a "
                        f"{grew[0]['test']} result, not a culture's growth",
                    )
                )
            elif cultured and not any(r["known"] for r in cultured):
                found.append(
                    ("reported_after", f"{title} {minute}: {org} reported after the cutoff")
                )
            elif not cultured and not any(org in o and org != o for o in every if o in line):
                found.append(("cultures", f"{title} {minute}: {org} did not grow there"))
    return found


#: How an answer keeps a doubted isolate's caveat.
CAVEAT = re.compile(r"contaminat|mixed|uncertain|commensal|not a pathogen", re.IGNORECASE)


def _doubted_lines(rec: Record, answer: str, items: list[str]) -> list[str]:
    """An organism whose laboratory comment doubts it (contamination, mixed flora, uncertain
    significance) named on a culture answer's line without that caveat, or required by the
    rubric as the organism grown."""
    found = []
    for n, line in enumerate(answer.splitlines()):
        m = SPECIMEN_LINE.match(line)
        if m is None:
            continue
        doubted = {
            r["organism"]
            for r in rec.micro
            if r["doubted"]
            and r["known"]
            and r["specimen"] == " ".join(m.group(1).split())
            and str(r["drawn"])[:16] == m.group(2)
        }
        for org in sorted(o for o in doubted if o in line):
            if not CAVEAT.search(line.split(org, 1)[1]):
                found.append(f"{m.group(1)} {m.group(2)}: {org} presented as a pathogen")
            if n == 0 and any(
                i.startswith(f"The answer reports the organism grown ({org}") for i in items
            ):
                found.append(f"{m.group(1)} {m.group(2)}: the rubric requires {org} as a pathogen")
    return found


# ------------------------------------------------------------------ renal doses and rechecks
#: Bridging anticoagulants (a current order beside warfarin makes its INR a bridge's).
BRIDGING = ("enoxaparin", "fondaparinux")
#: Days within which a bridge's INR and a dialysed solute in ESRD are repeated.
SOON_DAYS = 3
KIDNEY = ("Creatinine", "Urea Nitrogen")


def _esrd(rec: Record) -> bool:
    codes = [
        str(c).replace(".", "").upper()
        for (c,) in rec.rows("SELECT icd_code FROM diagnoses_icd WHERE hadm_id = ?")
    ]
    return any(c.startswith(ESRD_ICD_PREFIXES) for c in codes)


def _clearance(rec: Record) -> float | None:
    """Cockcroft-Gault from the raw patient, weight and creatinine rows (ICU weight of the
    stay, else the last outpatient weight by the session date, in pounds)."""
    row = rec.con.execute(
        "SELECT gender, anchor_age, anchor_year FROM patients WHERE subject_id = ?",
        [rec.subject],
    ).fetchone()
    weights = rec.rows(
        "SELECT patientweight FROM inputevents WHERE hadm_id = ? AND starttime < ? "
        "AND try_cast(patientweight AS DOUBLE) > 0 ORDER BY starttime DESC LIMIT 1",
        str(rec.cutoff),
    )
    kg = _num(weights[0][0]) if weights else None
    if kg is None:
        pounds = rec.con.execute(
            "SELECT result_value FROM omr WHERE subject_id = ? AND result_name ILIKE 'Weight%' "
            "AND CAST(chartdate AS DATE) < CAST(? AS TIMESTAMP) "
            "ORDER BY CAST(chartdate AS DATE) DESC, CAST(seq_num AS INTEGER) DESC LIMIT 1",
            [rec.subject, str(rec.cutoff)],
        ).fetchone()
        kg = _num(pounds[0]) / 2.20462 if pounds and _num(pounds[0]) else None
    creatinine = rec.lab_series("Creatinine")
    if row is None or kg is None or not creatinine:
        return None
    age = int(row[1]) + rec.cutoff.year - int(row[2])
    crcl = (140 - age) * kg / (72 * creatinine[-1][1])
    return crcl * 0.85 if str(row[0]).upper().startswith("F") else crcl


def _renal_defects(rec: Record, e: dict[str, Any]) -> list[str]:
    """A turn that asks to adjust a renally cleared drug's dose when its daily dose is within
    the labelled band for the patient's clearance or dialysis (vocab.RENAL_DOSING), or asks
    for a creatinine recheck in end-stage renal disease."""
    out = []
    esrd = _esrd(rec)
    for t, items in enumerate(e.get("rubrics", [])):
        where = f"{e['id']} turn {t}"
        text = " ".join(items)
        if esrd and "Creatinine" in text and "recheck" in text.lower():
            out.append(f"{where}: a creatinine recheck in end-stage renal disease")
        if "recommends adjusting the" not in text:
            continue
        word = next((w for w in RENAL_DOSING if f"adjusting the {w}" in text.lower()), None)
        if word is None:
            out.append(f"{where}: a renal adjustment of a drug without a labelled band")
            continue
        crcl = None if esrd else _clearance(rec)
        most = RENAL_DOSING[word].maximum(crcl, esrd)
        daily = [
            float(d) * float(n)
            for d, n, s, stop in rec.rows(
                "SELECT dose_val_rx, doses_per_24_hrs, starttime, stoptime FROM prescriptions "
                "WHERE hadm_id = ? AND contains(lower(drug), ?)",
                word,
            )
            if _num(d)
            and _num(n)
            and (_ts(s) or rec.cutoff) < rec.cutoff
            and (_ts(stop) is None or _ts(stop) >= min(rec.end, rec.cutoff) - GRACE)
        ]
        if most is None or not daily or max(daily) <= most:
            out.append(
                f"{where}: adjust {word} at {daily} a day, the labelled maximum is {most} "
                f"(CrCl {crcl}, dialysis {esrd})"
            )
    return out


def _problem_labs(e: dict[str, Any]) -> set[str]:
    """The labs of a medication-safety session's problem: those its reasoning turns read, and
    those that monitor the drugs it looks up (vocab: classes, levels, unsafe-when)."""
    labs: set[str] = set()
    drugs: set[str] = set()
    for turn, kind in zip(e["answer_list"], e["task_types"], strict=False):
        for n, a in _calls(turn):
            if n == "Observation.search" and kind == "Clinical Reasoning":
                labs.add(str(a.get("code")))
            if n == "MedicationRequest.search":
                drugs.add(str(a.get("medication", "")).lower())
    for w in drugs:
        labs |= {lab for c in DRUG_CLASSES if any(p in w for p in c.patterns) for lab in c.labs}
        labs |= {lv.lab for d, lv in DRUG_LEVELS.items() if d in w}
        labs |= {lab for pats, lab, _, _ in UNSAFE_WHEN if any(p in w for p in pats)}
    return labs


def _recheck_defects(rec: Record, e: dict[str, Any]) -> list[str]:
    """A repeat lab ordered for a value last drawn more than STALE_DAYS before discharge, for
    a drug level of a drug no longer ordered, for a kidney marker in ESRD, for a lab outside a
    medication-safety session's problem; or dated (any accepted day) later than SOON_DAYS
    after the session for an INR during a bridge or a dialysed solute in ESRD."""
    out = []
    ref = min(rec.end, rec.cutoff)
    esrd = _esrd(rec)
    day = dt.date.fromisoformat(e["current_date"][:10])
    for t, (turn, checks) in enumerate(zip(e["answer_list"], e["rubric_checks"], strict=True)):
        for n, a in _calls(turn):
            service = str(a.get("service_type", ""))
            if n != "ServiceRequest.create" or not service.startswith("Repeat "):
                continue
            lab, where = service[len("Repeat ") :], f"{e['id']} turn {t}"
            series = rec.lab_series(lab)
            if not series or series[-1][0] < ref - dt.timedelta(days=STALE_DAYS):
                out.append(f"{where}: repeat {lab}, last drawn {series[-1:]} (stale)")
            level = [w for w, lv in DRUG_LEVELS.items() if lv.lab == lab]
            if level and not any(rec.current_orders(w) for w in level):
                out.append(f"{where}: repeat {lab} of a drug no longer ordered")
            if esrd and lab in KIDNEY:
                out.append(f"{where}: repeat {lab} in end-stage renal disease")
            if lab == "INR(PT)" and not (rec.warfarin_ordered() or rec.liver_failure()):
                out.append(f"{where}: repeat INR without a vitamin K antagonist or liver failure")
            if e.get("clinical_scenario") == "med_safety" and lab not in _problem_labs(e):
                out.append(f"{where}: repeat {lab}, unrelated to the session's problem")
            bridge = (
                lab == "INR(PT)"
                and rec.warfarin_dose()
                and any(rec.current_orders(w) for w in BRIDGING)
            )
            dialysed = esrd and lab in DIALYSIS_LABS
            dates = [
                dt.date.fromisoformat(str(d)[:10])
                for c in checks
                if c.get("kind") == "write_arg" and c.get("field") == "target_date"
                for d in c.get("accepted", [])
            ]
            if (bridge or dialysed) and any((d - day).days > SOON_DAYS for d in dates):
                out.append(f"{where}: repeat {lab} accepted up to {max(dates)}, due within days")
    return out
