"""A signal ends a run as KILLED, never RUNNING: SIGTERM and SIGHUP end it like Ctrl-C (SIGINT):
its runs are marked KILLED with the reason, and the command exits 128 + the signal's number (143,
129; 130 for Ctrl-C).

``kill``, ``timeout``, ``docker stop`` and a SLURM preemption send SIGTERM; a closed terminal
sends SIGHUP. Python's default for both is to die at once, leaving the MLflow run RUNNING with no
end. ``install`` turns them into the same path as Ctrl-C: the handler notes which signal came and
raises SIGINT in this process, so Inspect cancels the eval and keeps its log, the run's holder
(``tracking.claims.holding``) ends it KILLED and the sweep closes its parent. A process whose
SIGINT is ignored (a worker) gets the ``KeyboardInterrupt`` raised directly.

SIGINT keeps Python's own handler: Inspect's event loop (asyncio, anyio) turns the first Ctrl-C
into a cancellation that writes the eval's log only when that handler is in place. So SIGINT is
noticed beside it, through the wakeup fd Python writes every signal's number to (``_listen``): a
thread reads it and starts the same watch as SIGTERM's.

The interrupt can be lost, and the command then went on as if no signal came (measured: a
2,000-epoch eval ran 13 min to FINISHED after its Ctrl-C). The ``KeyboardInterrupt`` is raised
wherever the main thread is when Python runs the handler: inside a finalizer (``__del__``, a
weakref callback) Python swallows it ("Exception ignored in ..."), so it is delivered again at
once (``_unraisable``); a library that catches it, or the cancellation it becomes in Inspect's
event loop, is not seen here, so after any of the signals it is delivered again every
``AGAIN_S`` until the command takes it (``taken``: the eval came back cancelled, or the run's
holder or the sweep's handler has the interrupt). A library may also turn it into an error of its
own (pydantic reports one raised in a serializer as a ``ValueError``): ``interrupted`` tells the
command that such an error is the interrupt, not bad input. And the ending itself (a library
joining its threads or workers, a store that does not answer) is bounded: ``EXIT_BOUND_S`` after
the signal the process kills its child processes and exits 128 + the signal; runs it left RUNNING
have a dead owner, so the next command marks them KILLED.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable

HANDLED = (signal.SIGTERM, signal.SIGHUP)
AGAIN_S = 5.0  # not taken by then: delivered again (a taken one ended in 0.3-3.9 s in 44 runs at load 10)
EXIT_BOUND_S = 60.0  # after a signal the process ends by then, its clean-up done or not

_received: int | None = None
_taken = threading.Event()
_watching = threading.Lock()  # taken, never released, by the one watch
_wakeup: tuple[socket.socket, socket.socket] | None = None  # (read, write) ends of the wakeup fd
_reading = threading.RLock()  # held while bytes of the wakeup fd are taken and noted


def _arrived(signum: int) -> None:
    """``signum`` came: the first one is the reason; the watch starts once. Takes no lock it
    waits for: a signal handler may run it in the main thread while the main thread runs it."""
    global _received
    if _received is None:
        _received = signum
    if _watching.acquire(blocking=False):
        threading.Thread(target=_watch_ending, args=(_received,), name="physassist-signal", daemon=True).start()


def _handle(signum: int, frame: object) -> None:
    _arrived(signum)
    if signal.getsignal(signal.SIGINT) in (signal.SIG_IGN, signal.SIG_DFL, None):
        raise KeyboardInterrupt
    signal.raise_signal(signal.SIGINT)


def _read(reader: socket.socket, wait: bool = False) -> None:
    """Note the signals among the numbers Python wrote to the wakeup fd: SIGINT, which has no
    handler of ours, and SIGTERM or SIGHUP whose handler the main thread has not run yet (stuck in
    C code, the ending is still bounded). ``wait``: until the socket closes (the reading thread),
    else what is there. Bytes are taken and noted under ``_reading``, so a caller of
    ``interrupted`` never misses a signal the reading thread has taken but not noted yet."""
    while True:
        if wait:
            try:
                select.select([reader], [], [])
            except (OSError, ValueError):  # closed
                return
        with _reading:
            try:
                data = reader.recv(64, socket.MSG_DONTWAIT)
            except BlockingIOError:  # taken by ``interrupted`` meanwhile, or nothing there
                data = None
            except OSError:  # closed
                return
            if data == b"":
                return
            for signum in data or b"":
                if signum == signal.SIGINT or signum in HANDLED:
                    _arrived(signum)
        if not wait and not data:
            return


def _listen() -> None:
    """Have Python write each signal's number to a socket this module reads (main thread).
    Left alone when another wakeup fd is set (an event loop's ``add_signal_handler``)."""
    global _wakeup
    if _wakeup is not None:
        return
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return
    _wakeup = (reader, writer)
    threading.Thread(target=_read, args=(reader, True), name="physassist-wakeup", daemon=True).start()


def _forked() -> None:
    """A child forked without exec starts with no signal, and writes none of its own to its
    parent's socket."""
    global _received, _taken, _watching, _wakeup, _reading
    _received, _taken, _watching, _wakeup = None, threading.Event(), threading.Lock(), None
    _reading = threading.RLock()
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:  # forked from another thread: no Python signal handling there
        pass


os.register_at_fork(after_in_child=_forked)


def interrupted() -> bool:
    """A signal came: an error raised since may be the interrupt wrapped by a library, never
    bad input or a fault. Reads the wakeup fd here too, so a SIGINT whose ``KeyboardInterrupt``
    this thread already saw is known even before the reading thread noted it."""
    if _wakeup is not None:
        _read(_wakeup[0])
    return _received is not None


def interrupt_instead(exc: BaseException) -> None:
    """Raise the interrupt in place of ``exc`` when a signal came (see ``interrupted``)."""
    if interrupted():
        raise KeyboardInterrupt from exc


def taken() -> None:
    """The command has the interrupt and is ending (no need to deliver it again)."""
    _taken.set()


def _watch_ending(signum: int) -> None:
    """Deliver the signal again until it is taken; at ``EXIT_BOUND_S`` end the process."""
    deadline = time.monotonic() + EXIT_BOUND_S
    while time.monotonic() + AGAIN_S < deadline and not _taken.wait(AGAIN_S):
        signal.pthread_kill(_main_ident(), signum)
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
    signal.pthread_kill(_main_ident(), signum)


def _main_ident() -> int:
    ident = threading.main_thread().ident
    assert ident is not None  # the main thread runs from the start
    return ident


class _Unraisable:
    """``sys.unraisablehook`` that delivers again an interrupt a finalizer swallowed."""

    physassist = True  # this hook is installed (``install`` adds it once)

    def __init__(self, hook: Callable[[sys.UnraisableHookArgs], object]) -> None:
        self._hook = hook

    def __call__(self, info: sys.UnraisableHookArgs) -> None:
        self._hook(info)
        if isinstance(info.exc_value, KeyboardInterrupt):  # sent again once out of the finalizer
            threading.Thread(target=_again, args=(_received or signal.SIGINT,), daemon=True).start()


def install() -> None:
    """Handle SIGTERM and SIGHUP like Ctrl-C, and notice Ctrl-C (from the main thread only;
    elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in HANDLED:
        if signal.getsignal(signum) is not _handle:
            signal.signal(signum, _handle)
    _listen()
    if not getattr(sys.unraisablehook, "physassist", False):
        sys.unraisablehook = _Unraisable(sys.unraisablehook)


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
