"""Lab values that are likely artifacts, so no answer cites them as a peak, a nadir or a trend.

A **spike** is a value at least :data:`SPIKE` away (relative to the larger of the two) from the
draws before and after it, in the same direction, whose next draw comes within :data:`REVERT`
and returns to within half the jump of the draw before: a haemoglobin of 3.3 between 8.1 and
7.8 two and a half hours later, a glucose of 942 between 83 and 178 (a sample drawn from a
line running dextrose). No real change comes and goes that fast without a treatment, so a
spike with one of its :data:`INTERVENTIONS` (a transfusion, insulin) given between the draws
before and after it is not one.
When :data:`PANEL_SPIKES` analytes of one draw spike, one at least with no treatment to explain
it, every value of that draw is suspect where it stands apart from both of its own neighbours by
:data:`PANEL` in one direction (the glucose of 942 came with a bicarbonate of 46 and a potassium
of 2.3): a physiologically discordant panel, which a dose of insulin that day does not explain.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Protocol

SPIKE = 0.4
PANEL = 0.15
PANEL_SPIKES = 2
REVERT = dt.timedelta(hours=12)
#: The analytes read together in one draw (chemistry panel, blood count), for the panel rule.
PANEL_LABS: tuple[str, ...] = (
    "Glucose",
    "Sodium",
    "Potassium",
    "Chloride",
    "Bicarbonate",
    "Phosphate",
    "Calcium, Total",
    "Magnesium",
    "Urea Nitrogen",
    "Creatinine",
    "Hemoglobin",
    "Hematocrit",
    "Platelet Count",
    "White Blood Cells",
)
#: (label, the spike's direction) -> drug words (eMAR medication or ICU item label) that,
#: given between the draws before and after the spike, could have made it real: a transfusion
#: raises a count that falls again, insulin brings a high glucose down and dextrose a low one
#: up. (Dextrose does not excuse a high glucose: a sample drawn from the line it runs in is the
#: classic contaminated one.)
_RBC = ("red blood cell", "packed", "prbc")
_STEROIDS = ("dexamethasone", "methylprednisolone", "prednisone", "hydrocortisone")
INTERVENTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("Hemoglobin", "low"): _RBC,
    ("Hemoglobin", "high"): _RBC,
    ("Hematocrit", "low"): _RBC,
    ("Hematocrit", "high"): _RBC,
    ("Platelet Count", "low"): ("platelet",),
    ("Platelet Count", "high"): ("platelet",),
    ("Glucose", "high"): ("insulin",),
    ("Glucose", "low"): ("dextrose", "glucagon", "d50", "insulin"),
    ("Potassium", "high"): (
        "insulin",
        "calcium",
        "polystyrene",
        "patiromer",
        "zirconium",
        "albuterol",
        "bicarbonate",
        "furosemide",
        "potassium",
    ),
    ("Potassium", "low"): ("potassium", "insulin", "albuterol"),
    ("Sodium", "low"): ("sodium chloride 3%", "hypertonic", "desmopressin"),
    ("Sodium", "high"): ("tolvaptan", "hypertonic", "desmopressin"),
    ("Magnesium", "low"): ("magnesium",),
    ("Calcium, Total", "low"): ("calcium",),
    ("Phosphate", "low"): ("phosph",),
    ("White Blood Cells", "low"): ("filgrastim", "hydroxyurea", *_STEROIDS),
    ("White Blood Cells", "high"): ("filgrastim", "hydroxyurea", *_STEROIDS),
}


class Point(Protocol):
    @property
    def time(self) -> dt.datetime: ...

    @property
    def value(self) -> float: ...


def _apart(value: float, other: float) -> float:
    """How far ``value`` is from ``other``, relative to the larger magnitude."""
    scale = max(abs(value), abs(other))
    return abs(value - other) / scale if scale else 0.0


def spikes(points: Sequence[Point]) -> list[tuple[int, str]]:
    """(index, 'high' | 'low') of each spike of a series, oldest first (module rules, before
    the check for a treatment)."""
    out = []
    for i in range(1, len(points) - 1):
        before, p, after = points[i - 1], points[i], points[i + 1]
        up, down = (
            p.value > max(before.value, after.value),
            p.value < min(before.value, after.value),
        )
        if not (up or down) or after.time - p.time > REVERT:
            continue
        if min(_apart(p.value, before.value), _apart(p.value, after.value)) < SPIKE:
            continue
        if abs(after.value - before.value) <= abs(p.value - before.value) / 2:
            out.append((i, "high" if up else "low"))
    return out


def stands_apart(points: Sequence[Point], when: dt.datetime) -> bool:
    """Whether the value drawn at ``when`` stands :data:`PANEL` apart from both neighbours in
    one direction (the panel rule)."""
    for i in range(1, len(points) - 1):
        if points[i].time != when:
            continue
        before, p, after = points[i - 1], points[i], points[i + 1]
        same_side = (p.value - before.value) * (p.value - after.value) > 0
        return (
            same_side and min(_apart(p.value, before.value), _apart(p.value, after.value)) >= PANEL
        )
    return False
