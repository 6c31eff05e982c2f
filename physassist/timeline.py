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
* **One order**: the prescription rows of one ``poe_id`` with the same drug, start, route,
  unit and frequency are one order (MIMIC-IV writes a dose made of two tablets, 25 mg + 50 mg
  of metoprolol XL, as two rows; a tablet and a liquid of the same dose are two rows too). Its
  dose is the eMAR's ``dose_due`` of its newest charted administration when that is one row's
  dose or their sum, else the rows' dose when they agree, else their sum. Flushes and
  line-maintenance products (:data:`LINE_CARE`) are never a current order: nobody asks about
  the heparin in a line flush.
* **Administration**, as a nurse counts doses: only an eMAR event that gives a dose
  (Administered, Applied, with their Delayed / Partial / in Other Location forms) or withholds
  one (Not Given, Hold Dose, Not Applied) counts; Started, Confirmed, Assessed, Flushed, Stopped
  and Removed events are infusion and line care, and an empty event says nothing. An order's
  administrations are the events of its ``poe_id``; a dose held or not given in the
  :data:`DISCHARGE_WINDOW` before discharge (or after it) is expected, not missed. MIMIC-IV charts most drugs
  given in an ICU in ``icu/inputevents`` instead (MetaVision), one row per dose or per
  segment of an infusion, with no key to the pharmacy order: a row belongs to a drug when its
  ``d_items.label`` contains the drug's search word (the order's first word, case-insensitive:
  "vancomycin" -> "Vancomycin", "furosemide" -> "Furosemide (Lasix)"), the same literal match
  ``MedicationAdministration.search(medication=word)`` applies to both tables. Its status is
  the strict tool's (:func:`~physassist.ehr.tools.strict_medications.icu_status`): completed
  or running -> given, paused -> not given, stopped / rewritten -> unknown. (On the MIMIC-IV
  demo, 95% of the doses so matched start inside a prescription of that word, give or take an
  hour; ``tests/ehr/test_timeline.py`` holds it.)
* **Dose counts** (the one rule for every dose-count item, :attr:`Administrations.countable`):
  the count a rubric states must be what the read tools show in either semantics. ``strict``
  shows eMAR and ICU administrations; ``compat`` reproduces the reference, which reads the eMAR
  only, and neither links an administration to its order. So a drug with any ICU
  administration up to the cutoff gets no dose-count item (its count differs between the two),
  and an order's count is asked only when its events are exactly the events of its drug name
  charted since its start (:data:`START_SKEW` before it), which both show.
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
import re
from dataclasses import dataclass, field, replace
from functools import cached_property

import duckdb

from physassist.ehr.tools.microbiology import Isolate, MicroTest, Specimen, specimens
from physassist.ehr.tools.reported import Expression, Stay, recorded_sql, reported_at, stays
from physassist.ehr.tools.strict_medications import ORDER_GRACE, icu_status
from physassist.ehr.tools.strict_observations import MICRO_COLUMNS
from physassist.lab_artifacts import (
    INTERVENTIONS,
    PANEL_LABS,
    PANEL_SPIKES,
    procedural,
    spikes,
    stands_apart,
    within_course,
)

