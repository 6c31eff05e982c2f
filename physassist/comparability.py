"""The comparability key: what must be equal for two runs' scores to be compared.

Two runs' numbers compare only when they scored the same sessions against the same record,
with the same tools, judge, patient and turn rules, by the same scorer code. Each of these is a
*part* hashed from the run's params and provenance tags; the key hashes all parts. Runs are
tagged ``physassist.comparability_key`` and ``physassist.comparability.<part>``, so a pair
whose parts differ in anything but the compared factor is refused, naming the part.

Parts (and the config groups that own them, i.e. may differ when that group is the factor):

* ``dataset``: the session files' fingerprint (tag) and ``dataset.*`` params; group ``dataset``;
* ``ehr``: the EHR source fingerprint (tag); groups ``ehr``, ``dataset``;
* ``tools``: semantics and rendering (``ehr``, ``ehr.render``); group ``ehr``;
* ``judge``: kind, model(s), context and the judge prompts' version; group ``judge``;
* ``patient``: mode, model, literacy, miss policy; group ``patient``;
* ``budget``: tool calls per turn and the final-answer nudge; group ``terminal``;
* ``terminal``: the terminal strategy; group ``terminal``;
* ``scorer``: the project version and the scorer code's hash; no group (never a factor).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import metadata, util
from pathlib import Path

KEY_TAG = "physassist.comparability_key"
PART_TAG = "physassist.comparability."

PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # part: (params, tags) it hashes; a param key ending in "." takes every key under it
    "dataset": (("dataset", "scenarios", "tiers", "language"), ("physassist.dataset_fingerprint",)),
    "ehr": ((), ("physassist.ehr_fingerprint",)),
    "tools": (("ehr", "ehr.render"), ()),
    "judge": (("judge", "judge.model", "judge.models", "judge.context"), ()),
    "patient": (("patient", "patient.model", "patient.literacy", "patient.miss"), ()),
    "budget": (("terminal.budget", "terminal.nudge"), ()),
    "terminal": (("terminal",), ()),
    "scorer": ((), ()),
}
OWNERS: dict[str, tuple[str, ...]] = {
    "dataset": ("dataset", "scenarios", "tiers", "language"),
    "ehr": ("ehr", "dataset"),
    "tools": ("ehr",),
    "judge": ("judge",),
    "patient": ("patient",),
    "budget": ("terminal",),
    "terminal": ("terminal",),
    "scorer": (),
}


def _hash(*parts: object) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def _tree_hash(root: Path, patterns: Iterable[str]) -> str:
    h = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(root.glob(pattern)):
            h.update(path.relative_to(root).as_posix().encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:12]


@cache
def code_versions() -> dict[str, str]:
    """The judge prompts' version and the scorer version (project version + scorer code),
    read from the ``scorers`` package's files (never imported here)."""
    spec = util.find_spec("scorers")
    root = (
        Path(next(iter(spec.submodule_search_locations)))
        if spec and spec.submodule_search_locations
        else None
    )
    try:
        project = metadata.version("physassist")
    except metadata.PackageNotFoundError:
        project = "unknown"
    if root is None:
        return {"judge_prompts": "unknown", "scorer": f"{project}:unknown"}
    return {
        "judge_prompts": _tree_hash(root, ["prompts/*.txt"]),
        "scorer": f"{project}:{_tree_hash(root, ['*.py'])}",
    }


def parts(params: Mapping[str, str], tags: Mapping[str, str]) -> dict[str, str]:
    """Each part's short hash for a run with these params and provenance tags."""
    versions = code_versions()
    out = {}
    for name, (param_keys, tag_keys) in PARTS.items():
        values: list[object] = [(k, params.get(k)) for k in param_keys]
        values += [(k, tags.get(k)) for k in tag_keys]
        if name == "judge" and params.get("judge") != "rules":
            values.append(("prompts", versions["judge_prompts"]))
        if name == "scorer":
            values.append(("scorer", versions["scorer"]))
        out[name] = _hash(*values)
    return out


def tags_for(params: Mapping[str, str], tags: Mapping[str, str]) -> dict[str, str]:
    """The key tag and one tag per part."""
    hashed = parts(params, tags)
    return {KEY_TAG: _hash(*sorted(hashed.items())), **{PART_TAG + k: v for k, v in hashed.items()}}


def parts_of(tags: Mapping[str, str]) -> dict[str, str] | None:
    """The parts a run was tagged with (None for runs logged before the key existed)."""
    found = {k[len(PART_TAG) :]: v for k, v in tags.items() if k.startswith(PART_TAG) and v}
    return found or None


def differing(a: Mapping[str, str], b: Mapping[str, str], factor: str | None = None) -> list[str]:
    """The parts in which a and b differ that the compared ``factor`` (a config group) does
    not own: non-empty means the pair must be refused."""
    return [
        p
        for p in sorted(set(a) | set(b))
        if a.get(p) != b.get(p) and (factor is None or factor not in OWNERS.get(p, ()))
    ]
