"""Dates and times: a calendar day, with its clock time when one is written, in the formats
the tools print (``2157-07-02 05:36``, ``2157-07-02T05:36:00+00:00``, ``2157-07-02``) and the
ones people write (``2157/07/02``, ``2157年7月2日``, ``July 2, 2157``).

Grounded when a text the assistant received holds the same day (and the same minute, when
the answer gives one); contradicted when it does not, and the record's lines about the same
thing (the lab, the drug, the culture named in the answer's clause) hold other days.
"""

from __future__ import annotations

import re

from physassist.grounding.facts import Evidence, Fact, FactType, Reading, Verdict
from physassist.grounding.labels import relation
from physassist.grounding.text import find_dates

NAME = "date"
_TODAY = re.compile(r"current[ _]date:\s*(\d{4}-\d{2}-\d{2})", re.IGNORECASE)


def extract(reading: Reading) -> list[Fact]:
    text = reading.text
    return [
        Fact(
            NAME,
            text[d.start : d.end],
            d.start,
            d.end,
            d.day + (f" {d.time}" if d.time else ""),
            label=reading.label(d.start, d.end),
        )
        for d in find_dates(text)
    ]


def _parts(value: object) -> tuple[str, str]:
    day, _, time = str(value).partition(" ")
    return day, time


def _holds(record: Fact, fact: Fact) -> bool:
    """The record's date is the fact's day, and its minute when the fact gives one."""
    (day, time), (other_day, other_time) = _parts(fact.value), _parts(record.value)
    return day == other_day and (not time or time == other_time)


def _agrees(record: Fact, fact: Fact) -> bool:
    """The record's date does not say otherwise: the same day, at the same minute or at one of
    them unwritten (a rendering without times, ``ehr.render=compat``)."""
    (day, time), (other_day, other_time) = _parts(fact.value), _parts(record.value)
    return day == other_day and (not time or not other_time or time == other_time)


def today(evidence: Evidence) -> str | None:
    """The session's current date, from its opening message (``current_date: 2169-04-24``)."""
    for source in evidence.sources:
        if source.kind == "opening" and (m := _TODAY.search(source.text)):
            return m.group(1)
    return None


def match(fact: Fact, evidence: Evidence) -> Verdict:
    """Grounded by the same day (and minute) anywhere; contradicted when the record's dates of
    the same thing all say another day (or minute); else unsupported. A date after the
    session's current date is a plan (an order "for tomorrow"): the record, which ends that
    day, cannot contradict it; nor can a listing that shows only some of its entries."""
    record = evidence.facts(NAME)
    for other in record:
        if _holds(other, fact):
            return Verdict(fact, "grounded", other)
    current = evidence.memo("today", lambda: today(evidence))
    related = [o for o in record if relation(fact.label, o.label) != "none"]
    if current is not None and _parts(fact.value)[0] > current:
        related = []
    if related and not any(_agrees(o, fact) or o.partial for o in related):
        seen = tuple(dict.fromkeys(str(o.value) for o in related))
        return Verdict(fact, "contradicted", related[0], seen[:8])
    return Verdict(fact, "unsupported")


FACT_TYPE = FactType(
    NAME,
    10,
    "a calendar date, with its time when written (`2157-07-02 05:36`, `2157/07/02`, `2157年7月2日`, "
    "`July 2, 2157`); grounded by the same day (and minute) in any text received; contradicted "
    "when the record's lines about the same thing hold only other dates",
    extract,
    match,
)
