"""Task parameters as ``-T name=value`` passes them (strings) or Python callers do (lists)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def as_list(value: Any, name: str, cast: Callable[[Any], Any] | None = None) -> list[Any] | None:
    """``None`` (unset), a list, or a comma-separated string; each item passed through ``cast``.

    A value that is neither, or an item ``cast`` rejects, is a ValueError naming ``name``.
    """
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        items: list[Any] = [v.strip() for v in value.split(",") if v.strip()]
    elif isinstance(value, int | float):
        items = [value]
    elif isinstance(value, Sequence):
        items = list(value)
    else:
        raise ValueError(f"{name}={value!r} must be a list or a comma-separated string")
    if cast is None:
        return items
    try:
        return [cast(v.strip() if isinstance(v, str) else v) for v in items]
    except ValueError as exc:
        raise ValueError(f"{name}={value!r}: {exc}") from exc
