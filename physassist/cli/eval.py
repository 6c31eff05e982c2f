"""``physassist-eval``: compose an experiment with Hydra, run it with Inspect, track it in MLflow.

    physassist-eval                                   # the offline default experiment
    physassist-eval model=openai language=zh          # change groups
    physassist-eval -m model=oracle,baseline query=implicit,explicit   # a 2x2 sweep
    physassist-eval -m experiment=paper_main model=openai              # a paper table

Order of work, so that bad input never leaves a half-made run behind: the composed config is
checked (mandatory values, option values, data paths, API keys) and the Inspect task is built
(which validates the session files) BEFORE anything is evaluated or logged. Then Inspect writes
its log, and only then is the run logged to MLflow, so a tracking failure can never lose the
Inspect log. Sweep jobs attach to the sweep's parent run and resume (see
``physassist.tracking.runs``).
"""

from __future__ import annotations

import copy
import os
import sys
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from physassist.data.loader import SAMPLE_SESSIONS
from physassist.faults import EXIT_FAULTS, FAULT_TAG, fault_summary
from physassist.providers import inspect_model_name, provider_error
from physassist.tracking.params import (
    IDENTITY_KEYS,
    flatten_config,
    is_execution_param,
)
from physassist.vocab import LANGUAGES, SCENARIOS, TIERS

REPO_ROOT = Path(__file__).resolve().parents[2]


