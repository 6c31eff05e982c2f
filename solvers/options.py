"""One check for every option that selects behaviour (menu, terminal, patient, ...)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

T = TypeVar("T")


def check_option(name: str, value: T, valid: Iterable[Any]) -> T:
    """``value`` if it is one of ``valid``; else a ValueError naming the option and its values."""
    allowed = tuple(valid)
    if value not in allowed:
        raise ValueError(
            f"{name}={value!r} is not valid; valid options: {', '.join(map(str, allowed))}"
        )
    return value
