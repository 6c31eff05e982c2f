"""What one patient's primary admission contains, read with a few DuckDB queries.

The planner uses the profile only to decide which topics the data can support (which labs
have values, which drugs were ordered or given); every number shown to the physician is
later taken from the gold tool observations, not from here.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

import duckdb

from physassist.ehr.tools.fhir import as_number
from physassist.timeline import Timeline, load_timeline

from .interpret import Context, load_context
from .vocab import LABS

#: First words of prescriptions that name a fluid, salt or vaccine rather than a drug a
#: clinician would ask about by that word.
NOT_A_DRUG_WORD = frozenset(
    {
        "sodium",
        "potassium",
        "calcium",
        "magnesium",
        "dextrose",
        "influenza",
        "syringe",
        "bag",
        "sterile",
        "water",
        "lactated",
        "heparin flush",
        "neutra-phos",
        "multivitamins",
        "senna",
        "docusate",
        "bisacodyl",
        "polyethylene",
    }
)


@dataclass(frozen=True)
class LabSummary:
    label: str
    n: int  # distinct chart times with a numeric value
    abnormal: bool  # latest value outside its range / flagged


@dataclass(frozen=True)
class DrugSummary:
    word: str  # searchable first word ("vancomycin")
    drug: str  # full prescription name of the latest order
    dose: str  # dose_val_rx
    unit: str  # dose_unit_rx
    route: str
    per_day: float | None  # doses_per_24_hrs
    n_admin: int  # doses of the current order charted given (physassist.timeline)
    #: A dose-count item may be asked (the timeline's rule: no ICU administration, which only
    #: the strict tools show)
    admin_countable: bool = True

    @property
    def numeric_dose(self) -> bool:
        """True when the prescribed dose is a single number (not a range like "1-2")."""
        try:
            float(self.dose)
        except ValueError:
            return False
        return True


@dataclass
class Profile:
    subject_id: int
    hadm_id: int
    current_date: str
    gender: str
    age: int
    labs: dict[str, LabSummary] = field(default_factory=dict)
    drugs: dict[str, DrugSummary] = field(default_factory=dict)
    n_dx: int = 0
    n_micro: int = 0
    n_radiology: int = 0
    n_discharge: int = 0
    phm: dict | None = None  # the cohort's patient health model, when the source has one
    timeline: Timeline | None = None  # what is true at the cutoff (physassist.timeline)
    context: Context = field(default_factory=Context)  # what changes a value's meaning

    @property
    def at_discharge(self) -> bool:
        """The session is at the discharge date: forward-looking items speak of follow-up."""
        return self.timeline is None or self.timeline.discharged_at is not None

    @property
    def pronoun(self) -> str:
        return "she" if self.gender.upper().startswith("F") else "he"


def _finite(x: object) -> float | None:
    """A finite positive number or None (a missing or zero doses-per-day says nothing)."""
    v = as_number(x)
    return v if v is not None and v > 0 else None


def load_profile(
    con: duckdb.DuckDBPyConnection,
    subject_id: int,
    hadm_id: int,
    current_date: str,
    until: dt.datetime | None = None,
) -> Profile:
    """Profile of the admission at the session cutoff: the end of `current_date`, or the
    instant `until` of that date (the builder's in-stay timepoint)."""
    tl = load_timeline(con, subject_id, hadm_id, current_date, until)
    row = con.execute(
        "SELECT gender, anchor_age, anchor_year FROM patients WHERE subject_id = ?", [subject_id]
    ).fetchone()
    gender, anchor_age, anchor_year = row if row else ("U", None, None)
    year = int(current_date[:4])
    age = (
        int(anchor_age) + (year - int(anchor_year)) if anchor_age is not None and anchor_year else 0
    )
    prof = Profile(subject_id, hadm_id, current_date, str(gender or "U"), age)

    labels = list(LABS)
    scope, params = tl.lab_scope()  # known at the cutoff (physassist.timeline)
    lab_rows = con.execute(
        f"""
        WITH v AS (
            SELECT d.label, l.charttime, l.valuenum, l.ref_range_lower, l.ref_range_upper, l.flag,
                   row_number() OVER (PARTITION BY d.label ORDER BY l.charttime DESC) AS rn
            FROM labevents l JOIN d_labitems d USING (itemid)
            WHERE {scope} AND l.valuenum IS NOT NULL AND d.label IN (SELECT unnest(?))
              AND (d.fluid IS NULL OR lower(d.fluid) = 'blood')
        )
        SELECT label, count(DISTINCT charttime),
               bool_or(rn = 1 AND (COALESCE(flag, '') <> '' OR valuenum > ref_range_upper
                                   OR valuenum < ref_range_lower))
        FROM v GROUP BY label ORDER BY label
        """,
        [*params, labels],
    ).fetchall()
    for label, n, abnormal in lab_rows:
        prof.labs[label] = LabSummary(label, int(n), bool(abnormal))

    # Only drugs with a current, scheduled order at the cutoff (physassist.timeline): a
    # stopped, sliding-scale, PRN or one-time order never answers a dose question.
    prof.timeline = tl
    prof.context = load_context(con, tl)
    for o in tl.orders:
        word = o.word
        if len(word) < 4 or word in prof.drugs or word in NOT_A_DRUG_WORD or not word.isalpha():
            continue
        current = tl.current_order(word)
        if current is None or current.word != word:
            continue
        admins = tl.order_administrations(current)
        prof.drugs[word] = DrugSummary(
            word,
            current.drug,
            current.dose_text,
            current.unit,
            current.route,
            _finite(current.per_day),
            len(admins.given),
            admins.countable,
        )

    def count(sql: str) -> int:
        return int(con.execute(sql, [subject_id, hadm_id]).fetchone()[0])

    prof.n_dx = count("SELECT count(*) FROM diagnoses_icd WHERE subject_id = ? AND hadm_id = ?")
    prof.n_micro = len(tl.cultures)  # specimens a culture was sent from, drawn by the cutoff
    prof.n_radiology = int(
        con.execute(
            "SELECT count(*) FROM radiology WHERE subject_id = ? AND hadm_id = ? AND charttime < ?",
            [subject_id, hadm_id, tl.cutoff],
        ).fetchone()[0]
    )
    prof.n_discharge = count("SELECT count(*) FROM discharge WHERE subject_id = ? AND hadm_id = ?")
    return prof
