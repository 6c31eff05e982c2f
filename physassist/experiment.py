"""One experiment, resolved once: what ``physassist-eval`` runs, typed and frozen.

The command line composes the config (Hydra, ``conf/``), checks it and fills these objects once
(``physassist.cli.config.experiment``); everything after composition takes the object or the
part of it it needs (the task its arguments, Inspect its options, the run staging its tracking
settings and name), so no code below the command line reads a config by key. The keys of the
``inspect`` and ``tracking`` groups are the fields of ``InspectSettings`` and
``TrackingSettings`` (``physassist.cli.schema`` declares the groups from them).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physassist.options import ConfigError
from physassist.providers import inspect_model_name, provider_error

if TYPE_CHECKING:
    from inspect_ai.model import Model

__all__ = ["ConfigError"]  # declared in physassist.options; importable from here as before


@dataclass(frozen=True)
class ModelSpec:
    """An Inspect model: name plus how to reach it (the key is read from the environment)."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    provider: str | None = None  # e.g. openai-api/compatible: ``name`` is what the server serves
    max_tokens: int | None = (
        None  # output tokens per call of this model (a generation role's budget)
    )

    def where(self, role: str) -> str:
        """How lines name this model's endpoint: ``model endpoint http://...`` (or the model)."""
        return (
            f"{role} endpoint {self.base_url}"
            if self.base_url
            else f"{role} {inspect_model_name(self.name, self.provider)}"
        )

    def build(self, role: str = "model", bounds: Mapping[str, Any] | None = None) -> Model:
        """The Inspect model, each call bounded by ``bounds`` (``GenerateConfig`` fields: the
        run's retries and time limits) and ``max_tokens``, and watched (``physassist.calls``)."""
        from inspect_ai.model import GenerateConfig, get_model

        from physassist import calls
        from physassist.redaction import redact

        kwargs: dict[str, Any] = dict(self.args)
        if self.api_key_env:
            kwargs["api_key"] = os.environ[self.api_key_env]
        name = inspect_model_name(self.name, self.provider)
        config = GenerateConfig(
            **{**(bounds or {}), **({"max_tokens": self.max_tokens} if self.max_tokens else {})}
        )
        model = get_model(name, base_url=self.base_url, memoize=False, config=config, **kwargs)
        # The arguments Inspect's log records (its provider keeps its own copy, with the secrets).
        model.model_args = redact(kwargs)
        return calls.watch(model, self.where(role), self.base_url or name)


#: A model role: one model, or a list of them (``judge=panel``'s graders).
Role = ModelSpec | list[ModelSpec]


def build_role(
    spec: Role, role: str = "model", bounds: Mapping[str, Any] | None = None
) -> Model | list[Model]:
    return (
        [s.build(role, bounds) for s in spec]
        if isinstance(spec, list)
        else spec.build(role, bounds)
    )


def build_models(
    model: ModelSpec, roles: Mapping[str, Role], bounds: Mapping[str, Any] | None = None
) -> tuple[Model, dict[str, Model | list[Model]]]:
    """The assistant and every role's model(s), each call bounded by ``bounds`` (Inspect gives
    an eval's per-attempt time limit to the assistant only); one that cannot be created (unknown
    provider, missing package, bad args) is a ``ConfigError`` naming its role and model."""
    role: str = "model"  # named in the error: the role being built, and its model(s)
    spec: Role = model
    try:
        assistant = model.build(role, bounds)
        built: dict[str, Model | list[Model]] = {}
        for role, spec in roles.items():
            built[role] = build_role(spec, role, bounds)
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing package, bad args
        name = spec.name if isinstance(spec, ModelSpec) else ", ".join(s.name for s in spec)
        raise ConfigError(f"{role}: cannot create {name}: {provider_error(exc)}") from exc
    return assistant, built


@dataclass(frozen=True)
class InspectSettings:
    """The ``inspect`` group: where Inspect logs, and what it is passed as it is (null =
    Inspect's default)."""

    log_dir: str | None = None
    max_connections: int | None = None
    max_samples: int | None = None
    limit: int | None = None
    epochs: int | None = None
    fail_on_error: Any = None
    retry_on_error: int | None = None
    seed: int | None = None
    max_retries: int | None = None
    timeout: int | None = None
    attempt_timeout: int | None = None
    display: str | None = None
    log_level: str | None = None
    log_realtime: bool | None = None
    progress_s: int | None = None  # the command's: a progress line at least this often (off a TTY)

    @property
    def bounds(self) -> dict[str, int]:
        """What bounds every model call of a run, each role's too (``GenerateConfig`` fields)."""
        keys = ("max_retries", "timeout", "attempt_timeout")
        return {k: v for k in keys if (v := getattr(self, k)) is not None}