#: A dose held or not given this close to discharge (or after it) is expected, not missed: the
#: patient is leaving (discharge paperwork, the next dose due at home).
DISCHARGE_WINDOW = dt.timedelta(hours=4)
#: How long before its order's start an administration may be charted (an order's start is
#: its scheduled hour: the first metoprolol XL of an order starting at 17:00 went in at 16:45).
START_SKEW = dt.timedelta(hours=1)
#: Words of a drug name (or routes) that make it line care, not a treatment: flushes, locks,
#: catheter clearance, dialysis and pump priming (MIMIC-IV: "Heparin Flush (10 units/ml)",
#: "Sodium Chloride 0.9%  Flush", "Alteplase (Catheter Clearance)", "Heparin Dwell").
LINE_CARE = re.compile(
    r"flush|dwell|lock\b|catheter|clearance|cathflo|crrt|dialys|priming|"
    r"iabp|picc|midline",
    re.IGNORECASE,
)
LINE_CARE_ROUTES = frozenset({"DWELL", "DIALYS", "IJ"})
#: Pharmacy frequencies of a one-time order (MIMIC-IV ``pharmacy.frequency``).
ONE_TIME = frozenset({"ONCE", "1X", "X1", "NOW", "ONCE/PRN", "ASDIR ONCE", "STAT"})
#: Frequencies with no fixed dose schedule: "as directed" (sliding scales) and rate-titrated
#: infusions, whose prescribed dose is not what is running.
AS_DIRECTED = frozenset({"ASDIR", "AS DIRECTED", "INFUSION"})
#: Dose units that say nothing of the amount ("Warfarin 1 dose": the dose is set daily by INR).
NOT_A_UNIT = frozenset({"dose", "doses"})
#: d_labitems categories left out of a label that also has another category.
BLOOD_GAS = "blood gas"


def counts_toward(charted: dt.datetime, start: dt.datetime | None) -> bool:
    """Whether a dose charted at ``charted`` counts toward an order starting at ``start`` (the
    dose-count rule: from :data:`START_SKEW` before its start on; any dose when it has none)."""
    return start is None or charted >= start - START_SKEW


def _day_end(day: str) -> dt.datetime:
    return dt.datetime.fromisoformat(day[:10]) + dt.timedelta(days=1)


def _num(x: object) -> float | None:
    try:
        v = float(str(x).strip())
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def order_dose(doses: list[str], due: str | None = None) -> str:
    """The dose of an order from its rows' doses (see the module rules): the charted
    ``dose_due`` when it is one row's dose or their sum, else the rows' dose when they agree,
    else their sum; a row without a numeric dose leaves the first row's text."""
    nums = [_num(d) for d in doses]
    if len(doses) == 1 or any(n is None for n in nums):
        return doses[0]
    values = [n for n in nums if n is not None]
    total = round(sum(values), 6)
    due_value = _num(due)
    if due_value is not None and any(abs(due_value - c) < 1e-6 for c in [*values, total]):
        return f"{due_value:g}"
    return f"{values[0]:g}" if len(set(values)) == 1 else f"{total:g}"


def order_word(drug: str) -> str:
    """The searchable word of a prescription: its first word, lower-cased ("vancomycin")."""
    word = drug.strip().split()[0] if drug.strip() else drug
    return word.strip(",;:()").lower()


@dataclass(frozen=True)
class Order:
    """One order (its prescription rows merged, see the module rules) with the pharmacy fields
    that say how it is given."""

    drug: str
    dose_text: str
    unit: str
    route: str
    start: dt.datetime | None
    stop: dt.datetime | None
    frequency: str
    sliding_scale: bool
    per_day: float | None
    poe_id: str | None = None
    #: Each prescription row's dose, when the order has several rows (25 mg + 50 mg tablets).
    components: tuple[str, ...] = ()

    @property
    def word(self) -> str:
        return order_word(self.drug)

    @property
    def line_care(self) -> bool:
        """A flush, lock or catheter-clearance product (:data:`LINE_CARE`), not a treatment."""
        return bool(LINE_CARE.search(self.drug)) or self.route.upper().strip() in LINE_CARE_ROUTES

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
        return (
            dose is not None
            and dose > 0
            and bool(self.unit)
            and self.unit.strip().lower() not in NOT_A_UNIT
            and not self.sliding_scale
            and not self.prn
            and not self.one_time
            and self.frequency.upper().strip() not in AS_DIRECTED
        )

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
    """One lab concept over the admission up to the cutoff, oldest first; ``suspect`` holds the
    chart times of its likely artifacts (:mod:`physassist.lab_artifacts`)."""

    label: str
    itemids: tuple[int, ...]
    points: tuple[LabPoint, ...]
    suspect: frozenset[dt.datetime] = frozenset()
    procedural: frozenset[dt.datetime] = frozenset()  # of ``suspect``: a procedure's draws

    @property
    def latest(self) -> LabPoint:
        return self.points[-1]

    @property
    def first(self) -> LabPoint:
        return self.points[0]

    @property
    def confirmed(self) -> tuple[LabPoint, ...]:
        """The values that are not suspect (every one can be cited)."""
        return tuple(p for p in self.points if p.time not in self.suspect)

    @property
    def peak(self) -> LabPoint:
        """The highest value not suspect (the earliest of equal highs)."""
        return max(self.confirmed, key=lambda p: (p.value, -p.time.timestamp()))

    @property
    def nadir(self) -> LabPoint:
        """The lowest value not suspect (the earliest of equal lows)."""
        return min(self.confirmed, key=lambda p: (p.value, p.time.timestamp()))


