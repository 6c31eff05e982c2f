"""`physassist-data`: validate and describe session data, build the cohort and the sessions.

    physassist-data validate SOURCE [--language en|zh] [--lenient] [--scenarios ...]
    physassist-data stats SOURCE [--language en|zh] [--json]
    physassist-data synth --out DIR --subjects N [--seed S] [--chunk-size N] [--workers N] \
        [--compresslevel 0-9]
    physassist-data build --store SOURCE --out DIR [--per-slot N] [--seed S] [--force] [...]
    physassist-data build-sample [--root data/sample] [--seed S]

The subcommands live in ``physassist.cli.data_commands`` (shared with ``python -m
physassist.synth``); exit codes there.
"""

from __future__ import annotations

import sys

from physassist.cli.data_commands import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
