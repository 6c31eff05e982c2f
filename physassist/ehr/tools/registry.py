"""The read tools' implementations, registered where they are defined.

A read tool is its schema entry (``schemas.add_schema``, group ``read``) plus one function per
semantics, each declaring the per-subject columns it reads::

    @read_tool("strict", "Procedure.search", reads={"procedures_icd": ("hadm_id", "icd_code")})
    def procedure_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]: ...

A strict function is handed the call's store access (``chart.Chart``: the session's store and
cutoff), a compat one the session's ``ToolContext``.

The package imports each of its modules, so a new ``strict_*.py`` / ``compat_*.py`` module
registers its tools by being there. :data:`COLUMNS`, what the store loads per subject and table
(and what ``records.open_chart`` prefetches), is the union of the declared reads: one cached load
per (subject, table) serves every tool. The declarations themselves are kept in ``reads``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from physassist.options import Semantics

from .reads import COLUMNS, READS, declare
from .schemas import SCHEMAS

__all__ = ["COLUMNS", "READERS", "READS", "Reader", "read_tool", "unimplemented"]

#: A read tool's function: ``(chart.Chart, args)`` in strict, ``(ToolContext, args)`` in compat.
Reader = TypeVar("Reader", bound=Callable[..., dict[str, Any]])

#: semantics -> tool name -> the function answering it.
READERS: dict[Semantics, dict[str, Callable[..., dict[str, Any]]]] = {"strict": {}, "compat": {}}


def read_tool(
    semantics: Semantics, name: str, *, reads: Mapping[str, Sequence[str]]
) -> Callable[[Reader], Reader]:
    """Register the decorated function as ``name`` in ``semantics``; ``reads`` names every
    per-subject table and column it (and the helpers it calls) reads through
    ``chart.Chart`` or ``compat_frames.frame``."""

    def register(function: Reader) -> Reader:
        schema = SCHEMAS.get(name)
        if schema is None or schema.group != "read":
            raise ValueError(f"{function.__qualname__}: {name!r} has no read tool schema entry")
        if name in READERS[semantics]:
            raise ValueError(
                f"{function.__qualname__}: {name!r} is already registered in {semantics}"
            )
        declare(semantics, name, reads)
        READERS[semantics][name] = function
        return function

    return register


def unimplemented() -> list[str]:
    """``"<semantics>: <tool>"`` for every read tool lacking a function in a semantics, and
    every function whose tool is no longer a read tool."""
    wanted = {n for n, s in SCHEMAS.items() if s.group == "read"}
    return [
        f"{semantics}: {name}"
        for semantics, readers in READERS.items()
        for name in sorted(wanted ^ set(readers))
    ]
