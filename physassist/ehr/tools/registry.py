"""A read tool's functions and what they read.

A read tool is its schema entry (``schemas.add_schema``, group ``read``) plus one function per
semantics, each declaring where it is defined the per-subject columns it reads::

    @read_tool(reads={"procedures_icd": ("hadm_id", "icd_code")})
    def procedure_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]: ...

and the pair, ``ReadTool(strict=..., compat=...)``, is the tool's line in ``readers.READ_TOOLS``,
the one table ``call_tool`` answers a read tool from. A strict function is handed the call's
store access (``chart.Chart``: the session's store and cutoff), a compat one the session's
``ToolContext``. :data:`COLUMNS`, what the store loads per subject and table (and what
``records.open_chart`` prefetches), is the union of the declared reads: one cached load per
(subject, table) serves every tool. The declarations themselves are kept in ``reads``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .reads import COLUMNS, READS, declare
from .schemas import SCHEMAS

if TYPE_CHECKING:  # types of the functions' first argument only
    from .chart import Chart
    from .context import ToolContext

__all__ = ["COLUMNS", "READS", "ReadTool", "declare_reads", "read_tool"]

Reader = TypeVar("Reader", bound=Callable[..., dict[str, Any]])

#: function -> the per-subject tables and columns it declared it reads (``read_tool``).
_DECLARED: dict[Callable[..., dict[str, Any]], dict[str, tuple[str, ...]]] = {}


def read_tool(*, reads: Mapping[str, Sequence[str]]) -> Callable[[Reader], Reader]:
    """Declare that the decorated function answers a read tool and reads ``reads``: every
    per-subject table and column it (and the helpers it calls) reads through ``chart.Chart``
    or ``compat_frames.frame``."""

    def declared(function: Reader) -> Reader:
        _DECLARED[function] = {table: tuple(columns) for table, columns in reads.items()}
        return function

    return declared


@dataclass(frozen=True)
class ReadTool:
    """The functions answering one read tool: ``strict`` given the call's ``Chart``, ``compat``
    the session's ``ToolContext``."""

    strict: Callable[[Chart, dict[str, Any]], dict[str, Any]]
    compat: Callable[[ToolContext, dict[str, Any]], dict[str, Any]]


def declare_reads(name: str, tool: ReadTool) -> None:
    """Record what ``tool``'s functions declared they read, as the read tool ``name``; raises
    ``ValueError`` on a name without a read schema entry and on a function without its
    ``@read_tool`` declaration."""
    schema = SCHEMAS.get(name)
    if schema is None or schema.group != "read":
        raise ValueError(f"{name!r} has no read tool schema entry")
    declare("strict", name, _declared(name, tool.strict))
    declare("compat", name, _declared(name, tool.compat))


def _declared(name: str, function: Callable[..., dict[str, Any]]) -> dict[str, tuple[str, ...]]:
    reads = _DECLARED.get(function)
    if reads is None:
        raise ValueError(f"{name}: {function.__qualname__} has no @read_tool(reads=...)")
    return reads
