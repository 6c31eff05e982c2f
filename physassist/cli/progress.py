"""One line per finished session when stdout is not a terminal (a log file, CI, ``nohup``,
SLURM): Inspect's live display only draws on a TTY, so without these a long run prints nothing
until it ends. The line (``printing.progress_line``): sessions done of total, mRS so far,
unscored turns so far.

An Inspect hook (``on_sample_end``), registered when this module is imported and active only
inside ``reporting(total)``, so other evals in the process (tests, ``physassist-generate``)
print nothing.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field

from inspect_ai.hooks import Hooks, SampleEnd, hooks

from physassist.cli.printing import progress_line
from physassist.results import SCORER_NAME


@dataclass
class _Tally:
    total: int
    done: int = 0
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
        progress_line(tally.done, tally.total, tally.mrs, tally.unscored)


@contextlib.contextmanager
def reporting(total: int, *, force: bool = False) -> Iterator[None]:
    """Print a progress line per finished session of ``total`` while the block runs, when
    stdout is not a terminal (or ``force``)."""
    global _active
    if not force and sys.stdout.isatty():
        yield
        return
    _active = _Tally(total)
    try:
        yield
    finally:
        _active = None
