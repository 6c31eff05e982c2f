"""Facts, where they were read, and what the record says of them.

A ``Fact`` is one clinical claim in a text (a lab value with its unit, a date, a dose count,
an organism); a ``FactType`` reads its kind of fact from a text and judges one against the
``physassist.grounding.evidence.Evidence`` (what the assistant received). A ``Verdict`` is
``grounded`` (the record holds it: ``evidence`` is the fact there), ``contradicted`` (the record
holds a different value for the same thing: ``seen``) or ``unsupported`` (nowhere).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal, Protocol, TypeVar

from physassist.grounding.labels import Label, Mentions, Names, attribute
from physassist.grounding.text import Clauses, lowered

T = TypeVar("T")

#: The line a rendering that lists only some of its results ends with (``ehr.render=compat``:
#: 15 entries, then ``... (27 more)``).
_MORE = re.compile(r"^\s*\.\.\. \(\d+ more\)\s*$", re.MULTILINE)

__all__ = [
    "Evidence",
    "Fact",
    "FactType",
    "Line",
    "Reading",
    "Source",
    "SourceKind",
    "Status",
    "Verdict",
]

Status = Literal["grounded", "contradicted", "unsupported"]
#: Where a text the assistant received came from: a tool's result (the patient's replies are
#: the patient tools' results), a physician question, or the session's opening message.
SourceKind = Literal["tool", "question", "opening"]


@dataclass(frozen=True)
class Source:
    """One text the assistant received: ``turn`` (0-based) and, for a tool result, the call's
    place in its turn (``call``, 1-based), its name and whether it is a gold call executed for
    the gold history (``gold``); ``raw`` is the tool's raw result (the names of the labs and
    drugs it holds, the dose counts it implies)."""

    kind: SourceKind
    text: str
    turn: int | None = None
    call: int | None = None
    tool: str | None = None
    gold: bool = False
    raw: Any = field(default=None, compare=False, repr=False)  # the object, or its JSON text

    @cached_property
    def result(self) -> Any:
        """The raw result as an object (JSON text is parsed on first use)."""
        if isinstance(self.raw, str | bytes):
            try:
                return json.loads(self.raw)
            except ValueError:
                return None
        return self.raw

    @cached_property
    def partial(self) -> bool:
        """The text lists only some of the result's entries: what it hides may hold a stated
        value, so its lines ground but never contradict one."""
        return bool(_MORE.search(self.text))

    def where(self) -> str:
        """``T1 call 2 MedicationAdministration.search``, ``T0 gold call 1 Observation.search``,
        ``T2 question``, ``opening message``."""
        if self.kind == "opening":
            return "opening message"
        turn = f"T{self.turn}" if self.turn is not None else "T?"
        if self.kind == "question":
            return f"{turn} question"
        return f"{turn} {'gold call' if self.gold else 'call'} {self.call} {self.tool}"


@dataclass(frozen=True)
class Line:
    """A line of a source (``number`` 1-based; 0: implied by the raw result as a whole)."""

    source: Source
    number: int
    text: str

    def where(self) -> str:
        return self.source.where() + (f" line {self.number}" if self.number else "")


@dataclass(frozen=True)
class Reading:
    """A text being read for facts: its lower-case form (``text.lowered``), the names found in
    it, and the spans the fact types read before (``taken``: a later type skips them)."""

    text: str
    lower: str
    names: Names
    mentions: Mentions
    clauses: Clauses
    taken: list[tuple[int, int]] = field(default_factory=list)

    @classmethod
    def of(cls, text: str, names: Names) -> Reading:
        lower = lowered(text)
        return cls(text, lower, names, names.mentions(text, lower), Clauses(text))

    def label(
        self, start: int, end: int, *, bare: bool = False, blockers: Iterable[tuple[int, int]] = ()
    ) -> Label:
        """The label of the fact at ``text[start:end]`` (``labels.attribute``)."""
        return attribute(
            self.text, self.clauses, self.mentions, start, end, bare=bare, blockers=blockers
        )

    def masked(self) -> str:
        """The text with the spans earlier types read blanked out (same length)."""
        text = self.text
        for a, b in self.taken:
            text = text[:a] + " " * (b - a) + text[b:]
        return text

    def free(self, start: int, end: int) -> bool:
        """No earlier fact type read any of ``text[start:end]``."""
        return not any(start < b and a < end for a, b in self.taken)


@dataclass(frozen=True)
class Fact:
    """A claim as written (``text`` at ``start:end`` of its text) and what it says: ``value``
    (a number; ``YYYY-MM-DD`` or ``YYYY-MM-DD HH:MM`` for a date; ``genus species`` for an
    organism), its ``unit`` (of a dose count: which one, charted, given or not given) and
    ``decimals`` as written, the thing it is about (``label``) and a type's own detail (what
    a count counts). ``line``: where an evidence fact was read."""

    kind: str
    text: str
    start: int
    end: int
    value: Any
    unit: str | None = None
    decimals: int = 0
    label: Label = frozenset()
    detail: str | None = None
    approx: bool = False
    line: Line | None = None
    since: str | None = None  # a dose count's window: the doses charted from this time on

    def at(self, line: Line) -> Fact:
        """This fact as read from ``line`` of the evidence (``dataclasses.replace`` cost ~30 us
        a fact: a turn's evidence holds hundreds)."""
        fact: Fact = object.__new__(Fact)
        fact.__dict__.update(self.__dict__, line=line)
        return fact

    @property
    def partial(self) -> bool:
        """Read from a listing that shows only some of its entries (``Source.partial``)."""
        return self.line is not None and self.line.source.partial

    def shown(self) -> str:
        """The value as a person reads it ("1.8 mg/dL", "2157-07-02 05:36")."""
        if isinstance(self.value, float):
            number = f"{self.value:.{self.decimals}f}" if self.decimals else f"{self.value:g}"
            return f"{number} {self.unit}" if self.unit else number
        return str(self.value)


@dataclass(frozen=True)
class Verdict:
    """What the record says of one fact (see the module docstring)."""

    fact: Fact
    status: Status
    evidence: Fact | None = None
    seen: tuple[str, ...] = ()

    def reason(self) -> str:
        """One line: the fact, its status and where (or what the record holds instead)."""
        fact = f"{self.fact.kind} {self.fact.text!r}"
        line = self.evidence.line if self.evidence is not None else None
        if self.status == "grounded" and line is not None:
            return f"{fact} grounded: {line.where()}: {line.text.strip()[:160]!r}"
        if self.status == "contradicted":
            where = f" ({line.where()}: {line.text.strip()[:160]!r})" if line is not None else ""
            return f"{fact} contradicted: the record holds {', '.join(self.seen)}{where}"
        return f"{fact} unsupported: not in what the assistant received"

    def as_dict(self) -> dict[str, Any]:
        line = self.evidence.line if self.evidence is not None else None
        return {
            "kind": self.fact.kind,
            "fact": self.fact.text,
            "status": self.status,
            "where": line.where() if line is not None else None,
            "line": line.text.strip()[:300] if line is not None else None,
            "seen": list(self.seen),
        }


class Evidence(Protocol):
    """What a fact type's ``match`` reads of the evidence
    (``physassist.grounding.evidence.Evidence``)."""

    @property
    def sources(self) -> tuple[Source, ...]: ...

    @property
    def lines(self) -> list[Line]: ...

    def facts(self, kind: str) -> list[Fact]:
        """The facts of ``kind`` the sources hold, tool results' first."""
        ...

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per evidence."""
        ...


@dataclass(frozen=True)
class FactType:
    """One kind of fact, declared by its module ``physassist/grounding/<name>_facts.py`` as
    ``FACT_TYPE`` (``physassist.grounding.FACT_TYPES`` registers it).

    ``extract`` reads this kind's facts from a text, the answer's and every line of evidence
    alike; types read in ``order`` and a span one type read is not read again by a later one
    (the digits of a date are no lab value). ``match`` judges an answer's fact against the
    evidence. ``derive`` adds the facts a tool's raw result implies beyond its lines (how many
    doses a medication-administration search charted)."""

    name: str
    order: int
    summary: str  # one line of the fact-type table (docs/reports.md)
    extract: Callable[[Reading], list[Fact]]
    match: Callable[[Fact, Evidence], Verdict]
    derive: Callable[[Source], list[Fact]] | None = None
