"""Run names that say what differs: ``gpt-5.4-mini | query=explicit | menu=off``.

A run is named by its model (the last part of the model string), then every choice that differs
from the defaults of ``conf/eval.yaml`` and every value set on the command line (of the model's
group, its own settings: ``model.args.seed=1``), then the dataset
when it is not the embedded sample. A sweep job's name *leads with its swept values*, in the
sweep's order (a swept model as its bare name), even a default one: MLflow's run list shows a
name's first ~20 characters, and four ``explorer | menu=...`` children looked alike
(``menu=gold | explorer``). A sweep's parent is named after its experiment and its swept
factors: ``paper_explicit: model x query``. Once a run ends FINISHED its name also carries its
headline (``explorer | mRS 49.5 [45.3, 54.0]``), so MLflow's run list, which shows no metric
column until a user picks one, shows the result; the name as made here stays in the tag
``physassist.run_name`` for whatever reads names (the report's tables, a rescoring's name).
Plain values in, strings out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from physassist.redaction import header_name, secret_name
from physassist.tracking.params import is_execution_param

SEPARATOR = " | "
# Groups that never name a run: where it is logged and how Inspect runs it, the experiment
# preset (the parent run says it), the model (it leads the name) and the dataset (it ends it).
_UNNAMED = ("tracking", "inspect", "experiment", "model", "dataset", "hydra")
_SWEEP_SYNTAX = ("range(", "choice(", "interval(", "glob(")


def _key(override: str) -> tuple[str, str]:
    key, _, value = override.partition("=")
    return key.lstrip("+~").replace("/", "."), value


_NAMED_INSPECT = ("inspect.limit", "inspect.epochs")  # they change what a run measured
# the model's own settings change what it answers (two seeds are two runs); where it is served
# does not, its name leads, and a credential or header (masked by then) says nothing
_NAMED_MODEL = ("model.args.", "model.temperature", "model.max_tokens")


def _unnamed(key: str) -> bool:
    if key in _NAMED_INSPECT:
        return False
    if key.startswith(_NAMED_MODEL):
        return secret_name(key) or header_name(key)
    return key.split(".", 1)[0] in _UNNAMED or is_execution_param(key + ".")


def run_name(
    model: str,
    choices: Mapping[str, str],
    defaults: Mapping[str, str],
    overrides: Sequence[str] = (),
    dataset: str = "sample",
    swept: Sequence[str] = (),
) -> str:
    """``[<swept key>=<value> ... |] <model> | <group>=<choice> ... | dataset=<name>`` (see
    the module docstring); ``swept``: the sweep's factors (``swept_factors``), none alone."""
    shown: dict[str, str] = {
        group: option
        for group, option in choices.items()
        if not _unnamed(group) and option != defaults.get(group)
    }
    for override in overrides:
        key, value = _key(override)
        if not _unnamed(key):
            shown[key] = value
    model_name = model.rstrip("/").split("/")[-1]
    parts = [
        model_name if key == "model" else f"{key}={shown.pop(key)}"
        for key in swept
        if key == "model" or key in shown
    ]
    if "model" not in swept:
        parts.append(model_name)
    parts += [f"{k}={v}" for k, v in shown.items()]
    if dataset != "sample":
        parts.append(f"dataset={Path(dataset.removeprefix('hf:')).name or dataset}")
    return SEPARATOR.join(parts)


def swept_factors(arguments: Sequence[str]) -> list[str]:
    """The keys a sweep varies: arguments with a comma list or a sweep function as value."""
    factors: dict[str, None] = {}
    for argument in arguments:
        key, value = _key(argument)
        if key.startswith("hydra"):
            continue
        if (
            "," in value.strip("[]{}")
            and not value.startswith(("[", "{"))
            or value.startswith(_SWEEP_SYNTAX)
        ):
            factors.setdefault(key, None)
    return list(factors)


def sweep_name(experiment: str | None, arguments: Sequence[str]) -> str:
    """``<experiment or sweep>: <factor> x <factor>``."""
    factors = swept_factors(arguments)
    head = experiment or "sweep"
    return f"{head}: {' x '.join(factors)}" if factors else head


def with_headline(name: str, metrics: Mapping[str, float]) -> str:
    """``<name> | mRS 49.5 [45.3, 54.0]``: a finished run's name (``name`` alone without mRS)."""
    mrs = metrics.get("mrs")
    if mrs is None or mrs != mrs:
        return name
    low, high = metrics.get("mrs_ci_low"), metrics.get("mrs_ci_high")
    interval = (
        f" [{low:.1f}, {high:.1f}]"
        if low is not None and high is not None and low == low and high == high
        else ""
    )
    return f"{name}{SEPARATOR}mRS {mrs:.1f}{interval}"
