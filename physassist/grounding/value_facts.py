"""Values: a number with its unit (a lab, a vital, a dose, a rate, a score out of 10), or a
unit-less number right after the name of what it measures ("INR 1.2", "2 PUFF" of an inhaler).

Matched unit-aware (``physassist.units``: mg/dL and umol/L of creatinine, mEq/L and mmol/L of
potassium, K/uL and 10^9/L) and rounded the way a person rounds: "1.4" states 1.35 to 1.45,
so a record value of 1.37 grounds it and 1.46 does not; "about 180" states the tens. A
record value of the same thing (its name, ``labels.relation``) that differs contradicts it.

A daily dose ("1800 mg a day", "每日 1800 mg") is also grounded by a dose the record holds on a
line that gives its frequency ("Gabapentin 600 mg PO TID"), times that frequency's doses a day
(``physassist.vocab.FREQUENCIES``): derived from the record. Any other daily dose is judged as
any value (a wrong product is contradicted or unsupported).
"""

from __future__ import annotations

import re

from physassist.grounding.facts import Evidence, Fact, FactType, Line, Reading, Verdict
from physassist.grounding.labels import Label, relation
from physassist.grounding.text import decimals
from physassist.units import convert, find_quantities
from physassist.vocab import FREQUENCIES

NAME = "value"
_SCORE = re.compile(r"(?<![\d.])(?P<n>\d{1,2}(?:\.\d)?)\s*(?:/|out of)\s*10(?!\d|\.\d)")
_RANGE = re.compile(r"\s*(?:to|-|–|—|→|->|and|至|到|变为|变成|升至|降至)\s*")
_APPROX = re.compile(
    r"(?:about|approximately|approx\.?|around|roughly|~|≈|约|大约|左右)\s*$", re.IGNORECASE
)
_NUMBER = re.compile(r"[-−]?\d[\d,]*(?:\.\d+)?|[-−]?\.\d+")
_DIGIT = re.compile(r"\d")
#: A reference range ("[ref 0.5 mg/dL - 1.2 mg/dL]", "(normal 0.5-1.2)", "参考范围 0.5-1.2"): its
#: limits ground a value stated as a limit, but are no value of the thing measured.
_REFERENCE = re.compile(
    r"\[ref [^\]]*\]|\((?:ref|reference|normal)[^)]*\)|(?:参考范围|正常范围)[^，。；;]*",
    re.IGNORECASE,
)
REFERENCE = "reference"
DAILY = "daily"
#: What marks a stated dose as a day's total: after it ("a day", "per day", "/day", "daily"),
#: or before it in Chinese ("每日", "每天", "日剂量").
_DAILY_AFTER = re.compile(r"\s*(?:a\s+day|per\s+day|/\s*day|daily)\b", re.IGNORECASE)
_DAILY_BEFORE = re.compile(r"(?:每日|每天|日剂量|一天)(?:总量|共|为|是)?\s*$")
#: A frequency as an order line writes it -> its doses a day.
_PER_DAY = {
    spelling.lower(): n for n, (_, spellings) in FREQUENCIES.items() for spelling in spellings
}
_FREQUENCY = re.compile(
    r"(?<![\w])(?:"
    + "|".join(sorted(map(re.escape, _PER_DAY), key=len, reverse=True))
    + r")(?!\w)",
    re.IGNORECASE,
)
#: A clock time without its date ("从 16:15 的 189 变为 23:49 的 132"): its digits are no value.
_CLOCK = re.compile(r"(?<![\d.:])\d{1,2}:\d{2}(?![\d:])")
_ID_DIGITS = 5  # a unit-less whole number this long is an identifier, not a value


def _as_written(text: str) -> str:
    m = _NUMBER.match(text)
    return m.group(0).replace(",", "") if m else text


def _score_label(reading: Reading, start: int, end: int) -> Label:
    """A score out of 10 is about every name before it in its clause ("Pain in the right side
    of the chest: sharp, stabbing, 6/10" scores the pain, not only the chest), else as any
    value."""
    first, _ = reading.clauses.bounds(start, end)
    keys = [m.keys for m in reading.mentions if first <= m.start and m.end <= start]
    return frozenset().union(*keys) if keys else reading.label(start, end)