@dataclass(frozen=True)
class TrackingSettings:
    """The ``tracking`` group: the MLflow store, and what a run logs into it."""

    enabled: bool | None = None
    uri: str | None = None
    artifact_root: str | None = None
    experiment: str | None = None
    run_name: str | None = None
    log_eval: bool | None = None
    log_table: bool | None = None
    plots: bool | None = None
    traces: bool | None = None
    trace_limit: int | None = None
    trace_raw_chars: int | None = None
    retries: int | None = None

    @property
    def raw_chars(self) -> int:
        """Raw FHIR JSON kept per tool call in a trace (``trace_raw_chars``; 2000 when unset)."""
        return int(self.trace_raw_chars or 2000)


@dataclass(frozen=True)
class JudgeSettings:
    """The ``judge`` group: how turns are judged (``scorers/*_judge.py``) and by which graders."""

    mode: str
    context: str | None = None
    model: str | None = None  # judge.graders == "one"
    models: tuple[str, ...] | None = None  # judge.graders == "many"
    base_url: str | None = None
    api_key_env: str | None = None
    provider: str | None = None
    repeats: int = 1  # times each turn is judged (its score is their mean)


@dataclass(frozen=True)
class Rescore:
    """One composition of ``physassist-rescore``, checked: what to judge again, and how."""

    source: str  # an Inspect log, an MLflow run id or a sweep id
    judge: JudgeSettings
    graders: Role | None  # the ``grader`` role the judge needs (``Judge.graders``), or none
    taus: tuple[float, ...] | None  # None: the source's
    log_dir: Path  # ``<inspect.log_dir>``: the new logs go to ``rescore/`` in it
    tracking: TrackingSettings
    params: Mapping[str, str]  # the judge (and the grounding check) as MLflow params
    resolved: str  # the resolved config as YAML (the run's ``config/rescore.yaml``)
    grounding: str = "on"  # the grounding check of the stored answers (``grounding.mode``)


@dataclass(frozen=True)
class Generation:
    """One composition of ``physassist-generate``, checked: the sessions to make and how."""

    task: Mapping[str, Any]  # ``generation.task.generate``'s arguments (store, slots, seed, ...)
    generator: ModelSpec  # the model behind every agent without a role of its own
    roles: Mapping[str, ModelSpec]  # agent role -> its model
    inspect: InspectSettings  # the eval's ``inspect`` group: the calls' bounds, the progress lines
    eval_options: Mapping[
        str, Any
    ]  # ``inspect_ai.eval`` keyword arguments (Inspect's keys, display)
    log_dir: str
    output_dir: Path
    overwrite: bool
    tracking: TrackingSettings
    params: Mapping[str, str]  # the config as MLflow params
    config: Mapping[str, Any]  # the resolved config, recorded in the manifest


@dataclass(frozen=True)
class Experiment:
    """One composition of ``physassist-eval``, checked: everything a run needs after it."""

    task: Mapping[
        str, Any
    ]  # the task's arguments (``tasks.physassistbench``), checked by ``options``
    model: ModelSpec  # the assistant
    roles: Mapping[str, Role]  # ``grader`` (judge=llm: one; panel: a list), ``patient`` (live)
    inspect: InspectSettings
    log_dir: Path  # ``inspect.log_dir``, expanded (a sweep job's: ``sweeps/<sweep>/<job>`` in it)
    eval_options: Mapping[
        str, Any
    ]  # ``inspect_ai.eval`` keyword arguments (Inspect's keys, display)
    tracking: TrackingSettings
    prices: Mapping[str, Any]  # Inspect model string -> {input, output} USD per 1M tokens
    run_name: str
    dataset_path: Path | None  # the local session files (None: a Hub dataset)
    params: Mapping[str, str]  # the config as MLflow params (``tracking.params.flatten_config``)
    resolved: str  # the resolved config as YAML (the run's ``config/resolved.yaml``)
    taus: list[float]  # the Pass@ thresholds (``task["taus"]``), for the metrics and the report
