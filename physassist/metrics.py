"""PhysAssistBench metrics over a per-turn table (pure pandas/numpy, no Inspect).

Definitions (one documented set; the vocabulary of docs/design.md#vocabulary). Every rate is on one scale, 0-100
(``RATE_SCALE``, like the paper's tables): mRS, Pass@Turn, Pass@Session, pass^k, their intervals
and breakdowns, tool_recall and tool_exact. The console, MLflow and the report show these
numbers unchanged, so a filter such as ``metrics.pass_turn_0.60 > 20`` means 20 %. Turn scores
(items passed / items) stay in [0, 1]: they are scores, not rates.

* A *trial* is one (session, epoch). A turn is *scored* when its status is `scored`;
  unscored turns (`undecided`, `failed`) are counted, never dropped silently, never 0.
* `mrs`: mean over sessions of the session's mean turn score, x100. A session's mean is
  taken over its scored turns (over all its epochs' trials, each trial weighted equally).
  Sessions without any scored turn are left out and counted in `sessions_unscored`.
* `pass_turn_<tau>`: share of scored turns (pooled) with score >= tau.
* `pass_session_<tau>`: share of trials whose turns are all scored and all >= tau. A trial
  with an unscored turn cannot be known to pass, so it is excluded from the denominator
  (not counted as failed) and reported as `pass_session_excluded`.
* `*_ci_low` / `*_ci_high`: percentile bootstrap 95% interval, resampling sessions (all
  epochs of a session move together), `n_boot` resamples, seeded.
* Breakdowns `<metric>.<dimension>.<value>`: `mrs.*` is the same mean of session means
  restricted to the group's turns (for a turn-level group such as a task type, each session
  contributes the mean of its turns in the group); `pass_turn_<tau>.*` pools the group's
  scored turns; `pass_session_<tau>.*` only for session-level dimensions (scenario, tier,
  language, query); `n_turns.*` counts the group's scored turns and `unscored_turns.*` its
  unscored ones. Dimensions: `task_type` (IL/DG/CR/WU), `implicitness` (NA/PE/AE/none),
  `task_type_x_implicitness` (e.g. `CR_AE`), `scenario`, `tier`, `turn` (T0..T3),
  `channel` (`ehr_only` / `patient_interview`, the latter = tool source patient or mixed),
  `tool_source`, `language`, `query`.
* Tool metrics over all turns (they do not depend on the judge): `tool_recall` (mean over
  turns with gold tools of |gold & called| / |gold|), `tool_exact` (share of those turns
  whose called tool set equals the gold set), `tool_extra_per_turn`,
  `tool_missed_per_turn` (distinct tools), `tool_calls_per_turn`.
* Counts: `n_sessions`, `n_trials`, `n_turns`, `scored_turns`, `unscored_turns`,
  `unscored_turns.<status>` (undecided / failed / error), `error_turns` (turns a system fault
  left unscored: the loop's, or the grader's calls failing, `physassist.faults`; a run with any
  is not a result), `end.<reason>` (how turns ended: answered/nudged/budget/error),
  `judge_unparseable` / `judge_provider` (turns the judge failed on because its replies never
  parsed as a verdict / its calls failed) and `judge_unparseable_rate` (points: share of all turns).
* With more than one epoch: `pass_hat_<k>_<tau>` for k = 1..n (tau-bench's pass^k: the
  chance that k trials drawn from a session's n all pass, C(c, k) / C(n, k) averaged over
  sessions; k = n means every trial passed), sessions with an ineligible trial excluded
  (`pass_hat_excluded`); `session_score_var` (mean over sessions of the population variance
  of the trial mean score, in points^2) and `session_score_sd` (its square root, in points).

* Grounding (with the grounding check on; columns `facts`, `grounded`, `contradicted`,
  `unsupported`): `grounding.facts` (facts stated over all turns), `grounding.grounded_pct`,
  `grounding.contradicted_pct`, `grounding.unsupported_pct` (points of the facts stated),
  `grounding.contradicted`, `grounding.unsupported` (counts), `grounding.turns_contradicted`
  (turns with at least one contradicted fact). Turns the check did not see are left out.

Names are flat and MLflow-safe: letters, digits, `_ - .`, tau written with two decimals.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from physassist.faults import ERROR_STATUS

__all__ = [
    "RATE_SCALE",
    "SESSION_DIMENSIONS",
    "TURN_DIMENSIONS",
    "grounding_summary",
    "is_headline",
    "metric_key",
    "pass_rates",
    "summarize",
    "tau_key",
]

RATE_SCALE = 100.0  # every rate is reported in points (0-100), never as a 0-1 share
REQUIRED_COLUMNS = ("session_id", "turn", "score", "status")
SESSION_DIMENSIONS = ("scenario", "tier", "language", "query")
TURN_DIMENSIONS = (
    "task_type",
    "implicitness",
    "task_type_x_implicitness",
    "turn",
    "channel",
    "tool_source",
)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
#: The headline: what a run's first screen shows (Inspect's results, MLflow's names without a
#: section, the console's table). Breakdowns, tools, epochs and the other counts are computed
#: from the turn table by the same ``summarize`` and live in MLflow, the turn table and the report.
#: The noise (``physassist.noise``) and calibration (``physassist.calibration``) names are
#: computed after the eval, never by ``summarize``: headline in MLflow and the console.
_HEADLINE = re.compile(
    r"^(mrs|pass_(turn|session)_\d\.\d\d)(_calibrated)?(_ci_(low|high))?$"
    r"|^(n_sessions|n_turns|scored_turns|unscored_turns|error_turns|cost_usd|judge_unparseable_rate)$"
    r"|^(noise|mde|share|var|repeats)\.|^judge_bias(_ci_(low|high))?$|^n_labelled$"
    r"|^agreement\."
)


def is_headline(name: str) -> bool:
    """A headline metric (``_HEADLINE``): ``mrs``, ``pass_turn_0.60_ci_low``, ``n_turns``, ..."""
    return bool(_HEADLINE.match(name))


def tau_key(tau: float) -> str:
    return f"{tau:.2f}"


def metric_key(*parts: object) -> str:
    """Join name parts with '.', replacing characters MLflow does not accept."""
    return ".".join(_UNSAFE.sub("_", str(p)).strip("_") or "none" for p in parts)


def _prepare(turns: pd.DataFrame, caller: str) -> pd.DataFrame:
    missing = [c for c in REQUIRED_COLUMNS if c not in turns.columns]
    if missing:
        raise ValueError(f"{caller}: turn table lacks column(s) {missing}")
    df = turns.copy()
    if "epoch" not in df.columns:
        df["epoch"] = 1
    df["score"] = pd.to_numeric(df["score"], errors="coerce").astype(float)
    df["scored"] = (df["status"] == "scored") & df["score"].notna()
    df.loc[~df["scored"], "score"] = np.nan
    df["session_id"] = df["session_id"].astype(str)
    if "implicitness" not in df.columns and "subtype" in df.columns:
        df["implicitness"] = df["subtype"].fillna("none").replace("", "none")
    if "task_type" in df.columns and "implicitness" in df.columns:
        df["task_type_x_implicitness"] = (
            df["task_type"].astype(str) + "_" + df["implicitness"].astype(str)
        )
    if "channel" not in df.columns and "tool_source" in df.columns:
        df["channel"] = np.where(
            df["tool_source"].isin(["patient", "mixed"]), "patient_interview", "ehr_only"
        )
    if "turn" in df.columns:
        df["turn_label"] = "T" + df["turn"].astype(int).astype(str)
    return df


def _session_aggregates(df: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """Per session: mean score, scored/passing turn counts, eligible/passing trial counts.

    Plain numpy over factorized ids: called once per breakdown group, so it must be cheap.
    """
    sessions, s_idx = np.unique(df["session_id"].to_numpy(dtype=str), return_inverse=True)
    trial_keys = s_idx.astype(np.int64) * (int(df["epoch"].max()) + 1) + df["epoch"].to_numpy(
        dtype=np.int64
    )
    trials, t_idx = np.unique(trial_keys, return_inverse=True)
    n_s, n_t = len(sessions), len(trials)
    trial_session = np.zeros(n_t, dtype=np.int64)
    trial_session[t_idx] = s_idx
    scored = df["scored"].to_numpy(dtype=bool)
    score = np.where(scored, df["score"].to_numpy(dtype=float), 0.0)
    rows_t = np.bincount(t_idx, minlength=n_t)
    scored_t = np.bincount(t_idx, weights=scored, minlength=n_t)
    with np.errstate(invalid="ignore", divide="ignore"):
        trial_mean = np.bincount(t_idx, weights=score, minlength=n_t) / scored_t
    has_mean = scored_t > 0
    all_scored = scored_t == rows_t
    with np.errstate(invalid="ignore", divide="ignore"):
        session_mean = np.bincount(
            trial_session, weights=np.where(has_mean, trial_mean, 0.0), minlength=n_s
        ) / np.bincount(trial_session, weights=has_mean, minlength=n_s)
    columns = {
        "mean": session_mean,  # NaN when no trial of the session has a scored turn
        "eligible": np.bincount(trial_session, weights=all_scored, minlength=n_s),
        "n_trials": np.bincount(trial_session, minlength=n_s).astype(float),
        "n_scored": np.bincount(s_idx, weights=scored, minlength=n_s),
    }
    for tau in taus:
        passed = scored & (score >= tau - 1e-12)
        trial_pass = (np.bincount(t_idx, weights=passed, minlength=n_t) == rows_t) & all_scored
        columns[f"turn_pass_{tau}"] = np.bincount(s_idx, weights=passed, minlength=n_s)
        columns[f"session_pass_{tau}"] = np.bincount(
            trial_session, weights=trial_pass, minlength=n_s
        )
    # one frame built at once: a column inserted per tau cost more than the arithmetic
    return pd.DataFrame(columns, index=pd.Index(sessions, name="session_id"))


def _pass_at(agg: pd.DataFrame, tau: float) -> tuple[float, float]:
    """(Pass@Turn, Pass@Session) at `tau` from the session aggregates, in points."""
    n_scored, eligible = agg["n_scored"].sum(), agg["eligible"].sum()
    return (
        float(agg[f"turn_pass_{tau}"].sum() / n_scored * RATE_SCALE) if n_scored else math.nan,
        float(agg[f"session_pass_{tau}"].sum() / eligible * RATE_SCALE) if eligible else math.nan,
    )


def _headline(agg: pd.DataFrame, taus: Sequence[float]) -> dict[str, float]:
    out: dict[str, float] = {}
    means = agg["mean"].dropna()
    out["mrs"] = float(means.mean() * RATE_SCALE) if len(means) else math.nan
    for tau in taus:
        t = tau_key(tau)
        out[f"pass_turn_{t}"], out[f"pass_session_{t}"] = _pass_at(agg, tau)
    return out


def _bootstrap(
    agg: pd.DataFrame, taus: Sequence[float], n_boot: int, seed: int
) -> dict[str, float]:
    """Percentile 95% intervals of the headline metrics, resampling sessions."""
    n = len(agg)
    keys = (
        ["mrs"]
        + [f"pass_turn_{tau_key(t)}" for t in taus]
        + [f"pass_session_{tau_key(t)}" for t in taus]
    )
    if n == 0 or n_boot <= 0:
        return {f"{k}_ci_{side}": math.nan for k in keys for side in ("low", "high")}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_boot, n))
    mean = agg["mean"].to_numpy()
    has = ~np.isnan(mean)
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = {"mrs": np.where(has, mean, 0.0)[idx].sum(1) / has[idx].sum(1) * RATE_SCALE}
        n_scored = agg["n_scored"].to_numpy()[idx].sum(1)
        eligible = agg["eligible"].to_numpy()[idx].sum(1)
        for tau in taus:
            t = tau_key(tau)
            turn_pass = agg[f"turn_pass_{tau}"].to_numpy()[idx].sum(1)
            session_pass = agg[f"session_pass_{tau}"].to_numpy()[idx].sum(1)
            stats[f"pass_turn_{t}"] = turn_pass / n_scored * RATE_SCALE
            stats[f"pass_session_{t}"] = session_pass / eligible * RATE_SCALE
    out: dict[str, float] = {}
    for key in keys:
        values = stats[key]
        values = values[np.isfinite(values)]
        low, high = np.percentile(values, [2.5, 97.5]) if len(values) else (math.nan, math.nan)
        out[f"{key}_ci_low"], out[f"{key}_ci_high"] = float(low), float(high)
    return out


def _breakdowns(df: pd.DataFrame, taus: Sequence[float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for dim in (*SESSION_DIMENSIONS, *TURN_DIMENSIONS):
        column = "turn_label" if dim == "turn" else dim
        if column not in df.columns:
            continue
        for value, group in df.groupby(df[column].astype(str), sort=True):
            agg = _session_aggregates(group, taus)
            head = _headline(agg, taus)
            out[metric_key("mrs", dim, value)] = head["mrs"]
            for tau in taus:
                t = tau_key(tau)
                out[metric_key(f"pass_turn_{t}", dim, value)] = head[f"pass_turn_{t}"]
                if dim in SESSION_DIMENSIONS:
                    out[metric_key(f"pass_session_{t}", dim, value)] = head[f"pass_session_{t}"]
            out[metric_key("n_turns", dim, value)] = float(group["scored"].sum())
            out[metric_key("unscored_turns", dim, value)] = float((~group["scored"]).sum())
    return out


def _as_set(value: object) -> set[str]:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return set()
    if isinstance(value, str):
        return {value} if value else set()
    if isinstance(value, Iterable):
        return {str(v) for v in value}
    return set()


def _tool_metrics(df: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {}
    if "n_calls" in df.columns:
        out["tool_calls_per_turn"] = float(pd.to_numeric(df["n_calls"], errors="coerce").mean())
    if "tools" not in df.columns or "gold_tools" not in df.columns:
        return out
    called = df["tools"].map(_as_set)
    gold = df["gold_tools"].map(_as_set)
    extra = [len(c - g) for c, g in zip(called, gold, strict=True)]
    missed = [len(g - c) for c, g in zip(called, gold, strict=True)]
    with_gold = [(c, g) for c, g in zip(called, gold, strict=True) if g]
    out["tool_recall"] = (
        float(np.mean([len(c & g) / len(g) for c, g in with_gold]) * RATE_SCALE)
        if with_gold
        else math.nan
    )
    out["tool_exact"] = (
        float(np.mean([c == g for c, g in with_gold]) * RATE_SCALE) if with_gold else math.nan
    )
    out["tool_extra_per_turn"] = float(np.mean(extra)) if extra else math.nan
    out["tool_missed_per_turn"] = float(np.mean(missed)) if missed else math.nan
    return out


def _counts(df: pd.DataFrame, agg: pd.DataFrame) -> dict[str, float]:
    out: dict[str, float] = {
        "n_sessions": float(df["session_id"].nunique()),
        "n_trials": float(agg["n_trials"].sum()),
        "n_turns": float(len(df)),
        "scored_turns": float(df["scored"].sum()),
        "unscored_turns": float((~df["scored"]).sum()),
        "sessions_unscored": float(agg["mean"].isna().sum()),
        "pass_session_excluded": float((agg["n_trials"] - agg["eligible"]).sum()),
    }
    for status in ("undecided", "failed", ERROR_STATUS):
        out[f"unscored_turns.{status}"] = float(((df["status"] == status) & ~df["scored"]).sum())
    out["error_turns"] = out[f"unscored_turns.{ERROR_STATUS}"]
    if "error_kind" in df.columns:
        kinds = df["error_kind"]
        for kind in ("unparseable", "provider"):
            out[f"judge_{kind}"] = float((kinds == kind).sum())
        out["judge_unparseable_rate"] = (
            out["judge_unparseable"] / len(df) * RATE_SCALE if len(df) else math.nan
        )
    if "end" in df.columns:
        ends = df["end"].fillna("unknown").astype(str)
        for reason in ("answered", "nudged", "budget", "error"):
            out[f"end.{reason}"] = float((ends == reason).sum())
        for reason in sorted(set(ends) - {"answered", "nudged", "budget", "error"}):
            out[metric_key("end", reason)] = float((ends == reason).sum())
    return out


def _epochs(df: pd.DataFrame, taus: Sequence[float]) -> dict[str, float]:
    """pass^k and per-session score spread across epochs (only when epochs > 1)."""
    trial_groups = df.groupby(["session_id", "epoch"])
    trials = pd.DataFrame(
        {"mean": trial_groups["score"].mean(), "all_scored": trial_groups["scored"].all()}
    )
    n_epochs = int(trials.groupby(level="session_id").size().max()) if len(trials) else 0
    if n_epochs <= 1:
        return {}
    out: dict[str, float] = {"epochs": float(n_epochs)}
    sessions = trials.groupby(level="session_id")
    eligible = sessions["all_scored"].all()
    out["pass_hat_excluded"] = float((~eligible).sum())
    for tau in taus:
        passed = (
            ((df["score"] >= tau - 1e-12) & df["scored"])
            .groupby([df["session_id"], df["epoch"]])
            .all()
        )
        per_session = passed.groupby(level="session_id").agg(["sum", "size"])[eligible]
        for k in range(1, n_epochs + 1):
            values = [
                math.comb(int(c), k) / math.comb(int(n), k)
                for c, n in zip(per_session["sum"], per_session["size"], strict=True)
                if n >= k
            ]
            out[f"pass_hat_{k}_{tau_key(tau)}"] = (
                float(np.mean(values) * RATE_SCALE) if values else math.nan
            )
    variances = sessions["mean"].agg(
        lambda s: float(np.var(s.dropna())) if s.notna().sum() >= 2 else np.nan
    )
    var = float(variances.mean()) * RATE_SCALE**2 if variances.notna().any() else math.nan
    out["session_score_var"] = var
    out["session_score_sd"] = math.sqrt(var) if not math.isnan(var) else math.nan
    return out


GROUNDING_COLUMNS = ("facts", "grounded", "contradicted", "unsupported")


def _count(value: object) -> float | None:
    """A per-turn count as a number; None when the turn has none (NaN, missing)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


