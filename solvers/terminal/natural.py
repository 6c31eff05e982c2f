"""``natural`` (the reference code's loop): the first reply without tool calls ends the
turn and its text is the answer. No control tool is offered."""

from __future__ import annotations

from .base import TerminalStrategy


class Natural(TerminalStrategy):
    name = "natural"
