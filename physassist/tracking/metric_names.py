"""How a run's metrics are named and rounded in MLflow, so its first screen carries the answer.

``physassist.metrics.summarize`` returns ~240 flat names (``mrs``, ``mrs.tier.2``,
``tokens.assistant.input``, ...). MLflow's run page draws one chart per metric and groups the
charts by the part of the name before the first ``/``; names without one form the first
section, alphabetically. So in MLflow:

* the **headline** keeps its name and is logged first: ``mrs``, ``pass_turn_<tau>``,
  ``pass_session_<tau>`` with their ``_ci_low`` / ``_ci_high``, ``n_sessions``, ``n_turns``,
  ``scored_turns``, ``unscored_turns``, ``error_turns``, ``cost_usd``,
  ``judge_unparseable_rate``, a rescoring's ``agreement.*``, the run's noise
  (``physassist.noise``: ``noise.*``, ``mde.*``, ``share.*`` and ``var.*`` per axis,
  ``repeats.*``) and its calibration on physicians (``physassist.calibration``:
  ``mrs_calibrated``, ``pass_turn_<tau>_calibrated`` with intervals, ``judge_bias``,
  ``n_labelled``);
* everything else goes under a section prefix, the summarize name kept whole after it:
  a breakdown under its dimension (``tier/mrs.tier.2``, ``task_type/pass_turn_0.60.task_type.CR``),
  token use and cost under ``tokens/``, tool metrics under ``tools/``, epoch statistics under
  ``epochs/``, the grounding check under ``grounding/``, what detecting 2 and 5 points would
  take and the labels' counts under ``noise/`` (``noise/plan.mrs.2pt.sessions``), the remaining
  counts under ``counts/``
  (``counts/end.budget``).

``summary_name`` strips the section, so readers (``physassist-report``) see summarize's names
for runs logged before and after this rule. Values are rounded to what their 95% intervals
support: rates in points to 0.1 (the intervals span points, on the sample and on thousands of
sessions alike), agreement coefficients to 0.001, per-turn averages to 0.01, cost to 1e-6 USD.
A sweep's parent carries each job's headline as ``<metric>/<job's swept values>``
(``mrs/menu-gold``), so its page shows the sweep's result side by side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

import pandas as pd

from physassist.metrics import SESSION_DIMENSIONS, TURN_DIMENSIONS, is_headline

_DIMENSIONS = sorted(
    (*SESSION_DIMENSIONS, *TURN_DIMENSIONS), key=len, reverse=True
)  # longest first
_BREAKDOWN = re.compile(
    r"^(?:mrs|pass_(?:turn|session)_\d\.\d\d|n_turns|unscored_turns)\.("
    + "|".join(_DIMENSIONS)
    + r")\."
)
_SECTIONS = (
    ("tokens", ("tokens", "cost_usd")),
    ("tools", ("tool_",)),
    ("epochs", ("pass_hat_", "session_score_", "epochs")),
    ("grounding", ("grounding.",)),
    ("noise", ("plan.", "labels_", "strata")),
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\- ]+")
_CI = re.compile(r"_ci_(low|high)$")
#: A job's headline on its sweep's parent: mRS with its interval, three rows per job, so the
#: parent's metrics table (14 rows on its first screen) shows a 4-job sweep whole; Pass@Turn and
#: unscored turns are on the job rows of the run list.
PARENT = ("mrs", "mrs_ci_low", "mrs_ci_high")


def section(key: str) -> str | None:
    """The MLflow section of a summarize name, None for the headline."""
    if is_headline(key):
        return None
    breakdown = _BREAKDOWN.match(key)
    if breakdown:
        return breakdown.group(1)
    for name, prefixes in _SECTIONS:
        if key.startswith(prefixes):
            return name
    return "counts"


def mlflow_name(key: str) -> str:
    where = section(key)
    return key if where is None else f"{where}/{key}"


def summary_name(name: str) -> str:
    """The summarize name of an MLflow metric name (either rule)."""
    return name.split("/", 1)[-1]


def rounded(key: str, value: float) -> float:
    """``value`` to the precision its interval supports (module docstring)."""
    if math.isnan(value) or math.isinf(value):
        return value
    last = key.rsplit(".", 1)[-1]
    if "kappa" in key or "alpha" in last or "corr" in last:
        places = 3
    elif key.startswith("cost_usd") or key.endswith(".cost_usd"):
        places = 6
    elif key.endswith("_per_turn"):
        places = 2
    else:  # points, counts, tokens
        places = 1
    return round(float(value), places)


def for_mlflow(metrics: Mapping[str, float]) -> dict[str, float]:
    """A run's metrics as logged: sectioned names, rounded values (numbers only), the headline
    first: the run page's Overview lists metrics in the order they were logged."""
    first: dict[str, int] = {}  # each headline metric followed by its interval
    for index, key in enumerate(metrics):
        first.setdefault(_CI.sub("", key), index)

    def order(key: str) -> tuple[bool, int]:
        return section(key) is not None, first[_CI.sub("", key)]

    out: dict[str, float] = {}
    for key, value in sorted(metrics.items(), key=lambda item: order(item[0])):
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        out[mlflow_name(key)] = rounded(key, float(value))
    return out