def grounding_summary(turns: Iterable[Mapping[str, object]]) -> dict[str, float]:
    """The grounding metrics (module docstring) of per-turn counts (``GROUNDING_COLUMNS``);
    {} when no turn carries them."""
    rows = [
        [_count(t.get(c)) or 0.0 for c in GROUNDING_COLUMNS]
        for t in turns
        if _count(t.get("facts")) is not None
    ]
    if not rows:
        return {}
    facts, grounded, contradicted, unsupported = (
        float(sum(column)) for column in zip(*rows, strict=True)
    )

    def pct(count: float) -> float:
        return count / facts * RATE_SCALE if facts else math.nan

    return {
        "grounding.facts": facts,
        "grounding.grounded_pct": pct(grounded),
        "grounding.contradicted_pct": pct(contradicted),
        "grounding.unsupported_pct": pct(unsupported),
        "grounding.contradicted": contradicted,
        "grounding.unsupported": unsupported,
        "grounding.turns_contradicted": float(sum(1 for row in rows if row[2] > 0)),
    }


def _checked_taus(taus: Sequence[float], caller: str) -> tuple[float, ...]:
    taus = tuple(float(t) for t in taus)
    if any(not 0 <= t <= 1 for t in taus):
        raise ValueError(f"{caller}: every tau must be in [0, 1], got {taus}")
    return taus


