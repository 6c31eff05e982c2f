"""The composed experiment config: resolved, checked, and turned once into the typed
``physassist.experiment.Experiment`` (``experiment``) that everything after composition takes.

Option values are checked by ``physassist.options`` (one table, one message per option); this
module adds what only the command line knows: mandatory values, data paths, API keys, the
model roles and the run's name. It is the one place that reads the composed config by key;
nothing here runs an evaluation or touches MLflow.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from physassist import options, redaction
from physassist.cli import schema
from physassist.experiment import (
    ConfigError,
    Experiment,
    InspectSettings,
    JudgeSettings,
    ModelSpec,
    Rescore,
    TrackingSettings,
)
from physassist.options import lookup
from physassist.staging import JobContext, identity_overrides
from scorers import judges

REPO_ROOT = Path(__file__).resolve().parents[2]
# ``physassist-eval --help`` prints the options and judges tables
# (conf/eval.yaml: hydra.help.footer).
OmegaConf.register_new_resolver("physassist_options", options.markdown_table, replace=True)
OmegaConf.register_new_resolver("physassist_judges", judges.markdown_table, replace=True)


def _groups_help(config_name: str) -> str:
    from physassist.cli.commands import groups_help

    return groups_help(config_name, conf_dir())


# Each command's --help lists the groups it takes (conf/<command>.yaml: hydra.help.template).
OmegaConf.register_new_resolver("physassist_groups", _groups_help, replace=True)
# Every group's schema (conf/eval.yaml and conf/rescore.yaml name it first in their defaults).
schema.register()


def conf_dir() -> Path:
    """The config directory: $PHYSASSIST_CONF_DIR, else ``conf/`` of the source tree.

    The project is installed editable (``pip install -e .``), so the package sits in the
    repository and ``conf/`` is found beside it, from any working directory.
    """
    env = os.environ.get("PHYSASSIST_CONF_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "conf"


_PACKAGE = re.compile(r"\A(?:#.*\n)*#\s*@package\b")  # Hydra's header, in the leading comments


#: The least value of the integer keys passed on as they are. Below it, Inspect drops sessions
#: (``limit=-1``), crashes (``epochs=0``, ``max_connections=-1``) or waits forever
#: (``max_samples=0``), and tracking writes no traces (``trace_limit=-1``) or cuts them from
#: the end (``trace_raw_chars=-5``).
LEAST = {
    "inspect.limit": 1,
    "inspect.epochs": 1,
    "inspect.max_connections": 1,
    "inspect.max_samples": 1,
    "inspect.timeout": 1,
    "inspect.attempt_timeout": 1,
    "inspect.max_retries": 0,
    "inspect.retry_on_error": 0,
    "inspect.progress_s": 1,
    "model.max_tokens": 1,
    "generator.max_tokens": 1,
    "tracking.retries": 0,
    "tracking.trace_limit": 0,
    "tracking.trace_raw_chars": 1,
}


def _unset_keys(node: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose value is OmegaConf's mandatory marker ``???``, in config order."""
    if isinstance(node, dict):
        return [k for key, value in node.items() for k in _unset_keys(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")] if node == "???" else []


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The experiment config as a plain dict, every interpolation resolved, ``hydra`` removed."""
    runtime = _runtime(cfg)
    cfg = copy.copy(cfg)  # shallow: drop the hydra node without touching the caller's config
    with open_dict(cfg):
        cfg.pop("hydra", None)
    # Name the unset key itself, not an interpolation that points at it (model.args.dataset).
    missing = _unset_keys(OmegaConf.to_container(cfg, resolve=False))
    if missing:
        key = missing[0]
        raise ConfigError(f"{key} is required but not set: add `{key}=<value>` to the command")
    try:
        data = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except OmegaConfBaseException as exc:
        raise ConfigError(f"config error: {exc}".splitlines()[0]) from exc
    assert isinstance(data, dict)
    data.pop("hydra", None)
    for key, where in _required_in_files(runtime):
        if OmegaConf.select(cfg, key) is None:
            raise ConfigError(
                f"{key} ({where}) is required but not set: add `{key}=<value>` to the command"
            )
    # A composed config's keys are YAML mapping keys and dotted overrides: strings (OmegaConf
    # types them as any DictKeyType, which also admits int, bytes, Enum).
    return cast(dict[str, Any], data)


def _runtime(cfg: DictConfig) -> Any:
    """Hydra's ``runtime`` node of this composition: its own (composed with the hydra node),
    else that of the running Hydra job (``@hydra.main`` passes the job's config without it)."""
    from hydra.core.hydra_config import HydraConfig

    if "hydra" in cfg:
        return cfg.hydra.get("runtime")
    return HydraConfig.get().runtime if HydraConfig.initialized() else None


def _required_in_files(runtime: Any) -> list[tuple[str, str]]:
    """Keys a chosen group file marks ``???``, with that file. OmegaConf keeps a schema
    default over a merged ``???``, so an optional key (``model.base_url``, null by default)
    a user's file requires would otherwise become null without a word."""
    if runtime is None:
        return []
    dirs = [Path(s.path) for s in runtime.config_sources if s.schema == "file"]
    found = []
    for group, choice in runtime.choices.items():
        if choice is None or group.startswith("hydra"):
            continue
        path = next((p for d in dirs if (p := d / group / f"{choice}.yaml").is_file()), None)
        text = path.read_text(encoding="utf-8") if path is not None else ""
        if path is None or _PACKAGE.search(text):
            continue  # another package (experiments are _global_): its keys are not the group's
        found += [(f"{group}.{k}", f"{group}/{choice}.yaml") for k in _unset_keys(_yaml(text))]
    return found


def _yaml(text: str) -> Any:
    """A config file's plain values (Hydra composed it already, so it parses): libyaml's parser
    where PyYAML has it, ~10x OmegaConf's node tree for the dozen group files of a run."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _is_hf(source: str) -> bool:
    return source.startswith("hf:")


def dataset_path(config: Mapping[str, Any]) -> Path | None:
    """The local session files of the dataset (None for a Hub dataset)."""
    source = str(lookup(config, "dataset.source"))
    if source == "sample":
        from physassist.data.loader import SAMPLE_SESSIONS  # pandas: not for a config check

        return SAMPLE_SESSIONS
    if _is_hf(source):
        local = Path(source[len("hf:") :])
        return local if local.exists() else None
    return Path(source).expanduser()


def task_args(config: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``tasks.physassistbench.physassistbench`` for this config
    (mapped and checked by the ``physassist.options`` table)."""
    return options.task_args(config)  # an OptionError is a ConfigError


def eval_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``inspect_ai.eval`` / ``eval_set`` (None = Inspect's default;
    the display is the command's, ``cli/console``)."""
    from physassist.cli.console import inspect_display

    ins = InspectSettings(**lookup(config, "inspect"))
    display = inspect_display(ins.display)
    options = {
        "max_connections": ins.max_connections,
        "max_samples": ins.max_samples,
        "limit": ins.limit,
        "epochs": ins.epochs,
        "fail_on_error": ins.fail_on_error,
        "retry_on_error": ins.retry_on_error,
        "seed": ins.seed,
        "max_retries": ins.max_retries,
        "timeout": ins.timeout,
        "attempt_timeout": ins.attempt_timeout,
        "max_tokens": lookup(config, "model").get("max_tokens"),
        "display": display,
        # Inspect recomputes the task's metrics over all finished samples for its live display
        # about once a second (4 of the 5 computations on the default run, ~0.3 s of CPU, more
        # as the run grows); with no display nothing shows them. The log's metrics are unchanged.
        "score_display": False if display == "none" else None,
        "log_realtime": ins.log_realtime,
        "log_level": ins.log_level,
    }
    return {k: v for k, v in options.items() if v is not None}


def model_spec(node: Mapping[str, Any], name_key: str = "name") -> ModelSpec:
    """The spec a config node describes (``model``, ``generator``: ``name``; ``judge``,
    ``patient``: ``model``), with its ``base_url``, ``api_key_env``, ``args``, ``provider``,
    ``max_tokens``."""
    return ModelSpec(
        node[name_key],
        node.get("base_url"),
        node.get("api_key_env"),
        node.get("args") or {},
        node.get("provider"),
        node.get("max_tokens"),
    )


def tracking_settings(node: Mapping[str, Any] | None) -> TrackingSettings:
    """The settings of a ``tracking`` node (the schema's keys; none: tracking off)."""
    return TrackingSettings(**{f.name: (node or {}).get(f.name) for f in fields(TrackingSettings)})


def grader_spec(judge: Mapping[str, Any]) -> ModelSpec | list[ModelSpec] | None:
    """The ``grader`` role a judge config needs, as its judge declares (``Judge.graders``): one
    model (``judge.model``), a list (``judge.models``, at least two) or none."""
    mode = judge["mode"]
    graders = judges.graders(mode)
    # Every judge node has both keys (one schema for the group): the one its judge does not read
    # must stay null, or a panel's models would be ignored by judge=llm without a word.
    unread = {"one": "models", "many": "model"}.get(graders)
    if unread and judge.get(unread):
        used = "model" if unread == "models" else "models"
        raise ConfigError(
            f"judge.{unread}={judge[unread]!r} is not read by judge={mode}; it grades with "
            f"judge.{used}"
        )
    if graders == "one":
        if not judge.get("model"):
            raise ConfigError(
                f"judge.model is required for judge={mode} (e.g. openai/gpt-5.4-mini)"
            )
        return model_spec(judge, "model")
    if graders == "many":
        models = list(judge.get("models") or [])
        if len(models) < 2:
            raise ConfigError(
                f"judge.models must list at least two graders for judge={mode}, got {models}"
            )
        return [
            ModelSpec(
                m, judge.get("base_url"), judge.get("api_key_env"), provider=judge.get("provider")
            )
            for m in models
        ]
    return None


def model_specs(
    config: Mapping[str, Any],
) -> tuple[ModelSpec, dict[str, ModelSpec | list[ModelSpec]]]:
    """The assistant model and the model roles (``grader`` for judge=llm, a list of them for
    judge=panel, ``patient`` for live)."""
    assistant = model_spec(lookup(config, "model"))
    roles: dict[str, ModelSpec | list[ModelSpec]] = {}
    grader = grader_spec(lookup(config, "judge"))
    if grader is not None:
        roles["grader"] = grader
    patient = lookup(config, "patient")
    if patient["mode"] == "live":
        if not patient.get("model"):
            raise ConfigError("patient.model is required for patient=live")
        roles["patient"] = model_spec(patient, "model")
    return assistant, roles


def check_passed_on(config: Mapping[str, Any]) -> None:
    """The keys passed on as they are (``LEAST``, Inspect's display and log level) that the
    config has (``physassist-generate`` has no ``model``)."""

    def value(key: str) -> Any:
        group, name = key.split(".")
        return (config.get(group) or {}).get(name)

    for key, least in LEAST.items():
        v = value(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < least):
            kind = "a positive integer" if least else "an integer >= 0"
            raise ConfigError(f"{key}={v!r} must be {kind} (or null)")
    for key in ("inspect.display", "inspect.log_level"):
        v = value(key)
        if v is None:
            continue
        choices = _inspect_choices()[key]  # Inspect's import: only when a value is given
        if str(v).lower() not in choices:
            raise ConfigError(
                f"{key}={v!r} is not valid; expected one of: {', '.join(choices)} (or null)"
            )


def _inspect_choices() -> dict[str, tuple[str, ...]]:
    """Inspect's own lists: it would fall back to another display, or fail after start-up."""
    from typing import get_args

    from inspect_ai._util.constants import ALL_LOG_LEVELS
    from inspect_ai.util import DisplayType

    return {
        "inspect.display": get_args(DisplayType),
        "inspect.log_level": tuple(x.lower() for x in ALL_LOG_LEVELS),
    }


def check_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Fail with one message naming the key when the experiment cannot run as configured;
    return the task arguments."""
    if lookup(config, "judge.mode") == "human":
        raise ConfigError(
            "judge=human judges stored runs: use physassist-rescore source=<run id> judge=human"
        )
    args = task_args(config)
    check_passed_on(config)
    source = args["dataset"]
    if source != "sample" and not _is_hf(source) and not Path(source).expanduser().exists():
        raise ConfigError(
            f"dataset.source: {source} does not exist (expected a directory of session JSONL)"
        )
    ehr = args["ehr_source"]
    if ehr != "sample" and not Path(ehr).expanduser().exists():
        raise ConfigError(
            f"ehr.source: {ehr} does not exist (expected a MIMIC-IV directory or a built store)"
        )
    assistant, roles = model_specs(config)
    for role, specs in {"model": assistant, **roles}.items():
        for spec in specs if isinstance(specs, list) else [specs]:
            if spec.api_key_env and not os.environ.get(spec.api_key_env):
                raise ConfigError(
                    f"{role} {spec.name} needs the environment variable {spec.api_key_env} (an API "
                    "key)"
                )
    return args


def default_choices() -> dict[str, str]:
    """The option of each group in the defaults list of ``eval.yaml`` (``query: implicit``)."""
    entries = (_yaml((conf_dir() / "eval.yaml").read_text(encoding="utf-8")) or {}).get(
        "defaults"
    ) or []
    return {
        str(k): str(v)
        for entry in entries
        if isinstance(entry, Mapping)
        for k, v in entry.items()
        if not str(k).startswith("override")
    }


def run_name(
    config: Mapping[str, Any],
    choices: Mapping[str, str],
    overrides: list[str],
    sweep_arguments: Sequence[str] = (),
) -> str:
    """What differs: ``[<swept values> |] <model> | <non-default choice or override> ... |
    dataset=<name>`` (``physassist.tracking.names``), unless ``tracking.run_name`` sets it.
    ``choices`` and ``overrides`` are the job's (``staging.JobContext``), ``sweep_arguments`` its
    sweep's (``runs.SweepInfo.arguments``)."""
    from physassist.tracking import names

    explicit = (config.get("tracking") or {}).get("run_name")
    if explicit:
        return str(explicit)
    return names.run_name(
        str(lookup(config, "model.name")),
        dict(choices),
        default_choices(),
        identity_overrides(list(overrides)),
        str(lookup(config, "dataset.source")),
        names.swept_factors(identity_overrides(list(sweep_arguments))),
    )


def experiment(cfg: DictConfig, job: JobContext) -> Experiment:
    """The composition resolved, checked (``ConfigError`` naming the key, before anything
    heavy is loaded) and typed once, for ``job``."""
    config = resolve(cfg)
    args = check_config(config)
    assistant, roles = model_specs(config)
    from physassist.tracking.params import flatten_config

    sweep = job.sweep  # after the checks: a config error is answered without the tracking layer
    recorded = redaction.redact(config)  # what the run writes: no secret (physassist.redaction)
    return Experiment(
        task=MappingProxyType(args),
        model=assistant,
        roles=MappingProxyType(roles),
        inspect=InspectSettings(**lookup(config, "inspect")),
        log_dir=Path(str(lookup(config, "inspect.log_dir"))).expanduser(),
        eval_options=MappingProxyType(eval_options(config)),
        tracking=tracking_settings(config.get("tracking")),
        prices=MappingProxyType(dict((config.get("prices") or {}).get("models") or {})),
        run_name=redaction.scrub(
            run_name(config, job.choices, job.overrides, sweep.arguments if sweep else ())
        ),
        dataset_path=dataset_path(config),
        params=MappingProxyType(flatten_config(recorded)),
        resolved=OmegaConf.to_yaml(OmegaConf.create(recorded)),
        taus=[float(t) for t in args["taus"]],
    )


def rescoring(cfg: DictConfig) -> Rescore:
    """A ``physassist-rescore`` composition resolved, checked and typed once."""
    config = resolve(cfg)
    check_passed_on(config)
    node = config["judge"]
    judge = JudgeSettings(**{f.name: node.get(f.name) for f in fields(JudgeSettings)})
    judge = replace(judge, models=tuple(judge.models) if judge.models is not None else None)
    known = (*judges.JUDGES, "human")  # the registered judges and physassist-rescore's own
    if judge.mode not in known:
        raise ConfigError(f"judge.mode={judge.mode!r} is not one of {', '.join(known)}")
    from physassist.tracking.params import flatten_config

    try:
        grounding = options.BY_KEY["grounding.mode"].check(
            config["grounding"]["mode"], "grounding.mode"
        )
    except options.OptionError as exc:
        raise ConfigError(str(exc)) from exc
    return Rescore(
        source=str(config["source"]),
        judge=judge,
        graders=None if judge.mode == "human" else grader_spec(config["judge"]),
        taus=tuple(float(t) for t in config["taus"]) if config.get("taus") else None,
        log_dir=Path(str(config["inspect"]["log_dir"])).expanduser(),
        tracking=tracking_settings(config.get("tracking")),
        params=MappingProxyType(
            flatten_config(
                redaction.redact({"judge": config["judge"], "grounding": config["grounding"]})
            )
        ),
        resolved=OmegaConf.to_yaml(OmegaConf.create(redaction.redact(dict(config)))),
        grounding=grounding,
    )
