"""How far to trust a score: where its variance comes from, and the smallest difference a
design sees.

Pure numpy/pandas, no Inspect. A run's score moves between identical runs for three reasons
the benchmark can repeat: the agent's sampling (``inspect.epochs``), the simulated patient's
(``patient.seed``, one run per seed; a replayed patient has none) and the judge's
(``judge.repeats``, or ``physassist-rescore`` with repeats). Each observation is one session's
value in one *pass*: a (patient seed, epoch, judging) of the session, in points (mRS: its mean
turn score; Pass@Turn: the share of its scored turns >= tau; Pass@Session: 100 if every turn
passes). The model (nested random effects, one per axis, plus a shift shared by a whole pass)::

    y[s, p, a, j] = mu + S[s] + P[s, p] + A[s, p, a] + J[s, p, a, j] + R[p, a, j]

* ``session`` (S): how sessions differ: what the benchmark measures, not noise;
* ``patient`` (P): between patient seeds of one session (averaged over its epochs);
* ``agent`` (A): between epochs of one session under one patient seed;
* ``judge`` (J): between judgings of the same answers;
* ``residual`` (R): what moves every session of a pass together (a provider changing between
  epochs, a seed that makes every patient terse): no per-session axis explains it, and more
  sessions do not average it away.

Estimates are the nested ANOVA's method of moments on the pass-centred values (each level's
pooled within-group variance minus what the levels below it contribute, exact for unequal
group sizes), truncated at 0; ``residual`` is the spread of the pass means beyond what the
per-session components put into them. The 95% intervals are a percentile bootstrap over
sessions (``n_boot`` resamples, seeded): a session's passes move together, like the
metrics' intervals; scores are bounded and lumpy (many 0s and 100s), so the chi-square
intervals of a normal ANOVA would be wrong, and a share is a ratio with no closed-form interval.
The residual is a draw per pass, not per session: each resample also scales the pass means'
spread by a chi-square draw with (passes - 1) degrees of freedom, the passes' own sampling.

An axis with no repeats (one epoch, one judging, one patient seed) is *unmeasured*, never 0:
its variance stays inside the next axis up (with one judging, ``agent`` holds the judge's too).

The smallest difference a design detects (``mde``: 80% power, two-sided 5%, paired on the same
sessions) follows from the noise of one run's score: ``run_noise(n_p, n_a, n_j)`` =
``(P/n_p + A/(n_p n_a) + J/(n_p n_a n_j)) / n_sessions + R/(n_p n_a n_j)``; two identical
runs differ by up to ``1.96 * sqrt(2 * run_noise)`` points (95%, ``noise``) and a difference
of ``2.80 * sqrt(2 * run_noise)`` is found 80% of the time. That is a floor: comparing two
configurations adds how differently they fare per session (the interaction), which only the
comparison measures (``compared``). ``plan`` finds the cheapest sessions x epochs x judgings
that reach a target difference, in tokens (and USD when priced) at the run's own usage; a judge
whose judgings agree (variance 0: the rules judge) gets one judging, its repeats being copies
that average nothing, the residual included.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from physassist.metrics import RATE_SCALE, tau_key

__all__ = [
    "AXES",
    "Component",
    "Cost",
    "Plan",
    "Comparison",
    "Split",
    "compared",
    "cost_of",
    "plan",
    "replicates",
    "run_metrics",
    "split",
]

AXES = ("session", "patient", "agent", "judge", "residual")
NOISE_AXES = ("patient", "agent", "judge", "residual")
Z_95 = NormalDist().inv_cdf(0.975)
Z_MDE = Z_95 + NormalDist().inv_cdf(0.8)  # two-sided 5%, 80% power: 2.80
TARGETS = (2.0, 5.0)  # the differences (points) whose price every result states
MAX_EPOCHS, MAX_JUDGINGS = 10, 5  # what ``plan`` considers per session
TINY = 1e-9  # points^2: below it, a variance is rounding
BOOT_CHUNK = 100  # bootstrap resamples computed at once (memory: chunk x sessions x passes)
KEYS = ["session_id", "patient", "epoch", "judging"]


def _judgings(row_scores: object, score: float) -> list[float]:
    """A turn's judging scores: ``judge_scores`` (a list, or its JSON text in a CSV), else its
    score."""
    value = row_scores
    if isinstance(value, str) and value.strip().startswith("["):
        value = json.loads(value)
    if isinstance(value, list | tuple | np.ndarray) and len(value):
        return [float(v) for v in value]
    return [score]


def replicates(turns: pd.DataFrame, taus: Sequence[float], patient: str = "-") -> pd.DataFrame:
    """One row per (session, patient, epoch, judging) with each session value in points:
    ``mrs``, ``pass_turn_<tau>``, ``pass_session_<tau>`` (``patient``: the run's patient seed).

    Only scored turns count (an unscored turn is no judging of anything); a trial with an
    unscored turn has no Pass@Session, as in ``physassist.metrics``."""
    df = turns.copy()
    if "epoch" not in df.columns:
        df["epoch"] = 1
    score = pd.to_numeric(df["score"], errors="coerce")
    scored = (df["status"] == "scored") & score.notna()
    complete = scored.groupby([df["session_id"].astype(str), df["epoch"]]).transform("all")
    column = df["judge_scores"] if "judge_scores" in df.columns else pd.Series(None, index=df.index)
    rows = [
        (str(sid), int(epoch), j, value, bool(whole))
        for sid, epoch, raw, s, ok, whole in zip(
            df["session_id"], df["epoch"], column, score, scored, complete, strict=True
        )
        if ok
        for j, value in enumerate(_judgings(raw, float(s)), start=1)
    ]
    long = pd.DataFrame(rows, columns=["session_id", "epoch", "judging", "score", "complete"])
    groups = long.groupby(["session_id", "epoch", "judging"], sort=True)
    out = pd.DataFrame({"mrs": groups["score"].mean() * RATE_SCALE})
    for tau in taus:
        passed = long["score"] >= tau - 1e-12
        out[f"pass_turn_{tau_key(tau)}"] = (
            passed.groupby([long["session_id"], long["epoch"], long["judging"]]).mean() * RATE_SCALE
        )
        every = (
            (passed & long["complete"])
            .groupby([long["session_id"], long["epoch"], long["judging"]])
            .all()
        )
        known = groups["complete"].all()
        out[f"pass_session_{tau_key(tau)}"] = (every * RATE_SCALE).where(known)
    out = out.reset_index()
    out.insert(1, "patient", str(patient))
    return out[[*KEYS, *[c for c in out.columns if c not in KEYS]]]


@dataclass(frozen=True)
class _Layout:
    """Which pass (a column of the session x pass matrix) belongs to which trajectory and
    patient."""

    to_trajectory: np.ndarray  # passes x trajectories, 0/1
    to_patient: np.ndarray  # trajectories x patients, 0/1
    differs: dict[str, float]  # share of pass pairs differing in their trajectory / patient


def _matrix(values: pd.DataFrame, metric: str) -> tuple[np.ndarray, _Layout]:
    wide = values.pivot_table(
        index="session_id",
        columns=["patient", "epoch", "judging"],
        values=metric,
        aggfunc="mean",
        sort=True,
    )
    columns: list[Any] = wide.columns.tolist()  # (patient, epoch, judging) tuples
    passes = [(str(c[0]), int(str(c[1])), int(str(c[2]))) for c in columns]
    trajectories = sorted({(p, a) for p, a, _ in passes})
    patients = sorted({p for p, _, _ in passes})
    to_t = np.array([[float((p, a) == t) for t in trajectories] for p, a, _ in passes])
    to_p = np.array([[float(t[0] == q) for q in patients] for t in trajectories])
    pairs = [(x, y) for i, x in enumerate(passes) for y in passes[i + 1 :]]
    differs = {
        "agent": float(np.mean([x[:2] != y[:2] for x, y in pairs])) if pairs else 0.0,
        "patient": float(np.mean([x[0] != y[0] for x, y in pairs])) if pairs else 0.0,
    }
    return wide.to_numpy(dtype=float), _Layout(to_t, to_p, differs)


def _within(
    x: np.ndarray, present: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per (batch, session, group): count, mean; per batch: pooled within-group sum of squares
    and df."""
    x0 = np.where(present, x, 0.0)
    count = present.astype(float) @ groups
    total = x0 @ groups
    squares = (x0 * x0) @ groups
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / count, np.nan)
        ss = np.where(count > 0, squares - total * total / count, 0.0)
    df = np.clip(count - 1, 0, None)
    return count, mean, ss.sum(axis=(1, 2)), df.sum(axis=(1, 2))


