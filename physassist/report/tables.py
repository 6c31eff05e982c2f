"""The paper's tables, rebuilt from MLflow runs (one row of ``mlflow.search_runs`` per run).

* Table 2, per language: mRS per tier and overall, Pass@Turn / Pass@Session at each tau.
* Table 3: implicit vs explicit per implicitness subtype, pairing runs that differ only in
  ``query``; ``delta = implicit - explicit`` (negative = implicit phrasing costs points).
* Table I1: mRS per scenario. Table I2: mRS, Pass@Turn and Pass@Session per tier.
* Grounding: each run's grounding check (facts stated, grounded / contradicted / unsupported).

Every number is copied from a run's logged metrics (pass rates scaled to percent); nothing is
recomputed here, so a table always agrees with the runs it cites.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from physassist.agreement import kappa_text
from physassist.vocab import SCENARIOS, SUBTYPES, TIERS

_TAU = re.compile(r"^metrics\.pass_turn_(\d\.\d\d)$")
RUN_NAME = "tags.mlflow.runName"


@dataclass
class Table:
    """A named table: the frame (full precision, for CSV) and how many decimals to show."""

    name: str
    title: str
    frame: pd.DataFrame
    decimals: int = 1
    column_decimals: dict[str, int] = field(default_factory=dict)  # e.g. p-values: 3

    def markdown(self) -> str:
        shown = self.frame.copy()
        for col in [c for c in shown.columns if c.endswith("run_id")]:  # full ids are in the CSV
            shown[col] = shown[col].astype(str).str[:8]
        for col in shown.columns:
            if pd.api.types.is_float_dtype(shown[col]):
                places = self.column_decimals.get(col, self.decimals)
                shown[col] = shown[col].map(lambda v, p=places: "-" if pd.isna(v) else f"{v:.{p}f}")

        def cell(value: object) -> str:  # run names hold " | " (physassist.tracking.names)
            return str(value).replace("|", "\\|")

        header = "| " + " | ".join(map(cell, shown.columns)) + " |"
        rule = "|" + "|".join("---" for _ in shown.columns) + "|"
        body = ["| " + " | ".join(map(cell, row)) + " |" for row in shown.itertuples(index=False)]
        return "\n".join([f"### {self.title}", "", header, rule, *body, ""])


def taus_of(runs: pd.DataFrame) -> list[str]:
    """The tau keys (``0.60``) for which the runs logged headline pass rates."""
    return sorted({m.group(1) for c in runs.columns if (m := _TAU.match(c))})


def _metric(runs: pd.DataFrame, name: str) -> pd.Series:
    col = f"metrics.{name}"
    return runs[col].astype(float) if col in runs.columns else pd.Series(np.nan, index=runs.index)


def _param(runs: pd.DataFrame, name: str) -> pd.Series:
    col = f"params.{name}"
    return runs[col] if col in runs.columns else pd.Series(None, index=runs.index, dtype=object)


def run_labels(runs: pd.DataFrame) -> pd.Series:
    """The run names (MLflow's ``runName`` tag), else the run ids."""
    return runs[RUN_NAME] if RUN_NAME in runs.columns else runs["run_id"]


def _base(runs: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "run": run_labels(runs).values,
            "run_id": runs["run_id"].values,
            "model": _param(runs, "model").values,
        }
    )


def table2(runs: pd.DataFrame, language: str) -> Table:
    """Main results for one language (paper Table 2)."""
    sel = runs[_param(runs, "language") == language]
    out = _base(sel)
    for tier in TIERS:
        out[f"L{tier}"] = _metric(sel, f"mrs.tier.{tier}").values
    out["mRS"] = _metric(sel, "mrs").values
    for tau in taus_of(sel):
        short = tau[1:]  # ".60"
        out[f"@T{short}"] = _metric(sel, f"pass_turn_{tau}").values
        out[f"@S{short}"] = _metric(sel, f"pass_session_{tau}").values
    return Table(
        f"table2_{language}",
        f"Table 2 ({language.upper()}): mRS by tier, Pass@Turn (@T) and Pass@Session (@S)",
        out,
    )


