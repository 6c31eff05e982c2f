"""The cyclic garbage collector during an evaluation.

An eval process holds ~0.5M long-lived objects before the first sample starts (Inspect,
openai, pydantic and MLflow modules, the loaded sessions, the EHR store's caches), and an
eval allocates millions of short-lived ones (events, messages, request dicts). With CPython's
default thresholds each full collection walked every long-lived object again: over HTTP
(``benchmarks/eval_http.py``) full collections were ~25 % of the eval's CPU. Frozen objects
are never scanned; a larger young generation collects the short-lived ones less often. Both
are undone afterwards, so a process that runs several evals (sweeps) freezes each time only
what is alive then. No collection before freezing: a full one costs ~0.3-0.6 s here, and
garbage frozen with the rest is collected after the eval, once unfrozen.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

#: allocations between young-generation collections while an eval runs (CPython's default: 700)
YOUNG_THRESHOLD = 10_000


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze what is alive, run the body with a larger young generation."""
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
