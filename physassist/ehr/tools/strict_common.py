"""Shared pieces of the strict tools: admission checks, searchset building and value helpers
(the time window and the store access are ``chart``'s)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from . import fhir
from .labels import LabelMatch
from .records import Row, by, order, stamp
from .reported import Stay

if TYPE_CHECKING:  # the chart is handed in: its methods are called, never imported
    from .chart import Chart, Window

#: What ``admission_miss`` reads: every tool that calls it declares it among its reads.
ADMISSIONS_CHECKED: dict[str, tuple[str, ...]] = {"admissions": ("hadm_id", "admittime")}


def stay_of(found: list[Stay], hadm: int | None) -> Stay | None:
    return next((s for s in found if s.hadm_id == hadm), None)


#: What ``Chart.stays`` reads.
STAYS_READ: dict[str, tuple[str, ...]] = {
    "admissions": ("hadm_id", "admittime", "dischtime", "edregtime")
}


# ----------------------------------------------------------------------------- shared helpers


def bundle(
    resources: list[dict[str, Any]], total: int | None = None, hint: str | None = None
) -> dict[str, Any]:
    return fhir.strict_bundle(
        [fhir.clean(r) for r in resources], len(resources) if total is None else total, hint
    )


def admission_miss(
    chart: Chart, sid: int, hadm: int | None, window: Window
) -> dict[str, Any] | None:
    """An unknown (or not yet started) admission gives an empty searchset listing the real ones;
    ``None`` when no admission was asked for or it is known, so the search goes on."""
    if hadm is None:
        return None
    admissions: Sequence[Row] = chart.subject_rows("admissions", sid)
    if window.cutoff is not None:
        admissions = [
            a for a in admissions if (t := stamp(a["admittime"])) is not None and t <= window.cutoff
        ]
    ids = [a["hadm_id"] for a in order(admissions, by("admittime"))]
    if hadm in ids:
        return None
    listed = ", ".join(str(i) for i in ids) or "none"
    return bundle(
        [],
        0,
        f"Admission hadm_id {hadm} is not one of this patient's admissions (known: {listed}).",
    )


def miss_hint(kind: str, query: str, match: LabelMatch) -> str:
    closest = ", ".join(f"'{c}'" for c in match.closest) or "none"
    return (
        f"No {kind} named '{query}' for this patient (no exact, synonym or close match). "
        f"Closest {kind} labels this patient has: {closest}."
    )


def interpretation(
    value: float | None, low: float | None, high: float | None, flag: Any
) -> list[dict[str, Any]] | None:
    code = None
    if value is not None and high is not None and value > high:
        code, display = "H", "High"
    elif value is not None and low is not None and value < low:
        code, display = "L", "Low"
    elif flag in ("abnormal", "delta"):
        code, display = "A", "Abnormal"
    if code is None:
        return None
    return [{"coding": [{"system": fhir.INTERPRETATION, "code": code, "display": display}]}]


def quantity(value: float | None, unit: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"value": value, "unit": str(unit) if unit not in (None, "") else None}
