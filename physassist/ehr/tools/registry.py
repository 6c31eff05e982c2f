"""The read tools' implementations, registered where they are defined.

A read tool is its schema entry (``schemas.add_schema``, group ``read``) plus one function per
semantics, each declaring the per-subject columns it reads::

    @read_tool("strict", "Procedure.search", reads={"procedures_icd": ("hadm_id", "icd_code")})
    def procedure_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]: ...

The package imports each of its modules, so a new ``strict_*.py`` / ``compat_*.py`` module
registers its tools by being there. :data:`COLUMNS`, what the store loads per subject and table
(and what ``records.open_chart`` prefetches), is the union of the declared reads: one cached load
per (subject, table) serves every tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from physassist.ehr.tables import TABLES
from physassist.options import Semantics

from .context import ToolContext
from .schemas import SCHEMAS

Reader = Callable[[ToolContext, dict[str, Any]], dict[str, Any]]

#: semantics -> tool name -> the function answering it.
READERS: dict[Semantics, dict[str, Reader]] = {"strict": {}, "compat": {}}
#: semantics -> tool name -> the per-subject tables and columns the function declared it reads.
READS: dict[Semantics, dict[str, dict[str, tuple[str, ...]]]] = {"strict": {}, "compat": {}}
#: per-subject table -> the columns the registered tools read from it (``_row`` is added).
COLUMNS: dict[str, tuple[str, ...]] = {}


def read_tool(
    semantics: Semantics, name: str, *, reads: Mapping[str, Sequence[str]]
) -> Callable[[Reader], Reader]:
    """Register the decorated function as ``name`` in ``semantics``; ``reads`` names every
    per-subject table and column it (and the helpers it calls) reads through
    ``records.subject_rows`` or ``compat_frames.frame``."""

    def register(function: Reader) -> Reader:
        schema = SCHEMAS.get(name)
        if schema is None or schema.group != "read":
            raise ValueError(f"{function.__qualname__}: {name!r} has no read tool schema entry")
        if name in READERS[semantics]:
            raise ValueError(
                f"{function.__qualname__}: {name!r} is already registered in {semantics}"
            )
        _declare(name, reads)
        READERS[semantics][name] = function
        READS[semantics][name] = {table: tuple(columns) for table, columns in reads.items()}
        return function

    return register


def _declare(name: str, reads: Mapping[str, Sequence[str]]) -> None:
    for table, columns in reads.items():
        spec = TABLES.get(table)
        if spec is None or not spec.per_subject:
            raise ValueError(f"{name}: {table!r} is not a per-subject table of the store")
        unknown = [c for c in columns if c not in spec.columns]
        if unknown:
            raise ValueError(f"{name}: {table!r} has no column(s) {unknown}")
        wanted = {*COLUMNS.get(table, ()), *columns}
        COLUMNS[table] = tuple(c for c in spec.columns if c in wanted)
    # the store's table order, whichever module registers first (open_chart prefetches in it)
    ordered = {t: COLUMNS[t] for t in TABLES if t in COLUMNS}
    COLUMNS.clear()
    COLUMNS.update(ordered)


def unimplemented() -> list[str]:
    """``"<semantics>: <tool>"`` for every read tool lacking a function in a semantics, and
    every function whose tool is no longer a read tool."""
    wanted = {n for n, s in SCHEMAS.items() if s.group == "read"}
    return [
        f"{semantics}: {name}"
        for semantics, readers in READERS.items()
        for name in sorted(wanted ^ set(readers))
    ]
