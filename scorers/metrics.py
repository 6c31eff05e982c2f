"""The Inspect metric and the epoch reducer for the session scorer.

The metric rebuilds the per-turn table from the sample scores and calls
`physassist.metrics.summarize`, so the numbers in the Inspect log and in the tracking
layer are computed by the same code; Inspect is shown the headline only (~18 rows, where the
breakdowns made ~230). The thresholds come from the scores' metadata
(`metadata["taus"]`, set by the scorer).

Caveat: Inspect hands metrics only the samples whose value is not NaN, so a session with
no scored turn at all is missing here; Inspect counts it as `unscored_samples` in the
results, and `physassist.results.turn_table` + `summarize` see every turn.

With `epochs` > 1, use `session_epochs()` as the task's epoch reducer: it keeps every
epoch's per-turn metadata, so the turn table holds every trial and `summarize` computes pass^k
and per-session variance from it (Inspect's default reducer keeps only the first epoch's metadata).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pandas as pd
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    ScoreReducer,
    metric,
    score_reducer,
)

from physassist.metrics import is_headline, summarize
from physassist.results import turn_rows

DEFAULT_TAUS = (0.6, 0.75)


def scores_table(scores: list[SampleScore]) -> tuple[pd.DataFrame, tuple[float, ...]]:
    """The per-turn table and thresholds behind a list of session scores."""
    rows = []
    taus: tuple[float, ...] = DEFAULT_TAUS
    for s in scores:
        md = s.score.metadata or {}
        taus = tuple(md.get("taus") or taus)
        epochs = md.get("epochs") or [md.get("turns") or []]
        for epoch, turns in enumerate(epochs, start=1):
            rows.extend(
                turn_rows(
                    s.sample_id if s.sample_id is not None else "?", epoch, s.sample_metadata, turns
                )
            )
    return pd.DataFrame(rows), taus


def _finite_or_nan(values: dict[str, float]) -> dict[str, float]:
    return {
        k: (float(v) if v is not None and not math.isnan(float(v)) else float("nan"))
        for k, v in values.items()
    }


def _summary_metric(keep: Callable[[str], bool], **options: Any) -> Metric:
    """`summarize(**options)` over the scores' turn table, reporting the names `keep` selects."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        df, taus = scores_table(scores)
        if df.empty:
            return {}
        summary = summarize(df, taus, **options)
        return _finite_or_nan({k: v for k, v in summary.items() if keep(k)})

    return compute


@metric
def physassist_metrics() -> Metric:
    """The headline (``physassist.metrics.is_headline``): mRS, Pass@Turn and Pass@Session per
    tau with their 95% intervals, and the turn counts. Inspect shows these; the breakdowns,
    tool metrics and epoch statistics are computed from the turn table by the same
    ``summarize`` (``physassist.staging``, ``scorers.rescoring``) and live in MLflow and the report."""
    return _summary_metric(is_headline, breakdowns=False)


@score_reducer(name="session_epochs")
def session_epochs() -> ScoreReducer:
    """Mean of the epochs' session scores, keeping every epoch's turns in metadata["epochs"]."""

    def reduce(scores: list[Score]) -> Score:
        values = [
            s.value
            for s in scores
            if isinstance(s.value, int | float) and not math.isnan(float(s.value))
        ]
        first = scores[0].metadata or {}
        metadata = {
            **first,
            "epochs": [(s.metadata or {}).get("turns") or [] for s in scores],
        }
        return Score(value=sum(values) / len(values) if values else math.nan, metadata=metadata)

    return reduce
