"""What the read tools declared they read (``@read_tool(..., reads=...)``): per tool, and the
union the store loads per subject (``COLUMNS``).

Apart from ``registry`` (the functions, typed by ``ToolContext``, whose module names the store)
so that the store's build check (``physassist.ehr.source_check``) derives what a source must
hold from these same declarations without an import circle. Complete once the package
(``physassist.ehr.tools``) is imported: its modules declare by being imported.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from physassist.ehr.tables import TABLES
from physassist.options import Semantics

#: semantics -> tool name -> the per-subject tables and columns the function declared it reads.
READS: dict[Semantics, dict[str, dict[str, tuple[str, ...]]]] = {"strict": {}, "compat": {}}
#: per-subject table -> the columns the registered tools read from it (``_row`` is added).
COLUMNS: dict[str, tuple[str, ...]] = {}


def declare(semantics: Semantics, name: str, reads: Mapping[str, Sequence[str]]) -> None:
    """Record what ``name`` reads in ``semantics``; raises ``ValueError`` on a table or column
    the store does not hold."""
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
    READS[semantics][name] = {table: tuple(columns) for table, columns in reads.items()}


def read_by() -> dict[str, dict[str, set[str]]]:
    """table -> column -> the read tools (either semantics) that declared they read it."""
    out: dict[str, dict[str, set[str]]] = {}
    for tools in READS.values():
        for tool, reads in tools.items():
            for table, columns in reads.items():
                for column in columns:
                    out.setdefault(table, {}).setdefault(column, set()).add(tool)
    return out