def _inverse_mean(weights: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Per batch: the mean over present cells of ``weights`` (what 1/n terms average to)."""
    total = np.asarray(np.where(present, weights, 0.0).sum(axis=(1, 2)), dtype=float)
    counts = np.maximum(present.sum(axis=(1, 2)), 1)
    return np.asarray(total / counts, dtype=float)


def _estimate(
    y: np.ndarray, layout: _Layout, passes_drawn: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """Each axis' variance, per resample (``y``: batch x sessions x passes, NaN missing); NaN
    for an axis with no repeats. See the module docstring for the model. ``passes_drawn``
    scales the pass means' spread per resample: the passes' own sampling, which a bootstrap
    over sessions cannot see."""
    with warnings.catch_warnings():  # a pass or session with no value in a resample: NaN, by design
        warnings.simplefilter("ignore", RuntimeWarning)
        return _moments(y, layout, passes_drawn)


def _moments(
    y: np.ndarray, layout: _Layout, passes_drawn: np.ndarray | None
) -> dict[str, np.ndarray]:
    present = ~np.isnan(y)
    sessions = present.any(axis=2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        session_mean = np.nansum(y, axis=2) / present.sum(axis=2)
        shift = np.nanmean(
            np.where(present, y - session_mean[..., None], np.nan), axis=1
        )  # batch x passes
        # one session: a pass's shift and that session's noise are one number, kept as noise
        shift = np.where((sessions > 1)[:, None], shift, 0.0)
        # centring on the pass means takes 1/n of each deviation's own noise with it: put it back
        unbias = (np.where(sessions > 1, sessions / np.maximum(sessions - 1, 1), 1.0))[:, None]
    z = y - np.nan_to_num(shift)[:, None, :]
    # judge: judgings of one trajectory
    n_j, traj, ss, df = _within(z, present, layout.to_trajectory)
    judge = np.where(df > 0, ss / np.maximum(df, 1), np.nan) * unbias[:, 0]
    has_t = n_j > 0
    inv_j = np.where(has_t, 1.0 / np.maximum(n_j, 1), 0.0)  # J's weight in a trajectory mean
    # agent: trajectories (epochs) of one patient seed
    n_a, pat, ss, df = _within(traj, has_t, layout.to_patient)
    has_p = n_a > 0
    grouped = has_t & ((n_a @ layout.to_patient.T) > 1)
    agent = np.where(df > 0, ss / np.maximum(df, 1), np.nan) * unbias[:, 0] - np.nan_to_num(
        judge
    ) * _inverse_mean(inv_j, grouped)
    with np.errstate(invalid="ignore", divide="ignore"):
        inv_a = np.where(has_p, 1.0 / np.maximum(n_a, 1), 0.0)
        j_in_p = np.where(
            has_p, (inv_j @ layout.to_patient) / np.maximum(n_a, 1) ** 2, 0.0
        )  # J's weight in a patient mean
    # patient: seeds of one session
    n_p, sess, ss, df = _within(pat, has_p, np.ones((pat.shape[2], 1)))
    several = has_p & (n_p > 1)
    patient = (
        np.where(df > 0, ss / np.maximum(df, 1), np.nan) * unbias[:, 0]
        - np.nan_to_num(agent) * _inverse_mean(inv_a, several)
        - np.nan_to_num(judge) * _inverse_mean(j_in_p, several)
    )
    # session: the sessions' means over all their passes
    means = sess[..., 0]
    has_s = ~np.isnan(means)
    k = has_s.sum(axis=1)
    m_p = np.maximum(n_p[..., 0], 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        centred = np.where(
            has_s,
            means - np.nansum(np.where(has_s, means, 0), axis=1, keepdims=True) / k[:, None],
            0.0,
        )
        between = np.where(k > 1, (centred**2).sum(axis=1) / np.maximum(k - 1, 1), np.nan)
    weights = (
        np.where(has_s, 1.0 / m_p, 0.0),
        np.where(has_s, inv_a.sum(axis=2) / m_p**2, 0.0),
        np.where(has_s, j_in_p.sum(axis=2) / m_p**2, 0.0),
    )
    session = between - sum(
        np.nan_to_num(c) * w.sum(axis=1) / np.maximum(k, 1)
        for c, w in zip((patient, agent, judge), weights, strict=True)
    )
    # residual: the spread of the pass means beyond what the per-session components put there
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.nanvar(shift, axis=1, ddof=1) if shift.shape[1] > 1 else np.full(len(y), np.nan)
        if passes_drawn is not None:
            spread = spread * passes_drawn
        per_session = (
            np.nan_to_num(judge)
            + layout.differs["agent"] * np.nan_to_num(agent)
            + layout.differs["patient"] * np.nan_to_num(patient)
        )
        residual = np.where(
            sessions > 1,
            spread - per_session / np.maximum(present.sum(axis=1).mean(axis=1), 1),
            np.nan,
        )
    return {
        "session": session,
        "patient": patient,
        "agent": agent,
        "judge": judge,
        "residual": residual,
    }


@dataclass(frozen=True)
class Component:
    """One axis' share of the variance of one observation (a session in one pass)."""

    axis: str
    variance: float  # points^2; NaN: unmeasured
    share: float  # percent of the measured total; NaN: unmeasured
    share_low: float
    share_high: float
    repeats: int  # its repeats per session (1: unmeasured), or sessions / passes
    note: str = ""

    @property
    def measured(self) -> bool:
        return not math.isnan(self.variance)


@dataclass(frozen=True)
class Split:
    """The variance of one metric split over the axes, for a design of ``repeats`` per session."""

    metric: str
    n_sessions: int
    components: tuple[Component, ...]
    repeats: Mapping[str, int]  # patient seeds, epochs, judgings per session (as run)

    def variance(self, axis: str) -> float:
        """An axis' variance, 0 when unmeasured (for sums: an unmeasured axis adds nothing
        known)."""
        value = next(c.variance for c in self.components if c.axis == axis)
        return 0.0 if math.isnan(value) else value

    @property
    def unmeasured(self) -> list[str]:
        return [c.axis for c in self.components if not c.measured and c.axis != "session"]

    @property
    def measured_noise(self) -> bool:
        """Some axis of noise had repeats: the design's noise is known (at least in part)."""
        return any(c.measured for c in self.components if c.axis in NOISE_AXES)

    @property
    def judge_deterministic(self) -> bool:
        """Judgings of one answer measured alike (a rules judge): more of them are copies,
        which average nothing away."""
        judge = next(c for c in self.components if c.axis == "judge")
        return judge.measured and judge.variance == 0

    def session_noise(self, patients: int, epochs: int, judgings: int) -> float:
        """The noise variance of one session's value averaged over a design's passes."""
        return (
            self.variance("patient") / patients
            + self.variance("agent") / (patients * epochs)
            + self.variance("judge") / (patients * epochs * judgings)
        )

    def shift_noise(self, patients: int, epochs: int, judgings: int) -> float:
        """The residual's variance in a run's score (a mean over its passes; a deterministic
        judge's judgings are one pass)."""
        passes = patients * epochs * (1 if self.judge_deterministic else judgings)
        return self.variance("residual") / passes

    def run_noise(self, n_sessions: int | None = None, **design: int) -> float:
        """The variance of a run's score between identical runs of a design (the run's own
        design by default): what ``noise`` and ``mde`` are computed from."""
        d = {
            "patients": self.repeats["patient"],
            "epochs": self.repeats["agent"],
            "judgings": self.repeats["judge"],
            **design,
        }
        n = n_sessions or self.n_sessions
        return self.session_noise(**d) / n + self.shift_noise(**d)

    @property
    def noise(self) -> float:
        """Two identical runs' scores differ by up to this (points, 95%)."""
        return Z_95 * math.sqrt(2 * self.run_noise())

    @property
    def mde(self) -> float:
        """The smallest paired difference found 80% of the time (two-sided 5%), in points."""
        return Z_MDE * math.sqrt(2 * self.run_noise())


def split(values: pd.DataFrame, metric: str = "mrs", n_boot: int = 1000, seed: int = 0) -> Split:
    """The variance of ``metric`` over ``replicates`` rows (one run, or several runs of one
    configuration differing in ``patient.seed``) split over the axes, with bootstrap intervals."""
    frame = values.dropna(subset=[metric])
    if frame.empty:
        raise ValueError(f"split: no value of {metric} to split")
    y, layout = _matrix(frame, metric)
    # sums of squares of equal values leave ~1e-14: that is 0 (a deterministic axis), not noise
    point = {
        k: 0.0 if abs(float(v[0])) < TINY else float(v[0])
        for k, v in _estimate(y[None], layout).items()
    }
    rng = np.random.default_rng(seed)
    draws: dict[str, list[np.ndarray]] = {axis: [] for axis in AXES}
    df = max(y.shape[1] - 1, 1)
    for start in range(0, n_boot, BOOT_CHUNK):
        size = min(BOOT_CHUNK, n_boot - start)
        idx = rng.integers(0, len(y), size=(size, len(y)))
        for axis, value in _estimate(y[idx], layout, rng.chisquare(df, size) / df).items():
            draws[axis].append(value)
    boot = {axis: np.concatenate(v) if v else np.empty(0) for axis, v in draws.items()}
    measured = [a for a in AXES if not math.isnan(point[a])]
    kept = {a: max(point[a], 0.0) for a in measured}
    total = sum(kept.values())
    stack = (
        np.vstack(
            [np.where(np.nan_to_num(boot[a]) < TINY, 0.0, np.nan_to_num(boot[a])) for a in measured]
        )
        if measured and n_boot
        else None
    )
    shares = (
        stack / np.where(stack.sum(axis=0) > 0, stack.sum(axis=0), np.nan) * 100
        if stack is not None
        else None
    )
    repeats = {
        "patient": int(frame.groupby("session_id")["patient"].nunique().max()),
        "agent": int(frame.groupby(["session_id", "patient"])["epoch"].nunique().max()),
        "judge": int(frame.groupby(["session_id", "patient", "epoch"])["judging"].nunique().max()),
    }
    counts = {
        "session": frame["session_id"].nunique(),
        **repeats,
        "residual": len(layout.to_trajectory),
    }
    components = []
    for axis in AXES:
        if axis not in kept:
            components.append(
                Component(
                    axis,
                    math.nan,
                    math.nan,
                    math.nan,
                    math.nan,
                    counts[axis],
                    _unmeasured(axis, repeats),
                )
            )
            continue
        row = measured.index(axis)
        low, high = (
            np.nanpercentile(shares[row], [2.5, 97.5])
            if shares is not None and np.isfinite(shares[row]).any()
            else (math.nan, math.nan)
        )
        share = kept[axis] / total * 100 if total > 0 else 0.0
        components.append(
            Component(
                axis,
                kept[axis],
                share,
                float(low),
                float(high),
                counts[axis],
                _holds(axis, repeats),
            )
        )
    return Split(metric, int(frame["session_id"].nunique()), tuple(components), repeats)


def _unmeasured(axis: str, repeats: Mapping[str, int]) -> str:
    how = {
        "patient": (
            "one patient seed per session: a sweep over patient.seed (patient=live) measures it"
        ),
        "agent": "one epoch: inspect.epochs >= 2 measures it",
        "judge": (
            "one judging: judge.repeats >= 2 (or physassist-rescore judge.repeats=k) measures it"
        ),
        "residual": "one pass over the sessions: any repeat measures it",
        "session": "one session",
    }[axis]
    return "unmeasured: " + how


def _holds(axis: str, repeats: Mapping[str, int]) -> str:
    """What an estimate also holds: the unrepeated axes below it."""
    below = {
        "session": ["patient", "agent", "judge"],
        "patient": ["agent", "judge"],
        "agent": ["judge"],
    }.get(axis, [])
    hidden = []
    for inner in below:
        if repeats[inner] > 1:
            break
        hidden.append(inner)
    return f"includes {' and '.join(hidden)} (not repeated)" if hidden and axis != "session" else ""


@dataclass(frozen=True)
class Cost:
    """What one trajectory (a session x epoch: assistant and patient) and one judging of it cost."""

    tokens_trajectory: float
    tokens_judging: float
    usd_trajectory: float = math.nan
    usd_judging: float = math.nan


def cost_of(metrics: Mapping[str, float]) -> Cost:
    """A run's cost per trajectory and per judging from its usage metrics (``physassist.usage``)."""
    trials = metrics.get("n_trials") or metrics.get("n_sessions") or math.nan
    judgings = max(1.0, float(metrics.get("repeats.judge", 1.0)))

    def tokens(role: str) -> float:
        return float(
            metrics.get(f"tokens.{role}.input", 0.0) + metrics.get(f"tokens.{role}.output", 0.0)
        )

    def usd(*roles: str) -> float:
        values = [metrics.get(f"cost_usd.{r}") for r in roles if f"tokens.{r}.input" in metrics]
        return (
            math.nan
            if not values or any(v is None for v in values)
            else float(sum(v for v in values if v is not None))
        )

    trajectory_usd = usd("assistant", "patient") / trials
    judged = "tokens.grader.input" in metrics  # a judge without a model (rules) costs nothing
    return Cost(
        (tokens("assistant") + tokens("patient")) / trials,
        tokens("grader") / trials / judgings,
        trajectory_usd,
        usd("grader") / trials / judgings
        if judged
        else (math.nan if math.isnan(trajectory_usd) else 0.0),
    )


@dataclass(frozen=True)
class Plan:
    """The cheapest design (per run) that detects ``delta`` points."""

    delta: float
    sessions: int
    epochs: int
    judgings: int
    tokens: float
    usd: float

    def text(self, available: int | None = None) -> str:
        what = (
            f"{self.sessions} sessions x {self.epochs} epoch{'s' * (self.epochs > 1)} x "
            f"{self.judgings} judging{'s' * (self.judgings > 1)}"
        )
        price = f", ~{_tokens(self.tokens)} tokens" + (
            f" (${self.usd:,.2f})" if not math.isnan(self.usd) else ""
        )
        short = (
            f" (the dataset has {available})"
            if available is not None and self.sessions > available
            else ""
        )
        return what + price + short


def _tokens(value: float) -> str:
    for scale, unit in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.1f}{unit}"
    return f"{value:.0f}"


