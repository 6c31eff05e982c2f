"""Whether a renally cleared drug's current dose is above the labelled renal range.

The kidney function a label doses by is the Cockcroft-Gault creatinine clearance
(:data:`~.vocab.COCKCROFT_GAULT`) from the patient's age, sex, weight (ICU ``inputevents``
of the admission, else the last ``omr`` weight by the session date) and latest creatinine;
in end-stage renal disease (coded, :class:`~.interpret.Context`) it means nothing and the
label's dialysis dose applies. The daily dose is the current order's dose times its doses a
day. A renal signal is a daily dose above the band's maximum
(:data:`~.vocab.RENAL_DOSING`); a drug without an entry, an order without a daily dose, or a
kidney function that cannot be computed is none.
"""

from __future__ import annotations

from dataclasses import dataclass

from physassist.timeline import Timeline

from .profile import Profile
from .vocab import RENAL_DOSING

#: Pounds per kilogram (``omr`` charts weight in pounds).
LBS_PER_KG = 2.20462
#: Grams to the milligrams of the table.
MG_PER = {"mg": 1.0, "g": 1000.0}


@dataclass(frozen=True)
class RenalDose:
    """A current order's daily dose against its labelled renal maximum."""

    word: str
    daily: float
    maximum: float
    unit: str
    crcl: float | None  # None on dialysis (clearance does not apply)
    frequency: str

    @property
    def excess(self) -> bool:
        return self.daily > self.maximum + 1e-6

    @property
    def on_dialysis(self) -> bool:
        return self.crcl is None


def cockcroft_gault(age: int, female: bool, weight_kg: float, creatinine: float) -> float:
    """Creatinine clearance in mL/min (:data:`~.vocab.COCKCROFT_GAULT`)."""
    crcl = (140 - age) * weight_kg / (72 * creatinine)
    return crcl * 0.85 if female else crcl


def weight_kg(tl: Timeline) -> float | None:
    """The patient's weight at the cutoff: the admission's last ICU weight, else the last
    ``omr`` weight charted by the session date."""
    row = tl.con.execute(
        "SELECT patientweight FROM inputevents WHERE subject_id = ? AND hadm_id = ? "
        "AND patientweight > 0 AND starttime < ? ORDER BY starttime DESC LIMIT 1",
        [tl.subject_id, tl.hadm_id, tl.cutoff],
    ).fetchone()
    if row is not None:
        return float(row[0])
    row = tl.con.execute(
        "SELECT result_value FROM omr WHERE subject_id = ? AND result_name ILIKE 'Weight%' "
        "AND chartdate <= CAST(? AS DATE) ORDER BY chartdate DESC, seq_num DESC LIMIT 1",
        [tl.subject_id, tl.cutoff],
    ).fetchone()
    try:
        return float(row[0]) / LBS_PER_KG if row is not None else None
    except (TypeError, ValueError):
        return None


def clearance(prof: Profile) -> float | None:
    """The Cockcroft-Gault clearance at the cutoff; None without age, weight or creatinine."""
    tl = prof.timeline
    series = tl.lab("Creatinine") if tl is not None else None
    weight = weight_kg(tl) if tl is not None else None
    if series is None or weight is None or prof.age <= 0 or series.latest.value <= 0:
        return None
    female = prof.gender.upper().startswith("F")
    return cockcroft_gault(prof.age, female, weight, series.latest.value)


def renal_dose(prof: Profile, word: str) -> RenalDose | None:
    """The current order of ``word`` against its renal band (see the module rules)."""
    entry = next((e for w, e in RENAL_DOSING.items() if w in word), None)
    tl = prof.timeline
    order = tl.current_order(word) if tl is not None and entry is not None else None
    if entry is None or order is None or order.dose is None or not order.per_day:
        return None
    scale = MG_PER.get(order.unit.strip().lower())
    if scale is None or entry.unit not in MG_PER:
        return None
    daily = order.dose * order.per_day * scale / MG_PER[entry.unit]
    dialysis = prof.context.esrd
    crcl = None if dialysis else clearance(prof)
    most = entry.maximum(crcl, dialysis)
    if most is None:
        return None
    return RenalDose(word, daily, most, entry.unit, crcl, order.frequency)


__all__ = ["RenalDose", "clearance", "cockcroft_gault", "renal_dose", "weight_kg"]
