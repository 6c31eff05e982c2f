"""Which way a lab moved over the admission, judged by one documented table (:data:`TRENDS`).

A change between two values is *clear*, *slight* or *none* (:class:`~.vocab.TrendRule`): a
slight move is one where a physician may fairly say "stable" or name the direction, so a
rubric accepts both. When the series turned (an interior peak or nadir clearly beyond the
latest value and beyond the first), the direction is the one since that turn and the turn is
the reference; the later turn wins when there are two. Otherwise the direction is last versus
first. Values the timeline marks suspect (artifacts) are left out before judging.

Three shapes are not read from two points alone (a physician reviewing a build rejected
them): a course that rose after its nadir (a transfusion) and then levelled off is a
*plateau*, not "rising" (:data:`~.vocab.PLATEAU_DRAWS`); a bump that is coming back (a
post-operative creatinine 1.4 -> 1.5 -> 1.3) is a slight move from that peak, not "stable";
and a course whose last days (:data:`~.vocab.RECENT_COURSE_HOURS`) move against its overall
direction has *turned*: both directions are fair words and neither is a clear response.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .vocab import PLATEAU_DRAWS, RECENT_COURSE_HOURS, TRENDS, TrendRule


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
    none), the reference point and what it is (first | peak | nadir of the admission), and its
    shape: "" (a plain move), "plateau" (levelled off after the turn) or "turned" (the last
    days move against the direction); see the module rules."""

    direction: str
    size: str
    ref: Any  # a Point
    anchor: str
    shape: str = ""


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
        turn = max(turns, key=lambda t: t.ref.time)
        since = [p for p in points if p.time > turn.ref.time]
        if plateaued(since, turn.direction, rule):
            return Trend(turn.direction, "slight", turn.ref, turn.anchor, "plateau")
        return _turned(points, turn, rule)
    size = change(first.value, last.value, rule, last.low, last.high)
    if size != "clear":
        bump = _bump(points, rule)
        if bump is not None:
            return bump
    if size == "none":
        return Trend("stable", "none", first, "first")
    return _turned(
        points,
        Trend("rising" if last.value > first.value else "falling", size, first, "first"),
        rule,
    )


def plateaued(since: Sequence[Point], direction: str, rule: TrendRule) -> bool:
    """The move since a turn has levelled off: its furthest value came before the last one, and
    the last :data:`~.vocab.PLATEAU_DRAWS` values lie within no clear move of each other (Hgb
    8.1, 4 units of red cells, 10.1, 9.5, 9.6: a plateau after transfusion, not "rising")."""
    if len(since) < PLATEAU_DRAWS:
        return False
    far = max if direction == "rising" else min
    tail = [p.value for p in since[-PLATEAU_DRAWS:]]
    return (
        far(since, key=lambda p: p.value) is not since[-1]
        and change(min(tail), max(tail), rule) != "clear"
    )


def _bump(points: Sequence[Point], rule: TrendRule) -> Trend | None:
    """An interior peak (or nadir) beyond both ends, reached by more than "none" from the
    lowest (highest) value before it and coming back from it by more than "none": a slight
    move from it (creatinine 1.4, 1.2, then 1.5 on the second post-operative day, 1.3 now:
    "peaked and improving", not "stable"); the later one when both."""
    first, last = points[0], points[-1]
    found = []
    for pick, direction, anchor in ((max, "falling", "peak"), (min, "rising", "nadir")):
        at = points.index(pick(points, key=lambda p: p.value))
        ext, before = points[at], points[:at]
        if not before or pick(first.value, last.value, ext.value) != ext.value:
            continue
        start = (min if anchor == "peak" else max)(p.value for p in before)
        if (
            ext.value not in (first.value, last.value)
            and change(start, ext.value, rule) != "none"
            and change(ext.value, last.value, rule) != "none"
        ):
            found.append(Trend(direction, "slight", ext, anchor))
    return max(found, key=lambda t: t.ref.time) if found else None


def recent_turn(points: Sequence[Point], direction: str, rule: TrendRule) -> bool:
    """The values of the last :data:`~.vocab.RECENT_COURSE_HOURS` before the latest move against
    ``direction`` by more than "none" (WBC 15.0 before vancomycin, 11.3, 11.4, 12.7 over the
    last 2 days: falling overall, rising now)."""
    if direction == "stable" or len(points) < 2:
        return False
    last = points[-1]
    window = [p for p in points[:-1] if _hours(last.time, p.time) <= RECENT_COURSE_HOURS]
    if not window:
        return False
    if direction == "falling":
        low = min(window, key=lambda p: p.value)
        return last.value > low.value and change(low.value, last.value, rule) != "none"
    high = max(window, key=lambda p: p.value)
    return last.value < high.value and change(high.value, last.value, rule) != "none"


def normalised(base: Point, last: Point) -> bool:
    """Whether a marker off its reference range at ``base`` is back inside it at ``last``: a
    response a physician reads from the range itself, so later moves inside the range (a
    wobble of normal values) do not make it unclear."""

    def inside(p: Point) -> bool:
        return (p.low is None or p.value >= p.low) and (p.high is None or p.value <= p.high)

    has_range = last.low is not None or last.high is not None
    return has_range and not inside(base) and inside(last)


def _hours(a: Any, b: Any) -> float:
    """Hours from ``b`` to ``a`` (datetimes, or ISO texts as the tools write them)."""
    at = [x if not isinstance(x, str) else dt.datetime.fromisoformat(x[:19]) for x in (a, b)]
    return (at[0] - at[1]).total_seconds() / 3600


def _turned(points: Sequence[Point], trend: Trend, rule: TrendRule) -> Trend:
    """``trend``, marked turned (and no more than slight) when its last days move against it."""
    since = [p for p in points if p.time >= trend.ref.time]
    if not recent_turn(since, trend.direction, rule):
        return trend
    return Trend(trend.direction, "slight", trend.ref, trend.anchor, "turned")


def rule_of(label: str) -> TrendRule | None:
    return TRENDS.get(label)
