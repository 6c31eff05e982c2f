"""What an evaluation leaves in MLflow: run names, shared sweep params, staged artifacts, metrics.

The run itself (create, resume, log, finish) is ``physassist.tracking.runs``; this module
decides, from the config and the Inspect log, what goes into it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from physassist.cli.config import conf_dir, lookup
from physassist.tracking.params import is_execution_param, mlflow_names


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

    names = mlflow_names()
    exact = {names[tuple(k.split("."))] for k in swept if tuple(k.split(".")) in names}

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


def run_name(config: Mapping[str, Any], choices: Mapping[str, str], overrides: list[str], sweep_arguments: Sequence[str] = ()) -> str:
    """What differs: ``[<swept values> |] <model> | <non-default choice or override> ... |
    dataset=<name>`` (``physassist.tracking.names``), unless ``tracking.run_name`` sets it.
    ``choices`` and ``overrides`` are the job's (``eval.JobContext``), ``sweep_arguments`` its
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


def parent_metrics(metrics: Mapping[str, float], overrides: Sequence[str], sweep_arguments: Sequence[str]) -> dict[str, float]:
    """A sweep job's headline for its parent run, named by the job's swept values."""
    from physassist.tracking import metric_names, names

    job = identity_overrides(list(overrides))
    label = metric_names.job_label(job, names.swept_factors(identity_overrides(list(sweep_arguments))))
    return metric_names.parent_metrics(metrics, label)


def local_path(location: str | None) -> str | None:
    """Inspect reports re-read logs as ``file://`` URIs; show and log plain paths."""
    if location and location.startswith("file://"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(location).path)
    return location


def results(log, taus: list[float], prices: Mapping[str, Any] | None = None):
    """The per-turn table and every metric of the benchmark for an Inspect log (with token
    usage and, given ``prices``, estimated cost per role: ``physassist.usage``)."""
    from physassist.metrics import summarize
    from physassist.results import turn_table
    from physassist.usage import usage_metrics

    turns = turn_table(log)
    metrics = summarize(turns, taus=taus)
    for name, value in {**inspect_stats(log), **usage_metrics(log, prices)}.items():
        metrics.setdefault(name, value)
    return turns, metrics


def inspect_stats(log) -> dict[str, float]:
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


def prices(config: Mapping[str, Any]) -> dict[str, Any]:
    """The price table of the ``prices`` group: Inspect model string -> {input, output} USD per
    million tokens (empty: no cost estimate)."""
    return dict((config.get("prices") or {}).get("models") or {})


def stage_artifacts(cfg, config, log_path, turns, staging: Path, tracking, title: str) -> list[tuple[Path, str]]:
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