def conf_dir() -> Path:
    """The config directory: $PHYSASSIST_CONF_DIR, else ``conf/`` of the source tree.

    The project is installed editable (``pip install -e .``), so the package sits in the
    repository and ``conf/`` is found beside it, from any working directory.
    """
    env = os.environ.get("PHYSASSIST_CONF_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "conf"


# Accepted values of the keys that select behaviour (a YAML typo fails before any run).
CHOICES: dict[str, tuple[str, ...]] = {
    "judge.mode": ("rules", "llm", "panel"),
    "judge.context": ("gold_answer", "evidence"),
    "ehr.semantics": ("compat", "strict"),
    "ehr.render": ("compat", "full", "json"),
    "query.mode": ("implicit", "explicit"),
    "menu.mode": ("on", "off", "scenario", "gold"),
    "observations.mode": ("keep", "removed", "history_removed"),
    "terminal.mode": ("prepare_to_answer", "natural", "submit"),
    "patient.mode": ("replay", "live"),
    "patient.literacy": ("high", "medium", "low"),
    "patient.miss": ("unknown", "same_tool"),
    "language.code": LANGUAGES,
}


class ConfigError(ValueError):
    """The composed config cannot run; the message names the key and the problem."""


# -- config -> arguments ----------------------------------------------------------------------


def _unset_keys(node: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose value is OmegaConf's mandatory marker ``???``, in config order."""
    if isinstance(node, dict):
        return [k for key, value in node.items() for k in _unset_keys(value, f"{prefix}{key}.")]
    return [prefix.rstrip(".")] if node == "???" else []


def resolve(cfg: DictConfig) -> dict[str, Any]:
    """The experiment config as a plain dict, every interpolation resolved, ``hydra`` removed."""
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
    return data


def _get(config: Mapping[str, Any], dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise ConfigError(f"{dotted} is missing from the config")
        node = node[part]
    return node


def _is_hf(source: str) -> bool:
    return source.startswith("hf:")


def dataset_path(config: Mapping[str, Any]) -> Path | None:
    """The local session files of the dataset (None for a Hub dataset)."""
    source = str(_get(config, "dataset.source"))
    if source == "sample":
        return SAMPLE_SESSIONS
    if _is_hf(source):
        local = Path(source[len("hf:") :])
        return local if local.exists() else None
    return Path(source).expanduser()


def task_args(config: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``tasks.physassistbench.physassistbench`` for this config."""
    scenarios = config.get("scenarios")
    tiers = config.get("tiers")
    return {
        "dataset": str(_get(config, "dataset.source")),
        "ehr_source": str(_get(config, "ehr.source")),
        "language": _get(config, "language.code"),
        "query": _get(config, "query.mode"),
        "menu": _get(config, "menu.mode"),
        "observations": _get(config, "observations.mode"),
        "terminal": _get(config, "terminal.mode"),
        "tool_budget": int(_get(config, "terminal.budget")),
        "nudge": bool(_get(config, "terminal.nudge")),
        "patient": _get(config, "patient.mode"),
        "literacy": _get(config, "patient.literacy"),
        "patient_miss": _get(config, "patient.miss"),
        "semantics": _get(config, "ehr.semantics"),
        "render": _get(config, "ehr.render"),
        "judge": _get(config, "judge.mode"),
        "judge_context": _get(config, "judge.context"),
        "taus": [float(t) for t in _get(config, "taus")],
        "scenarios": list(scenarios) if scenarios else None,
        "tiers": [int(t) for t in tiers] if tiers else None,
        "temperature": _get(config, "model.temperature"),
    }


def eval_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """Keyword arguments for ``inspect_ai.eval`` / ``eval_set`` (None = Inspect's default)."""
    ins = _get(config, "inspect")
    options = {
        "max_connections": ins.get("max_connections"),
        "max_samples": ins.get("max_samples"),
        "limit": ins.get("limit"),
        "epochs": ins.get("epochs"),
        "fail_on_error": ins.get("fail_on_error"),
        "retry_on_error": ins.get("retry_on_error"),
        "seed": ins.get("seed"),
        "max_retries": ins.get("max_retries"),
        "timeout": ins.get("timeout"),
        "attempt_timeout": ins.get("attempt_timeout"),
        "max_tokens": _get(config, "model").get("max_tokens"),
        "display": ins.get("display"),
        "log_level": ins.get("log_level"),
    }
    return {k: v for k, v in options.items() if v is not None}


@dataclass(frozen=True)
class ModelSpec:
    """An Inspect model: name plus how to reach it (the key is read from the environment)."""

    name: str
    base_url: str | None = None
    api_key_env: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    provider: str | None = None  # e.g. openai-api/compatible: ``name`` is what the server serves

    @classmethod
    def of(cls, node: Mapping[str, Any], name_key: str = "name") -> ModelSpec:
        """The spec a config node describes (``model``, ``generator``: ``name``; ``judge``,
        ``patient``: ``model``), with its ``base_url``, ``api_key_env``, ``args``, ``provider``."""
        return cls(
            node[name_key], node.get("base_url"), node.get("api_key_env"), node.get("args") or {},
            node.get("provider"),
        )

    def build(self):  # -> inspect_ai.model.Model
        from inspect_ai.model import get_model

        kwargs: dict[str, Any] = dict(self.args)
        if self.api_key_env:
            kwargs["api_key"] = os.environ[self.api_key_env]
        name = inspect_model_name(self.name, self.provider)
        return get_model(name, base_url=self.base_url, memoize=False, **kwargs)


def grader_spec(judge: Mapping[str, Any]) -> ModelSpec | list[ModelSpec] | None:
    """The ``grader`` role a judge config needs: one model (llm), a list (panel), none (rules)."""
    if judge["mode"] == "llm":
        if not judge.get("model"):
            raise ConfigError("judge.model is required for judge=llm (e.g. openai/gpt-5.4-mini)")
        return ModelSpec.of(judge, "model")
    if judge["mode"] == "panel":
        models = list(judge.get("models") or [])
        if len(models) < 2:
            raise ConfigError(f"judge.models must list at least two graders for judge=panel, got {models}")
        return [
            ModelSpec(m, judge.get("base_url"), judge.get("api_key_env"), provider=judge.get("provider"))
            for m in models
        ]
    return None


def build_role(spec: ModelSpec | list[ModelSpec]):  # -> Model | list[Model]
    return [s.build() for s in spec] if isinstance(spec, list) else spec.build()


def model_specs(config: Mapping[str, Any]) -> tuple[ModelSpec, dict[str, ModelSpec | list[ModelSpec]]]:
    """The assistant model and the model roles (``grader`` for judge=llm, a list of them for
    judge=panel, ``patient`` for live)."""
    assistant = ModelSpec.of(_get(config, "model"))
    roles: dict[str, ModelSpec | list[ModelSpec]] = {}
    grader = grader_spec(_get(config, "judge"))
    if grader is not None:
        roles["grader"] = grader
    patient = _get(config, "patient")
    if patient["mode"] == "live":
        if not patient.get("model"):
            raise ConfigError("patient.model is required for patient=live")
        roles["patient"] = ModelSpec.of(patient, "model")
    return assistant, roles


def check_config(config: Mapping[str, Any]) -> None:
    """Fail with one message naming the key when the experiment cannot run as configured."""
    if _get(config, "judge.mode") == "human":
        raise ConfigError("judge=human judges stored runs: use physassist-rescore source=<run id> judge=human")
    for key, allowed in CHOICES.items():
        value = _get(config, key)
        if value not in allowed:
            raise ConfigError(f"{key}={value!r} is not one of {', '.join(allowed)}")
    budget = _get(config, "terminal.budget")
    if not isinstance(budget, int) or budget < 1:
        raise ConfigError(f"terminal.budget={budget!r} must be a positive integer (tool calls per turn)")
    for key in ("inspect.limit", "inspect.epochs"):  # Inspect drops sessions on -1, crashes on 0
        value = _get(config, key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ConfigError(f"{key}={value!r} must be a positive integer (or null)")
    taus = _get(config, "taus")
    if not taus or any(not isinstance(t, int | float) or not 0 < t <= 1 for t in taus):
        raise ConfigError(f"taus={taus!r} must be a non-empty list of thresholds in (0, 1]")
    for scenario in config.get("scenarios") or ():
        if scenario not in SCENARIOS:
            raise ConfigError(f"scenarios: {scenario!r} is not one of {', '.join(SCENARIOS)}")
    for tier in config.get("tiers") or ():
        if tier not in TIERS:
            raise ConfigError(f"tiers: {tier!r} is not one of {', '.join(map(str, TIERS))}")
    source = str(_get(config, "dataset.source"))
    if source != "sample" and not _is_hf(source) and not Path(source).expanduser().exists():
        raise ConfigError(f"dataset.source: {source} does not exist (expected a directory of session JSONL)")
    ehr = str(_get(config, "ehr.source"))
    if ehr != "sample" and not Path(ehr).expanduser().exists():
        raise ConfigError(f"ehr.source: {ehr} does not exist (expected a MIMIC-IV directory or a built store)")
    assistant, roles = model_specs(config)
    for role, specs in {"model": assistant, **roles}.items():
        for spec in specs if isinstance(specs, list) else [specs]:
            if spec.api_key_env and not os.environ.get(spec.api_key_env):
                raise ConfigError(f"{role} {spec.name} needs the environment variable {spec.api_key_env} (an API key)")


def identity_overrides(overrides: list[str]) -> list[str]:
    """The overrides that change what is measured: not hydra.*, tracking.*, log dirs, display.

    Sweep and job keys are built from these, so re-running a sweep into another output
    directory, with another launcher or another display still finds its runs.
    """
    kept = []
    for override in overrides:
        key = override.split("=", 1)[0].lstrip("+~")
        if key.startswith("hydra") or is_execution_param(key + "."):
            continue
        kept.append(override)
    return kept


def shared_params(params: Mapping[str, str], sweep_arguments: list[str]) -> dict[str, str]:
    """The params every job of a sweep shares: a swept key and its whole group are left out."""
    swept = {a.split("=", 1)[0].lstrip("+~") for a in sweep_arguments}
    swept = {k.replace("/", ".") for k in swept if not k.startswith("hydra")}

    exact = {IDENTITY_KEYS[tuple(k.split("."))] for k in swept if tuple(k.split(".")) in IDENTITY_KEYS}

    def varies(key: str) -> bool:
        return key in exact or any(key == k or key.startswith(k + ".") for k in swept)

    return {k: v for k, v in params.items() if not varies(k)}


def default_choices() -> dict[str, str]:
    """The option of each group in the defaults list of ``eval.yaml`` (``query: implicit``)."""
    entries = OmegaConf.load(conf_dir() / "eval.yaml").get("defaults") or []
    return {
        str(k): str(v)
        for entry in entries
        if isinstance(entry, Mapping)
        for k, v in entry.items()
        if not str(k).startswith("override")
    }


def run_name(config: Mapping[str, Any], job: JobContext) -> str:
    """What differs: ``<model> | <non-default choice or override> ... | dataset=<name>``
    (``physassist.tracking.names``), unless ``tracking.run_name`` sets it."""
    from physassist.tracking import names

    explicit = (config.get("tracking") or {}).get("run_name")
    if explicit:
        return str(explicit)
    return names.run_name(
        str(_get(config, "model.name")),
        job.choices,
        default_choices(),
        identity_overrides(job.overrides),
        str(_get(config, "dataset.source")),
    )


# -- running ----------------------------------------------------------------------------------


@dataclass
class JobContext:
    """Where a composition runs: alone, or as one job of a sweep."""

    overrides: list[str] = field(default_factory=list)
    choices: dict[str, str] = field(default_factory=dict)
    sweep_dir: Path | None = None  # set for multirun jobs

    @classmethod
    def from_hydra(cls) -> JobContext:
        hc = HydraConfig.get()
        multirun = hc.mode == RunMode.MULTIRUN
        choices = {k: str(v) for k, v in hc.runtime.choices.items() if not k.startswith("hydra/")}
        return cls(
            overrides=list(hc.overrides.task),
            choices=choices,
            sweep_dir=Path(hc.sweep.dir).resolve() if multirun else None,
        )


@dataclass
class Outcome:
    """What one experiment produced."""

    status: str  # FINISHED, FAILED, SKIPPED (done before) or BUSY (another process runs it)
    log_path: str | None = None
    run_id: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    tracking_error: str | None = None
    faults: str | None = None  # physassist.faults.fault_summary: turns a system fault ended
    holder: str | None = None  # BUSY: the process (host:pid:time) that holds the run

    @property
    def run_status(self) -> str:
        """The MLflow status: a run in which system faults left turns unscored is no result."""
        return "FAILED" if self.faults else self.status


def build_task(args: Mapping[str, Any]):
    """Build the Inspect task; data problems (bad session file, a store that cannot be
    built, ...) become a ConfigError."""
    from physassist.ehr.store import EHRBuildError
    from tasks.physassistbench import physassistbench

    try:
        return physassistbench(**args)
    except (ValueError, FileNotFoundError, OSError, KeyError, EHRBuildError) as exc:
        lines = str(exc).strip().splitlines() or [repr(exc)]
        more = f"\n  ... and {len(lines) - 6} more" if len(lines) > 6 else ""
        raise ConfigError("\n".join(lines[:6]) + more) from exc


def _evaluate(task, assistant, roles, options: dict[str, Any], log_dir: Path, resumable: bool, tags: list[str]):
    """Run Inspect (eval_set in a per-job directory when resumable) and return the log."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai import eval_set
    from inspect_ai.log import read_eval_log

    common = dict(model=assistant, model_roles=roles or None, tags=tags, **options)
    if resumable:
        _, logs = eval_set(task, log_dir=str(log_dir), retry_attempts=1, retry_wait=1, **common)
    else:
        logs = inspect_eval(task, log_dir=str(log_dir), **common)
    if not logs or logs[0].status == "cancelled":  # Ctrl-C: Inspect kept what it had in log_dir
        raise KeyboardInterrupt
    log = logs[0]
    if log.samples is None and log.location:
        log = read_eval_log(log.location)
    return log


def local_path(location: str | None) -> str | None:
    """Inspect reports re-read logs as ``file://`` URIs; show and log plain paths."""
    if location and location.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(location).path)
    return location


def _results(log, taus: list[float], prices: Mapping[str, Any] | None = None):
    """The per-turn table and every metric of the benchmark for an Inspect log (with token
    usage and, given ``prices``, estimated cost per role: ``physassist.usage``)."""
    from physassist.metrics import summarize
    from physassist.results import turn_table
    from physassist.usage import usage_metrics

    turns = turn_table(log)
    metrics = summarize(turns, taus=taus)
    for name, value in {**_inspect_stats(log), **usage_metrics(log, prices)}.items():
        metrics.setdefault(name, value)
    return turns, metrics


def _inspect_stats(log) -> dict[str, float]:
    """Counts Inspect knows and the turn table does not: errored samples, token usage."""
    out: dict[str, float] = {}
    samples = log.samples or []
    out["samples_total"] = float(len(samples))
    out["samples_error"] = float(sum(1 for s in samples if s.error))
    usage = getattr(log.stats, "model_usage", None) or {}
    out["tokens_input"] = float(sum(u.input_tokens or 0 for u in usage.values()))
    out["tokens_output"] = float(sum(u.output_tokens or 0 for u in usage.values()))
    return out


def open_tracker_for(
    tracking: Mapping[str, Any], retries: int | None = None, experiment: str = "physassist"
):  # -> runs.Tracker
    """The MLflow tracker the ``tracking`` config group names (raises TrackingError)."""
    from physassist.tracking import runs

    return runs.Tracker(
        tracking.get("uri"),
        tracking.get("experiment") or experiment,
        artifact_root=tracking.get("artifact_root"),
        retries=int(tracking.get("retries") or 0) if retries is None else retries,
    )


def run_experiment(cfg: DictConfig, job: JobContext) -> Outcome:
    """Check, evaluate, track one composition. Raises ConfigError before any run on bad input."""
    from physassist import comparability
    from physassist.tracking import claims, runs
    from physassist.tracking.inputs import run_inputs
    from physassist.tracking.mlflow_store import TrackingError, error_line
    from physassist.tracking.tags import provenance_tags
    from physassist.tracking.traces import TraceRequest

    config = resolve(cfg)
    check_config(config)
    args = task_args(config)
    tracking = config.get("tracking") or {}
    tracker: runs.Tracker | None = None
    tracking_error: str | None = None

    def open_tracker() -> None:
        nonlocal tracker, tracking_error
        if not tracking.get("enabled"):
            return
        try:
            tracker = open_tracker_for(tracking)
        except TrackingError as exc:
            tracking_error = str(exc)

    sweep = runs.SweepInfo.read(job.sweep_dir) if job.sweep_dir else None
    if job.sweep_dir and sweep is None:  # no callback ran (e.g. hydra.callbacks overridden)
        sweep = runs.SweepInfo(runs.sweep_key([str(job.sweep_dir)], {}), None)
    key = runs.job_key(identity_overrides(job.overrides)) if sweep else None
    previous = None
    if sweep and key:  # a finished job is skipped before anything expensive happens
        open_tracker()
        if tracker is not None:
            try:
                previous = tracker.find_job(sweep.sweep_id, key)
            except Exception as exc:  # noqa: BLE001
                tracking_error = f"cannot read MLflow store {tracker.uri}: {error_line(exc)}"
                tracker = None
        if previous is not None and previous.info.status == "FINISHED":
            return Outcome("SKIPPED", previous.data.tags.get("physassist.inspect_log"), previous.info.run_id)

    task = build_task(args)  # validates the session files: bad data stops here, before any run
    assistant_spec, role_specs = model_specs(config)
    role, spec = "model", assistant_spec
    try:
        assistant = assistant_spec.build()
        roles = {}
        for role, spec in role_specs.items():
            roles[role] = build_role(spec)
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing package, bad args
        name = spec.name if isinstance(spec, ModelSpec) else ", ".join(s.name for s in spec)
        raise ConfigError(f"{role}: cannot create {name}: {provider_error(exc)}") from exc
    if not sweep:
        open_tracker()

    name = run_name(config, job)
    tags = {f"choice.{k}": v for k, v in job.choices.items()}
    tags[runs.OVERRIDES_TAG] = " ".join(job.overrides)
    if sweep and key:
        tags.update({runs.SWEEP_TAG: sweep.sweep_id, runs.JOB_TAG: key})
    claim = None
    if tracker is not None:  # the run exists (RUNNING) before the eval: claimed exactly once
        try:
            claim = claims.claim(tracker, name, tags, sweep, key)
        except Exception as exc:  # noqa: BLE001 - tracking must never stop the evaluation
            tracking_error = f"cannot create the run in {tracker.uri}: {error_line(exc)}"
            tracker = None
    if claim is not None and claim.state == "finished":
        return Outcome("SKIPPED", None, claim.run_id)
    if claim is not None and claim.state == "busy":
        return Outcome("BUSY", None, claim.run_id, holder=claim.owner)

    log_root = Path(str(_get(config, "inspect.log_dir"))).expanduser()
    log_dir = (log_root / "sweeps" / sweep.sweep_id / key) if (sweep and key) else log_root
    with claims.holding(tracker, claim.run_id, sweep_pid=sweep.pid if sweep else None) if claim else nullcontext():
        log = _evaluate(
            task,
            assistant,
            roles,
            eval_options(config),
            log_dir,
            resumable=bool(sweep),
            tags=[f"{k}={v}" for k, v in sorted(job.choices.items())],
        )
        log_path = local_path(log.location)
        status = "FINISHED" if log.status == "success" else "FAILED"
        turns, metrics = None, {}
        if log.status == "success":
            turns, metrics = _results(log, args["taus"], prices(config))
        outcome = Outcome(status, log_path, None, metrics, tracking_error)
        if turns is not None:
            outcome.faults = fault_summary(turns)
        if tracker is None or claim is None:
            return outcome

        tags["physassist.inspect_status"] = str(log.status)
        if log.error:
            tags["physassist.error"] = str(log.error.message)[:5000]
        if outcome.faults:  # not a result: the run is FAILED, the reasons in a tag
            tags[FAULT_TAG] = outcome.faults[:5000]
        staging = runs.staging_dir()
        try:
            inputs = run_inputs(log, args["dataset"], dataset_path(config), args["ehr_source"])
            tags.update(provenance_tags(**{i.kind: (i.fingerprint, i.source) for i in inputs}, inspect_log=log_path))
            params = flatten_config(config)
            tags.update(comparability.tags_for(params, tags))
            files = _stage_artifacts(cfg, config, log_path, turns, staging, tracking, name)
            if turns is not None and tracking.get("log_table"):
                from physassist.usage import write_session_usage

                files.append((write_session_usage(log, prices(config), staging / "tables"), "tables"))
            outcome.run_id = tracker.log_run(
                run_name=name,
                params=params,
                tags=tags,
                metrics=metrics,
                files=files,
                table=turns if tracking.get("log_table") else None,
                inputs=inputs,
                traces=TraceRequest(log, tracking.get("trace_limit"), int(tracking.get("trace_raw_chars") or 2000))
                if tracking.get("traces") and log.status == "success"
                else None,
                status=outcome.run_status,
                run_id=claim.run_id,
                parent_run_id=sweep.parent_run_id if sweep else None,
            )
        except Exception as exc:  # noqa: BLE001 - tracking must never lose the evaluation
            outcome.tracking_error = f"logging to {tracker.uri} failed: {error_line(exc)}"
        finally:
            runs.remove_dir(staging)
    outcome.tracking_error = outcome.tracking_error or tracking_error
    return outcome


def prices(config: Mapping[str, Any]) -> dict[str, Any]:
    """The price table of the ``prices`` group: Inspect model string -> {input, output} USD per
    million tokens (empty: no cost estimate)."""
    return dict((config.get("prices") or {}).get("models") or {})


def _stage_artifacts(cfg, config, log_path, turns, staging: Path, tracking, title: str) -> list[tuple[Path, str]]:
    """Write the files to log (config, turn table, plots) and list them with the Inspect log."""
    from physassist.tracking import plots, runs

    files: list[tuple[Path, str]] = []
    resolved = staging / "resolved.yaml"
    resolved.write_text(OmegaConf.to_yaml(OmegaConf.create(config)))
    files.append((resolved, "config"))
    if log_path and tracking.get("log_eval") and Path(log_path).is_file():
        files.append((Path(log_path), "inspect"))
    if turns is not None and len(turns):
        if tracking.get("log_table"):
            files += [(p, "tables") for p in runs.write_turn_tables(turns, staging / "tables")]
        if tracking.get("plots"):
            taus = [float(t) for t in config.get("taus") or (0.6, 0.75)]
            files += [(p, "plots") for p in plots.run_plots(turns, staging / "plots", taus=taus, title=title)]
    return files


# -- printing ---------------------------------------------------------------------------------

HEADLINE = ("mrs", "pass_turn", "pass_session")


def result_table(metrics: Mapping[str, float], taus: list[float]) -> str:
    """The headline metrics (with 95% intervals) and the per-tier mRS, as a text table."""
    from physassist.metrics import tau_key

    def pct(value: float | None) -> str:  # rates are already points (metrics.RATE_SCALE)
        return "-" if value is None or value != value else f"{value:.1f}"

    rows = [("metric", "value", "95% CI")]
    names = ["mrs"] + [f"{m}_{tau_key(t)}" for t in taus for m in ("pass_turn", "pass_session")]
    for name in names:
        ci = f"[{pct(metrics.get(name + '_ci_low'))}, {pct(metrics.get(name + '_ci_high'))}]"
        rows.append((name, pct(metrics.get(name)), ci))
    for key in sorted(k for k in metrics if k.startswith("mrs.tier.")):
        rows.append((key, pct(metrics[key]), ""))
    for key in ("n_sessions", "n_turns", "unscored_turns", "error_turns"):
        if key in metrics:
            rows.append((key, f"{metrics[key]:.0f}", ""))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def report(outcome: Outcome, config: Mapping[str, Any]) -> None:
    """Print the result table and where the Inspect log and the MLflow run are."""
    if outcome.status == "SKIPPED":
        print(f"already finished in MLflow run {outcome.run_id}; skipped (log: {outcome.log_path})")
        return
    if outcome.status == "BUSY":
        print(f"MLflow run {outcome.run_id} is being evaluated by {outcome.holder}; skipped (not run twice)")
        return
    if outcome.metrics:
        print(result_table(outcome.metrics, [float(t) for t in config.get("taus") or (0.6, 0.75)]))
    print(f"Inspect log: {outcome.log_path}  (inspect view --log-dir {Path(outcome.log_path or '.').parent})")
    tracking = config.get("tracking") or {}
    if outcome.run_id:
        from physassist.tracking.mlflow_store import resolve_tracking_uri

        uri = resolve_tracking_uri(tracking.get("uri"))
        print(f"MLflow run: {outcome.run_id} (experiment {tracking.get('experiment')!r}, status {outcome.run_status}) in {uri}")
        print(f"  browse: mlflow ui --backend-store-uri {uri}")
    if outcome.tracking_error:
        print(f"tracking failed: {outcome.tracking_error}; the Inspect log above is complete", file=sys.stderr)
    if outcome.faults:
        print(f"physassist-eval: system faults: {outcome.faults}", file=sys.stderr)


# -- Hydra ------------------------------------------------------------------------------------


def _fail(message: str, code: int = 2) -> None:
    print(f"physassist-eval: error: {message}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(config_path=str(conf_dir()), config_name="eval", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> Outcome | None:
    job = JobContext.from_hydra()
    try:
        outcome = run_experiment(cfg, job)
    except ConfigError as exc:
        if job.sweep_dir is not None:  # a sweep job: the launcher reports it with the job
            from physassist.cli.hydra_errors import JobFailed

            raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: {exc}", code=2) from exc
        _fail(str(exc))
        return None
    report(outcome, resolve(cfg))
    if outcome.status == "FAILED":
        if job.sweep_dir is not None:
            from physassist.cli.hydra_errors import JobFailed

            raise JobFailed(f"job {' '.join(identity_overrides(job.overrides))}: evaluation failed; see the Inspect log {outcome.log_path}")
        _fail(f"evaluation failed; see the Inspect log {outcome.log_path}", code=1)
    if outcome.faults and job.sweep_dir is None:  # the run is marked FAILED in MLflow
        raise SystemExit(EXIT_FAULTS)
    if outcome.tracking_error:
        if job.sweep_dir is None:
            raise SystemExit(3)
        from physassist.cli.sweep import record_tracking_error

        record_tracking_error(job.sweep_dir, f"job {' '.join(job.overrides)}: {outcome.tracking_error}")
    return outcome


def main() -> None:
    """Console entry point (``physassist-eval``)."""
    from physassist.cli import hydra_errors, sweep

    sweep.run(lambda: hydra_errors.reported(_hydra_main))


if __name__ == "__main__":
    main()
