"""Counts: how many of something ("3 of 4 doses", "given: 8", "8 administrations charted",
"共记录 9 次给药", "about 4 blocks", "two weeks ago").

A dose count is grounded by the medication-administration results the assistant retrieved
(how many it charted, how many were given, how many not: ``derive``, from the raw results, with
``physassist.timeline.dose_event`` reading each event; of the doses that count toward an order
when its sentence names the order's start, "since <date>", "自 <date> 起", as the builder counts
them) and contradicted when such results were retrieved and none of their counts is the stated
one. Any other count (days, weeks,
blocks, packs) is grounded by the same number of the same thing in a text received (the
patient's "about two weeks ago" grounds "2 weeks"), else unsupported.
"""

from __future__ import annotations

import re
from dataclasses import replace

from physassist.grounding.facts import Evidence, Fact, FactType, Line, Reading, Source, Verdict
from physassist.grounding.fhir import administrations
from physassist.grounding.text import find_dates, find_number_words

NAME = "count"
DOSE = "dose"

#: Count nouns (EN and ZH) -> the thing counted.
_NOUNS: dict[str, str] = {
    r"doses?|administrations?|次给药|剂": DOSE,
    r"times|次": "time",
    r"days?|天": "day",
    r"weeks?|周|个?星期": "week",
    r"months?|个月": "month",
    r"years?|年": "year",
    r"hours?|hrs?|个?小时": "hour",
    r"minutes?|mins?|分钟": "minute",
    r"blocks?|个?街区": "block",
    r"packs?|包": "pack",
    r"drinks?|杯": "drink",
    r"flights?(?:\s+of\s+stairs)?|层楼": "flight",
    r"results?|result\(s\)|条结果": "result",
    r"episodes?": "episode",
    r"cultures?": "culture",
    r"falls?|次摔倒": "fall",
}
_NOUN = "|".join(f"(?P<n{i}>{pattern})" for i, pattern in enumerate(_NOUNS))
_FAMILY = list(_NOUNS.values())
_WORDS = r"zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty"
_N = rf"(?:\d+|{_WORDS}|[一二两三四五六七八九十]+)"
_ADJ = r"(?:charted|scheduled|ordered|recorded|missed|consecutive|more|total|separate|prior|previous|documented|given)"
# Read from the lower-cased text (``Reading.lower``), each at a number ("3", "two", "两").
# "最后一次", "上一次", "每一次", "第一次": the last, previous, every, first time, no count.
_NUMBER_AT = re.compile(
    rf"(?<![\d.:/a-z-])(?:\d+|\b(?:{_WORDS}|once|twice)\b|(?<!最后)(?<![上下每这那第])[一二两三四五六七八九十]+)"
)
_OF = re.compile(
    rf"(?P<a>{_N})\s+(?:out\s+)?of\s+(?:(?:the|his|her|their)\s+)?(?P<b>{_N})\s+(?:{_ADJ}\s+)?(?:{_NOUN})(?![a-z])"
)
_COUNT = re.compile(rf"(?P<a>{_N})\s*(?:{_ADJ}\s+)?(?:{_NOUN})(?![a-z])")
_MISSED = re.compile(
    rf"(?P<a>{_N})\s+(?:doses?\s+)?(?:were\s+)?(?:missed|not\s+given|held|refused)\b"
)
_MARKERS = ("given", "held", "missed", "refused", "未给", "已给", "漏给", "漏服")
_MARKED = re.compile(
    r"(?P<m>not\s+given|given|held|missed|refused|未给|已给|漏给|漏服)\s*(?:（[^）]{0,20}）|\([^)]{0,20}\))?\s*[:：=]\s*"
    rf"(?P<a>{_N})(?!\d|\.\d)"
)
_FELL = re.compile(rf"\b(?:fell|fallen|falls?)\s+(?P<a>once|twice|{_N}\s+times)\b")
_DOSE_WORDS = re.compile(r"given|administered|dose|给药|给了|用药")
#: Which dose count (``Fact.unit`` of a dose count): the ones charted, given, or not given.
CHARTED, GIVEN, NOT_GIVEN = "charted", "given", "not given"
_NOT_GIVEN = re.compile(r"not\s+given|missed|held|refused|未给|漏给|漏服")
_GIVEN_AFTER = re.compile(r"\s*(?:were\s+|was\s+|have\s+been\s+)?(?:given|administered|received)\b")
_NOT_GIVEN_AFTER = re.compile(r"\s*(?:were\s+|was\s+)?(?:missed|not\s+given|held|refused)\b")
_CHARTED_AFTER = re.compile(r"\s*(?:were\s+)?(?:charted|recorded|documented)\b")
# "ordered since 2189-06-11 00:00; of the 5 doses charted since then", "自 2189-06-11 00:00 起"
_SINCE = re.compile(r"(?:since|自)\s*$")
_SENTENCE_END = re.compile(r"[.!?。！？](?:\s|$)|\n")


def _role(m: re.Match[str], lower: str, group: str) -> str | None:
    """Which dose count a count of doses is, from the words around it."""
    if group == "b":
        return CHARTED
    tail = lower[m.end() : m.end() + 24]
    if _NOT_GIVEN_AFTER.match(tail) or re.search(r"\bmissed\b", m.group(0)):
        return NOT_GIVEN
    if _CHARTED_AFTER.match(tail) or re.search(r"\b(?:charted|recorded|documented)\b", m.group(0)):
        return CHARTED
    if "共记录" in lower[max(0, m.start() - 6) : m.start()]:
        return CHARTED
    if _GIVEN_AFTER.match(tail) or re.search(
        r"given|administered", lower[max(0, m.start() - 24) : m.start()]
    ):
        return GIVEN
    return None


_ONCE = {"once": 1.0, "twice": 2.0}


