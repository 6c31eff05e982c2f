"""``python -m physassist.synth ...`` is ``physassist-data synth ...`` (one CLI, one set of
options)."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from physassist.cli.data_commands import main as data_main


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``physassist-data synth`` with these arguments (default: the command line's)."""
    return data_main(["synth", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
