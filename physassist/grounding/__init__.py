"""The grounding check: is every clinical fact an answer states in what the assistant received?

Judge-free and deterministic. An answer's facts (``FACT_TYPES``: values with units, dates,
counts, organisms; one module each, ``*_facts.py``) are read and matched against the
``Evidence`` of the session up to that answer: the tool results (the patient's replies
included), the physician's questions and the opening message. Each fact is ``grounded`` (with
the call and result line that holds it), ``contradicted`` (the record holds another value for
the same thing) or ``unsupported``. No Inspect here: the scorer (``scorers/grounding.py``),
the turn table and the traces read the ``Grounding`` of each turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from physassist.grounding import registry
from physassist.grounding.criteria import criteria, outside
from physassist.grounding.evidence import Evidence
from physassist.grounding.facts import (
    Fact,
    FactType,
    Line,
    Reading,
    Source,
    SourceKind,
    Status,
    Verdict,
)
from physassist.grounding.registry import FACT_TYPES, markdown_table, read_facts

__all__ = [
    "FACT_TYPES",
    "Evidence",
    "Fact",
    "FactType",
    "Grounding",
    "Line",
    "Source",
    "SourceKind",
    "Status",
    "Verdict",
    "answer_facts",
    "ground",
    "markdown_table",
]


@dataclass(frozen=True)
class Grounding:
    """The verdicts on one answer's facts."""

    verdicts: tuple[Verdict, ...]

    def count(self, status: Status) -> int:
        return sum(1 for v in self.verdicts if v.status == status)

    @property
    def facts(self) -> int:
        return len(self.verdicts)

    @property
    def share(self) -> float | None:
        """Grounded facts / facts stated (0-1); None when the answer states none."""
        return self.count("grounded") / self.facts if self.verdicts else None

    def summary(self) -> str:
        """``4 facts: 3 grounded, 1 contradicted, 0 unsupported`` (``no facts stated``)."""
        if not self.verdicts:
            return "no facts stated"
        return (
            f"{self.facts} facts: {self.count('grounded')} grounded, "
            f"{self.count('contradicted')} contradicted, {self.count('unsupported')} unsupported"
        )

    def as_dict(self) -> dict[str, Any]:
        """The counts and every verdict, as the grounding scorer's per-turn metadata."""
        return {
            "facts": self.facts,
            "grounded": self.count("grounded"),
            "contradicted": self.count("contradicted"),
            "unsupported": self.count("unsupported"),
            "verdicts": [v.as_dict() for v in self.verdicts],
        }


def answer_facts(answer: str, evidence: Evidence) -> list[Fact]:
    """The facts an answer states, read with the names the evidence taught; a number stated
    as a criterion (a target, a threshold, a guideline band: ``criteria``) is none."""
    spans = criteria(answer)
    return [
        f for f in read_facts(Reading.of(answer, evidence.names)) if outside(spans, f.start, f.end)
    ]


def ground(answer: str, evidence: Evidence | Sequence[Source]) -> Grounding:
    """Every fact ``answer`` states, judged against ``evidence`` (or the sources it is made of)."""
    if not isinstance(evidence, Evidence):
        evidence = Evidence(evidence)
    by_name = {t.name: t for t in registry.FACT_TYPES}
    return Grounding(
        tuple(by_name[f.kind].match(f, evidence) for f in answer_facts(answer, evidence))
    )
