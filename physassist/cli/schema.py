"""The schema of every config group, so Hydra refuses an unknown key or a mistyped value while
it composes (a typo in ``conf/terminal/mine.yaml`` or ``terminal.nudg=false`` is one error,
not a silently ignored key).

Hydra 1.3's way: a structured config (dataclass) in its ConfigStore used as the schema of the
primary config (``conf/eval.yaml``, ``conf/rescore.yaml``, ``conf/generate.yaml``:
``defaults: [<name>_schema, ...]``).
Each group's node is typed by a dataclass, so every group file, ours or a user's
(``--config-dir``), is merged into it and checked. The task options' fields come from
``physassist.options.OPTIONS`` (type from the declared values or default); the keys that are not task options (model roles, ``inspect``, ``tracking``,
``prices``, ``dataset.ehr_source``) are declared below, once (those of ``inspect`` and
``tracking`` as the fields of ``physassist.experiment.InspectSettings`` / ``TrackingSettings``,
the typed settings the code after composition takes). Every option (and
``dataset.ehr_source``) is required: a group file states it (or ``???``, which a schema default
would silently replace), so a missing one is named by ``cli.config.resolve``; the other keys are
optional (null when left out). Values of closed options stay ``str``: their one check and
message is ``options.check`` (``check_config``), not OmegaConf's.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from typing import Any, get_type_hints

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING

from physassist import options
from physassist.experiment import InspectSettings, TrackingSettings
from physassist.options import Option


def settings_keys(kind: type) -> dict[str, Any]:
    """The keys of a group that ``physassist.experiment`` types (``inspect``, ``tracking``):
    its fields, with their types (all optional, null by default)."""
    hints = get_type_hints(kind)
    return {f.name: hints[f.name] for f in fields(kind)}


#: What a model role node (``model``, ``judge``, ``patient``, ``generator``) adds to its options.
ROLE: dict[str, Any] = {"provider": str | None, "base_url": str | None, "api_key_env": str | None}
#: Keys of each group that are not task options: name -> type (default null, or the given default).
KEYS: dict[str, dict[str, Any]] = {
    "model": {**ROLE, "max_tokens": int | None, "args": (dict[str, Any], dict)},
    "judge": {**ROLE, "model": str | None, "models": list[str] | None},
    "patient": {**ROLE, "model": str | None},
    "dataset": {"ehr_source": (str, MISSING)},
    "inspect": settings_keys(InspectSettings),
    "tracking": settings_keys(TrackingSettings),
    "prices": {"models": (dict[str, Any], dict)},  # open: one entry per Inspect model string
}
#: ``conf/generate.yaml``'s own keys (``generation/cli.py`` reads them); its ``scenarios`` and
#: ``tiers`` are the options', its ``inspect`` the eval's group.
GENERATE: dict[str, Any] = {
    "store": (str, MISSING),
    "cache_dir": str | None,
    "sessions_per_slot": (int, MISSING),
    "seed": (int, MISSING),
    "attempts": (int, MISSING),
    "patient_limit": (int, MISSING),
    "output_dir": (str, MISSING),
    "overwrite": (bool, MISSING),
    "roles": (dict[str, Any], dict),  # role -> null, a model name or a node
}
#: The groups of ``conf/eval.yaml``.
EVAL_GROUPS = (
    "model",
    "judge",
    "grounding",
    "dataset",
    "ehr",
    "query",
    "menu",
    "observations",
    "terminal",
    "patient",
    "history",
    "language",
    "tracking",
    "inspect",
    "prices",
)


def option_type(option: Option) -> Any:
    """The OmegaConf type of an option: its values' (or default's) type, a list if ``many``,
    Optional if its default is null."""
    sample = option.values[0] if option.values else option.default
    if option.many and not option.values:
        sample = option.default[0]
    kind: Any = option.kind or type(sample)
    if option.many:
        kind = list[kind]
    return kind | None if option.default is None else kind


def _field(name: str, spec: Any) -> tuple[str, Any, Any]:
    kind, default = spec if isinstance(spec, tuple) else (spec, None)
    return (name, kind, field(default_factory=default) if callable(default) else default)


def group_schema(group: str) -> type:
    """The dataclass of one config group: its options from ``OPTIONS`` plus its other keys."""
    fields = [
        (o.key.split(".", 1)[1], option_type(o), MISSING)
        for o in options.OPTIONS
        if o.key.split(".", 1)[0] == group and "." in o.key
    ]
    fields += [_field(name, spec) for name, spec in KEYS.get(group, {}).items()]
    return make_dataclass(group, fields)


def _node(name: str, kind: type) -> tuple[str, type, Any]:
    return (name, kind, field(default_factory=kind))


def eval_schema() -> type:
    """The schema of ``conf/eval.yaml``: every group plus the top-level options (taus, ...)."""
    top = [(o.key, option_type(o), MISSING) for o in options.OPTIONS if "." not in o.key]
    return make_dataclass("eval", [*(_node(g, group_schema(g)) for g in EVAL_GROUPS), *top])


def rescore_schema() -> type:
    """The schema of ``conf/rescore.yaml``: the eval's judge, grounding and tracking groups, the
    source to judge again, its thresholds (null = the source's) and where the logs go."""
    inspect = make_dataclass("inspect", [("log_dir", str, MISSING)])
    return make_dataclass(
        "rescore",
        [
            _node("judge", group_schema("judge")),
            _node("grounding", group_schema("grounding")),
            _node("tracking", group_schema("tracking")),
            _node("inspect", inspect),
            ("source", str, MISSING),
            ("taus", option_type(options.BY_KEY["taus"]) | None, None),
        ],
    )


def generate_schema() -> type:
    """The schema of ``conf/generate.yaml`` (``physassist-generate``): its own keys, the role
    node ``generator`` (the model behind every agent), the tracking and inspect groups."""
    options_ = [(key, option_type(options.BY_KEY[key]), MISSING) for key in ("scenarios", "tiers")]
    generator = make_dataclass(
        "generator",
        [
            ("name", str, MISSING),
            *(_field(k, v) for k, v in ROLE.items()),
            _field("max_tokens", int | None),
            _field("args", (dict[str, Any], dict)),
        ],
    )
    return make_dataclass(
        "generate",
        [
            *(_field(k, v) for k, v in GENERATE.items()),
            *options_,
            _node("generator", generator),
            _node("tracking", group_schema("tracking")),
            _node("inspect", group_schema("inspect")),
        ],
    )


def register() -> None:
    """Store the schemas in Hydra's ConfigStore (the primary configs' defaults name them).
    Called when ``physassist.cli.config`` is imported, and again after OPTIONS changes."""
    store = ConfigStore.instance()
    # Hydra deep-copies its config repository, and with it this process-wide singleton, for
    # every config group it lists (~120 times for ``--help``, ~9 ms each); what it reads from
    # the store it copies again on load, so the singleton may be shared instead.
    ConfigStore.__deepcopy__ = lambda self, memo: self  # type: ignore[attr-defined]
    store.store(name="eval_schema", node=eval_schema())
    store.store(name="rescore_schema", node=rescore_schema())
    store.store(name="generate_schema", node=generate_schema())
