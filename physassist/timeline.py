"""One admission as a clinician sees it on the session's current date: what is true then.

The builder (``generation/builder``) and the LLM pipeline read their clinical facts here,
so both agree on which orders are current, which lab value is the latest, what the cultures
grew, what was given and how the admission ended. Everything is read with DuckDB from an
EHR store (the canonical MIMIC-IV tables of ``physassist.ehr.tables``); nothing here
imports Inspect.

Rules (each is a place where reading the raw tables naively gives a wrong fact):

* **Current order**: started by the reference moment and not stopped more than
  :data:`ORDER_GRACE` before it. The reference moment is the discharge time (or the end of
  the current date when that comes first). Orders running at discharge are closed by pharmacy
  ("Discontinued via patient discharge") with a stop time after ``dischtime`` (all 5,139 such
  orders of the MIMIC-IV demo: median 4 h after), so an order stopped before discharge was
  stopped; the hour of grace only absorbs charting skew.
* **Scheduled order**: a numeric dose > 0 given on a schedule. Sliding-scale orders
  (``pharmacy.sliding_scale = 'Y'``, a dose of 0, frequency ASDIR), PRN and one-time orders
  have no fixed dose or schedule, so they never answer a dose or reliability question.
* **Lab concept**: a label in blood; when the label has chemistry/hematology items and blood
  gas items (Glucose 50931/50809, Hemoglobin 51222/50811), the blood gas items are left out;
  values charted at one time are merged (the concept's most-charted item wins).
* **Administration**: an eMAR event is given, not given (not given / held / not started) or
  unknown (no event text): an empty event is not a missed dose. MIMIC-IV charts most drugs
  given in an ICU in ``icu/inputevents`` instead (MetaVision), one row per dose or per
  segment of an infusion, with no key to the pharmacy order: a row belongs to a drug when its
  ``d_items.label`` contains the drug's search word (the order's first word, case-insensitive:
  "vancomycin" -> "Vancomycin", "furosemide" -> "Furosemide (Lasix)"), the same literal match
  ``MedicationAdministration.search(medication=word)`` applies to both tables. Its status is
  the strict tool's (:func:`~physassist.ehr.tools.strict_medications.icu_status`): completed
  or running -> given, paused -> not given, stopped / rewritten -> unknown. (On the MIMIC-IV
  demo, 95% of the doses so matched start inside a prescription of that word, give or take an
  hour; ``tests/test_timeline.py`` holds it.)
* **Dose counts** (the one rule for every dose-count item, :attr:`Administrations.countable`):
  the count a rubric states must be what the read tools show in either semantics. ``strict``
  shows eMAR and ICU administrations; ``compat`` reproduces the reference, which reads the eMAR
  only. So a drug with any ICU administration up to the cutoff gets no dose-count item (its
  count differs between the two); for every other drug both show the eMAR count.
* **Course**: died (``hospital_expire_flag``, ``deathtime`` or a DIED disposition), hospice
  (a HOSPICE disposition) or discharged.
* **Known at the cutoff** (``physassist.ehr.tools.reported``, the strict tools' rule): a lab
  value or a culture result counts from its report time, not from its draw; a specimen drawn
  by the cutoff and reported after it is pending. The stay's labs and specimens include those
  without ``hadm_id`` drawn in its window (``edregtime`` else ``admittime`` to ``dischtime``):
  the emergency department's.
* **Microbiology** is read as the strict tools read it (``physassist.ehr.tools.microbiology``):
  tests by kind (only cultures grow organisms), pending tests, commensal / contaminant /
  rejected flags, each isolate's susceptibilities and the resistances named from them.
* **The cutoff** is an instant: the end of the current date by default (the paper's sessions,
  at the discharge date), or an instant inside the stay (``until``: a session's ``cutoff``, the
  builder's in-stay timepoint); the tools apply the same instant (``ToolContext.cutoff``).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from functools import cached_property

import duckdb

from physassist.ehr.tools.microbiology import Isolate, MicroTest, Specimen, specimens
from physassist.ehr.tools.reported import Expression, Stay, recorded_sql, reported_at, stays
from physassist.ehr.tools.strict_medications import icu_status
from physassist.ehr.tools.strict_observations import MICRO_COLUMNS

#: An order stopped this long before the reference moment still counts as current (see above).
ORDER_GRACE = dt.timedelta(hours=1)
#: Pharmacy frequencies of a one-time order (MIMIC-IV ``pharmacy.frequency``).
ONE_TIME = frozenset({"ONCE", "1X", "X1", "NOW", "ONCE/PRN", "ASDIR ONCE", "STAT"})
#: Frequencies with no fixed dose schedule: "as directed" (sliding scales) and rate-titrated
#: infusions, whose prescribed dose is not what is running.
AS_DIRECTED = frozenset({"ASDIR", "AS DIRECTED", "INFUSION"})
#: d_labitems categories left out of a label that also has another category.
BLOOD_GAS = "blood gas"


def _day_end(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day[:10]) + dt.timedelta(days=1)


def _num(x: object) -> float | None:
    try:
        v = float(str(x).strip())
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def order_word(drug: str) -> str:
    """The searchable word of a prescription: its first word, lower-cased ("vancomycin")."""
    word = drug.strip().split()[0] if drug.strip() else drug
    return word.strip(",;:()").lower()


@dataclass(frozen=True)
class Order:
    """One prescription with the pharmacy fields that say how it is given."""

    drug: str
    dose_text: str
    unit: str
    route: str
    start: dt.datetime | None
    stop: dt.datetime | None
    frequency: str
    sliding_scale: bool
    per_day: float | None

    @property
    def word(self) -> str:
        return order_word(self.drug)

    @property
    def dose(self) -> float | None:
        return _num(self.dose_text)

    @property
    def prn(self) -> bool:
        return "PRN" in self.frequency.upper()

    @property
    def one_time(self) -> bool:
        return self.frequency.upper().strip() in ONE_TIME

    @property
    def scheduled(self) -> bool:
        """A fixed numeric dose on a schedule (see the module rules)."""
        dose = self.dose
        return (dose is not None and dose > 0 and bool(self.unit) and not self.sliding_scale
                and not self.prn and not self.one_time
                and self.frequency.upper().strip() not in AS_DIRECTED)

    def current_at(self, ref: dt.datetime) -> bool:
        started = self.start is None or self.start <= ref
        return started and (self.stop is None or self.stop >= ref - ORDER_GRACE)


@dataclass(frozen=True)
class LabPoint:
    time: dt.datetime
    value: float
    unit: str
    low: float | None
    high: float | None
    itemid: int


@dataclass(frozen=True)
class LabSeries:
    """One lab concept over the admission up to the cutoff, oldest first."""

    label: str
    itemids: tuple[int, ...]
    points: tuple[LabPoint, ...]

    @property
    def latest(self) -> LabPoint:
        return self.points[-1]

    @property
    def first(self) -> LabPoint:
        return self.points[0]

    @property
    def peak(self) -> LabPoint:
        """The highest value (the earliest of equal highs)."""
        return max(self.points, key=lambda p: (p.value, -p.time.timestamp()))

    @property
    def nadir(self) -> LabPoint:
        """The lowest value (the earliest of equal lows)."""
        return min(self.points, key=lambda p: (p.value, p.time.timestamp()))


@dataclass(frozen=True)
class Culture:
    """One microbiology specimen of the stay at the cutoff (``record``: its tests, pending or
    reported, as the strict tools show them)."""

    specimen: str
    time: dt.datetime
    record: Specimen

    @property
    def organisms(self) -> tuple[str, ...]:
        """What its reported cultures grew, by name (sorted; results written as organisms,
        such as "POSITIVE", left out)."""
        return tuple(sorted({i.organism for i in self.record.isolates}))

    @property
    def significant(self) -> tuple[Isolate, ...]:
        """The isolates of clinical weight: no commensal flora, no possible contaminant."""
        return tuple(i for i in self.record.isolates if i.significant)

    @property
    def pending(self) -> tuple[MicroTest, ...]:
        return tuple(t for t in self.record.tests if t.pending)

    @property
    def culture(self) -> bool:
        """A culture was sent (not only a stain, antigen test, PCR or serology)."""
        return bool(self.record.cultures)


@dataclass(frozen=True)
class Administrations:
    """Charted administrations of one drug word in the admission up to the cutoff: eMAR events
    and ICU (``inputevents``) rows (see the module rules)."""

    given: tuple[dt.datetime, ...]  # oldest first, eMAR and ICU
    not_given: int
    unknown: int
    icu: int  # of all the above, rows from icu/inputevents

    @property
    def charted(self) -> int:
        return len(self.given) + self.not_given + self.unknown

    @property
    def countable(self) -> bool:
        """Whether a dose-count item may be asked: both semantics show the same count (no ICU
        administration, which only ``strict`` shows)."""
        return self.icu == 0


#: eMAR event text (lower case) of a dose that was given.
GIVEN_WORDS = ("administered", "given", "applied", "started", "confirmed", "flushed",
               "assessed", "removed", "read", "rate change", "reconciliation")


#: An ICU administration's status (the strict tool's) -> how it counts.
ICU_KIND = {"completed": "given", "in-progress": "given", "on-hold": "not_given"}


def admin_kind(event: str | None) -> str:
    """'given', 'not_given' or 'unknown' for one eMAR event text ("Not Given per Sliding
    Scale" and "Held" are not given; "Stopped", "Delayed" and an empty event say nothing)."""
    text = str(event or "").strip().lower()
    if (text.startswith("not ") and "stopped" not in text) or "held" in text or "hold" in text:
        return "not_given"
    if not text or text.startswith(("stopped", "delayed")):
        return "unknown"
    return "given" if any(w in text for w in GIVEN_WORDS) else "unknown"


@dataclass
class Timeline:
    """What is true for ``hadm_id`` on ``current_date`` (see the module rules)."""

    con: duckdb.DuckDBPyConnection
    subject_id: int
    hadm_id: int
    current_date: str
    #: The session's cutoff instant, inclusive (the tools'); None: the end of ``current_date``.
    until: dt.datetime | None = None
    _labs: dict[str, LabSeries | None] = field(default_factory=dict)
    _recorded: dict[str, bool] = field(default_factory=dict)  # table -> has report times

    @property
    def cutoff(self) -> dt.datetime:
        """The first instant not yet known (every query here keeps what is before it): one
        microsecond after ``until``, else the end of the current date."""
        if self.until is not None:
            return self.until + dt.timedelta(microseconds=1)
        return _day_end(self.current_date)

    @cached_property
    def stay(self) -> Stay | None:
        """The admission's window for specimens without ``hadm_id`` (``reported.Stay``)."""
        row = self.con.execute(
            "SELECT hadm_id, admittime, dischtime, edregtime FROM admissions WHERE hadm_id = ?",
            [self.hadm_id]).fetchone()
        found = stays([dict(zip(("hadm_id", "admittime", "dischtime", "edregtime"), row,
                                strict=True))]) if row else []
        return found[0] if found else None

    def _reported(self, table: str) -> Expression:
        """``reported.reported_at`` for ``table`` in this store (asked once per timeline)."""
        if table not in self._recorded:
            row = self.con.execute(recorded_sql(table)).fetchone()
            self._recorded[table] = bool(row and row[0])
        return reported_at(table, self._recorded[table])

    def lab_scope(self, alias: str = "l") -> tuple[str, list[object]]:
        """SQL conditions (and their parameters) on ``labevents`` rows aliased ``alias``: the
        subject's rows of the stay (its own and its window's without ``hadm_id``), drawn and
        reported before :attr:`cutoff`. Unqualified report-time columns: join no other table
        that has them."""
        reported, _ = self._reported("labevents")
        stay = self.stay
        window = [stay.start, stay.end] if stay is not None else [self.cutoff, self.cutoff]
        sql = (f"{alias}.subject_id = ? AND ({alias}.hadm_id = ? OR ({alias}.hadm_id IS NULL "
               f"AND {alias}.charttime BETWEEN ? AND ?)) AND {alias}.charttime < ? "
               f"AND {reported} < ?")
        return sql, [self.subject_id, self.hadm_id, *window, self.cutoff, self.cutoff]

    @cached_property
    def _admission(self) -> tuple:
        row = self.con.execute(
            "SELECT admittime, dischtime, deathtime, discharge_location, hospital_expire_flag "
            "FROM admissions WHERE hadm_id = ?", [self.hadm_id]).fetchone()
        return row or (None, None, None, None, None)

    @property
    def ref(self) -> dt.datetime:
        """The reference moment orders are judged at: discharge, or the cutoff if earlier."""
        disch = self._admission[1]
        return min(disch, self.cutoff) if disch is not None else self.cutoff

    @property
    def course(self) -> str:
        """'died', 'hospice' or 'discharged'."""
        _, _, death, location, expired = self._admission
        loc = str(location or "").upper()
        if expired == 1 or death is not None or "DIED" in loc:
            return "died"
        return "hospice" if "HOSPICE" in loc else "discharged"

    @property
    def end_of_life(self) -> bool:
        """The admission ended in death or hospice: nothing forward-looking applies."""
        return self.course != "discharged"

    @cached_property
    def orders(self) -> tuple[Order, ...]:
        """Every prescription of the admission started by the cutoff, newest start first."""
        rows = self.con.execute(
            """
            SELECT p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, p.starttime, p.stoptime,
                   COALESCE(ph.frequency, ''), upper(COALESCE(ph.sliding_scale, '')) = 'Y',
                   p.doses_per_24_hrs
            FROM prescriptions p
            LEFT JOIN (SELECT pharmacy_id, any_value(frequency) AS frequency,
                              any_value(sliding_scale) AS sliding_scale
                       FROM pharmacy WHERE subject_id = ? GROUP BY pharmacy_id) ph
              ON ph.pharmacy_id = p.pharmacy_id
            WHERE p.subject_id = ? AND p.hadm_id = ? AND p.drug IS NOT NULL
              AND (p.starttime IS NULL OR p.starttime < ?)
            ORDER BY p.starttime DESC NULLS LAST, p.drug
            """, [self.subject_id, self.subject_id, self.hadm_id, self.cutoff]).fetchall()
        return tuple(Order(str(d), str(dose or "").strip(), str(unit or ""), str(route or ""),
                           s, e, str(freq or ""), bool(ss), _num(per_day))
                     for d, dose, unit, route, s, e, freq, ss, per_day in rows)

    def orders_for(self, word: str) -> list[Order]:
        """Orders whose drug name contains ``word`` (as the order tools search), newest first."""
        w = word.lower()
        return [o for o in self.orders if w in o.drug.lower()]

    def current_order(self, word: str) -> Order | None:
        """The newest current, scheduled order of ``word``; None when no such order exists or
        when a current order of it is sliding-scale, PRN or one-time (the dose is ambiguous)."""
        current = [o for o in self.orders_for(word) if o.current_at(self.ref)]
        if not current or not all(o.scheduled for o in current):
            return None
        return current[0]

    def administrations(self, word: str) -> Administrations:
        w = word.lower()
        emar = self.con.execute(
            "SELECT charttime, event_txt FROM emar WHERE subject_id = ? AND hadm_id = ? "
            "AND charttime < ? AND contains(lower(medication), ?)",
            [self.subject_id, self.hadm_id, self.cutoff, w]).fetchall()
        icu = self.con.execute(
            "SELECT i.starttime, i.endtime, i.statusdescription FROM inputevents i "
            "JOIN d_items d USING (itemid) WHERE i.subject_id = ? AND i.hadm_id = ? "
            "AND i.starttime < ? AND contains(lower(d.label), ?)",
            [self.subject_id, self.hadm_id, self.cutoff, w]).fetchall()
        kinds = [(t, admin_kind(event)) for t, event in emar]
        kinds += [(t, ICU_KIND.get(icu_status(status, end is None or end >= self.cutoff),
                                   "unknown")) for t, end, status in icu]
        given = sorted(t for t, kind in kinds if kind == "given")
        not_given = sum(kind == "not_given" for _, kind in kinds)
        return Administrations(tuple(given), not_given, len(kinds) - len(given) - not_given,
                               len(icu))

    def lab(self, label: str) -> LabSeries | None:
        """The lab concept ``label`` over the admission (see the module rules); None if absent."""
        if label not in self._labs:
            self._labs[label] = self._load_lab(label)
        return self._labs[label]

    def _load_lab(self, label: str) -> LabSeries | None:
        scope, params = self.lab_scope()
        rows = self.con.execute(
            f"""
            SELECT l.itemid, lower(COALESCE(d.category, '')), l.charttime, l.valuenum,
                   l.valueuom, l.ref_range_lower, l.ref_range_upper
            FROM labevents l JOIN d_labitems d USING (itemid)
            WHERE {scope}
              AND l.valuenum IS NOT NULL AND d.label = ?
              AND (d.fluid IS NULL OR lower(d.fluid) = 'blood')
            ORDER BY l.charttime, l.labevent_id
            """, [*params, label]).fetchall()
        if any(cat != BLOOD_GAS for _, cat, *_ in rows):
            rows = [r for r in rows if r[1] != BLOOD_GAS]
        if not rows:
            return None
        counts: dict[int, int] = {}
        for r in rows:
            counts[int(r[0])] = counts.get(int(r[0]), 0) + 1
        rank = {item: (-n, item) for item, n in counts.items()}
        by_time: dict[dt.datetime, tuple] = {}
        for r in rows:
            kept = by_time.get(r[2])
            if kept is None or rank[int(r[0])] < rank[int(kept[0])]:
                by_time[r[2]] = r
        points = tuple(LabPoint(t, float(v), str(u or ""), _num(lo), _num(hi), int(item))
                       for t, (item, _, _, v, u, lo, hi) in sorted(by_time.items()))
        return LabSeries(label, tuple(sorted(counts)), points)

    @cached_property
    def microbiology(self) -> tuple[Culture, ...]:
        """Every microbiology specimen of the stay drawn by the cutoff, newest first, as known
        at the cutoff (see the module rules)."""
        stay = self.stay
        window = [stay.start, stay.end, stay.start.date(), stay.end.date()] if stay else [None] * 4
        columns = ", ".join(f'"{c}"' for c in MICRO_COLUMNS)
        found = self.con.execute(
            f"""
            SELECT {columns} FROM microbiologyevents
            WHERE subject_id = ? AND COALESCE(charttime, chartdate) < ?
              AND (hadm_id = ? OR (hadm_id IS NULL AND (
                   (charttime IS NOT NULL AND charttime BETWEEN ? AND ?)
                   OR (charttime IS NULL AND CAST(chartdate AS DATE) BETWEEN ? AND ?))))
            ORDER BY COALESCE(charttime, chartdate), micro_specimen_id, test_seq
            """, [self.subject_id, self.cutoff, self.hadm_id, *window]).fetchall()
        rows = [dict(zip(MICRO_COLUMNS, r, strict=True)) for r in found]
        _, when = self._reported("microbiologyevents")
        known = specimens(rows, self.cutoff - dt.timedelta(microseconds=1), when,
                          [stay] if stay else [])
        return tuple(Culture(s.specimen, s.drawn, s) for s in known)

    @property
    def cultures(self) -> tuple[Culture, ...]:
        """The specimens a culture was sent from, newest first."""
        return tuple(c for c in self.microbiology if c.culture)

    @property
    def positive_cultures(self) -> tuple[Culture, ...]:
        """Cultures that grew an organism by the cutoff (commensals included)."""
        return tuple(c for c in self.cultures if c.organisms)


def load_timeline(con: duckdb.DuckDBPyConnection, subject_id: int, hadm_id: int,
                  current_date: str, until: dt.datetime | None = None) -> Timeline:
    """The timeline of one admission at ``current_date``, or at the instant ``until`` of that
    date (queries run lazily, once each)."""
    return Timeline(con, int(subject_id), int(hadm_id), str(current_date)[:10], until)