def summary_names(metrics: Mapping[str, float]) -> dict[str, float]:
    """A logged run's metrics (``run.data.metrics``) under summarize's names."""
    return {summary_name(k): v for k, v in metrics.items()}


def with_summary_names(runs: pd.DataFrame) -> pd.DataFrame:
    """``mlflow.search_runs`` columns with summarize's metric names (``metrics.tier/mrs.tier.2``
    -> ``metrics.mrs.tier.2``, one column when old and new runs are mixed), so tables read
    both alike."""
    columns: dict[str, pd.Series] = {}  # built whole, then one frame: no column inserted one by one
    for column in runs.columns:
        name = (
            "metrics." + summary_name(column[len("metrics.") :])
            if column.startswith("metrics.")
            else column
        )
        seen = columns.get(name)
        columns[name] = runs[column] if seen is None else seen.combine_first(runs[column])
    return pd.DataFrame(columns, index=runs.index)


def job_label(overrides: Sequence[str], swept: Sequence[str]) -> str:
    """A sweep job's swept values as a metric-name part: ``model-oracle query-explicit``."""
    values = dict(o.lstrip("+~").split("=", 1) for o in overrides if "=" in o)
    shown = [f"{key.replace('/', '.')}-{values[key]}" for key in swept if key in values]
    return _UNSAFE.sub("_", " ".join(shown)).strip() or "job"


def parent_metrics(metrics: Mapping[str, float], label: str) -> dict[str, float]:
    """A job's headline for its sweep's parent run: ``<metric>/<label>``, rounded."""
    return {f"{k}/{label}": rounded(k, float(metrics[k])) for k in PARENT if k in metrics}


def parent_description(metrics: Mapping[str, float]) -> str:
    """A sweep parent's description (Markdown, at the top of its run page, which shows its first
    lines): each job's mRS with its interval, from the parent's ``mrs/<label>`` metrics
    (``parent_metrics``), in one paragraph so a 4-job sweep fits those lines."""
    shown = []
    for name in sorted(k for k in metrics if k.startswith("mrs/")):
        label = name.split("/", 1)[1]
        low, high = metrics.get(f"mrs_ci_low/{label}"), metrics.get(f"mrs_ci_high/{label}")
        interval = f" [{low:.1f}, {high:.1f}]" if low is not None and high is not None else ""
        job = " ".join(part.replace("-", "=", 1) for part in label.split(" "))
        shown.append(f"**{job}** {metrics[name]:.1f}{interval}")
    return f"mRS [95% CI] of each job: {' · '.join(shown)}" if shown else ""
