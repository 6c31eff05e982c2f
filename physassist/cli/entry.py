"""What every console script does around its work: SIGTERM and SIGHUP are Ctrl-C
(``physassist.signals``), and an interrupt ends the command in one line with exit status 128 +
the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP), never a traceback.

``physassist-eval``, ``-rescore``, ``-generate``, ``-report``, ``-data`` and ``-ehr`` each run
their work through ``run``; whatever the work holds (a run, a sweep's parent, a scratch
directory) it ends on the way out of the ``KeyboardInterrupt`` before the line is printed.
"""

from __future__ import annotations

import sys
from collections.abc import Callable


def run(program: str, work: Callable[[], int | None]) -> int:
    """Run a command's ``work`` and return its exit status (the interrupt's, if one came)."""
    from physassist import signals

    signals.install()
    try:
        return work() or 0
    except KeyboardInterrupt:
        signals.taken()
        print(f"{program}: {signals.reason()}", file=sys.stderr, flush=True)
        return signals.exit_code()
