"""``python -m physassist.tracking FD``: a command's tracking agent (``physassist.tracking.agent``),
quiet as its command is (``physassist.cli.console``)."""

import sys

from physassist.cli import console
from physassist.tracking.agent import serve

console.setup()
serve(int(sys.argv[1]))
