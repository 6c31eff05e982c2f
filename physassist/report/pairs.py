"""Which runs of a report are compared, and how sure each comparison is.

A pair is two runs whose experiment params differ in exactly one config group, the *factor*
(``query`` for Table 3, ``model`` for model vs model, ``terminal``/``menu``/... for an
ablation vs its base, ``judge`` for a rescoring vs its source). Pairs are formed only inside
one sweep, between a rescoring and its source or the rescorings of one source, or among runs
the user names explicitly: never across unrelated sweeps. A pair whose comparability key
(``physassist.comparability``) differs in a part the factor does not own is refused, with
the part named; two runs that differ in one group but sit in different sweeps (or outside
any) are listed as not paired, with that reason, so no comparison disappears without a word.

Each pair is compared on the sessions both runs share (``physassist.paired``): mRS and
Pass@Session at each tau, mean difference, paired bootstrap 95% interval, p-value, the
smallest difference this pair's design detects (``mde``: 80% power, two-sided 5%, from the
spread of its per-session differences and both runs' whole-pass residual, ``physassist.noise``)
and the cheapest sessions x epochs x judgings that would detect 2 and 5 points. A difference
below the MDE says so in ``note``: "within noise: this design detects >= 6.3 points" (its
interval holds 0), or "underpowered" when its interval excludes 0 all the same.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from physassist import comparability, noise
from physassist.metrics import tau_key
from physassist.paired import PairedResult, paired, session_values
from physassist.tracking.params import experiment_params

SWEEP = "tags.physassist.sweep_id"
RESCORE_OF = "tags.physassist.rescore_of"
RUN_NAME = "tags.mlflow.runName"
#: The base side of a factor (b in a - b): Table 3's delta is implicit - explicit.
BASES = {
    "query": "explicit",
    "menu": "on",
    "observations": "keep",
    "terminal": "prepare_to_answer",
    "patient": "replay",
    "ehr": "strict",
    "language": "en",
    "judge": "rules",
    "history": "free",  # gold - free: the carry-over cost (report.history)
    "grounding": "off",
}

COLUMNS = [
    "factor",
    "a",
    "b",
    "metric",
    "n_shared",
    "value_a",
    "value_b",
    "diff",
    "ci_low",
    "ci_high",
    "p_value",
    "test",
    "mde",
    *(f"to_detect_{d:.0f}pt" for d in noise.TARGETS),
    "note",
    "a_run_id",
    "b_run_id",
]

TurnsLoader = Callable[[str], "pd.DataFrame | None"]


@dataclass
class Pair:
    a: pd.Series  # the varied run
    b: pd.Series  # the base run
    factor: str
    refused: str | None = None  # why the two runs cannot be compared


def _params(row: pd.Series) -> dict[str, str]:
    params = {
        c[len("params.") :]: row[c]
        for c in row.index
        if c.startswith("params.") and pd.notna(row[c])
    }
    return {k: v for k, v in experiment_params(params).items() if not k.startswith("rescore.")}


def tags_of(row: pd.Series) -> dict[str, str]:
    return {
        c[len("tags.") :]: row[c]
        for c in row.index
        if c.startswith("tags.") and isinstance(row[c], str)
    }


def factor_of(a: pd.Series, b: pd.Series) -> str | None:
    """The one config group in which two runs' experiment params differ (None: 0 or several)."""
    pa, pb = _params(a), _params(b)
    groups = {k.split(".", 1)[0] for k in set(pa) | set(pb) if pa.get(k) != pb.get(k)}
    return groups.pop() if len(groups) == 1 else None


def label(row: pd.Series) -> str:
    name = row.get(RUN_NAME)
    return str(name) if isinstance(name, str) and name else str(row["run_id"])


