"""SIGTERM and SIGHUP end a run like Ctrl-C: its runs are marked KILLED with the reason, and the
command exits 128 + the signal's number (143, 129; 130 for Ctrl-C).

``kill``, ``timeout``, ``docker stop`` and a SLURM preemption send SIGTERM; a closed terminal
sends SIGHUP. Python's default for both is to die at once, leaving the MLflow run RUNNING with no
end. ``install`` turns them into the same path as Ctrl-C: the handler notes which signal came and
raises SIGINT in this process, so Inspect cancels the eval and keeps its log, the run's holder
(``tracking.claims.holding``) ends it KILLED and the sweep closes its parent. A process whose
SIGINT is ignored (a worker) gets the ``KeyboardInterrupt`` raised directly.
"""

from __future__ import annotations

import signal
import threading

HANDLED = (signal.SIGTERM, signal.SIGHUP)

_received: int | None = None


def _handle(signum: int, frame: object) -> None:
    global _received
    _received = signum
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)


def install() -> None:
    """Handle SIGTERM and SIGHUP like Ctrl-C (from the main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in HANDLED:
        if signal.getsignal(signum) is not _handle:
            signal.signal(signum, _handle)


def received() -> int:
    """The signal that interrupted this process (SIGINT when none of ``HANDLED`` came)."""
    return _received or signal.SIGINT


def exit_code() -> int:
    """128 + the signal's number: 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP."""
    return 128 + int(received())


def reason() -> str:
    """Why the run was interrupted, for the run's ``physassist.end_reason`` tag."""
    sig = received()
    return "interrupted (Ctrl-C)" if sig == signal.SIGINT else f"interrupted ({signal.Signals(sig).name})"
