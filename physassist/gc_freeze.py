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

The same holds after the eval, wherever a step allocates many containers on that heap (the
sessions parsed back from the log for the run's dataset input): blocks nest, only the outermost
freezes and thaws. And at exit: the interpreter's final collections walked the whole heap
again (~2 s of CPU after a default run, for memory the OS takes back anyway), so a process
that froze its heap once freezes it for good when it exits (after the other exit handlers
registered since then, MLflow's among them, have run).

Before the eval, a command's start-up (Hydra, pandas, Inspect's import, the sessions parsed and
dumped for the task) grows the heap from nothing to those ~0.5M objects and makes little
garbage; with the default young generation CPython collected 840 times and walked the growing
heap in full 6 times on the default run (0.7 s of CPU, most of it in the task build). A
command's process runs with the larger young generation from its start (``command_start``,
called first in each console script's ``main()``, never on import: an importer keeps its own).
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

#: allocations between young-generation collections while an eval runs (CPython's default: 700)
YOUNG_THRESHOLD = 10_000


_lock = threading.Lock()
_depth = 0  # frozen_heap blocks open in this process


@cache
def _freeze_at_exit() -> None:
    atexit.register(gc.freeze)


def command_start() -> None:
    """The young generation of a command's process: ``YOUNG_THRESHOLD`` from its start (the
    older generations' thresholds as they are). ``frozen_heap`` keeps it and restores it."""
    gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Freeze what is alive, run the body with a larger young generation (a nested block
    leaves both to the outermost)."""
    global _depth
    _freeze_at_exit()
    with _lock:
        _depth += 1
        outermost = _depth == 1
        if outermost:
            gc.freeze()
            thresholds = gc.get_threshold()
            gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if outermost:
                gc.set_threshold(*thresholds)
                gc.unfreeze()
