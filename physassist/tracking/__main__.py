"""``python -m physassist.tracking FD [ROLE]``: a command's tracking agent, or its plotter
(``physassist.tracking.agent.ROLES``), quiet as its command is (``physassist.cli.console``)."""

import sys

from physassist.cli import console
from physassist.tracking.agent import serve

console.setup()
serve(int(sys.argv[1]), *sys.argv[2:3])