def plan(
    parts: Split,
    delta: float,
    cost: Cost,
    interaction: float = 0.0,
    other: Split | None = None,
    available: int | None = None,
    unshared: float = 1.0,
) -> Plan | None:
    """The cheapest sessions x epochs x judgings (patient seeds as run) whose paired MDE is <=
    ``delta``: a comparison's per-session variance is ``interaction`` + the noise of both arms
    (``other``: the second arm's split; default the same), of which ``unshared`` remains when
    the arms draw in common (``compared``). None when nothing reaches it (the
    residual alone is too big), or nothing needs reaching: no noise measured (or all of it 0)
    and no interaction known. A design within the ``available`` sessions (the dataset's) is
    preferred to a cheaper one beyond them: where sessions run out, epochs and judgings buy
    the rest."""
    second = other or parts
    if not (parts.measured_noise or interaction > 0):
        return None
    epochs = (
        range(1, MAX_EPOCHS + 1)
        if parts.repeats["agent"] > 1 or second.repeats["agent"] > 1
        else [parts.repeats["agent"]]
    )
    judgings = (
        range(1, MAX_JUDGINGS + 1)
        if any(s.repeats["judge"] > 1 and not s.judge_deterministic for s in (parts, second))
        else [1 if parts.judge_deterministic else parts.repeats["judge"]]
    )  # a deterministic judge's judgings buy nothing: epochs and sessions do
    patients = parts.repeats["patient"]
    best: Plan | None = None
    for n_a in epochs:
        for n_j in judgings:
            design = {"patients": patients, "epochs": n_a, "judgings": n_j}
            noise = parts.session_noise(**design) + second.session_noise(**design)
            per_session = interaction + unshared * noise
            shift = parts.shift_noise(**design) + second.shift_noise(**design)
            room = delta**2 / Z_MDE**2 - shift
            if room <= 0 or per_session + shift <= 0:  # out of reach, or nothing to average away
                continue
            n = max(2, math.ceil(per_session / room))
            trajectories = n * patients * n_a
            candidate = Plan(
                delta,
                n,
                n_a,
                n_j,
                trajectories * (cost.tokens_trajectory + n_j * cost.tokens_judging),
                trajectories * (cost.usd_trajectory + n_j * cost.usd_judging),
            )
            if best is None or _rank(candidate, available) < _rank(best, available):
                best = candidate
    return best


