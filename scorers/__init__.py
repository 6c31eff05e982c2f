"""Inspect AI scorers and metrics for PhysAssistBench: rubric judges, write judge, metrics."""

from scorers.metrics import physassist_breakdowns, physassist_metrics, session_epochs
from scorers.session_scorer import physassist_scorer

__all__ = ["physassist_breakdowns", "physassist_metrics", "physassist_scorer", "session_epochs"]
