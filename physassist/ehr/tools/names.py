"""The tools' names, derived from their schema entries, and their model-API spelling.

The benchmark names tools the FHIR way (``Observation.search``); provider APIs only accept
``^[a-zA-Z0-9_-]{1,64}$``, so a dot is exposed as a double underscore and mapped back.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from .schemas import SCHEMAS, ToolGroup


class ToolNames(Sequence[str]):
    """The names of the registered tools (of one group, or all), in registration order.

    A live view of ``schemas.SCHEMAS``, not a copy: a tool registered after import (a plugin's,
    a test's) is in it, and ``name in TOOL_NAMES`` is one dict lookup.
    """

    def __init__(self, group: ToolGroup | None = None):
        self.group = group

    def _names(self) -> tuple[str, ...]:
        return tuple(n for n, s in SCHEMAS.items() if self.group in (None, s.group))

    def __contains__(self, name: object) -> bool:
        schema = SCHEMAS.get(name) if isinstance(name, str) else None
        return schema is not None and self.group in (None, schema.group)

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[str, ...]: ...

    def __getitem__(self, index: int | slice) -> str | tuple[str, ...]:  # as a tuple's
        return self._names()[index]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return f"ToolNames({self.group or 'all'}: {', '.join(self._names())})"


#: Every tool (the 18 of the released format in its ``tools`` order, then any registered later).
TOOL_NAMES = ToolNames()
#: The EHR read tools (group ``read`` of their schema entries).
EHR_READ_TOOLS = ToolNames("read")

_SEP = "__"


def to_api_name(name: str) -> str:
    """``Observation.search`` -> ``Observation__search`` (names without a dot pass through)."""
    return name.replace(".", _SEP)


def from_api_name(name: str) -> str:
    """Inverse of :func:`to_api_name` for our tools; other names pass through unchanged.

    A name that is already dotted, or whose dotted form is not one of ours, is returned as is
    so that the caller can report it as unknown under the spelling the model used.
    """
    if "." in name or _SEP not in name:
        return name
    dotted = name.replace(_SEP, ".", 1)
    return dotted if dotted in SCHEMAS else name
