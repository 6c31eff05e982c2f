"""The per-subject plan: everything the table writers need, decided once per subject.

Planning is plain Python per subject (cheap); the bulky tables (labs, vitals, eMAR) are
expanded from the plan's compact series/order specs in numpy, one chunk of subjects at a time.
Times are integer seconds since 1970-01-01 (MIMIC's shifted years 2150-2200 fit easily).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

EPOCH = datetime(1970, 1, 1)
DAY = 86400
HOUR = 3600

# Lab / vital trajectory shapes: value(p) = start + (end - start) * g(p), p in [0, 1].
SHAPE_LINEAR = 0
SHAPE_FAST = 1  # most of the change early (a response to treatment)
SHAPE_LATE = 2  # most of the change late
SHAPE_NOISY = 3  # stable baseline; noise on every value (endpoints included)


def ts(seconds: int) -> datetime:
    return EPOCH + timedelta(seconds=int(seconds))


def fmt_time(seconds: int) -> str:
    return ts(seconds).isoformat(sep=" ")


def fmt_date(seconds: int) -> str:
    return ts(seconds).date().isoformat()


def to_seconds(dt: datetime) -> int:
    return int((dt - EPOCH).total_seconds())


@dataclass(slots=True)
class Icu:
    stay_id: int
    careunit: str
    intime: int
    outtime: int


@dataclass(slots=True)
class Admission:
    hadm_id: int
    admit: int
    disch: int
    admission_type: str
    admission_location: str
    discharge_location: str
    anchor: bool
    diagnoses: list[str] = field(default_factory=list)
    ward: str = "Medicine"
    icu: Icu | None = None
    edreg: int | None = None


@dataclass(slots=True)
class Series:
    """A trajectory of one lab/vital item sampled at draws first, first+stride, ..."""

    code: str
    hadm_id: int  # 0 = outpatient (MIMIC leaves hadm_id empty)
    first: int  # index into the plan's draw (or vital time) list
    stride: int
    n: int
    start: float
    end: float
    shape: int = SHAPE_LINEAR
    noise: float = 0.0  # absolute standard deviation
    stay_id: int = 0  # vitals only


@dataclass(slots=True)
class Order:
    """One inpatient medication order (a prescriptions + pharmacy row, and its eMAR doses)."""

    drug: str
    hadm_id: int
    start: int
    stop: int
    hold_from: int = -1  # doses [hold_from, hold_from + hold_n) are held
    hold_n: int = 0
    n_prn: int = 0  # as-needed doses given (PRN orders only)
    status: str = "Discontinued via patient discharge"


@dataclass(slots=True)
class Micro:
    hadm_id: int | None  # None: drawn in the ED before the admission (as MIMIC-IV records it)
    time: int
    specimen: str
    organism: str | None


@dataclass(slots=True)
class SubjectPlan:
    idx: int
    subject_id: int
    archetype: str
    tier: int
    sex: str
    age: int
    anchor_year: int
    anchor_year_group: str
    race: str
    language: str
    marital_status: str
    insurance: str
    height_cm: float
    weight_kg: float
    admissions: list[Admission] = field(default_factory=list)
    draws: list[int] = field(default_factory=list)  # lab draw times
    draw_priority: list[str] = field(default_factory=list)
    series: list[Series] = field(default_factory=list)
    vtimes: list[int] = field(default_factory=list)  # vital charting times
    vseries: list[Series] = field(default_factory=list)
    orders: list[Order] = field(default_factory=list)
    micro: list[Micro] = field(default_factory=list)
    omr: list[tuple[int, int, str, str]] = field(default_factory=list)  # (date, seq, name, value)
    radiology: list[tuple[int, int, str]] = field(default_factory=list)  # (hadm, time, text)
    discharge: list[tuple[int, int, str]] = field(default_factory=list)  # (hadm, time, text)
    home_meds: list[str] = field(default_factory=list)
    discharge_meds: list[str] = field(default_factory=list)
    facts: dict = field(default_factory=dict)
    phm: dict = field(default_factory=dict)

    @property
    def anchor(self) -> Admission:
        return next(a for a in self.admissions if a.anchor)
