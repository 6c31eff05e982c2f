"""Nothing secret written anywhere, from the composed config on (``physassist.redaction``).

``SecretsCallback`` (Hydra's ``on_run_start`` / ``on_multirun_start`` in conf/eval.yaml,
rescore.yaml and generate.yaml) runs after composition and before Hydra writes anything. It
refuses a password in a URL (it would be part of every line naming the endpoint; the credential
belongs in the environment), and a config whose interpolations do not resolve (an unset
``${oc.env:VAR}``), each in one line with exit status 2 and no file written. Then it tells
``physassist.redaction`` which values are secret: what the config reads from the environment
into a provider's arguments (``model.args``, ``judge.args``, ...), under a secret name or from a
variable with a secret name, the keys ``api_key_env`` names, and the literal values under a
header or a secret name (so a launcher's log line quoting an override is masked too).

Hydra writes the composed config into ``.hydra/config.yaml``, ``hydra.yaml`` and
``overrides.yaml`` of every job, and a sweep's into ``multirun.yaml``, before any hook of a job
runs and with no hook in between; this module, imported when Hydra makes the callback (in a
launcher's worker process too, where the callback is unpickled), has Hydra write them redacted
(``_save_config`` of ``hydra.core.utils`` and the basic sweeper's ``OmegaConf.save``). Overrides
are redacted as Hydra parses them (``overrides``): ``+model.args.default_headers={X-Api-Key:
'***'}``.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, ListConfig, OmegaConf

from physassist import redaction

#: ``scheme://user:password@host``: credentials in a URL.
USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:[^/\s@]+@")
_ENV_VARS = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)")
_ENV_REQUIRED = re.compile(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)\}")  # no default after a comma
_PLAIN = re.compile(r"[\w\-./:@]+")  # an override value Hydra reads back without quotes


def _leaves(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _leaves(value, (*prefix, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _leaves(value, (*prefix, str(i)))
    else:
        yield prefix, node


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
    if isinstance(value, str) and USERINFO.search(value):
        return (
            f"{key}: a password in a URL would be written to Hydra's output dir, Inspect's log and "
            f"MLflow; drop the user:password@ part and put the credential in {_instead(key)}"
        )
    return None


def _pairs(config: DictConfig) -> list[tuple[str, str]]:
    """The command line's overrides (and a sweep's ``hydra.sweeper.params``) as key, value."""
    hydra = OmegaConf.to_container(config.hydra, resolve=False) if "hydra" in config else {}
    assert isinstance(hydra, dict)
    overrides = (hydra.get("overrides") or {}).get("task") or []
    params = (hydra.get("sweeper") or {}).get("params") or {}
    pairs = [str(o).split("=", 1) for o in overrides] + [[k, str(v)] for k, v in params.items()]
    return [(k.lstrip("+~"), v) for k, v in (p for p in pairs if len(p) == 2)]


def _task(config: DictConfig) -> dict[str, Any]:
    """The config without Hydra's node, unresolved (nothing is read yet)."""
    data = OmegaConf.to_container(config, resolve=False)
    assert isinstance(data, dict)
    return {str(k): v for k, v in data.items() if k != "hydra"}


def check(config: DictConfig) -> str | None:
    """The first secret in the composed config or its command-line overrides, as one line."""
    for path, value in _leaves(_task(config)):
        if found := problem(".".join(path), value):
            return found
    for key, value in _pairs(config):
        if found := problem(key, value):
            return found
    return None


def unresolved(config: DictConfig) -> str | None:
    """The first ``${oc.env:VAR}`` (no default) of the config whose variable is not set, as one
    line naming its key (OmegaConf's own report is a traceback)."""
    for path, value in _leaves(_task(config)):
        for name in _ENV_REQUIRED.findall(value) if isinstance(value, str) else ():
            if name not in os.environ:
                return (
                    f"{'.'.join(path)}: the environment variable {name} is not set (read by "
                    f"${{oc.env:{name}}})"
                )
    return None


def _secret_position(path: tuple[str, ...], names: list[str]) -> bool:
    """Whether a leaf reading the variables ``names`` may hold a secret: it is a provider's
    argument, under a header or a secret name, or one of the variables has a secret name."""
    return bool(names) and (
        "args" in path
        or any(redaction.secret_name(p) or redaction.header_name(p) for p in path)
        or any(redaction.secret_name(n) for n in names)
    )


