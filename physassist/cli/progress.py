"""Progress lines while a run is alive, when stdout is not a terminal (a log file, CI, ``nohup``,
SLURM): Inspect's live display only draws on a TTY, so without these a long run prints nothing
until it ends.

Two lines (``printing.progress_line``): a finished session's (sessions done of total, mRS so far,
unscored turns so far), at most one per ``EVERY_S`` seconds, so that a real model (seconds to
minutes per session) gets a line for every session while the offline sample (36 sessions in
~15 s) stays within the console's 20-line budget (issue 23) instead of printing 36; and a
heartbeat, the same with the calls in flight and the slowest one's age, whenever no line came for
``inspect.progress_s`` seconds (15): measured, a 20 s-per-call endpoint ran 250 s without a word.
The heartbeat is a thread (``Heartbeat``): it speaks while the event loop waits on one long call.

The run's model calls are watched on a terminal too (``physassist.calls``: retry lines, the
breaker). The sample line is an Inspect hook (``on_sample_end``), registered when this module is
imported and active only inside ``reporting(total)`` (which counts ``physassist-eval``'s sessions,
or what its ``tally`` counts: ``physassist-generate``'s slots), so other evals in the process
(tests) print nothing.
"""

from __future__ import annotations

import contextlib
import math
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from inspect_ai.hooks import Hooks, SampleEnd, hooks
from inspect_ai.log import EvalSample

from physassist import calls
from physassist.cli.printing import progress_line
from physassist.results import SCORER_NAME

#: Seconds between two session lines at least.
EVERY_S = 10.0
#: Seconds without a line after which the heartbeat speaks (``inspect.progress_s`` when unset).
HEARTBEAT_S = 15.0


class Heartbeat:
    """Calls ``speak()`` whenever nothing was said for ``every_s`` seconds, until ``stop``."""

    def __init__(self, every_s: float, speak: Callable[[], None]) -> None:
        self.every_s, self.speak = every_s, speak
        self.last = time.monotonic()
        self._stop = threading.Event()
        threading.Thread(target=self._beat, name="physassist-progress", daemon=True).start()

    def said(self) -> None:
        self.last = time.monotonic()

    def stop(self) -> None:
        self._stop.set()

    def _beat(self) -> None:
        while not self._stop.wait(max(0.05, self.last + self.every_s - time.monotonic())):
            if time.monotonic() - self.last >= self.every_s:
                self.speak()
                self.said()


@contextlib.contextmanager
def beating(every_s: float, speak: Callable[[], None]) -> Iterator[Heartbeat]:
    """A ``Heartbeat`` for the block."""
    beat = Heartbeat(every_s, speak)
    try:
        yield beat
    finally:
        beat.stop()


def say(line: str) -> None:
    """Where the run's call lines go (``physassist.calls``): stdout, at once."""
    print(line, flush=True)


class Tally(Protocol):
    """What a run counts for its progress lines: each finished sample, and the line."""

    def add(self, sample: EvalSample) -> None: ...

    def line(self, tail: str = "") -> None: ...


@dataclass
class SessionTally:
    """``physassist-eval``'s: sessions done, their mRS so far, unscored turns."""

    total: int
    done: int = 0
    session_means: list[float] = field(default_factory=list)
    unscored: int = 0

    def add(self, sample: EvalSample) -> None:
        score = (sample.scores or {}).get(SCORER_NAME)
        turns = (score.metadata or {}).get("turns") if score is not None else None
        turns = turns if isinstance(turns, list) else []
        self.done += 1
        scores = [float(t["score"]) for t in turns if t.get("status") == "scored" and t.get("score") is not None]
        self.unscored += len(turns) - len(scores)
        if scores:
            self.session_means.append(sum(scores) / len(scores))

    @property
    def mrs(self) -> float:
        means = self.session_means
        return sum(means) / len(means) * 100 if means else math.nan

    def line(self, tail: str = "") -> None:
        progress_line(self.done, self.total, self.mrs, self.unscored, tail)


_active: tuple[Tally, Heartbeat] | None = None


@hooks(name="physassist_progress", description="one line per finished sample when stdout is not a terminal")
class SampleProgress(Hooks):
    def enabled(self) -> bool:
        return _active is not None

    async def on_sample_end(self, data: SampleEnd) -> None:
        if _active is None:
            return
        tally, beat = _active
        tally.add(data.sample)
        if time.monotonic() - beat.last >= EVERY_S:
            beat.said()
            tally.line()


@contextlib.contextmanager
def reporting(total: int, *, every_s: float | None = None,
              tally: Callable[[int], Tally] = SessionTally) -> Iterator[None]:
    """While the block runs: watch its model calls, and when stdout is not a terminal print a
    line per finished sample of ``total`` (at most one per ``EVERY_S``; ``tally`` counts) and a
    heartbeat after ``every_s`` seconds without a line (default ``HEARTBEAT_S``)."""
    global _active
    with calls.watching(say):
        if sys.stdout.isatty():
            yield
            return
        counts = tally(total)
        with beating(every_s or HEARTBEAT_S, lambda: counts.line(calls.in_flight())) as beat:
            _active = (counts, beat)
            try:
                yield
            finally:
                _active = None
