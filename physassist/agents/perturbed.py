"""``physassist/perturbed``: the oracle, with every number of its answers made up.

It makes the gold tool calls, so it holds the right record, then states the gold answer with
each number changed (``x -> 1.37 x + 7`` in the last place written: ``1.8 mg/dL -> 3.2``,
``given: 8 -> 18``, ``0 -> 7``) and each date moved three days on. Its answers read like the
oracle's and pass the same concept items; the grounding check finds every changed value,
dose count and date the record holds otherwise (contradicted) and the rules judge's value
items fail. The sanity anchor of ``physassist.grounding`` (tests/scorers/test_grounding_*.py).
"""

from __future__ import annotations

import datetime as dt
import re

from physassist.data import Session
from physassist.grounding.text import find_dates

from .oracle import OracleAgent

#: A number not glued to a letter ("A1c", "J189" and "10^9" keep theirs).
_NUMBER = re.compile(r"(?<![A-Za-z0-9_.^])\d+(?:\.\d+)?(?![A-Za-z0-9_^])")
DAYS = 3


def _number(match: re.Match[str]) -> str:
    written = match.group(0)
    places = len(written.split(".", 1)[1]) if "." in written else 0
    value = float(written) * 1.37 + 7 * 10.0**-places
    return f"{value:.{places}f}"


def _date(day: str, time: str | None) -> str:
    moved = (dt.date.fromisoformat(day) + dt.timedelta(days=DAYS)).isoformat()
    return f"{moved} {time}" if time else moved


def perturb(text: str) -> str:
    """``text`` with every number changed and every date moved ``DAYS`` days on (written
    ``YYYY-MM-DD[ HH:MM]``)."""
    out, at = [], 0
    for date in find_dates(text):
        out.append(_NUMBER.sub(_number, text[at : date.start]))
        out.append(_date(date.day, date.time))
        at = date.end
    out.append(_NUMBER.sub(_number, text[at:]))
    return "".join(out)


class PerturbedAgent(OracleAgent):
    """The oracle's calls, its answers with the numbers made up."""

    def __init__(
        self, model_name: str = "perturbed", dataset: str = "sample", **args: object
    ) -> None:
        super().__init__(model_name, dataset, **args)

    def answer(self, session: Session, turn: int, language: str) -> str:
        return perturb(super().answer(session, turn, language))
