"""What a fact is about: names found in text, each resolved to concept keys.

A stated number is a fact about the thing named next to it ("creatinine 1.8", "40 mg of
furosemide"). ``Names`` holds every name it knows (``names.CONCEPTS`` and the names the tool
results carry: a lab's or a drug's name as the record prints it), finds them in a text
(``mentions``) and ``attribute`` gives a fact the thing its clause names. Two labels are the
same thing (``relation``) when they share a concept key (``strong``), or when one's words are
all among the other's (``weak``: "blood pressure" and "Non Invasive Blood Pressure systolic").
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from physassist.grounding.names import CONCEPTS
from physassist.grounding.text import CJK, Clauses, lowered, trie_pattern

__all__ = ["Label", "Mention", "Mentions", "Names", "Relation", "attribute", "relation"]

#: A fact's label: the concept keys of the thing it is about (empty: not known).
Label = frozenset[str]
Relation = Literal["strong", "weak", "none"]

_WORD = re.compile(r"[a-z0-9]+|[\u3400-\u9fff]+")
#: Right after a number (not a clock time or a date's day): where a unit is written.
_UNIT_PLACE = re.compile(r"(?:^|[^\d:.\-/])\d+(?:\.\d+)?\s*$")
#: A short Latin name ("K", "Cr", "INR") is matched as written in upper or title case only:
#: lower-case "k", "pt" or "mg" are words and units, not analytes.
_SHORT = 3


def _norm(name: str) -> str:
    return " ".join(name.lower().split())


@lru_cache(maxsize=4096)
def _words(key: str) -> frozenset[str]:
    return frozenset(_WORD.findall(key))


@dataclass(frozen=True)
class Mention:
    """A name found in a text, with the concept keys it stands for."""

    start: int
    end: int
    keys: Label


def _add(table: dict[str, set[str]], name: str, key: str) -> None:
    norm = _norm(name)
    if norm and re.search(r"[a-z\u3400-\u9fff]", norm):
        table.setdefault(norm, set()).add(key)


@dataclass(frozen=True)
class _Patterns:
    """Names as two expressions: longer ones over the lower-cased text (any case, any
    spacing of their words: the trie keeps one space, tool results print one), short Latin
    ones (``_SHORT``) over the text as written, in upper or title case."""

    long: re.Pattern[str]
    short: re.Pattern[str]

    @classmethod
    @lru_cache(maxsize=64)
    def of(cls, names: frozenset[str]) -> _Patterns:
        short = [
            form
            for n in names
            if len(n) <= _SHORT and not CJK.search(n)
            for form in {n.upper(), n.title()}
        ]
        long = [n for n in names if len(n) > _SHORT or CJK.search(n)]
        edge = r"(?<![A-Za-z0-9]){}(?![A-Za-z0-9])"
        return cls(
            re.compile(edge.format(f"(?:{trie_pattern(long)})")),
            re.compile(edge.format(f"(?:{trie_pattern(short)})")),
        )

    def find(self, text: str, lower: str) -> list[re.Match[str]]:
        return [*self.long.finditer(lower), *self.short.finditer(text)]


_CONCEPT_KEYS: dict[str, set[str]] = {}
for _key, _aliases in CONCEPTS.items():
    for _name in (_key, *_aliases):
        _add(_CONCEPT_KEYS, _name, _key)
#: Compiled once per process; the names a session's record teaches get their own.
_CONCEPT_PATTERNS = _Patterns.of(frozenset(_CONCEPT_KEYS))


class Mentions(tuple[Mention, ...]):
    """The mentions of one text, in order (they never overlap), with their ends and starts
    for ``attribute``'s look-ups."""

    ends: list[int]
    starts: list[int]

    def __new__(cls, found: Iterable[Mention]) -> Mentions:
        self = super().__new__(cls, found)
        self.ends = [m.end for m in self]
        self.starts = [m.start for m in self]
        return self


