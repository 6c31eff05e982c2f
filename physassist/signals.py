"""SIGTERM and SIGHUP end a run like Ctrl-C: its runs are marked KILLED with the reason, and the
command exits 128 + the signal's number (143, 129; 130 for Ctrl-C).

``kill``, ``timeout``, ``docker stop`` and a SLURM preemption send SIGTERM; a closed terminal
sends SIGHUP. Python's default for both is to die at once, leaving the MLflow run RUNNING with no
end. ``install`` turns them into the same path as Ctrl-C: the handler notes which signal came and
raises SIGINT in this process, so Inspect cancels the eval and keeps its log, the run's holder
(``tracking.claims.holding``) ends it KILLED and the sweep closes its parent. A process whose
SIGINT is ignored (a worker) gets the ``KeyboardInterrupt`` raised directly.

The interrupt can be lost, and the command then went on as if no signal came (measured: a
2,000-epoch eval ran 13 min to FINISHED after its Ctrl-C). The ``KeyboardInterrupt`` is raised
wherever the main thread is when Python runs the handler: inside a finalizer (``__del__``, a
weakref callback) Python swallows it ("Exception ignored in ..."), so it is delivered again at
once (``_unraisable``); a library that catches it, or the cancellation it becomes in Inspect's
event loop, is not seen here, so after SIGTERM or SIGHUP the signal is delivered again every
``AGAIN_S`` until the command takes it (``taken``: the eval came back cancelled, or the run's
holder or the sweep's handler has the interrupt). And the ending
itself (a library joining its threads or workers, a store that does not answer) is bounded:
``EXIT_BOUND_S`` after the signal the process kills its child processes and exits 128 + the
signal; runs it left RUNNING have a dead owner, so the next command marks them KILLED.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

HANDLED = (signal.SIGTERM, signal.SIGHUP)
AGAIN_S = 5.0  # not taken by then: delivered again (a taken one ended in 0.3-3.9 s in 44 runs at load 10)
EXIT_BOUND_S = 60.0  # after SIGTERM/SIGHUP the process ends by then, its clean-up done or not

_received: int | None = None
_taken = threading.Event()
_watch: threading.Thread | None = None


def _handle(signum: int, frame: object) -> None:
    global _received, _watch
    _received = signum
    if _watch is None:
        _watch = threading.Thread(target=_watch_ending, args=(signum,), name="physassist-signal", daemon=True)
        _watch.start()
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)


def taken() -> None:
    """The command has the interrupt and is ending (no need to deliver it again)."""
    _taken.set()


def _watch_ending(signum: int) -> None:
    """Deliver the signal again until it is taken; at ``EXIT_BOUND_S`` end the process."""
    deadline = time.monotonic() + EXIT_BOUND_S
    while time.monotonic() + AGAIN_S < deadline and not _taken.wait(AGAIN_S):
        signal.pthread_kill(threading.main_thread().ident, signum)
    time.sleep(max(0.0, deadline - time.monotonic()))
    _end_now(signum)


def _end_now(signum: int) -> None:
    """The ending did not finish within ``EXIT_BOUND_S``: no child outlives this process."""
    import psutil

    name = signal.Signals(signum).name
    print(f"physassist-eval: still ending {EXIT_BOUND_S:.0f} s after {name}; stopped (runs left RUNNING are marked KILLED by the next command)", file=sys.stderr, flush=True)
    try:
        children = psutil.Process().children(recursive=True)
    except psutil.Error:
        children = []
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    os._exit(128 + signum)


def _again(signum: int) -> None:
    time.sleep(0.05)
    signal.pthread_kill(threading.main_thread().ident, signum)


def _unraisable(hook):
    """``sys.unraisablehook`` that delivers again an interrupt a finalizer swallowed."""

    def unraisable(info) -> None:
        hook(info)
        if isinstance(info.exc_value, KeyboardInterrupt):  # sent again once out of the finalizer
            threading.Thread(target=_again, args=(_received or signal.SIGINT,), daemon=True).start()

    unraisable.physassist = True
    return unraisable


def install() -> None:
    """Handle SIGTERM and SIGHUP like Ctrl-C (from the main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in HANDLED:
        if signal.getsignal(signum) is not _handle:
            signal.signal(signum, _handle)
    if not getattr(sys.unraisablehook, "physassist", False):
        sys.unraisablehook = _unraisable(sys.unraisablehook)


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