def _rank(candidate: Plan, available: int | None) -> tuple[bool, float, int]:
    """Within the available sessions first, then cheaper, then fewer trajectories x judgings."""
    beyond = available is not None and candidate.sessions > available
    return beyond, candidate.tokens, candidate.sessions * candidate.epochs * candidate.judgings


@dataclass(frozen=True)
class Comparison:
    """What a comparison's per-session differences say about detecting a difference."""

    mde: float  # points: 80% power, two-sided 5%, at this comparison's design
    interaction: float  # points^2: how differently the two arms fare per session, beyond noise
    unshared: float  # the share of both arms' noise the differences hold (< 1: drawn in common)


def compared(sd_diff: float, n_shared: int, a: Split | None, b: Split | None) -> Comparison:
    """A comparison's MDE from the spread of its per-session differences plus the residual of
    both arms (a paired mean does not average it away), and what that spread is made of: the
    interaction beyond both arms' noise; or, when the spread is smaller than their noise, the
    noise the arms drew in common (the same seeds: seeded offline agents) cancelled, and
    ``unshared`` is the part left, which designs scale (``plan``)."""
    if n_shared < 2 or not sd_diff >= 0:
        return Comparison(math.nan, math.nan, math.nan)
    arms = [s for s in (a, b) if s is not None]
    own = [(s.repeats["patient"], s.repeats["agent"], s.repeats["judge"]) for s in arms]
    shift = sum(s.shift_noise(*d) for s, d in zip(arms, own, strict=True))
    noise = sum(s.session_noise(*d) for s, d in zip(arms, own, strict=True))
    mde = Z_MDE * math.sqrt(sd_diff**2 / n_shared + shift)
    if sd_diff**2 >= noise:
        return Comparison(mde, sd_diff**2 - noise, 1.0)
    return Comparison(mde, 0.0, sd_diff**2 / noise)