def secret_values(config: DictConfig) -> set[str]:
    """The values of ``config`` that are secret (see the module's docstring)."""
    raw = _task(config)
    found = redaction.secret_values(raw)
    for path, value in _leaves(raw):
        names = _ENV_VARS.findall(value) if isinstance(value, str) else []
        if _secret_position(path, names):
            found |= {os.environ[n] for n in names if os.environ.get(n)}
        if path[-1] == "api_key_env" and value and os.environ.get(str(value)):
            found.add(os.environ[str(value)])
    found |= set(overrides([f"{k}={v}" for k, v in _pairs(config)], values_only=True))
    return found


# -- overrides ---------------------------------------------------------------------------------


def _render(value: Any) -> str:
    """A parsed override value written back in Hydra's syntax."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_render(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_render(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and not (
        _PLAIN.fullmatch(value) or redaction.ENV_REFERENCE.fullmatch(value)
    ):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return str(value)


def _redacted(override: str) -> tuple[str, set[str]]:
    """``override`` with its secret values masked, and those values."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep

    try:
        parsed = OverridesParser.create().parse_override(override)
    except Exception:  # noqa: BLE001 - Hydra refuses it itself; nothing to redact in what it cannot read
        return override, set()
    if parsed.value_type is None:  # ~key: a deletion, no value
        return override, set()
    key = str(parsed.key_or_group)
    secret = any(redaction.secret_name(p) or redaction.header_name(p) for p in key.split("."))
    raw = parsed.value()
    choices = raw.list if isinstance(raw, ChoiceSweep) else [raw]
    found = {v for c in choices for v in redaction.secret_values(c, secret)}
    if not found:
        return override, set()
    shown = ",".join(_render(redaction.redact(c, secret)) for c in choices)
    return f"{parsed.get_key_element()}={shown}", found


def overrides(items: list[str], values_only: bool = False) -> list[str]:
    """The overrides as they may be written: each value under a header or a secret name
    masked (``values_only``: those values instead)."""
    done = [_redacted(str(o)) for o in items]
    if values_only:
        return [v for _, values in done for v in values]
    return [redaction.scrub(text) for text, _ in done]


# -- Hydra's files -----------------------------------------------------------------------------


def recorded(config: DictConfig | ListConfig) -> Any:
    """A config as Hydra may write it (unresolved): overrides redacted, values under a header
    or a secret name masked, in ``hydra.job.override_dirname`` too."""
    data = OmegaConf.to_container(config, resolve=False)
    if isinstance(data, list):  # overrides.yaml
        return overrides([str(o) for o in data])
    assert isinstance(data, dict)
    hydra = data.pop("hydra", None)
    out = redaction.redact(data)
    if isinstance(hydra, dict):
        given = hydra.get("overrides") or {}
        literal = set()
        for part in ("task", "hydra"):
            if given.get(part):
                literal |= set(overrides(given[part], values_only=True))
                given[part] = overrides(given[part])
        params = (hydra.get("sweeper") or {}).get("params")
        if params:
            hydra["sweeper"]["params"] = {
                k: overrides([f"{k}={v}"])[0].split("=", 1)[1] for k, v in params.items()
            }
        job = hydra.get("job") or {}
        if job.get("override_dirname"):
            job["override_dirname"] = redaction.scrub(str(job["override_dirname"]), literal)
        out = {"hydra": hydra, **out}
    return out


def _save_config(cfg: DictConfig, filename: str, output_dir: Path) -> None:
    """Hydra's ``hydra.core.utils._save_config``, redacted."""
    output_dir.mkdir(parents=True, exist_ok=True)
    with open(str(output_dir / filename), "w", encoding="utf-8") as file:
        file.write(OmegaConf.to_yaml(OmegaConf.create(recorded(cfg))))


def _redact_hydra_files() -> None:
    import hydra.core.utils as hydra_utils

    assert callable(hydra_utils._save_config)  # Hydra 1.3: run_job writes .hydra/*.yaml with it
    hydra_utils._save_config = _save_config


_redact_hydra_files()


class SecretsCallback(Callback):
    """Before Hydra writes anything: refuse a password in a URL or a config that does not
    resolve (exit status 2), and remember the config's secret values (``redaction``)."""

    def _start(self, config: DictConfig) -> None:
        program = OmegaConf.select(config, "hydra.help.app_name") or "physassist-eval"
        try:
            found = check(config) or unresolved(config)
            if not found:
                redaction.remember(secret_values(config))
        except Exception as exc:  # noqa: BLE001 - Hydra would only warn, and the run go on unredacted
            print(
                f"{program}: error: cannot check the config for secrets: {exc!r}", file=sys.stderr
            )
            raise SystemExit(1) from None
        if found:
            print(f"{program}: error: {found}", file=sys.stderr)
            raise SystemExit(2)

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._start(config)

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._start(config)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A sweep's job (in a launcher's worker process too): its own values."""
        redaction.remember(secret_values(config))