def query_pairs(runs: pd.DataFrame, explicit: bool = False) -> list[tuple[pd.Series, pd.Series]]:
    """(implicit run, explicit run) pairs: runs of one sweep (or the runs given explicitly)
    whose experiment params differ only in ``query`` and whose comparability keys agree."""
    from physassist.report.pairs import run_pairs

    return [(p.a, p.b) for p in run_pairs(runs, explicit) if p.factor == "query" and not p.refused]


def table3(runs: pd.DataFrame, explicit: bool = False) -> Table:
    """Implicit vs explicit mRS per subtype for every pair of runs differing only in query."""
    rows = []
    for imp, exp in query_pairs(runs, explicit):
        label = imp.get(RUN_NAME) or imp["run_id"]
        for subtype in (*SUBTYPES, "all"):
            name = "mrs" if subtype == "all" else f"mrs.implicitness.{subtype}"
            i = float(imp.get(f"metrics.{name}", np.nan))
            e = float(exp.get(f"metrics.{name}", np.nan))
            rows.append(
                {
                    "pair": label,
                    "model": imp.get("params.model"),
                    "language": imp.get("params.language"),
                    "subtype": subtype,
                    "implicit": i,
                    "explicit": e,
                    "delta": i - e,
                    "implicit_run_id": imp["run_id"],
                    "explicit_run_id": exp["run_id"],
                }
            )
    columns = [
        "pair",
        "model",
        "language",
        "subtype",
        "implicit",
        "explicit",
        "delta",
        "implicit_run_id",
        "explicit_run_id",
    ]
    return Table(
        "table3",
        "Table 3: implicit vs explicit questions by subtype (delta = implicit - explicit)",
        pd.DataFrame(rows, columns=columns),
    )


def table_i1(runs: pd.DataFrame) -> Table:
    """mRS per scenario (paper Table I1)."""
    out = _base(runs)
    out["language"] = _param(runs, "language").values
    for scenario in SCENARIOS:
        out[scenario] = _metric(runs, f"mrs.scenario.{scenario}").values
    out["all"] = _metric(runs, "mrs").values
    return Table("table_i1", "Table I1: mRS per scenario", out)


def table_i2(runs: pd.DataFrame) -> Table:
    """mRS, Pass@Turn and Pass@Session per tier (paper Table I2)."""
    out = _base(runs)
    out["language"] = _param(runs, "language").values
    taus = taus_of(runs)
    for tier in TIERS:
        out[f"L{tier} mRS"] = _metric(runs, f"mrs.tier.{tier}").values
        for tau in taus:
            out[f"L{tier} @T{tau[1:]}"] = _metric(runs, f"pass_turn_{tau}.tier.{tier}").values
            out[f"L{tier} @S{tau[1:]}"] = _metric(runs, f"pass_session_{tau}.tier.{tier}").values
    return Table("table_i2", "Table I2: results per tier", out)


#: Offline agents every model's mRS is read against (physassist.agents.floors, baseline, oracle).
FLOORS = ("physassist/empty", "physassist/no_tools", "physassist/baseline", "physassist/oracle")


def floors_table(runs: pd.DataFrame) -> Table:
    """Each run's mRS next to the floors run under the same conditions (the same experiment
    params but the model, and the same comparability key)."""
    from physassist import comparability
    from physassist.report.pairs import factor_of, tags_of

    floor_runs = [r for _, r in runs.iterrows() if r.get("params.model") in FLOORS]
    rows = []
    for _, run in runs.iterrows():
        row = {
            "run": run.get(RUN_NAME) or run["run_id"],
            "model": run.get("params.model"),
            "mRS": float(run.get("metrics.mrs", np.nan)),
        }
        for floor in FLOORS:
            same = [
                f
                for f in floor_runs
                if f.get("params.model") == floor
                and (f["run_id"] == run["run_id"] or factor_of(run, f) == "model")
            ]
            same = [
                f
                for f in same
                if not comparability.differing(
                    comparability.parts_of(tags_of(run)) or {},
                    comparability.parts_of(tags_of(f)) or {},
                )
            ]
            row[floor.split("/")[-1]] = (
                float(same[0].get("metrics.mrs", np.nan)) if same else np.nan
            )
        row["above no_tools"] = row["mRS"] - row["no_tools"]
        rows.append(row)
    columns = ["run", "model", "mRS", *(f.split("/")[-1] for f in FLOORS), "above no_tools"]
    title = (
        "Validity floors: each run's mRS next to empty answers, no tool use, the one-call "
        "baseline and the gold replay under the same conditions"
    )
    return Table("validity_floors", title, pd.DataFrame(rows, columns=columns))