def _orient(x: pd.Series, y: pd.Series, factor: str) -> tuple[pd.Series, pd.Series]:
    """(a, b) with b the base: a rescoring's source, the factor's base option, else by name."""
    if x.get(RESCORE_OF) == y["run_id"]:
        return x, y
    if y.get(RESCORE_OF) == x["run_id"]:
        return y, x
    base = BASES.get(factor)
    if base is not None and x.get(f"params.{factor}") == base != y.get(f"params.{factor}"):
        return y, x
    if base is not None and y.get(f"params.{factor}") == base:
        return x, y
    return (x, y) if label(x) > label(y) else (y, x)


def _groups(runs: pd.DataFrame, explicit: bool) -> list[pd.DataFrame]:
    if explicit:
        return [runs]
    groups = []
    if SWEEP in runs.columns:
        groups += [g for _, g in runs[runs[SWEEP].notna()].groupby(SWEEP, sort=False)]
    if RESCORE_OF in runs.columns:
        for source, rescored in runs[runs[RESCORE_OF].notna()].groupby(RESCORE_OF, sort=False):
            groups.append(pd.concat([runs[runs["run_id"] == source], rescored]))
    return groups


def pairing_context(row: pd.Series) -> str:
    """Where a run may be paired: its sweep, its rescored source, or nowhere (a single run)."""
    sweep, source = row.get(SWEEP), row.get(RESCORE_OF)
    if isinstance(sweep, str) and sweep:
        return f"sweep {sweep}"
    return f"rescorings of {source}" if isinstance(source, str) and source else "no sweep"


def _apart(x: pd.Series, y: pd.Series, factor: str) -> Pair:
    """Two runs differing in one group that no pairing context holds together."""
    a, b = _orient(x, y, factor)
    where = f"{pairing_context(a)} vs {pairing_context(b)}"
    reason = (
        f"not in one sweep ({where}): runs are paired only within a sweep; name both with "
        "--runs to pair them"
    )
    return Pair(a, b, factor, reason)


def run_pairs(runs: pd.DataFrame, explicit: bool = False) -> list[Pair]:
    """Every pair of runs (within a sweep, a rescored source, or the explicit runs) that
    differ in exactly one config group; refused pairs carry the reason, and so do the pairs
    no sweep holds together (see the module docstring)."""
    pairs: list[Pair] = []
    seen: set[frozenset[str]] = set()
    for group in _groups(runs, explicit):
        rows = [r for _, r in group.iterrows()]
        for x, y in itertools.combinations(rows, 2):
            ids = frozenset((x["run_id"], y["run_id"]))
            factor = factor_of(x, y)
            if factor is None or ids in seen:
                continue
            seen.add(ids)
            a, b = _orient(x, y, factor)
            pa, pb = comparability.parts_of(tags_of(a)), comparability.parts_of(tags_of(b))
            refused = None
            if pa is not None and pb is not None:
                parts = comparability.differing(pa, pb, factor)
                if parts:
                    refused = (
                        "comparability key differs in "
                        + ", ".join(parts)
                        + f" (not only in {factor})"
                    )
            pairs.append(Pair(a, b, factor, refused))
    if not explicit:
        rows = [r for _, r in runs.iterrows()]
        for x, y in itertools.combinations(rows, 2):
            factor = factor_of(x, y)
            if factor is not None and frozenset((x["run_id"], y["run_id"])) not in seen:
                pairs.append(_apart(x, y, factor))
    return pairs


def metrics_of(row: pd.Series) -> dict[str, float]:
    """A selected run's logged metrics under summarize's names (``metrics.`` columns)."""
    return {
        k[len("metrics.") :]: float(v)
        for k, v in row.items()
        if str(k).startswith("metrics.") and pd.notna(v)
    }


def _noise_of(turns: pd.DataFrame, taus: list[float]) -> dict[str, noise.Split]:
    """A run's variance split per compared metric (no intervals: only the components are used)."""
    values = noise.replicates(turns, taus)
    return {
        m: noise.split(values, m, n_boot=0)
        for m in ["mrs", *(f"pass_session_{tau_key(t)}" for t in taus)]
        if values[m].notna().any()
    }