def pass_rates(turns: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """Pass@Turn and Pass@Session in points at each tau (columns tau, pass_turn, pass_session).

    The headline definitions of `summarize` without its other metrics, for a curve over many
    taus; keyed by the tau itself, not its two-decimal name.
    """
    taus = _checked_taus(taus, "pass_rates")
    agg = _session_aggregates(_prepare(turns, "pass_rates"), taus)
    rates = [_pass_at(agg, tau) for tau in taus]
    return pd.DataFrame(
        {
            "tau": taus,
            "pass_turn": [turn for turn, _ in rates],
            "pass_session": [session for _, session in rates],
        }
    )


def summarize(
    turns: pd.DataFrame,
    taus: Sequence[float] = (0.6, 0.75),
    n_boot: int = 1000,
    seed: int = 0,
    *,
    breakdowns: bool = True,
) -> dict[str, float]:
    """All metrics of a run from its turn table (one row per session, epoch, turn).

    Required columns: session_id, turn, score, status; optional: epoch, scenario, tier,
    language, query, task_type, subtype/implicitness, tool_source, end, n_calls, tools,
    gold_tools. See the module docstring for the definitions and names.
    """
    taus = _checked_taus(taus, "summarize")
    df = _prepare(turns, "summarize")
    agg = _session_aggregates(df, taus)
    out = _headline(agg, taus)
    out.update(_bootstrap(agg, taus, n_boot, seed))
    out.update(_counts(df, agg))
    out.update(_tool_metrics(df))
    out.update(_epochs(df, taus))
    if set(GROUNDING_COLUMNS) <= set(df.columns):
        records = df[list(GROUNDING_COLUMNS)].to_dict("records")
        out.update(grounding_summary({str(k): v for k, v in r.items()} for r in records))
    if breakdowns:
        out.update(_breakdowns(df, taus))
    return out
