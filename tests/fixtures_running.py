"""A console script of the venv running in the background, each line it prints stamped with the
seconds since it started: what a user watching a log file sees, and when."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from fixtures_tracking import VENV_BIN


class Running:
    """``Running(["physassist-eval", ...], cwd=...)``: stdout and stderr are pipes (not a
    terminal), read as they come; ``out`` and ``err`` are (seconds, line) pairs."""

    def __init__(
        self, args: Sequence[str], *, cwd: Path, env: dict[str, str] | None = None
    ) -> None:
        full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "HYDRA_FULL_ERROR": "0", **(env or {})}
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(
            [str(VENV_BIN / args[0]), *args[1:]],
            cwd=cwd,
            env=full_env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.out: list[tuple[float, str]] = []
        self.err: list[tuple[float, str]] = []
        self._readers = [
            threading.Thread(target=self._read, args=(s, into), daemon=True)
            for s, into in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))
        ]
        for reader in self._readers:
            reader.start()

    def _read(self, stream: IO[str], into: list[tuple[float, str]]) -> None:
        for line in stream:
            into.append((time.perf_counter() - self.start, line.rstrip("\n")))

    def until(self, done: Callable[[], bool], timeout: float) -> None:
        """Until ``done()`` (asserted; or the command ended, or ``timeout`` s from its start)."""
        while (
            not done() and self.proc.poll() is None and time.perf_counter() - self.start < timeout
        ):
            time.sleep(0.1)
        assert done(), (
            f"not so after {time.perf_counter() - self.start:.0f} s: {self.out[-5:]} {self.err[-5:]}"
        )

    def wait_for(self, found: Callable[[list[tuple[float, str]]], bool], timeout: float) -> None:
        """Until ``found(self.out)``: a line printed."""
        self.until(lambda: found(self.out), timeout)

    def signal_at(self, signum: int, seconds: float) -> None:
        """Send ``signum`` ``seconds`` after the start (at once if that has passed)."""
        time.sleep(max(0.0, seconds - (time.perf_counter() - self.start)))
        self.proc.send_signal(signum)

    def finish(self, timeout: float = 120) -> int:
        """Wait for the end (bounded: killed after ``timeout`` s from its start); the exit status."""
        try:
            self.proc.wait(timeout=max(1.0, timeout - (time.perf_counter() - self.start)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(
                f"not ended in {timeout:.0f} s: {self.out[-5:]} {self.err[-5:]}"
            ) from None
        finally:
            for reader in self._readers:
                reader.join(10)
        self.ended = time.perf_counter() - self.start
        return self.proc.returncode

    def lines(self, prefix: str) -> list[tuple[float, str]]:
        return [(t, line) for t, line in self.out if line.startswith(prefix)]
