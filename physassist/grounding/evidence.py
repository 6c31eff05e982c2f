"""What the assistant received up to an answer, read once for facts.

``Evidence`` takes the sources (tool results, physician questions, the opening message), learns
the names of the labs and drugs the raw tool results hold (``physassist.grounding.labels``) and
reads every line of every source with the registered fact types, as an answer is read, so an
answer's fact and the record's are compared in one form. A tool result the model saw as raw
JSON (``ehr.render=json``) is read in the ``full`` rendering of the same result: the same
values, one resource per line.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from physassist.grounding import registry
from physassist.grounding.facts import Fact, Line, Reading, Source
from physassist.grounding.fhir import NAMED_TYPES, named
from physassist.grounding.labels import Names

__all__ = ["Evidence", "Record"]

T = TypeVar("T")


def _learn(names: Names, raw: Any) -> None:
    """The names of the labs, reports and drugs a raw result holds, as the record prints them."""
    for name, drug in named(raw):
        names.learn(name, drug=drug)


def _holds_names(source: Source) -> bool:
    """Whether a result may name labs, reports or drugs (other results are not parsed)."""
    raw = source.raw
    if isinstance(raw, str):
        return any(f'"{kind}"' in raw for kind in NAMED_TYPES)
    return raw is not None


def _lines(source: Source) -> list[str]:
    """The lines of a source as the fact types read them (raw JSON: its full rendering)."""
    text = source.text
    if source.kind == "tool" and text.lstrip().startswith(("{", "[")):
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            from physassist.ehr.tools.render import render  # only for render=json results

            text = render(parsed, "full")
    return text.split("\n")


class Record:
    """Sources read once: the names their raw results teach (``labels.Names``) and the facts
    of each source. A session's record is made once; each answer is judged against the
    ``evidence`` of the sources up to it. A line printed again (the same search in a later
    turn) is read once."""

    def __init__(self, sources: Sequence[Source]) -> None:
        self.names = Names()
        for source in sources:
            if source.kind == "tool" and _holds_names(source):
                _learn(self.names, source.result)
        self._lines: dict[Source, list[Line]] = {}
        self._facts: dict[Source, dict[str, list[Fact]]] = {}
        self._read: dict[str, list[Fact]] = {}

    def lines(self, source: Source) -> list[Line]:
        if source not in self._lines:
            self._lines[source] = [
                Line(source, number, text)
                for number, text in enumerate(_lines(source), start=1)
                if text.strip()
            ]
        return self._lines[source]

    def facts(self, source: Source) -> dict[str, list[Fact]]:
        """The source's facts by kind, in line order, then those its raw result implies."""
        if source not in self._facts:
            found: dict[str, list[Fact]] = {t.name: [] for t in registry.FACT_TYPES}
            for line in self.lines(source):
                if line.text not in self._read:
                    self._read[line.text] = registry.read_facts(Reading.of(line.text, self.names))
                for fact in self._read[line.text]:
                    found[fact.kind].append(fact.at(line))
            for ft in registry.FACT_TYPES:
                if ft.derive is not None:
                    found[ft.name].extend(ft.derive(source))
            self._facts[source] = found
        return self._facts[source]

    def evidence(self, sources: Sequence[Source]) -> Evidence:
        """What an answer that received ``sources`` is judged against."""
        return Evidence(sources, self)


class Evidence:
    """The sources an answer received, their lines and facts (tool results first: the record,
    then the opening message and the questions)."""

    def __init__(self, sources: Sequence[Source], record: Record | None = None) -> None:
        self.sources = tuple(sources)
        self.record = record if record is not None else Record(self.sources)
        self.names = self.record.names
        self.lines = [line for source in self.sources for line in self.record.lines(source)]
        self._by_kind: dict[str, list[Fact]] = {}
        self._memo: dict[str, Any] = {}

    def facts(self, kind: str) -> list[Fact]:
        """The facts of ``kind`` the sources hold: tool results' first, in source order."""
        if kind not in self._by_kind:
            tools = [s for s in self.sources if s.kind == "tool"]
            others = [s for s in self.sources if s.kind != "tool"]
            self._by_kind[kind] = [
                f for s in (*tools, *others) for f in self.record.facts(s).get(kind, [])
            ]
        return self._by_kind[kind]

    def memo(self, key: str, compute: Callable[[], T]) -> T:
        """``compute()`` once per evidence (a fact type's own index of it)."""
        if key not in self._memo:
            self._memo[key] = compute()
        value: T = self._memo[key]
        return value
