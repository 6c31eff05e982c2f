"""Names a package re-exports, imported from their home module on first use (PEP 562).

A command that needs one light name of a package (the judges table, a session model) must not pay
for the heavy modules beside it (Inspect, pandas, pandera): ``physassist-eval --help`` took 13-15 s
when it did (issue 25).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps each re-exported name to its
    module."""

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return __getattr__
