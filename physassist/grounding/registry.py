"""The fact types: every ``physassist/grounding/<name>_facts.py`` that declares ``FACT_TYPE``.

Adding a kind of fact is its module (``FACT_TYPE = FactType(name, order, summary, extract,
match)``): it is registered by being in the package, read from answers and evidence alike in
its ``order``, counted in every turn's grounding and listed in the fact-type table
(``markdown_table``, docs/reports.md; ``python -m physassist.grounding`` prints it).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from physassist.grounding.facts import Fact, FactType, Reading

__all__ = ["FACT_TYPES", "markdown_table", "read_facts"]


def _discover() -> tuple[FactType, ...]:
    found = []
    for module in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if module.name.endswith("_facts"):
            declared = getattr(
                importlib.import_module(f"physassist.grounding.{module.name}"), "FACT_TYPE", None
            )
            if isinstance(declared, FactType):
                found.append(declared)
    return tuple(sorted(found, key=lambda t: (t.order, t.name)))


#: The registered fact types, in reading order.
FACT_TYPES: tuple[FactType, ...] = _discover()


def read_facts(reading: Reading) -> list[Fact]:
    """The facts of every type in a text, in text order; a span a type read (in ``order``) is
    not read again by a later type."""
    out: list[Fact] = []
    for fact_type in FACT_TYPES:
        read = [f for f in fact_type.extract(reading) if reading.free(f.start, f.end)]
        out += read
        reading.taken.extend((f.start, f.end) for f in read)
    return sorted(out, key=lambda f: f.start)


def markdown_table() -> str:
    """The fact-type table of docs/reports.md."""
    rows = ["| fact type | what it reads and how it is matched |", "|---|---|"]
    rows += [f"| `{t.name}` | {t.summary} |" for t in FACT_TYPES]
    return "\n".join(rows)