def metric_names(taus: Iterable[float]) -> list[str]:
    """The metrics a run's noise is reported for: mRS and Pass@Turn at each tau."""
    return ["mrs", *(f"pass_turn_{tau_key(t)}" for t in taus)]


def run_metrics(
    turns: pd.DataFrame,
    taus: Sequence[float],
    usage: Mapping[str, float] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, float]:
    """A run's noise as metrics (points): ``repeats.<patient|agent|judge>``; per metric
    ``noise.<m>``, ``mde.<m>``, ``var.<m>.<axis>``, ``share.<m>.<axis>`` (percent) with
    ``_ci_low`` / ``_ci_high`` (measured axes only); for mRS the design that detects each of
    ``TARGETS``: ``plan.mrs.<d>pt.<sessions|epochs|judgings|tokens|cost_usd>``."""
    values = replicates(turns, taus)
    out: dict[str, float] = {}
    for metric in metric_names(taus):
        if values[metric].notna().sum() == 0:
            continue
        parts = split(values, metric, n_boot, seed)
        if not out:
            out.update({f"repeats.{axis}": float(n) for axis, n in parts.repeats.items()})
        for c in parts.components:
            if c.measured:
                out[f"var.{metric}.{c.axis}"] = c.variance
                out[f"share.{metric}.{c.axis}"] = c.share
                out[f"share.{metric}.{c.axis}_ci_low"] = c.share_low
                out[f"share.{metric}.{c.axis}_ci_high"] = c.share_high
        if parts.measured_noise:
            out[f"noise.{metric}"] = parts.noise
            out[f"mde.{metric}"] = parts.mde
        if metric == "mrs":
            cost = cost_of({**(usage or {}), **out})
            for delta in TARGETS:
                found = plan(parts, delta, cost, available=parts.n_sessions)
                if found is not None:
                    key = f"plan.mrs.{delta:.0f}pt."
                    out.update(
                        {
                            key + "sessions": found.sessions,
                            key + "epochs": found.epochs,
                            key + "judgings": found.judgings,
                            key + "tokens": found.tokens,
                        }
                    )
                    if not math.isnan(found.usd):
                        out[key + "cost_usd"] = found.usd
    return out