AGREEMENT = "agreement.vs_source."


def agreement_table(runs: pd.DataFrame) -> Table:
    """Judge agreement of every rescoring with its source run's judging (copied metrics)."""
    sel = runs[
        _metric(runs, AGREEMENT + "kappa").notna()
        | _metric(runs, AGREEMENT + "items_compared").notna()
    ]
    out = _base(sel)
    out["judge"] = sel["tags.choice.judge"].values if "tags.choice.judge" in sel.columns else None
    out["source_run_id"] = (
        sel["tags.physassist.rescore_of"].values
        if "tags.physassist.rescore_of" in sel.columns
        else None
    )
    out["items"] = _metric(sel, AGREEMENT + "items").values
    out["kappa"] = _metric(sel, AGREEMENT + "kappa").values
    stats = pd.DataFrame(
        {
            AGREEMENT + k: _metric(sel, AGREEMENT + k).values
            for k in ("kappa", "items", "items_compared")
        }
    )
    out["kappa note"] = [
        "" if pd.notna(row[AGREEMENT + "kappa"]) else kappa_text(row.to_dict(), AGREEMENT)
        for _, row in stats.iterrows()
    ]
    out["alpha"] = _metric(sel, AGREEMENT + "alpha").values
    for tau in taus_of(sel):
        out[f"@T{tau[1:]} agree"] = _metric(sel, f"{AGREEMENT}pass_turn_{tau}").values
    out["score corr"] = _metric(sel, AGREEMENT + "turn_score_corr").values
    for task in ("IL", "DG", "CR", "WU"):
        out[f"kappa {task}"] = _metric(sel, f"{AGREEMENT}kappa.task_type.{task}").values
    for subtype in SUBTYPES:
        out[f"kappa {subtype}"] = _metric(sel, f"{AGREEMENT}kappa.implicitness.{subtype}").values
    out["unparseable"] = _metric(sel, "judge_unparseable_rate").values
    out["judges alpha"] = _metric(sel, "agreement.judges.alpha").values
    title = (
        "Judge agreement with the source run's judge (items and @T agree in points; kappa, "
        "alpha, corr in [-1, 1])"
    )
    points = {c: 1 for c in out.columns if c in ("items", "unparseable") or c.endswith(" agree")}
    return Table("judge_agreement", title, out, decimals=3, column_decimals=points)


def grounding_table(runs: pd.DataFrame) -> Table:
    """The grounding check of every run that has it (copied metrics): facts its answers
    stated, the share grounded, contradicted and unsupported (points), and their counts."""
    sel = runs[_metric(runs, "grounding.facts").notna()]
    out = _base(sel)
    out["history"] = _param(sel, "history").values
    for name in (
        "facts",
        "grounded_pct",
        "contradicted_pct",
        "unsupported_pct",
        "contradicted",
        "unsupported",
        "turns_contradicted",
    ):
        out[name] = _metric(sel, f"grounding.{name}").values
    counts = {c: 0 for c in ("facts", "contradicted", "unsupported", "turns_contradicted")}
    title = (
        "Grounding: the facts each run's answers stated, against the tool results they had "
        "received (pct in points)"
    )
    return Table("grounding", title, out, column_decimals=counts)


def all_tables(
    runs: pd.DataFrame, languages: Sequence[str] | None = None, explicit: bool = False
) -> list[Table]:
    """Every table the selected runs support (Table 2 once per language present)."""
    langs = languages or sorted(str(v) for v in _param(runs, "language").dropna().unique())
    tables = [table2(runs, lang) for lang in langs]
    t3 = table3(runs, explicit)
    if len(t3.frame):
        tables.append(t3)
    tables = [*tables, table_i1(runs), table_i2(runs)]
    if _param(runs, "model").isin(FLOORS[:2]).any():
        tables.append(floors_table(runs))
    grounding = grounding_table(runs)
    if len(grounding.frame):
        tables.append(grounding)
    return tables
