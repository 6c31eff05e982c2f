"""Run and sweep ids as a user types them: the whole id or any unique prefix of at least
``MIN_PREFIX`` characters.

Tables print 8 characters of a run id and a sweep id whole (12); a command that takes an id
takes what another one printed. This is the one resolver every command uses
(``physassist-rescore source=``, ``physassist-report --sweep`` and ``--runs``): a prefix that
matches nothing, or several runs or sweeps, is refused with one line naming the candidates.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from physassist.tracking.mlflow_store import with_retries

MIN_PREFIX = 6
#: How many candidates an ambiguous prefix names.
SHOWN = 5
_HEX = re.compile(r"^[0-9a-f]+$")
_KIND_TAG = "physassist.kind"  # runs.KIND_TAG: "sweep" marks a sweep's parent run
_SWEEP_TAG = "physassist.sweep_id"  # runs.SWEEP_TAG

Kind = Literal["run", "sweep"]


class IdError(ValueError):
    """An id that names no run or sweep, or more than one; the message says which."""


@dataclass(frozen=True)
class Match:
    kind: Kind
    id: str  # the whole run id (32 hex) or sweep id (12 hex)
    name: str = ""  # the run's name, or the sweep parent's


def is_id(text: str) -> bool:
    """``text`` has the shape of an id or of a prefix of one (hexadecimal)."""
    return bool(_HEX.match(text.strip().lower()))


def resolve(
    client: Any,
    experiment_ids: Sequence[str],
    text: str,
    kinds: Sequence[Kind] = ("run", "sweep"),
    *,
    where: str = "",
) -> Match:
    """The one run or sweep of ``experiment_ids`` whose id is ``text`` or starts with it.

    ``client`` is an ``mlflow.MlflowClient``; ``kinds`` what the command takes; ``where`` an
    MLflow filter the runs must also match (a command that takes only experiment runs says
    so, so a report run with the same prefix is no rival). Only an id of ``MIN_PREFIX`` or more
    hexadecimal characters is taken as a prefix; anything else must be a whole id. Raises
    ``IdError``."""
    what = " or ".join(f"{k} id" for k in kinds)
    text = text.strip()
    prefix = is_id(text) and len(text) >= MIN_PREFIX
    if prefix:
        text = text.lower()
    elif "'" in text:
        raise IdError(f"{text}: not a {what}")
    found: list[Match] = []
    if "run" in kinds:
        test = f"LIKE '{text}%'" if prefix else f"= '{text}'"
        clauses = [f"attributes.run_id {test}", *([where] if where else [])]
        found += [
            Match("run", r.info.run_id, r.info.run_name or "")
            for r in _search(client, experiment_ids, clauses)
        ]
    if "sweep" in kinds:  # a sweep's runs carry its id; its parent (kind "sweep") its name
        test = f"LIKE '{text}%'" if prefix else f"= '{text}'"
        sweeps: dict[str, str] = {}
        for r in _search(client, experiment_ids, [f"tags.`{_SWEEP_TAG}` {test}"]):
            sweep_id = r.data.tags[_SWEEP_TAG]
            parent = r.data.tags.get(_KIND_TAG) == "sweep"
            if sweep_id not in sweeps or parent:
                sweeps[sweep_id] = (r.info.run_name or "") if parent else ""
        found += [Match("sweep", sweep_id, name) for sweep_id, name in sweeps.items()]
    if len(found) == 1:
        return found[0]
    if not found:
        if is_id(text) and len(text) < MIN_PREFIX:
            raise IdError(
                f"{text}: no {what} is {text}, and a prefix needs at least {MIN_PREFIX} characters"
            )
        raise IdError(f"{text}: no {what} " + ("starts with it" if prefix else "is that"))
    shown = ", ".join(
        f"{m.kind} {m.id} ({m.name})" if m.name else f"{m.kind} {m.id}" for m in found[:SHOWN]
    )
    more = f" and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    raise IdError(f"{text}: {len(found)} ids start with it: {shown}{more}; give more characters")


def _search(client: Any, experiment_ids: Sequence[str], clauses: list[str]) -> list[Any]:
    return list(
        with_retries(
            lambda: client.search_runs(
                list(experiment_ids), filter_string=" and ".join(clauses), max_results=1000
            )
        )
    )