#: A laboratory comment on a grown isolate that doubts it: MIMIC-IV writes "Further incubation
#: showed contamination with mixed skin/genital flora. Clinical significance of isolate(s)
#: uncertain" on every row of an E. coli whose workup it discontinued. Such an isolate is not a
#: pathogen to treat by its susceptibilities (IDSA 2019 asymptomatic bacteriuria guideline: a
#: contaminated, mixed-flora urine is recollected, not treated).
DOUBTED_COMMENT = re.compile(
    r"contaminat|mixed (bacterial |skin|.{0,20}flora)|significance .{0,20}uncertain",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Culture:
    """One microbiology specimen of the stay at the cutoff (``record``: its tests, pending or
    reported, as the strict tools show them; ``doubted``: its grown organisms whose laboratory
    comment doubts them, :data:`DOUBTED_COMMENT`)."""

    specimen: str
    time: dt.datetime
    record: Specimen
    doubted: frozenset[str] = frozenset()

    @property
    def organisms(self) -> tuple[str, ...]:
        """What its reported cultures grew, by name (sorted; results written as organisms,
        such as "POSITIVE", left out)."""
        return tuple(sorted({i.organism for i in self.record.isolates}))

    @property
    def significant(self) -> tuple[Isolate, ...]:
        """The isolates of clinical weight: no commensal flora, no possible contaminant, none
        the laboratory's comment doubts."""
        return tuple(
            i for i in self.record.isolates if i.significant and i.organism not in self.doubted
        )

    @property
    def pending(self) -> tuple[MicroTest, ...]:
        return tuple(t for t in self.record.tests if t.pending)

    @property
    def culture(self) -> bool:
        """A culture was sent (not only a stain, antigen test, PCR or serology)."""
        return bool(self.record.cultures)


@dataclass(frozen=True)
class Administrations:
    """Doses charted up to the cutoff (see the module rules): of one order (its ``poe_id``), or
    of a drug word (eMAR and ICU ``inputevents`` rows)."""

    given: tuple[dt.datetime, ...]  # oldest first
    not_given: tuple[dt.datetime, ...]  # held or not given, before the discharge window
    at_discharge: int  # held or not given in the discharge window: expected
    icu: int  # rows of the drug word in icu/inputevents (of a word: counted above)
    by_name: bool = True  # the order's events are the events of its drug name since its start

    @property
    def charted(self) -> int:
        return len(self.given) + len(self.not_given) + self.at_discharge

    @property
    def countable(self) -> bool:
        """Whether a dose-count item may be asked: both semantics show the same events (no ICU
        administration, which only ``strict`` shows, and the order's events named as it)."""
        return self.icu == 0 and self.by_name


#: eMAR event text (lower case, "delayed " / "partial " removed) that gives or withholds a dose.
GIVES = ("administered", "applied", "removed existing / applied new")
WITHHOLDS = ("not given", "hold dose", "held", "not applied")


#: An ICU administration's status (the strict tool's) -> how it counts.
ICU_KIND = {"completed": "given", "in-progress": "given", "on-hold": "not_given"}


def dose_event(event: str | None) -> str | None:
    """'given', 'not_given' or None (no dose event) for one eMAR event text, as a nurse counts
    doses: "Delayed Administered" and "Administered in Other Location" gave a dose, "Not Given
    per Sliding Scale" and "Hold Dose" withheld one; "Started", "Confirmed", "Flushed",
    "Stopped", "Removed" and an empty event are not doses."""
    text = " ".join(str(event or "").lower().split())
    for prefix in ("delayed ", "partial "):
        text = text.removeprefix(prefix)
    if text.startswith(WITHHOLDS):
        return "not_given"
    return "given" if text.startswith(GIVES) else None


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
    _doses: dict[str, Administrations] = field(default_factory=dict)
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
            [self.hadm_id],
        ).fetchone()
        found = (
            stays([dict(zip(("hadm_id", "admittime", "dischtime", "edregtime"), row, strict=True))])
            if row
            else []
        )
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
        sql = (
            f"{alias}.subject_id = ? AND ({alias}.hadm_id = ? OR ({alias}.hadm_id IS NULL "
            f"AND {alias}.charttime BETWEEN ? AND ?)) AND {alias}.charttime < ? "
            f"AND {reported} < ?"
        )
        return sql, [self.subject_id, self.hadm_id, *window, self.cutoff, self.cutoff]

    @cached_property
    def _admission(self) -> tuple:
        row = self.con.execute(
            "SELECT admittime, dischtime, deathtime, discharge_location, hospital_expire_flag "
            "FROM admissions WHERE hadm_id = ?",
            [self.hadm_id],
        ).fetchone()
        return row or (None, None, None, None, None)

    @property
    def ref(self) -> dt.datetime:
        """The reference moment orders are judged at: discharge, or the cutoff if earlier."""
        disch = self._admission[1]
        return min(disch, self.cutoff) if disch is not None else self.cutoff

    @property
    def discharged_at(self) -> dt.datetime | None:
        """The discharge time when it is by the cutoff (the session is at discharge)."""
        disch = self._admission[1]
        return disch if disch is not None and disch <= self.cutoff else None

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
        """Every order of the admission started by the cutoff (rows merged, see the module
        rules), newest start first."""
        rows = self.con.execute(
            """
            SELECT p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, p.starttime, p.stoptime,
                   COALESCE(ph.frequency, ''), upper(COALESCE(ph.sliding_scale, '')) = 'Y',
                   p.doses_per_24_hrs, p.poe_id
            FROM prescriptions p
            LEFT JOIN (SELECT pharmacy_id, any_value(frequency) AS frequency,
                              any_value(sliding_scale) AS sliding_scale
                       FROM pharmacy WHERE subject_id = ? GROUP BY pharmacy_id) ph
              ON ph.pharmacy_id = p.pharmacy_id
            WHERE p.subject_id = ? AND p.hadm_id = ? AND p.drug IS NOT NULL
              AND (p.starttime IS NULL OR p.starttime < ?)
            ORDER BY p.starttime DESC NULLS LAST, p.drug
            """,
            [self.subject_id, self.subject_id, self.hadm_id, self.cutoff],
        ).fetchall()
        groups: dict[tuple, list[tuple]] = {}
        for i, (d, dose, unit, route, s, e, freq, ss, per_day, poe) in enumerate(rows):
            key = (poe, d, s, route, unit, freq, ss) if poe else (i,)
            groups.setdefault(key, []).append(
                (
                    str(d),
                    str(dose or "").strip(),
                    str(unit or ""),
                    str(route or ""),
                    s,
                    e,
                    str(freq or ""),
                    bool(ss),
                    _num(per_day),
                    str(poe) if poe else None,
                )
            )
        return tuple(self._merged(g) for g in groups.values())

    def _merged(self, rows: list[tuple]) -> Order:
        """One order from its prescription rows (their dose: :func:`order_dose`)."""
        drug, _, unit, route, start, _, freq, sliding, per_day, poe = rows[0]
        stops = [r[5] for r in rows]
        stop = None if any(t is None for t in stops) else max(stops)
        doses = [r[1] for r in rows]
        dose = order_dose(doses, self._dose_due.get(poe) if poe else None)
        return Order(
            drug,
            dose,
            unit,
            route,
            start,
            stop,
            freq,
            sliding,
            per_day,
            poe,
            tuple(doses) if len(rows) > 1 else (),
        )

    @cached_property
    def _dose_due(self) -> dict[str, str]:
        """``poe_id`` -> the ``dose_due`` of its newest charted administration (eMAR detail)."""
        rows = self.con.execute(
            "SELECT e.poe_id, d.dose_due FROM emar e JOIN emar_detail d "
            "ON d.subject_id = e.subject_id AND d.emar_id = e.emar_id "
            "WHERE e.subject_id = ? AND e.hadm_id = ? AND e.charttime < ? "
            "AND d.parent_field_ordinal IS NULL AND d.dose_due IS NOT NULL "
            "AND e.poe_id IS NOT NULL ORDER BY e.charttime",
            [self.subject_id, self.hadm_id, self.cutoff],
        ).fetchall()
        return {str(poe): str(due) for poe, due in rows}

    def orders_for(self, word: str) -> list[Order]:
        """Orders whose drug name contains ``word`` (as the order tools search), newest first."""
        w = word.lower()
        return [o for o in self.orders if w in o.drug.lower()]

    def current_orders(self, word: str) -> list[Order]:
        """The current orders of ``word`` (line care left out), newest first."""
        return [o for o in self.orders_for(word) if o.current_at(self.ref) and not o.line_care]

    def current_order(self, word: str) -> Order | None:
        """The current, scheduled order of ``word``; None when there is none, when a current
        order of it is sliding-scale, PRN or one-time (the dose is ambiguous), or when two
        current orders of it differ (which one a question means is ambiguous)."""
        current = self.current_orders(word)
        if not current or not all(o.scheduled for o in current):
            return None
        if len({(o.drug, o.dose_text, o.unit) for o in current}) > 1:
            return None
        return current[0]

    @cached_property
    def medications_given(self) -> frozenset[str]:
        """Lower-case names of what was given up to the cutoff: eMAR medications with a dose
        given, and ICU item labels with an administration."""
        emar = self.con.execute(
            "SELECT DISTINCT lower(medication), event_txt FROM emar WHERE subject_id = ? "
            "AND hadm_id = ? AND charttime < ? AND medication IS NOT NULL",
            [self.subject_id, self.hadm_id, self.cutoff],
        ).fetchall()
        icu = self.con.execute(
            "SELECT DISTINCT lower(d.label) FROM inputevents i JOIN d_items d USING (itemid) "
            "WHERE i.subject_id = ? AND i.hadm_id = ? AND i.starttime < ?",
            [self.subject_id, self.hadm_id, self.cutoff],
        ).fetchall()
        return frozenset(
            {m for m, ev in emar if dose_event(ev) == "given"}
            | {label for (label,) in icu if label}
        )

    def administrations(self, word: str) -> Administrations:
        """Doses of a drug word: eMAR dose events and ICU rows (see the module rules)."""
        w = word.lower()
        if w not in self._doses:
            self._doses[w] = self._word_doses(w)
        return self._doses[w]

    def _word_doses(self, w: str) -> Administrations:
        emar = self.con.execute(
            "SELECT charttime, event_txt FROM emar WHERE subject_id = ? AND hadm_id = ? "
            "AND charttime < ? AND contains(lower(medication), ?)",
            [self.subject_id, self.hadm_id, self.cutoff, w],
        ).fetchall()
        icu = self.con.execute(
            "SELECT i.starttime, i.endtime, i.statusdescription FROM inputevents i "
            "JOIN d_items d USING (itemid) WHERE i.subject_id = ? AND i.hadm_id = ? "
            "AND i.starttime < ? AND contains(lower(d.label), ?)",
            [self.subject_id, self.hadm_id, self.cutoff, w],
        ).fetchall()
        kinds = [(t, dose_event(event)) for t, event in emar]
        kinds += [
            (t, ICU_KIND.get(icu_status(status, end is None or end >= self.cutoff)))
            for t, end, status in icu
        ]
        return self._counted(kinds, len(icu))

    def order_administrations(self, order: Order) -> Administrations:
        """Doses of one order: the eMAR dose events of its ``poe_id``; ``by_name`` says whether
        they are exactly its drug name's dose events since its start (see the module rules)."""
        rows = self.con.execute(
            "SELECT emar_id, charttime, medication, event_txt, poe_id FROM emar "
            "WHERE subject_id = ? AND hadm_id = ? AND charttime < ? "
            "AND (poe_id = ? OR lower(medication) = lower(?))",
            [self.subject_id, self.hadm_id, self.cutoff, order.poe_id, order.drug],
        ).fetchall()
        doses = [
            (i, t, med, kind, poe)
            for i, t, med, ev, poe in rows
            if (kind := dose_event(ev)) is not None
        ]
        mine = [
            (t, kind) for i, t, _, kind, poe in doses if poe is not None and poe == order.poe_id
        ]
        named = {
            i
            for i, t, med, _, _ in doses
            if str(med).lower() == order.drug.lower() and counts_toward(t, order.start)
        }
        ours = {i for i, *_, poe in doses if poe is not None and poe == order.poe_id}
        icu = self.administrations(order.word).icu
        return self._counted(mine, icu, by_name=bool(ours) and ours == named)

    def _counted(
        self, kinds: list[tuple[dt.datetime, str | None]], icu: int, by_name: bool = True
    ) -> Administrations:
        disch = self._admission[1]
        window = disch - DISCHARGE_WINDOW if disch is not None else None
        given = sorted(t for t, kind in kinds if kind == "given")
        withheld = sorted(t for t, kind in kinds if kind == "not_given")
        expected = [t for t in withheld if window is not None and t >= window]
        return Administrations(
            tuple(given),
            tuple(t for t in withheld if t not in expected),
            len(expected),
            icu,
            by_name,
        )

    def lab(self, label: str) -> LabSeries | None:
        """The lab concept ``label`` over the admission (see the module rules) with its
        suspect values, among them the values a procedure drew before a direct admission's
        start, unlike the stay's own (:func:`~physassist.lab_artifacts.procedural`); None if
        absent."""
        series = self._raw_lab(label)
        if series is None:
            return None
        stay = self.stay
        drawn = frozenset(
            procedural(series.points, stay.admitted, stay.start < stay.admitted)
            if stay is not None
            else ()
        )
        return replace(series, suspect=self._suspect(label) | drawn, procedural=drawn)

    def _raw_lab(self, label: str) -> LabSeries | None:
        if label not in self._labs:
            self._labs[label] = self._load_lab(label)
        return self._labs[label]

    @cached_property
    def _spikes(self) -> dict[dt.datetime, dict[str, bool]]:
        """Chart time -> the panel analytes that spiked then -> whether a treatment given
        between the draws around the spike explains it (:mod:`physassist.lab_artifacts`)."""
        out: dict[dt.datetime, dict[str, bool]] = {}
        for label in PANEL_LABS:
            series = self._raw_lab(label)
            points = series.points if series is not None else ()
            for i, d in spikes(points):
                out.setdefault(points[i].time, {})[label] = self._treated(label, d, points, i)
        return out

    def _treated(self, label: str, direction: str, points: tuple[LabPoint, ...], i: int) -> bool:
        """Whether a treatment for ``label``'s spike at ``i`` was given between the draws
        around it."""
        words = INTERVENTIONS.get((label, direction), ())
        return self._given_between(words, points[i - 1].time, points[i + 1].time)

    def _suspect(self, label: str) -> frozenset[dt.datetime]:
        """Chart times of ``label``'s own untreated spikes, and of its values that stand apart
        in a draw where several analytes spiked, one at least with no treatment to explain it
        (the panel rule); never a value within the rest of its course."""
        series = self._raw_lab(label)
        points = series.points if series is not None else ()
        own = {
            points[i].time
            for i, d in spikes(points)
            if not self._treated(label, d, points, i) and not within_course(points, i)
        }
        panel = {
            t
            for t, labels in self._spikes.items()
            if len(labels) >= PANEL_SPIKES
            and not all(labels.values())
            and stands_apart(points, t, label)
        }
        return frozenset(own | panel)

    def _given_between(self, words: tuple[str, ...], start: dt.datetime, end: dt.datetime) -> bool:
        """Whether a drug named by one of ``words`` was given in [start, end]: an eMAR dose
        event or an ICU input."""
        if not words:
            return False
        pattern = "|".join(re.escape(w) for w in words)
        emar = self.con.execute(
            "SELECT event_txt FROM emar WHERE subject_id = ? AND hadm_id = ? "
            "AND charttime BETWEEN ? AND ? AND regexp_matches(lower(medication), ?)",
            [self.subject_id, self.hadm_id, start, end, pattern],
        ).fetchall()
        if any(dose_event(e) == "given" for (e,) in emar):
            return True
        return (
            self.con.execute(
                "SELECT count(*) FROM inputevents i JOIN d_items d USING (itemid) "
                "WHERE i.subject_id = ? AND i.hadm_id = ? AND i.starttime <= ? "
                "AND COALESCE(i.endtime, i.starttime) >= ? AND regexp_matches(lower(d.label), ?)",
                [self.subject_id, self.hadm_id, end, start, pattern],
            ).fetchone()[0]
            > 0
        )

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
            """,
            [*params, label],
        ).fetchall()
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
        points = tuple(
            LabPoint(t, float(v), str(u or ""), _num(lo), _num(hi), int(item))
            for t, (item, _, _, v, u, lo, hi) in sorted(by_time.items())
        )
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
            """,
            [self.subject_id, self.cutoff, self.hadm_id, *window],
        ).fetchall()
        rows = [dict(zip(MICRO_COLUMNS, r, strict=True)) for r in found]
        _, when = self._reported("microbiologyevents")
        known = specimens(
            rows, self.cutoff - dt.timedelta(microseconds=1), when, [stay] if stay else []
        )
        doubted: dict[int, set[str]] = {}
        for r in rows:
            if r["org_name"] and DOUBTED_COMMENT.search(str(r["comments"] or "")):
                doubted.setdefault(int(r["micro_specimen_id"]), set()).add(str(r["org_name"]))
        out = []
        for s in known:
            grown = {i.organism for i in s.isolates}  # reported by the cutoff
            out.append(
                Culture(
                    s.specimen,
                    s.drawn,
                    s,
                    frozenset(doubted.get(s.specimen_id, ())) & frozenset(grown),
                )
            )
        return tuple(out)

    @property
    def cultures(self) -> tuple[Culture, ...]:
        """The specimens a culture was sent from, newest first."""
        return tuple(c for c in self.microbiology if c.culture)

    @property
    def positive_cultures(self) -> tuple[Culture, ...]:
        """Cultures that grew an organism by the cutoff (commensals included)."""
        return tuple(c for c in self.cultures if c.organisms)


def load_timeline(
    con: duckdb.DuckDBPyConnection,
    subject_id: int,
    hadm_id: int,
    current_date: str,
    until: dt.datetime | None = None,
) -> Timeline:
    """The timeline of one admission at ``current_date``, or at the instant ``until`` of that
    date (queries run lazily, once each)."""
    return Timeline(con, int(subject_id), int(hadm_id), str(current_date)[:10], until)