class Names:
    """Every name known for the things facts are about, each to its concept keys:
    ``names.CONCEPTS`` and what the record taught (``learn``)."""

    def __init__(self) -> None:
        self._learnt: dict[str, set[str]] = {}
        self._patterns: _Patterns | None = None

    def keys(self, name: str) -> frozenset[str]:
        norm = _norm(name)
        return frozenset(self._learnt.get(norm, set()) | _CONCEPT_KEYS.get(norm, set()))

    def key_of(self, name: str) -> str:
        """The concept key of a name: the one it is known by, else the name itself."""
        known = self.keys(name)
        return min(known) if len(known) == 1 else _norm(name)

    def learn(self, name: str, *, drug: bool = False) -> None:
        """A name the record prints ("Alanine Aminotransferase (ALT)", "Metoprolol Succinate
        XL"): itself, the words before a bracket and the bracketed abbreviation, and a drug's
        first word ("metoprolol"), all for one key."""
        name = " ".join(name.split())
        if not name or len(name) > 80:
            return
        key = self.key_of(name)
        head, _, rest = name.partition(" (")
        if rest and key == _norm(name):
            key = self.key_of(head)
        found = [name]
        if rest:
            found += [head, rest.rstrip(")")]
        first = name.split()[0]
        if drug and len(first) >= 4 and first.isalpha() and first.lower() != name.lower():
            found.append(first)
        for one in found:
            if key not in self._learnt.get(_norm(one), set()):
                _add(self._learnt, one, key)
                self._patterns = None

    def mentions(self, text: str, lower: str | None = None) -> Mentions:
        """The names in ``text`` (``lower``: its ``text.lowered``), the longest where two
        overlap; a name written right after a number is its unit ("40 mg", "223 K/uL"), not a
        mention."""
        if self._patterns is None:
            self._patterns = _Patterns.of(
                frozenset(n for n in self._learnt if n not in _CONCEPT_KEYS)
            )
        lower = lowered(text) if lower is None else lower
        found = [*_CONCEPT_PATTERNS.find(text, lower), *self._patterns.find(text, lower)]
        found.sort(key=lambda m: (m.start(), -m.end()))
        out: list[Mention] = []
        for m in found:
            if out and m.start() < out[-1].end:
                continue
            if _UNIT_PLACE.search(text, max(0, m.start() - 16), m.start()):
                continue
            keys = self.keys(text[m.start() : m.end()])
            if keys:
                out.append(Mention(m.start(), m.end(), keys))
        return Mentions(out)


#: What may stand between a name and its unit-less number ("INR 1.2", "INR(PT): 1", "INR is
#: 1.2", "INR went from 1.3 to 1.2", "国际标准化比值（INR(PT)）从 1 变为 1").
_BARE_GAP = 40
_AFTER_GAP = re.compile(r"\s*(?:of\s+)?")


def attribute(
    text: str,
    clauses: Clauses,
    mentions: Mentions,
    start: int,
    end: int,
    *,
    bare: bool = False,
    blockers: Iterable[tuple[int, int]] = (),
) -> Label:
    """The label of the fact at ``text[start:end]``: the name right after it ("40 mg of
    furosemide") when nearer than the last one before it in its clause, else that one, else
    the first one after it in the clause. A unit-less number (``bare``) takes only a name
    before it, at most ``_BARE_GAP`` characters away, with none of ``blockers`` (the spans of
    the numbers that carry a unit) in between."""
    cs, ce = clauses.bounds(start, end)
    # mentions never overlap, so their ends are in the order of their starts
    i = bisect.bisect_right(mentions.ends, start) - 1
    before = mentions[i] if i >= 0 and mentions[i].start >= cs else None
    j = bisect.bisect_left(mentions.starts, end)
    after = mentions[j] if j < len(mentions) and mentions[j].end <= ce else None
    if bare:
        if before is None or start - before.end > _BARE_GAP:
            return frozenset()
        if any(before.end <= b0 and b1 <= start for b0, b1 in blockers):
            return frozenset()
        return before.keys
    gap_after = text[end : after.start] if after is not None else None
    if after is not None and gap_after is not None and _AFTER_GAP.fullmatch(gap_after):
        if before is None or len(gap_after) < start - before.end:
            return after.keys
    if before is not None:
        return before.keys
    if after is not None and gap_after is not None and len(gap_after) <= 30:
        return after.keys
    return frozenset()


@lru_cache(maxsize=8192)
def relation(a: Label, b: Label) -> Relation:
    """How two labels relate: one concept (``strong``), one's words all among the other's
    (``weak``), or not the same thing."""
    if not a or not b:
        return "none"
    if a & b:
        return "strong"
    for x in a:
        wx = _words(x)
        for y in b:
            wy = _words(y)
            if wx and wy and (wx <= wy or wy <= wx):
                return "weak"
    return "none"
