"""What each Hydra command takes: its config groups and top-level keys.

The three commands share one config directory, so Hydra's own help and its "did you mean" see
every group in it (``physassist-rescore --help`` listed ``model``, ``menu``, ... it does not
take). A command's groups are the ones its primary config (``conf/<name>.yaml``) names in its
defaults list; its keys are its schema's fields (``cli/schema.py``). ``--help`` prints the
groups through the ``physassist_groups`` resolver (``cli/config``); ``hydra_errors`` names
them in errors. The callers pass the config directory (``cli.config.conf_dir``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

#: Each command's primary config (``conf/<name>.yaml``) and schema (``cli/schema.py``).
CONFIGS = {
    "physassist-eval": "eval",
    "physassist-rescore": "rescore",
    "physassist-generate": "generate",
}


def groups(config_name: str, conf: Path) -> list[str]:
    """The config groups ``<conf>/<config_name>.yaml`` names in its defaults (not ``hydra/*``)."""
    import yaml

    path = conf / f"{config_name}.yaml"
    defaults = (yaml.safe_load(path.read_text()) or {}).get("defaults") if path.is_file() else None
    names = []
    for entry in defaults or []:
        if isinstance(entry, dict):
            for key in entry:
                name = str(key).removeprefix("optional ").strip()
                if not name.startswith(("override", "hydra")):
                    names.append(name)
    return names


def keys(config_name: str) -> list[str]:
    """The top-level keys of a command's schema (groups included)."""
    from physassist.cli import schema

    node = getattr(schema, f"{config_name}_schema")()
    return [f.name for f in dataclasses.fields(node)]


def names(program: str, conf: Path) -> list[str]:
    """Everything a command takes at the top level: its groups and its keys."""
    config_name = CONFIGS.get(program, "eval")
    return sorted(set(groups(config_name, conf)) | set(keys(config_name)))


def groups_help(config_name: str, conf: Path) -> str:
    """``group: option, option`` per group the command takes (its ``--help``)."""
    lines = []
    for group in groups(config_name, conf):
        options = sorted(p.stem for p in (conf / group).glob("*.yaml"))
        lines.append(f"{group}: {', '.join(options)}")
    return "\n".join(lines)
