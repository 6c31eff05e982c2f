"""Deterministic session builder: released-format PhysAssistBench sessions without an LLM."""

from .build import BuildReport, build_sessions

__all__ = ["BuildReport", "build_sample", "build_sessions"]


def build_sample(root: str = "data/sample", seed: int = 0) -> BuildReport:
    """Regenerate the committed sample (cohort and sessions); see :mod:`.sample`."""
    from .sample import build_sample as _build_sample

    return _build_sample(root=root, seed=seed)
