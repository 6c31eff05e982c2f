"""The per-turn result table of an evaluation: one row per (session, epoch, turn).

Joins the Sample's metadata (scenario, tier, task type, implicitness, tool source,
language), the scorer's per-turn metadata (score, status, items) and the assistant loop's
per-turn record in the sample store (end reason, tool calls, tokens, time). The tracking
layer logs it and `physassist.metrics.summarize` computes the metrics from it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from physassist.turn_records import TurnRecord, stored_turns
from physassist.vocab import PREPARE_TO_ANSWER, TASK_ABBREVIATIONS

if TYPE_CHECKING:
    import pandas as pd
    from inspect_ai.log import EvalLog

__all__ = [
    "GROUNDING_SCORER",
    "SCORER_NAME",
    "ITEM_COLUMNS",
    "TURN_COLUMNS",
    "item_table",
    "read_log",
    "samples_in_memory",
    "turn_rows",
    "turn_table",
]

SCORER_NAME = "physassist_scorer"
#: The grounding check's scorer (``scorers/grounding.py``, ``grounding=on``).
GROUNDING_SCORER = "physassist_grounding"


TURN_COLUMNS = [
    "session_id",
    "epoch",
    "turn",
    "scenario",
    "tier",
    "language",
    "query",
    "task_type",
    "subtype",
    "tool_source",
    "question",
    "score",
    "status",
    "judge",
    "judge_scores",  # with judge.repeats > 1: each judging's score (the turn's score is their mean)
    "n_items",
    "n_passed",
    "n_undecided",
    "error_kind",
    "end",
    "answered",  # the turn ended with a non-empty answer (None: the log has no turn record)
    "error",
    "n_calls",
    "tools",
    "gold_tools",
    "tokens_in",
    "tokens_out",
    "seconds",
    "history",  # what the turn started from: the model's own turns (free) or the gold ones
    "facts",  # the grounding check (None: it did not run): facts the answer stated,
    "grounded",  # ... those the tool results it had received hold,
    "contradicted",  # ... those they hold another value for,
    "unsupported",  # ... and those found nowhere
]


def _at(values: Any, index: int) -> Any:
    return (
        values[index]
        if isinstance(values, Sequence) and not isinstance(values, str) and index < len(values)
        else None
    )


def _gold_tools(session: Mapping[str, Any] | None, turn: int) -> list[str]:
    if not session:
        return []
    trajectory = _at(session.get("answer_list"), turn) or []
    names: dict[str, None] = {}
    for item in trajectory:
        name = (item.get("action") or {}).get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name != PREPARE_TO_ANSWER:
            names.setdefault(name, None)
    return list(names)


class _SessionJson:
    """A sample's ``metadata["session"]`` (a JSON string, ARCHITECTURE.md §6, or a dict in
    older logs), parsed when first read: the metadata of current logs has what a row needs."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    @cached_property
    def parsed(self) -> Mapping[str, Any] | None:
        raw = self.raw
        return (
            json.loads(raw) if isinstance(raw, str) else raw if isinstance(raw, Mapping) else None
        )

    def get(self, key: str) -> Any:
        return (self.parsed or {}).get(key)


