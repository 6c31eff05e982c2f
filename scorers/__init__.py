"""Inspect AI scorers and metrics for PhysAssistBench: rubric judges, write judge, metrics.

The names below load on first use (PEP 562): the CLI reads ``scorers.judges`` (which judge needs
which grader role) for ``--help`` and its checks, and must not import Inspect for that.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "physassist_breakdowns": "scorers.metrics",
    "physassist_metrics": "scorers.metrics",
    "session_epochs": "scorers.metrics",
    "physassist_scorer": "scorers.session_scorer",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'scorers' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOME[name]), name)
