"""The record check: every fact a built turn states, re-derived from the store.

A turn's answer and rubric are rendered from the tool observations (:mod:`.answers`); this
check derives the same facts a second way, from the clinical timeline at the cutoff
(:mod:`physassist.timeline`, SQL over the store), and names the first disagreement. The
builder rejects a session with any disagreeing turn and counts it by reason, as the
paper's pipeline filters cases the record does not support.
"""

from __future__ import annotations

from physassist.timeline import LabSeries, Timeline

from .answers import Digest, organisms
from .facts import day, minute
from .response import baseline_and_last
from .trends import judge_trend
from .vocab import TRENDS

_NONE = LabSeries("", (), ())

#: Reasons a session is rejected, in the order they are checked.
REASONS = (
    "end_of_life",
    "order_not_current",
    "order_mismatch",
    "lab_latest",
    "artifact",
    "response",
    "trend",
    "admin_uncountable",
    "admin_count",
    "culture",
)


def _stamp(t: object) -> str:
    return str(t)[:16].replace("T", " ")


def _trend_agrees(d: Digest, tl: Timeline) -> bool:
    """The digest's trend is the trend table's on the timeline's values that are not suspect."""
    series, rule = tl.lab(d.series[-1].label), TRENDS.get(d.series[-1].label)
    if series is None or rule is None or len(series.confirmed) < 2:
        return False
    t = judge_trend(series.confirmed, rule)
    return (t.direction, t.size, t.anchor, t.ref.value, _stamp(t.ref.time)[:10]) == (
        d.trend,
        d.trend_size,
        d.anchor,
        d.series[0].value,
        d.series[0].day,
    )


def _response_agrees(d: Digest, tl: Timeline) -> bool:
    """The response's baseline and latest value are the timeline's: the last value not suspect
    before the first dose (eMAR or ICU), and the latest one."""
    given = tl.administrations(d.topic.drug or "").given
    series = tl.lab(d.series[-1].label)
    found = baseline_and_last(list(series.confirmed), given[0]) if given and series else None
    if found is None:
        return False
    base, last = found
    return (base.value, _stamp(base.time), last.value, _stamp(last.time)) == (
        d.series[0].value,
        d.series[0].time,
        d.series[1].value,
        d.series[1].time,
    )


def record_check(d: Digest, tl: Timeline) -> str | None:
    """The first reason the record does not support ``d`` (see :data:`REASONS`), else None."""
    if tl.end_of_life:
        return "end_of_life"
    word = d.topic.drug or ""
    if d.med is not None or d.topic.kind == "continue_med":
        order = tl.current_order(word)
        if order is None:
            return "order_not_current"
        if d.med is not None and (
            order.dose != d.med.dose
            or order.unit != d.med.unit
            or day(str(order.start)) != d.med.start
        ):
            return "order_mismatch"
        if d.write and d.write.get("dose") != f"{order.dose_text} {order.unit}":
            return "order_mismatch"
    for fact in d.labs:
        series = tl.lab(fact.label)
        if series is None or (series.latest.value, _stamp(series.latest.time)) != (
            fact.value,
            fact.time,
        ):
            return "lab_latest"
    if any(
        fact.time in {_stamp(t) for t in (tl.lab(fact.label) or _NONE).suspect}
        for fact in [*d.labs, *d.series]
    ):
        return "artifact"
    if d.series and d.anchor == "baseline" and not _response_agrees(d, tl):
        return "response"
    if d.series and d.anchor != "baseline" and not _trend_agrees(d, tl):
        return "trend"
    if d.admin_count:
        order = tl.current_order(word)
        admins = tl.order_administrations(order) if order is not None else None
        if admins is None or not admins.countable:
            return "admin_uncountable"
        if len(admins.given) != d.admin_count or minute(str(admins.given[-1])) != d.admin_last:
            return "admin_count"
        if (d.admin_missed, d.admin_expected) != (len(admins.not_given), admins.at_discharge):
            return "admin_count"
    if d.topic.kind == "culture_latest" and _culture_unsupported(d, tl):
        return "culture"
    return None


def _culture_unsupported(d: Digest, tl: Timeline) -> bool:
    """A culture answer states a specimen the timeline has no culture of at the cutoff, an
    organism not grown (reported) by then, a culture pending that was reported (or the other
    way round), or leads with anything but a significant organism the record has."""
    record = {(_stamp(c.time)[:16], " ".join(c.specimen.split())): c for c in tl.cultures}
    for r in d.reports:
        culture = record.get((minute(r.time), r.title))
        if culture is None:
            return True
        if set(organisms(r)) != set(culture.organisms):
            return True
        if {t.test for t in r.pending} != {t.name for t in culture.pending if t.culture}:
            return True
    significant = any(c.significant for c in tl.cultures)
    return significant != bool(d.reports[0].significant)
