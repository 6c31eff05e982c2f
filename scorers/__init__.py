"""Inspect AI scorers and metrics for PhysAssistBench: rubric judges, write judge, the grounding
check, metrics.

The names below load on first use (PEP 562): the CLI reads ``scorers.judges`` (which judge needs
which grader role) for ``--help`` and its checks, and must not import Inspect for that.
"""

from __future__ import annotations

from physassist.lazy import exports

_HOME = {
    "physassist_metrics": "scorers.metrics",
    "session_epochs": "scorers.metrics",
    "physassist_scorer": "scorers.session_scorer",
    "physassist_grounding": "scorers.grounding",
}
__all__ = sorted(_HOME)

__getattr__ = exports(__name__, _HOME)