def extract(reading: Reading) -> list[Fact]:
    text = reading.text
    facts: list[Fact] = []
    if not _DIGIT.search(text):
        return facts
    for m in _SCORE.finditer(text):
        if reading.free(m.start(), m.end()):
            label = _score_label(reading, m.start(), m.end())
            facts.append(
                Fact(
                    NAME,
                    m.group(0),
                    m.start(),
                    m.end(),
                    float(m.group("n")),
                    "/10",
                    decimals(m.group("n")),
                    label,
                )
            )
    scores = [(f.start, f.end) for f in facts]
    found = [
        q for q in find_quantities(reading.masked()) if not any(a <= q.start < b for a, b in scores)
    ]
    units = [q.unit for q in found]
    for i in range(len(found) - 2, -1, -1):  # "1.3 to 1.8 mg/dL": the range's unit is both ends'
        if (
            units[i] is None
            and units[i + 1] is not None
            and _RANGE.fullmatch(text[found[i].end : found[i + 1].start])
        ):
            units[i] = units[i + 1]
    blockers = [(q.start, q.end) for q, unit in zip(found, units, strict=True) if unit is not None]
    references = [(m.start(), m.end()) for m in _REFERENCE.finditer(text)]
    clocks = [(m.start(), m.end()) for m in _CLOCK.finditer(text)]
    for q, unit in zip(found, units, strict=True):
        written = _as_written(text[q.start : q.end])
        if unit is None:
            if any(a <= q.start < b for a, b in clocks):
                continue
            if "." not in written and len(written.lstrip("-−")) >= _ID_DIGITS:
                continue
            label = reading.label(q.start, q.end, bare=True, blockers=blockers)
            if not label:
                continue
        else:
            label = reading.label(q.start, q.end)
        approx = bool(_APPROX.search(text[max(0, q.start - 16) : q.start]))
        reference = REFERENCE if any(a <= q.start < b for a, b in references) else None
        if reference is None and (
            _DAILY_AFTER.match(text, q.end)
            or _DAILY_BEFORE.search(text[max(0, q.start - 8) : q.start])
        ):
            reference = DAILY
        facts.append(
            Fact(
                NAME,
                text[q.start : q.end].strip(),
                q.start,
                q.end,
                q.value,
                unit,
                decimals(written),
                label,
                reference,
                approx,
            )
        )
    return facts


def _analyte(a: Fact, b: Fact) -> str | None:
    keys = sorted(a.label | b.label)
    return keys[0] if keys else None


def in_unit(record: Fact, stated: Fact) -> float | None:
    """The record's value in the stated unit (as is when either has none); None when the
    units do not convert."""
    if record.unit is None or stated.unit is None:
        return float(record.value)
    return convert(float(record.value), record.unit, stated.unit, _analyte(record, stated))


def _tolerance(fact: Fact) -> float:
    """Half a unit in the last place written; "about 180" (``approx``) is written to the tens."""
    places = fact.decimals
    if fact.approx and places == 0:
        whole = f"{abs(fact.value):.0f}"
        places = -(len(whole) - len(whole.rstrip("0")))
    return 0.5 * 10.0 ** (-places)


def rounds_to(value: float, fact: Fact) -> bool:
    """Whether ``value`` (in the fact's unit) written as the fact is written reads as it."""
    return abs(value - float(fact.value)) <= _tolerance(fact) + 1e-9 * max(
        1.0, abs(float(fact.value))
    )


def _per_day(line: Line | None) -> int | None:
    """The doses a day of the one frequency ``line`` gives, None without one or with two."""
    found = {_PER_DAY[m.group(0).lower()] for m in _FREQUENCY.finditer(line.text)} if line else ()
    return next(iter(found)) if len(found) == 1 else None


def _daily(fact: Fact, record: list[Fact]) -> Verdict | None:
    """A daily dose grounded by a record dose times its line's doses a day (see the module)."""
    for other in record:
        if other.unit is None or other.detail == REFERENCE:
            continue
        if fact.label and other.label and relation(fact.label, other.label) == "none":
            continue
        per_day = _per_day(other.line)
        value = in_unit(other, fact) if per_day else None
        if value is not None and per_day is not None and rounds_to(value * per_day, fact):
            return Verdict(fact, "grounded", other)
    return None


def match(fact: Fact, evidence: Evidence) -> Verdict:
    record = evidence.facts(NAME)
    if fact.detail == DAILY and (derived := _daily(fact, record)) is not None:
        return derived
    decisive: list[tuple[Fact, float]] = []
    for other in record:
        how = relation(fact.label, other.label)
        if how == "none":
            continue
        value = in_unit(other, fact)
        if value is None:
            continue
        if rounds_to(value, fact):
            return Verdict(fact, "grounded", other)
        if other.detail != REFERENCE and (
            how == "strong" or (fact.unit is not None and other.unit is not None)
        ):
            decisive.append((other, value))
    if decisive and not any(o.partial for o, _ in decisive):  # what a listing hides may hold it
        seen = tuple(dict.fromkeys(o.text for o, _ in decisive))
        return Verdict(fact, "contradicted", decisive[0][0], seen[:8])
    if fact.unit is not None:
        for other in record:
            if (other.label and fact.label) or other.unit is None:
                continue
            value = in_unit(other, fact)
            if value is not None and rounds_to(value, fact):
                return Verdict(fact, "grounded", other)
    return Verdict(fact, "unsupported")


FACT_TYPE = FactType(
    NAME,
    30,
    "a number with its unit (lab, vital, dose, rate, `n/10` score), or unit-less right after the "
    "name of what it measures (`INR 1.2`); grounded by a record value of the same thing in any "
    "convertible unit (`physassist.units`) that rounds to it as written; contradicted when the "
    "record holds only other values for that thing; a daily dose (`1800 mg a day`) is also "
    "grounded by a record dose times its order's doses a day (`600 mg PO TID`)",
    extract,
    match,
)
