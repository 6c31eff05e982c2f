"""Which way a lab moved over the admission, judged by one documented table (:data:`TRENDS`).

A change between two values is *clear*, *slight* or *none* (:class:`~.vocab.TrendRule`): a
slight move is one where a physician may fairly say "stable" or name the direction, so a
rubric accepts both. When the series turned (an interior peak or nadir clearly beyond the
latest value and beyond the first), the direction is the one since that turn and the turn is
the reference; the later turn wins when there are two. Otherwise the direction is last versus
first. Values the timeline marks suspect (artifacts) are left out before judging.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .vocab import TRENDS, TrendRule


class Point(Protocol):
    """A lab value with its time (comparable) and reference range: the tool's or the
    timeline's."""

    @property
    def value(self) -> float: ...

    @property
    def time(self) -> Any: ...

    @property
    def low(self) -> float | None: ...

    @property
    def high(self) -> float | None: ...


def change(
    a: float, b: float, rule: TrendRule, low: float | None = None, high: float | None = None
) -> str:
    """'clear', 'slight' or 'none' for a move from ``a`` to ``b`` (see :class:`TrendRule`);
    crossing a reference limit (``low`` / ``high``) is at least slight."""
    diff = abs(b - a)
    smaller = min(abs(a), abs(b))
    rel = diff / smaller if smaller > 0 else float("inf") if diff else 0.0
    if diff >= rule.delta or (rel >= rule.rel and diff >= rule.delta / 2):
        return "clear"
    crossed = any(lim is not None and (a - lim) * (b - lim) < 0 for lim in (low, high))
    if diff < rule.delta / 2 and rel < rule.rel and not crossed:
        return "none"
    return "slight"


def turned_back(base: Point, after: Sequence[Point], rule: TrendRule, recent: int = 3) -> bool:
    """Whether the last value moved back against the direction from ``base`` to it: beyond
    "none" (:func:`change`) from the extreme of the ``recent`` values before it (glucose 324
    before insulin, 78 a week later, then 148, 195, 239: "falling" end to end, rising now)."""
    if len(after) < 2:
        return False
    last, window = after[-1], after[-1 - recent : -1]
    if last.value == base.value:
        return False
    falling = last.value < base.value
    extreme = min(window, key=lambda p: p.value) if falling else max(window, key=lambda p: p.value)
    against = last.value > extreme.value if falling else last.value < extreme.value
    return against and change(extreme.value, last.value, rule, last.low, last.high) == "clear"


@dataclass(frozen=True)
class Trend:
    """A series' direction (rising | falling | stable), how big the move is (clear | slight |
    none), the reference point and what it is (first | peak | nadir of the admission)."""

    direction: str
    size: str
    ref: Any  # a Point
    anchor: str


def judge_trend(points: Sequence[Point], rule: TrendRule) -> Trend:
    """The trend of a series (oldest first, at least two values), see the module rules."""
    first, last = points[0], points[-1]
    peak = max(points, key=lambda p: p.value)
    nadir = min(points, key=lambda p: p.value)
    turns = []
    if (
        peak.value > max(first.value, last.value)
        and change(peak.value, last.value, rule) == "clear"
        and change(first.value, peak.value, rule) != "none"
    ):
        turns.append(Trend("falling", "clear", peak, "peak"))
    if (
        nadir.value < min(first.value, last.value)
        and change(nadir.value, last.value, rule) == "clear"
        and change(first.value, nadir.value, rule) != "none"
    ):
        turns.append(Trend("rising", "clear", nadir, "nadir"))
    if turns:
        return max(turns, key=lambda t: t.ref.time)
    size = change(first.value, last.value, rule, last.low, last.high)
    if size == "none":
        return Trend("stable", "none", first, "first")
    return Trend("rising" if last.value > first.value else "falling", size, first, "first")


def rule_of(label: str) -> TrendRule | None:
    return TRENDS.get(label)
