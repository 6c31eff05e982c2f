"""Token usage per model role (assistant, grader, patient) and its estimated cost.

Inspect keeps usage per model (``stats.model_usage``) and per role (``stats.role_usage``, the
``grader`` and ``patient`` roles); the assistant is the eval's own model, so its share is the
model's usage minus that of roles served by the same model. The same split is made per sample
(session x epoch). A price table (``conf/prices/*.yaml``: USD per million input and output
tokens per Inspect model string) turns tokens into an estimated cost; a role whose model has
no price gets no cost (never a cost of 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog

__all__ = [
    "ASSISTANT",
    "USAGE_COLUMNS",
    "cost",
    "session_usage",
    "usage_metrics",
    "write_session_usage",
]

ASSISTANT = "assistant"
USAGE_COLUMNS = ["session_id", "epoch", "role", "model", "input_tokens", "output_tokens", "cost_usd"]


def _tokens(usage: Any) -> tuple[int, int]:
    if usage is None:
        return 0, 0
    return int(usage.input_tokens or 0), int(usage.output_tokens or 0)


def _role_models(log: EvalLog) -> dict[str, str]:
    """Role -> the Inspect model string serving it (the assistant is the eval's model)."""
    roles = {ASSISTANT: log.eval.model}
    for role, config in (log.eval.model_roles or {}).items():
        roles[role] = getattr(config, "model", str(config))
    return roles


def _split(model_usage: Mapping[str, Any], role_usage: Mapping[str, Any], roles: Mapping[str, str],
           ) -> list[tuple[str, str, int, int]]:
    """(role, model, input, output) rows: roles from ``role_usage``, the assistant the rest."""
    rows: list[tuple[str, str, int, int]] = []
    shared = {role: _tokens(u) for role, u in role_usage.items()}
    for role, (tin, tout) in shared.items():
        rows.append((role, roles.get(role, "?"), tin, tout))
    assistant = roles[ASSISTANT]
    tin, tout = _tokens(model_usage[assistant]) if assistant in model_usage else (0, 0)
    for role, (rin, rout) in shared.items():
        if roles.get(role) == assistant:
            tin, tout = tin - rin, tout - rout
    rows.append((ASSISTANT, assistant, tin, tout))
    return rows


def cost(model: str, tokens_in: int, tokens_out: int, prices: Mapping[str, Any]) -> float:
    """Estimated USD for the tokens, or NaN when ``prices`` has no entry for ``model``."""
    price = prices.get(model)
    if not price:
        return math.nan
    return (tokens_in * float(price["input"]) + tokens_out * float(price["output"])) / 1e6


def session_usage(log: EvalLog, prices: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """One row per (session, epoch, role): tokens and estimated cost (``USAGE_COLUMNS``)."""
    roles = _role_models(log)
    rows = []
    for sample in log.samples or []:
        for role, model, tin, tout in _split(sample.model_usage or {}, sample.role_usage or {}, roles):
            rows.append((str(sample.id), sample.epoch, role, model, tin, tout, cost(model, tin, tout, prices or {})))
    return pd.DataFrame(rows, columns=USAGE_COLUMNS)


def usage_metrics(log: EvalLog, prices: Mapping[str, Any] | None = None) -> dict[str, float]:
    """``tokens.<role>.input|output`` for every role used, and with prices for all of them
    ``cost_usd``, ``cost_usd.<role>`` and ``cost_usd_per_session`` (mean over sessions x epochs)."""
    prices = prices or {}
    stats = _split(log.stats.model_usage or {}, log.stats.role_usage or {}, _role_models(log))
    out: dict[str, float] = {}
    costs = {}
    for role, model, tin, tout in stats:
        out[f"tokens.{role}.input"] = float(tin)
        out[f"tokens.{role}.output"] = float(tout)
        costs[role] = cost(model, tin, tout, prices)
    priced = {role: c for role, c in costs.items() if not math.isnan(c)}
    for role, c in priced.items():
        out[f"cost_usd.{role}"] = c
    if priced and len(priced) == len(costs):
        out["cost_usd"] = sum(priced.values())
        trials = len(log.samples or [])
        if trials:
            out["cost_usd_per_session"] = out["cost_usd"] / trials
    return out


def write_session_usage(usage: pd.DataFrame, out_dir: Path) -> Path:
    """``session_usage``'s table as ``<out_dir>/session_usage.csv`` (the run's per-session cost)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "session_usage.csv"
    usage.to_csv(path, index=False)
    return path
