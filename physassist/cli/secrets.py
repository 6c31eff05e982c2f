"""No secret in the config: a password in a URL or a key-like value is refused before anything
is written.

Whatever the composed config holds is copied into Hydra's ``.hydra/config.yaml``,
``hydra.yaml`` and ``overrides.yaml``, a sweep's ``multirun.yaml``, Inspect's log (its
``_journal/start.json`` and the ``.eval``), the MLflow params and the console. Redacting every
one of those copies is a chase; refusing the value is one check. ``SecretsCallback`` (Hydra's
``on_run_start`` / ``on_multirun_start``, conf/eval.yaml) runs after composition and before Hydra
creates its output directory, so a refused command leaves no file behind. Keys are read from
the environment instead: ``api_key_env`` names the variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

#: ``scheme://user:password@host``: credentials in a URL.
USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
#: Keys whose value is a credential (``api_key_env``, which names a variable, is not one).
SECRET_KEY = re.compile(r"(?:^|[_.\-])(?:api_?key|(?:access_?|auth_?|bearer_?)?token|password|passwd|secret(?:_?key)?)$", re.I)


def _leaves(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, f"{prefix}{key}.")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, f"{prefix}{i}.")
    else:
        yield prefix.rstrip("."), node


def _instead(key: str) -> str:
    """Where the credential goes instead."""
    group = key.split(".", 1)[0]
    if group in ("model", "judge", "patient", "generator"):
        return f"an environment variable named by {group}.api_key_env"
    if group == "tracking":
        return "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD"
    return "an environment variable"


def problem(key: str, value: Any) -> str | None:
    """Why ``key=value`` may not be in a config (never quoting the secret), or None."""
    if value is None or value == "":
        return None
    if isinstance(value, str) and USERINFO.search(value):
        return (
            f"{key}: a password in a URL would be written to Hydra's output dir, Inspect's log and MLflow; "
            f"drop the user:password@ part and put the credential in {_instead(key)}"
        )
    if SECRET_KEY.search(key.rsplit(".", 1)[-1]):
        return (
            f"{key}: a key in the config would be written to Hydra's output dir, Inspect's log and MLflow; "
            f"put it in {_instead(key)}"
        )
    return None


def check(config: DictConfig) -> str | None:
    """The first secret in the composed config or its command-line overrides, as one line."""
    data = OmegaConf.to_container(config, resolve=False)
    assert isinstance(data, dict)
    hydra = data.pop("hydra", None) or {}
    for key, value in _leaves(data):
        if found := problem(key, value):
            return found
    overrides = (hydra.get("overrides") or {}).get("task") or []
    params = (hydra.get("sweeper") or {}).get("params") or {}
    pairs = [str(o).split("=", 1) for o in overrides] + [[k, str(v)] for k, v in params.items()]
    for key, value in (p for p in pairs if len(p) == 2):
        if found := problem(key.lstrip("+~"), value):
            return found
    return None


class SecretsCallback(Callback):
    """Refuse a secret in the config before Hydra writes anything (exit status 2)."""

    def _check(self, config: DictConfig) -> None:
        if found := check(config):
            from physassist.cli.printing import fail

            fail(found)

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._check(config)
