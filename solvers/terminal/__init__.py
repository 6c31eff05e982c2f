"""How a turn ends (the ``terminal`` ablation); one small module per strategy.

All strategies share the loop's per-turn tool-call budget and final-answer nudge; they only
differ in which control tool is offered and how a reply is read as the end of a turn.
"""

from __future__ import annotations

from physassist.options import check

from .base import Decision, TerminalStrategy
from .natural import Natural
from .prepare_to_answer import PrepareToAnswer
from .submit import Submit

STRATEGIES: dict[str, type[TerminalStrategy]] = {
    "prepare_to_answer": PrepareToAnswer,
    "natural": Natural,
    "submit": Submit,
}


def terminal_strategy(name: str) -> TerminalStrategy:
    """The strategy named ``name`` (checked as the ``terminal`` option)."""
    return STRATEGIES[check("terminal", name)]()


__all__ = ["Decision", "TerminalStrategy", "STRATEGIES", "terminal_strategy"]
