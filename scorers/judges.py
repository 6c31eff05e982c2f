"""The judges (the ``judge`` option), each declared by its own module.

Every ``scorers/*_judge.py`` module that defines ``JUDGE`` (a ``scorers.judgement.Judge``) is
one judge, registered under its name: the scorer dispatches through ``JUDGES`` and the CLI binds
the role ``grader`` from ``Judge.graders``, so adding a judge is its module, its value in
``physassist.options.Judge`` and ``conf/judge/<name>.yaml``. ``markdown_table()`` is the
judges table of docs/config.md and part of ``physassist-eval --help``
(``tests/cli/test_options.py`` checks both).
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from physassist.options import values
from scorers.judgement import Graders, Judge

JUDGES: dict[str, Judge] = {}
for _module in pkgutil.iter_modules([str(Path(__file__).parent)]):
    if _module.name.endswith("_judge"):
        _judge = getattr(importlib.import_module(f"scorers.{_module.name}"), "JUDGE", None)
        if isinstance(_judge, Judge):
            JUDGES[_judge.name] = _judge


def graders(mode: str) -> Graders:
    """The models judge ``mode`` grades with (``Judge.graders``); ``none`` for a mode that is no
    registered judge (``physassist-rescore``'s ``judge=human``)."""
    return JUDGES[mode].graders if mode in JUDGES else "none"


#: What the role ``grader`` is bound to, as the table says it.
GRADERS = {
    "none": "-",
    "one": "one model (`judge.model`)",
    "many": "a list of models (`judge.models`, at least two)",
}


def markdown_table() -> str:
    """The judges table of docs/config.md: ``judge=<name>``, the role ``grader`` it needs, what
    it does."""
    rows = ["| `judge=` | role `grader` | what it does |", "|---|---|---|"]
    rows += [
        f"| `{j.name}` | {GRADERS[j.graders]} | {j.summary} |"
        for j in (JUDGES[n] for n in values("judge"))
    ]
    return "\n".join(rows)
