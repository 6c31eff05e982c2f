"""How much the commands print: by default the result, where it went and the warnings that
matter; ``-v`` (or ``inspect.display=...``) brings back everything the libraries say.

Measured before (README quick start, output not a TTY): a default eval printed 262 lines, 250 of
them Inspect's per-metric dump; ``physassist-rescore judge=llm`` one httpx INFO line per grader
call (432 of 472 lines); MLflow a "Flushing the async trace logging queue" line at every exit.
So, unless verbose: Inspect's display is ``none`` (``inspect.display`` chooses another), the
HTTP clients' and MLflow's INFO lines are dropped (their warnings stay), and so are the numeric
warnings of plotting an empty figure. ``setup()`` runs in every process that runs a job (sweep
workers too, and the tracking agent); ``-v`` travels to them in the environment. It also sets
the collector such a process runs with (``gc_freeze.command_start``).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings

from physassist.gc_freeze import command_start

VERBOSE_ENV = "PHYSASSIST_VERBOSE"
VERBOSE_FLAGS = ("-v", "--verbose")
#: Loggers that speak at INFO per request or at exit; their warnings and errors still show.
CHATTY_LOGGERS = (
    "httpx",
    "httpx2",
    "httpcore",
    "httpcore2",
    "openai",
    "anthropic",
    "urllib3",
    "mlflow",
    "alembic",
)
_EMPTY_PLOT_WARNINGS = (
    r"Attempting to set identical (low and high|left == right|bottom == top)",
    r"Mean of empty slice",
    r"All-NaN (slice|axis) encountered",
    r"invalid value encountered in (divide|scalar divide)",
)


def take_verbose_flag(argv: list[str]) -> bool:
    """Remove ``-v`` / ``--verbose`` from ``argv`` (Hydra does not know them) and remember it
    for this process and the job processes it starts. True when verbose."""
    found = [a for a in argv[1:] if a in VERBOSE_FLAGS]
    argv[1:] = [a for a in argv[1:] if a not in VERBOSE_FLAGS]
    if found:
        os.environ[VERBOSE_ENV] = "1"
    return verbose()


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV, "") not in ("", "0")


def inspect_display(configured: str | None) -> str:
    """Inspect's display: the configured one, else ``full`` when verbose and ``none`` otherwise
    (the command prints its own result)."""
    return configured or ("full" if verbose() else "none")


def setup() -> None:
    """Set up this process for a command's work: its collector (``command_start``, from the
    start, so the imports and the task build run with it) and, unless verbose, quiet libraries."""
    command_start()
    _quiet_cancellations()
    if verbose():
        return
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")  # read when mlflow is imported
    for name in CHATTY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    # A figure of a run with nothing scored plots NaNs: matplotlib's complaint about singular
    # axis limits and numpy's about empty slices say nothing the run's own lines do not (they
    # are raised from our plotting code, so they are matched by their text).
    for text in _EMPTY_PLOT_WARNINGS:
        warnings.filterwarnings("ignore", message=text)


def _cancelled(exc: BaseException | None) -> bool:
    """Whether ``exc`` is an interrupt or the cancellation it caused (in its chain, or the
    members of an exception group)."""
    import asyncio

    for _ in range(10):  # bounded: a chain is a few links
        if exc is None:
            return False
        if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
            return True
        if isinstance(exc, BaseExceptionGroup) and all(_cancelled(e) for e in exc.exceptions):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class _AfterASignal(logging.Filter):
    """After Ctrl-C, SIGTERM or SIGHUP the command says so in one line; the tracebacks libraries
    log while they are cancelled (asyncio's "unhandled exception during asyncio.run() shutdown",
    Inspect's control server) are not shown (225 lines for a SIGTERM during a model call)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from physassist import signals

        return not (record.exc_info and _cancelled(record.exc_info[1]) and signals.interrupted())


def _quiet_cancellations() -> None:
    """On every handler this process logs through (Hydra configures them per job), and on
    logging's last resort."""
    for handler in [*logging.getLogger().handlers, logging.lastResort]:
        if handler is not None and not any(isinstance(f, _AfterASignal) for f in handler.filters):
            handler.addFilter(_AfterASignal())


def start() -> None:
    """For a console entry point: take ``-v`` out of ``sys.argv`` and quiet this process."""
    take_verbose_flag(sys.argv)
    setup()
