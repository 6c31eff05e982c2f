"""One line per finished session when stdout is not a terminal (a log file, CI, ``nohup``,
SLURM): Inspect's live display only draws on a TTY, so without these a long run prints nothing
until it ends. The line (``printing.progress_line``): sessions done of total, mRS so far,
unscored turns so far. At most one line per ``EVERY_S`` seconds: a real model (seconds to minutes
per session) gets a line for every session, while the offline sample (36 sessions in ~15 s) stays
within the console's 20-line budget (issue 23) instead of printing 36.

An Inspect hook (``on_sample_end``), registered when this module is imported and active only
inside ``reporting(total)``, so other evals in the process (tests, ``physassist-generate``)
print nothing.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

from inspect_ai.hooks import Hooks, SampleEnd, hooks

from physassist.cli.printing import progress_line
from physassist.results import SCORER_NAME


@dataclass
class _Tally:
    total: int
    every_s: float
    done: int = 0
    last: float = field(default_factory=time.monotonic)  # when a line was last due
    session_means: list[float] = field(default_factory=list)
    unscored: int = 0

    def add(self, turns: list[dict]) -> None:
        self.done += 1
        scores = [float(t["score"]) for t in turns if t.get("status") == "scored" and t.get("score") is not None]
        self.unscored += len(turns) - len(scores)
        if scores:
            self.session_means.append(sum(scores) / len(scores))

    @property
    def mrs(self) -> float:
        means = self.session_means
        return sum(means) / len(means) * 100 if means else math.nan


#: Seconds between two progress lines (and from the start to the first).
EVERY_S = 10.0

_active: _Tally | None = None


@hooks(name="physassist_progress", description="one line per finished session when stdout is not a terminal")
class SessionProgress(Hooks):
    def enabled(self) -> bool:
        return _active is not None

    async def on_sample_end(self, data: SampleEnd) -> None:
        tally = _active
        if tally is None:
            return
        score = (data.sample.scores or {}).get(SCORER_NAME)
        turns = (score.metadata or {}).get("turns") if score is not None else None
        tally.add(turns if isinstance(turns, list) else [])
        now = time.monotonic()
        if now - tally.last >= tally.every_s:
            tally.last = now
            progress_line(tally.done, tally.total, tally.mrs, tally.unscored)


@contextlib.contextmanager
def reporting(total: int, *, force: bool = False, every_s: float | None = None) -> Iterator[None]:
    """Print a progress line per finished session of ``total`` (at most one per ``every_s``,
    default ``EVERY_S``) while the block runs, when stdout is not a terminal (or ``force``)."""
    global _active
    if not force and sys.stdout.isatty():
        yield
        return
    _active = _Tally(total, EVERY_S if every_s is None else every_s)
    try:
        yield
    finally:
        _active = None
