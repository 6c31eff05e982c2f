"""The session-generation agents and their per-slot solver (``tasks/generate.py``)."""

from .pipeline import RESULT_KEY, generation_pipeline

__all__ = ["RESULT_KEY", "generation_pipeline"]