def detectable(
    result: PairedResult, a: noise.Split | None, b: noise.Split | None, cost: noise.Cost
) -> dict[str, object]:
    """A comparison's MDE, the designs that would detect each of ``noise.TARGETS``, and the
    note when its difference is within noise. Nothing when nothing was estimated (no spread
    in the differences and no measured noise: e.g. identical runs of a deterministic agent);
    no design when nothing varies (every session the same in both arms, at every repeat)."""
    measured = any(s is not None and s.measured_noise for s in (a, b))
    if not (result.sd_diff > 0 or measured):
        return {}
    found = noise.compared(result.sd_diff, result.n_shared, a, b)
    out: dict[str, object] = {"mde": found.mde, "note": ""}
    if a is not None and b is not None and found.mde > 0:
        for delta in noise.TARGETS:
            design = noise.plan(
                a,
                delta,
                cost,
                found.interaction,
                other=b,
                available=result.n_shared,
                unshared=found.unshared,
            )
            out[f"to_detect_{delta:.0f}pt"] = (
                design.text(available=result.n_shared) if design else "out of reach"
            )
    if abs(result.diff) < found.mde:
        # below the MDE: noise when its interval holds 0; else found, but by a design too small
        # to find it reliably (such a difference tends to shrink when the runs are repeated)
        within = result.ci_low <= 0 <= result.ci_high
        what = "within noise" if within else "underpowered (significant here, but below the MDE)"
        out["note"] = f"{what}: this design detects >= {found.mde:.1f} points"
    return out


def comparisons(pairs: list[Pair], turns_of: TurnsLoader, taus: list[float]) -> pd.DataFrame:
    """One row per compared pair and metric (mRS, Pass@Session per tau), paired on sessions."""
    rows: list[dict[str, object]] = []
    cache: dict[str, tuple[pd.DataFrame, dict[str, noise.Split]] | None] = {}

    def values(run_id: str) -> tuple[pd.DataFrame, dict[str, noise.Split]] | None:
        if run_id not in cache:
            turns = turns_of(run_id)
            cache[run_id] = (
                (session_values(turns, taus), _noise_of(turns, taus))
                if turns is not None and len(turns)
                else None
            )
        return cache[run_id]

    for pair in pairs:
        head = {"factor": pair.factor, "a": label(pair.a), "b": label(pair.b)}
        if pair.refused:
            continue
        va, vb = values(pair.a["run_id"]), values(pair.b["run_id"])
        if va is None or vb is None:
            missing = label(pair.a) if va is None else label(pair.b)
            rows.append({**head, "note": f"no per-turn table logged for {missing}"})
            continue
        cost = noise.cost_of(metrics_of(pair.a))
        for metric in ["mrs", *(f"pass_session_{tau_key(t)}" for t in taus)]:
            result = paired(va[0][metric], vb[0][metric], metric)
            rows.append(
                {
                    **head,
                    "metric": metric,
                    "n_shared": result.n_shared,
                    "value_a": result.a,
                    "value_b": result.b,
                    "diff": result.diff,
                    "ci_low": result.ci_low,
                    "ci_high": result.ci_high,
                    "p_value": result.p_value,
                    "test": result.test,
                    **detectable(result, va[1].get(metric), vb[1].get(metric), cost),
                    "a_run_id": pair.a["run_id"],
                    "b_run_id": pair.b["run_id"],
                }
            )
    return pd.DataFrame(rows, columns=COLUMNS)


def refusals(pairs: list[Pair]) -> pd.DataFrame:
    """Every pair not compared, with the reason (run ids too: two sweeps reuse run names)."""
    rows = [
        {
            "factor": p.factor,
            "a": label(p.a),
            "b": label(p.b),
            "reason": p.refused,
            "a_run_id": p.a["run_id"],
            "b_run_id": p.b["run_id"],
        }
        for p in pairs
        if p.refused
    ]
    return pd.DataFrame(rows, columns=["factor", "a", "b", "reason", "a_run_id", "b_run_id"])
