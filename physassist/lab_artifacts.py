"""Lab values that are likely artifacts, so no answer cites them as a peak, a nadir or a trend.

A **spike** is a value at least :data:`SPIKE` away (relative to the larger of the two) from the
draws before and after it, in the same direction, whose next draw comes within :data:`REVERT`
and returns to within half the jump of the draw before: a haemoglobin of 3.3 between 8.1 and
7.8 two and a half hours later, a glucose of 942 between 83 and 178 (a sample drawn from a
line running dextrose). No real change comes and goes that fast without a treatment, so a
spike with one of its :data:`INTERVENTIONS` (a transfusion, insulin) given between the draws
before and after it is not one.
When :data:`PANEL_SPIKES` analytes of one draw spike, one at least with no treatment to explain
it, a value of that draw is suspect where it breaks from both of its own neighbours by
:data:`PANEL` in the direction a bad draw predicts and the next draw reverses it (the glucose
of 942 came with a bicarbonate of 46 and a potassium of 2.3): a physiologically discordant
panel, which a dose of insulin that day does not explain. A bad draw dilutes every analyte (a
value falls) and raises only :data:`RAISED_BY_BAD_DRAW` (what a line's fluid carries; the
platelets of an unmixed tube), so a high urea in that draw is not its doing. The panel condemns
the draw, not each of its values: a value that the rest of its series also reaches (a urea
nitrogen of 8 in a course of 16, 14, 10, 8, 11, 9, 8, 8) is consistent with the patient's
course and is never called spurious (:func:`within_course`), nor is an own spike that is.
A **procedural** draw (:func:`procedural`) is one an operation took before a direct
admission's recorded start, unlike the stay's own values.
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
#: Panel analytes a bad draw can raise: what an infusion running in the line carries into the
#: sample (dextrose, sodium chloride, sodium bicarbonate, potassium / calcium / magnesium /
#: phosphate replacement), and the platelet count of an unmixed tube sampled from its upper,
#: platelet-rich layer, which reads the red cells low (the haemoglobin of 3.3 with platelets of
#: 462). A bad draw can only lower any other analyte (dilution).
RAISED_BY_BAD_DRAW: frozenset[str] = frozenset(
    {
        "Glucose",
        "Sodium",
        "Chloride",
        "Bicarbonate",
        "Potassium",
        "Calcium, Total",
        "Magnesium",
        "Phosphate",
        "Platelet Count",
    }
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


def within_course(points: Sequence[Point], i: int) -> bool:
    """Whether value ``i`` lies within the range of the series' other values: a value the
    patient's course also reaches elsewhere is consistent with it, not an artifact."""
    others = [p.value for j, p in enumerate(points) if j != i]
    return bool(others) and min(others) <= points[i].value <= max(others)


def procedural(
    points: Sequence[Point], admitted: dt.datetime, ed_registered: bool
) -> list[dt.datetime]:
    """Chart times of the values a procedure drew before the stay began: on the day of a
    direct admission (no emergency-department registration), drawn before its admission time
    and outside the range of the values drawn after it. Such a draw is the operating room's (an
    elective cardiac surgery's haemoglobin of 10.3 drawn on bypass at 09:59, admitted 10:15,
    then 13.0, 13.1, 12.7 after the operation): haemodilution of the pump circuit, not the
    patient's course, so it is never a trend's start, a peak or a nadir. A draw days before (a
    pre-operative clinic's) and the emergency department's draws are the patient's own."""
    if ed_registered:
        return []
    after = [p.value for p in points if p.time >= admitted]
    if not after:
        return []
    return [
        p.time
        for p in points
        if p.time.date() == admitted.date()
        and p.time < admitted
        and not min(after) <= p.value <= max(after)
    ]


def stands_apart(points: Sequence[Point], when: dt.datetime, label: str = "") -> bool:
    """Whether the value drawn at ``when`` breaks from both neighbours by :data:`PANEL` in the
    direction a bad draw predicts for ``label`` (down, or up for one of
    :data:`RAISED_BY_BAD_DRAW`), is reversed by a next draw within :data:`REVERT` (back at
    least half way to the draw before) and lies outside the rest of its course (the panel
    rule)."""
    for i in range(1, len(points) - 1):
        if points[i].time != when:
            continue
        before, p, after = points[i - 1], points[i], points[i + 1]
        up = p.value > max(before.value, after.value)
        down = p.value < min(before.value, after.value)
        return (
            (down or (up and label in RAISED_BY_BAD_DRAW))
            and min(_apart(p.value, before.value), _apart(p.value, after.value)) >= PANEL
            and after.time - p.time <= REVERT
            and abs(after.value - before.value) <= abs(p.value - before.value) / 2
            and not within_course(points, i)
        )
    return False
