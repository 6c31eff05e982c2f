"""Free vs gold history, turn by turn: how much of a turn's failure was carried over.

For every pair of runs that differ only in ``history`` (``physassist-eval -m history=free,gold``),
per turn index (T0..T3, and all turns): mRS and Pass@Turn at each tau under each history, and
the carry-over cost ``gold - free`` paired on the sessions both runs scored at that turn (a
paired bootstrap 95% interval and p-value, ``physassist.paired``). T0 starts from the same
(empty) history in both, so its cost measures the two runs' noise; a positive cost at a later
turn is what the model's own earlier turns cost it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from physassist.metrics import RATE_SCALE, tau_key
from physassist.paired import paired
from physassist.report.pairs import Pair, TurnsLoader, label
from physassist.report.tables import Table

FACTOR = "history"
COLUMNS = [
    "pair",
    "turn",
    "metric",
    "free",
    "gold",
    "carry_over",
    "ci_low",
    "ci_high",
    "p_value",
    "n_shared",
    "free_run_id",
    "gold_run_id",
]


def turn_values(turns: pd.DataFrame, taus: Sequence[float]) -> pd.DataFrame:
    """Per (session, turn label ``T0``..``T3`` and ``all``): ``mrs`` (the mean of its scored
    turn scores over epochs, points) and ``pass_turn_<tau>`` (the share of them >= tau,
    points); unscored turns are left out, never counted 0."""
    df = turns.copy()
    df["session_id"] = df["session_id"].astype(str)
    score = pd.to_numeric(df["score"], errors="coerce")
    df["score"] = score.where((df["status"] == "scored") & score.notna())
    df = df.dropna(subset=["score"])
    whole = df.assign(turn_label="all")
    df = pd.concat([df.assign(turn_label="T" + df["turn"].astype(int).astype(str)), whole])
    groups = df.groupby(["session_id", "turn_label"])["score"]
    out = pd.DataFrame({"mrs": groups.mean() * RATE_SCALE})
    for tau in taus:
        passed = df.assign(passed=(df["score"] >= tau - 1e-12).astype(float))
        out[f"pass_turn_{tau_key(tau)}"] = (
            passed.groupby(["session_id", "turn_label"])["passed"].mean() * RATE_SCALE
        )
    return out


def history_table(
    pairs: Sequence[Pair], turns_of: TurnsLoader, taus: Sequence[float]
) -> Table | None:
    """The free-vs-gold table of the pairs whose factor is ``history`` (None when there are none)."""
    rows: list[dict[str, object]] = []
    for pair in pairs:
        if pair.factor != FACTOR or pair.refused:
            continue
        gold_turns, free_turns = turns_of(pair.a["run_id"]), turns_of(pair.b["run_id"])
        if gold_turns is None or free_turns is None:
            continue
        gold, free = turn_values(gold_turns, taus), turn_values(free_turns, taus)
        labels = sorted(
            {t for _, t in gold.index} & {t for _, t in free.index}, key=lambda t: (t == "all", t)
        )
        for turn in labels:
            for metric in gold.columns:
                a = gold.xs(turn, level="turn_label")[metric]
                b = free.xs(turn, level="turn_label")[metric]
                result = paired(a, b, metric)
                rows.append(
                    {
                        "pair": label(pair.a),
                        "turn": turn,
                        "metric": metric,
                        "free": result.b,
                        "gold": result.a,
                        "carry_over": result.diff,
                        "ci_low": result.ci_low,
                        "ci_high": result.ci_high,
                        "p_value": result.p_value,
                        "n_shared": result.n_shared,
                        "free_run_id": pair.b["run_id"],
                        "gold_run_id": pair.a["run_id"],
                    }
                )
    if not rows:
        return None
    title = (
        "Free vs gold history per turn index (points; carry_over = gold - free, paired on the "
        "sessions both scored at that turn, 95% bootstrap CI)"
    )
    return Table(
        "history", title, pd.DataFrame(rows, columns=COLUMNS), column_decimals={"p_value": 3}
    )
