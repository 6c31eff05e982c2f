"""How a turn ends (the ``terminal`` ablation); one small module per strategy.

All strategies share the loop's per-turn tool-call budget and final-answer nudge; they only
differ in the control tool they own (``TerminalStrategy.control``) and how a reply is read as
the end of a turn. Every module of this package is imported here and each
``TerminalStrategy`` subclass is registered under its ``name``: adding a strategy is a module
here, its two prompt files (``solvers/prompts/terminal_<name>_{en,zh}.txt``), its value in
``physassist.options.Terminal`` and ``conf/terminal/<name>.yaml``.
"""

from __future__ import annotations

import importlib
import pkgutil

from physassist.options import check
from physassist.vocab import PREPARE_TO_ANSWER

from .base import ControlTool, Decision, TerminalStrategy

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")

STRATEGIES: dict[str, type[TerminalStrategy]] = {
    cls.name: cls for cls in TerminalStrategy.__subclasses__() if cls.name
}
#: Tools that steer the loop (every strategy's control tool, and the released format's
#: ``prepare_to_answer``): never data tools of a menu, never counted as tool use.
CONTROL_TOOLS: frozenset[str] = frozenset(
    {PREPARE_TO_ANSWER} | {cls.control.name for cls in STRATEGIES.values() if cls.control}
)


def terminal_strategy(name: str) -> TerminalStrategy:
    """The strategy named ``name`` (checked as the ``terminal`` option)."""
    return STRATEGIES[check("terminal", name)]()


__all__ = [
    "CONTROL_TOOLS",
    "ControlTool",
    "Decision",
    "STRATEGIES",
    "TerminalStrategy",
    "terminal_strategy",
]
