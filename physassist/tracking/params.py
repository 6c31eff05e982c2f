"""Flatten a resolved experiment config into short, readable MLflow params.

The identity of each group is collapsed onto the group's own name (``model.name`` ->
``model``, ``query.mode`` -> ``query``, ``language.code`` -> ``language``), so the MLflow UI
shows ``model=physassist/oracle, query=explicit`` columns; everything else keeps its dotted
path (``terminal.budget``, ``inspect.limit``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from physassist.options import mlflow_names

# Params that say where/how a run is executed or logged, not what is measured: ignored when
# deciding whether two runs are the same experiment up to one option.
EXECUTION_PREFIXES: tuple[str, ...] = (
    "tracking.",
    "inspect.log_dir",
    "inspect.display",
    "inspect.log_realtime",
    "inspect.log_level",
    "inspect.max_connections",
    "inspect.max_samples",
    "inspect.fail_on_error",
    "inspect.retry_on_error",
    "inspect.max_retries",
    "inspect.timeout",
    "inspect.attempt_timeout",
    "prices.",
)

MAX_PARAM_CHARS = 6000  # MLflow's limit on a param value
_SAFE_KEY = re.compile(r"[^A-Za-z0-9_\-. /]")


def format_value(value: Any) -> str:
    """Render a config value the way it would be typed as a Hydra override."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | dict):
        text = json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))
    else:
        text = str(value)
    return text if len(text) <= MAX_PARAM_CHARS else text[: MAX_PARAM_CHARS - 3] + "..."


def flatten_config(
    config: Mapping[str, Any], *, skip: Iterable[str] = ("hydra",)
) -> dict[str, str]:
    """``{short key: value string}`` for every leaf of a resolved config (a plain dict)."""
    skipped = set(skip)
    names = mlflow_names()
    out: dict[str, str] = {}

    def walk(node: Any, path: tuple[str, ...]) -> None:
        if isinstance(node, Mapping) and node:
            for key, child in node.items():
                walk(child, (*path, str(key)))
            return
        if isinstance(node, Mapping):  # empty mapping: keep it visible
            node = {}
        key = names.get(path[:2]) if len(path) == 2 else None
        name = key or ".".join(path)
        out[_SAFE_KEY.sub("_", name)] = format_value(node)

    for top, value in config.items():
        if top in skipped:
            continue
        walk(value, (str(top),))
    return out


def is_execution_param(key: str) -> bool:
    """True for params about where/how a run executed (see EXECUTION_PREFIXES)."""
    return key.startswith(EXECUTION_PREFIXES)


def experiment_params(params: Mapping[str, str]) -> dict[str, str]:
    """The params that define what a run measures (execution details removed)."""
    return {k: v for k, v in params.items() if not is_execution_param(k)}