def _value(word: str) -> float | None:
    word = word.lower().removesuffix(" times").strip()
    if word in _ONCE:
        return _ONCE[word]
    if word.isdigit():
        return float(word)
    found = find_number_words(word)
    return (
        float(found[0][2]) if len(found) == 1 and found[0][1] - found[0][0] == len(word) else None
    )


def _family(m: re.Match[str], text: str) -> str:
    family = next(_FAMILY[i] for i in range(len(_FAMILY)) if m.group(f"n{i}") is not None)
    if family == "time" and _DOSE_WORDS.search(text[max(0, m.start() - 40) : m.start()]):
        return DOSE  # "given 6 times", "给药 6 次"
    return family


def extract(reading: Reading) -> list[Fact]:
    text, lower = reading.text, reading.lower
    out: list[Fact] = []

    def add(m: re.Match[str], group: str, family: str, role: str | None = None) -> None:
        value = _value(m.group(group))
        start, end = m.start(group), m.end(group)
        if (
            value is not None
            and reading.free(start, end)
            and not any(f.start < end and start < f.end for f in out)
        ):
            if family == DOSE and role is None:
                role = _role(m, lower, group)
            out.append(
                Fact(
                    NAME, text[m.start() : m.end()].strip(), start, end, value, role, detail=family
                )
            )

    if any(marker in lower for marker in _MARKERS):
        for m in _MARKED.finditer(lower):
            add(m, "a", DOSE, NOT_GIVEN if _NOT_GIVEN.fullmatch(m.group("m")) else GIVEN)
    if "fell" in lower or "fall" in lower:
        for m in _FELL.finditer(lower):
            add(m, "a", "fall")
    for number in _NUMBER_AT.finditer(lower):
        at = number.start()
        if of := _OF.match(lower, at):
            family = _family(of, lower)
            add(of, "a", family)
            add(of, "b", family)
        elif missed := _MISSED.match(lower, at):
            add(missed, "a", DOSE, NOT_GIVEN)
        elif count := _COUNT.match(lower, at):
            add(count, "a", _family(count, lower))
    if ("since" in lower or "自" in lower) and any(f.detail == DOSE for f in out):
        out = _windowed(out, text, lower)
    return sorted(out, key=lambda f: f.start)


def _windowed(facts: list[Fact], text: str, lower: str) -> list[Fact]:
    """Each dose count with the start of the window it counts in, from its sentence: the date
    of the last "since <date>" before it ("ordered since <date>; of the 5 doses charted since
    then"), else of the first after it ("5 doses of this order given since <date>")."""
    windows = [
        (d.start, d.end, f"{d.day} {d.time}" if d.time else d.day)
        for d in find_dates(text)
        if _SINCE.search(lower[max(0, d.start - 8) : d.start])
    ]
    out = []
    for fact in facts:
        before = [
            day
            for _, end, day in windows
            if end <= fact.start and not _SENTENCE_END.search(text, end, fact.start)
        ]
        after = [
            day
            for start, _, day in windows
            if start >= fact.end and not _SENTENCE_END.search(text, fact.end, start)
        ]
        since = before[-1:] or after[:1]
        out.append(replace(fact, since=since[0]) if since and fact.detail == DOSE else fact)
    return out


def derive(source: Source, since: str | None = None) -> list[Fact]:
    """How many doses a medication-administration result charted, gave and did not give (of
    those that count toward an order starting at ``since``, with ``since``)."""
    if source.kind != "tool" or (
        isinstance(source.raw, str) and '"MedicationAdministration"' not in source.raw
    ):
        return []
    counted = administrations(source.result, since)
    if counted is None:
        return []
    charted, given, not_given = counted
    window = f" since {since}" if since else ""
    line = Line(source, 0, f"{charted} charted, {given} given, {not_given} not given{window}")
    return [
        Fact(NAME, role, 0, 0, float(n), role, detail=DOSE, line=line, since=since)
        for role, n in ((CHARTED, charted), (GIVEN, given), (NOT_GIVEN, not_given))
    ]


def match(fact: Fact, evidence: Evidence) -> Verdict:
    """A count of doses against the counts the administration results imply (the same one:
    given, not given or charted, when the answer says which; of the doses charted since the
    date it counts from, when it says one), else against a count of the same thing a text
    states."""
    if fact.since is not None:
        since = fact.since
        windowed = evidence.memo(
            f"{NAME} since {since}", lambda: [o for s in evidence.sources for o in derive(s, since)]
        )
        if windowed:
            return _against(fact, [o for o in windowed if not fact.unit or o.unit == fact.unit])
    same = [
        o
        for o in evidence.facts(NAME)
        if o.detail == fact.detail and (not fact.unit or not o.unit or o.unit == fact.unit)
    ]
    return _against(fact, same)


def _against(fact: Fact, same: list[Fact]) -> Verdict:
    for other in same:
        if other.value == fact.value:
            return Verdict(fact, "grounded", other)
    derived = [o for o in same if o.line is not None and o.line.number == 0]
    if derived:
        seen = tuple(dict.fromkeys(f"{o.value:g} {o.unit}" for o in derived))
        return Verdict(fact, "contradicted", derived[0], seen[:8])
    return Verdict(fact, "unsupported")


FACT_TYPE = FactType(
    NAME,
    20,
    "a count (`3 of 4 doses`, `given: 8`, `8 administrations`, `共记录 9 次给药`, `4 blocks`, `two "
    "weeks`); "
    "a dose count is grounded by what the medication-administration results retrieved charted, "
    "gave or did not give (from the order's start its sentence names, `since <date>`, "
    "`自 <date> 起`; contradicted when they hold other counts), any other by the same number of "
    "the same thing in a text received",
    extract,
    match,
    derive,
)