def turn_rows(
    sample_id: str | int,
    epoch: int,
    sample_metadata: Mapping[str, Any] | None,
    score_turns: Sequence[Mapping[str, Any]],
    store_turns: Sequence[TurnRecord] = (),
    grounding_turns: Sequence[Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Rows of one scored sample. `score_turns` is the scorer's `metadata["turns"]`; a turn
    without a loop record (`store_turns`) takes what the scorer recorded of it;
    `grounding_turns` is the grounding scorer's `metadata["turns"]`."""
    md = dict(sample_metadata or {})
    records = {r.turn: r for r in store_turns}
    grounding = {g.get("turn"): g for g in (grounding_turns or []) if isinstance(g, Mapping)}
    session = _SessionJson(md.get("session"))  # read only for what the metadata lacks
    tier = md["tier"] if "tier" in md else session.get("difficulty_level")
    rows = []
    for st in score_turns:
        t = int(st["turn"])
        rec = records.get(t)
        task = md.get("task_types") and _at(md.get("task_types"), t)
        if task is None:
            task = _at(session.get("task_types"), t)
        subtype = _at(md["subtypes"] if "subtypes" in md else session.get("turn_subtypes"), t)
        source = _at(md["tool_sources"] if "tool_sources" in md else session.get("tool_sources"), t)
        items = st.get("items") or []
        calls = [c for c in (rec.calls if rec else ()) if c.name != PREPARE_TO_ANSWER]
        tools = st.get("tools")
        if tools is None:
            tools = list(dict.fromkeys(c.name for c in calls))
        score = st.get("score")
        rows.append(
            {
                "session_id": str(sample_id),
                "epoch": int(epoch),
                "turn": t,
                "scenario": md["scenario"]
                if "scenario" in md
                else session.get("clinical_scenario"),
                "tier": int(tier) if tier is not None else None,
                "language": md.get("language", "en"),
                "query": md.get("query", "implicit"),
                "task_type": TASK_ABBREVIATIONS.get(str(task), str(task) if task else None),
                "subtype": subtype if subtype else "none",
                "tool_source": source,
                "question": rec.question if rec else st.get("question"),
                "score": float(score) if score is not None else math.nan,
                "status": st.get("status"),
                "judge": st.get("judge"),
                "judge_scores": st.get("judge_scores"),
                "n_items": len(items),
                "n_passed": sum(1 for i in items if i.get("passed") is True),
                "n_undecided": sum(1 for i in items if i.get("passed") is None),
                "error_kind": st.get("error_kind"),
                "end": rec.end if rec else st.get("end"),
                "answered": bool(rec.answer.strip()) if rec else None,
                "error": st.get("error") or (rec.error if rec else None),
                "n_calls": len(calls) if rec else st.get("n_calls"),
                "tools": list(tools),
                "gold_tools": list(st["gold_tools"])
                if st.get("gold_tools") is not None
                else _gold_tools(session.parsed, t),
                "tokens_in": rec.tokens_in if rec else None,
                "tokens_out": rec.tokens_out if rec else None,
                "seconds": rec.seconds if rec else None,
                "history": rec.history if rec else None,
                **{
                    k: grounding.get(t, {}).get(k)
                    for k in ("facts", "grounded", "contradicted", "unsupported")
                },
            }
        )
    return rows


def turn_table(eval_log: EvalLog | str | Path, scorer: str = SCORER_NAME) -> pd.DataFrame:
    """One row per (session, epoch, turn) of an Inspect log (an `EvalLog` or a log path).

    Samples that have no score from `scorer` (e.g. a sample that errored) yield no rows;
    their count is in the log itself (`EvalLog.samples[*].error`).
    """
    # here: the scorers read records with this module's helpers, the CLI loads them
    import pandas as pd

    log = read_log(eval_log)
    rows: list[dict[str, Any]] = []
    for sample in log.samples or []:  # read_log: never None
        score = (sample.scores or {}).get(scorer)
        if score is None:
            continue
        turns = (score.metadata or {}).get("turns")
        if not isinstance(turns, list):
            raise ValueError(
                f"turn_table: sample {sample.id!r} epoch {sample.epoch}: score {scorer!r} has no "
                "metadata['turns']"
            )
        grounding = (sample.scores or {}).get(GROUNDING_SCORER)
        grounded = (grounding.metadata or {}).get("turns") if grounding is not None else None
        rows.extend(
            turn_rows(
                sample.id,
                sample.epoch,
                sample.metadata,
                turns,
                stored_turns(sample.store),
                grounded,
            )
        )
    return pd.DataFrame(rows, columns=TURN_COLUMNS)


ITEM_COLUMNS = [
    "session_id",
    "epoch",
    "turn",
    "item",
    "passed",
    "task_type",
    "subtype",
    "judge",
    "status",
]


def read_log(eval_log: EvalLog | str | Path) -> EvalLog:
    """An `EvalLog` with its samples (read from a path when given one)."""
    from inspect_ai.log import EvalLog, read_eval_log

    log = eval_log if isinstance(eval_log, EvalLog) else read_eval_log(str(eval_log))
    if log.samples is None:
        raise ValueError(
            f"log {log.location or '<in memory>'} has no samples (read it without header_only)"
        )
    return log


def item_table(eval_log: EvalLog | str | Path, scorer: str = SCORER_NAME) -> pd.DataFrame:
    """One row per (session, epoch, turn, rubric item) with the judge's verdict (``passed``
    True/False, None when undecided): what judge agreement is computed on."""
    import pandas as pd

    log = read_log(eval_log)
    turns = turn_table(log, scorer)
    where = {
        (r.session_id, r.epoch, r.turn): (r.task_type, r.subtype)
        for r in turns.itertuples(index=False)
    }
    rows: list[dict[str, Any]] = []
    for sample in log.samples or []:
        score = (sample.scores or {}).get(scorer)
        for st in ((score.metadata or {}).get("turns") or []) if score is not None else []:
            key = (str(sample.id), int(sample.epoch), int(st["turn"]))
            task_type, subtype = where[key]
            for index, item in enumerate(st.get("items") or []):
                rows.append(
                    {
                        "session_id": key[0],
                        "epoch": key[1],
                        "turn": key[2],
                        "item": index,
                        "passed": item.get("passed"),
                        "task_type": task_type,
                        "subtype": subtype,
                        "judge": st.get("judge"),
                        "status": st.get("status"),
                    }
                )
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)


#: The lists ``samples_in_memory`` is filling (one per active context).
_SINKS: list[list[Any]] = []


@cache
def _keep_finished_samples() -> None:
    """Register, once per process, the Inspect hook that hands each finished sample to the
    active ``samples_in_memory`` lists (disabled while there is none)."""
    from inspect_ai.hooks import Hooks, SampleEnd, hooks
    from inspect_ai.hooks._startup import init_hooks

    init_hooks()  # Inspect's once-per-process hook load first: it would print a banner naming ours

    @hooks(
        name="physassist_samples", description="keeps finished samples in memory for the turn table"
    )
    class KeepSamples(Hooks):
        def enabled(self) -> bool:
            return bool(_SINKS)

        async def on_sample_end(self, data: SampleEnd) -> None:
            for sink in _SINKS:
                sink.append(data.sample)


@contextmanager
def samples_in_memory() -> Iterator[list[Any]]:
    """The samples an eval finishes inside this block, as Inspect logs them (``EvalSample``).

    Inspect returns its log with the samples left on disk; reading them back to build the
    turn table, the usage and the traces cost ~36 ms of CPU per sample (issue 25). The samples
    are in memory when they finish, so they are kept from there. A sample the block did not see
    (a resumed eval_set keeps its earlier ones) leaves the list short: see ``with_samples``.
    """
    _keep_finished_samples()
    sink: list[Any] = []
    _SINKS.append(sink)
    try:
        yield sink
    finally:
        _SINKS.remove(sink)


def with_samples(log: EvalLog, kept: list[Any]) -> EvalLog:
    """``log`` with its samples: those kept in memory when they are all of them (same ids and
    epochs as the log's summaries), else read back from the log file."""
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
    from inspect_ai.log._log import sort_samples

    if not log.location:
        return log
    summaries = read_eval_log_sample_summaries(log.location)
    if sorted((str(s.id), s.epoch) for s in summaries) == sorted(
        (str(s.id), s.epoch) for s in kept
    ):
        samples = list(kept)
        sort_samples(samples)  # the order reading the log gives
        return log.model_copy(update={"samples": samples})
    return read_eval_log(log.location)
