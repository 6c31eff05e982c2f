"""Human verdicts as a judge: the HUMAN-source assessments people added to a run's traces.

A clinician opens a session's trace in the MLflow UI and adds (or overrides) the feedback
``T<n>.<k>`` on rubric item k of turn n, pass = true / fail = false (``physassist.tracking.traces``
writes the judge's verdicts under the same names). This module reads them back:

* ``human_verdicts(uri, run_id)``: one row per human verdict (session, epoch, turn, item,
  passed, rationale, who, when); the newest verdict of a person on an item wins;
* ``apply_human_verdicts(log, verdicts)``: the Inspect log judged by the humans instead
  (what ``physassist-rescore judge=human`` scores);
* ``attach_verdicts(uri, run_id, verdicts)``: a filled reviewer's sheet's verdicts logged as such
  HUMAN feedback (``physassist-label import``);
* ``human_turns(verdicts, judge_items)``: per turn, the human score (items passed / items)
  when every rubric item of the turn has a human verdict, else status ``undecided``, shaped
  like the turn table (``score``, ``status``, ``judge = "human"``) so ``physassist.metrics``
  and comparisons take it as they take the rules or LLM judge.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from physassist.tracking.traces import ITEM_NAME

VERDICT_COLUMNS = ["session_id", "epoch", "turn", "item", "passed", "rationale", "source_id", "time_ms", "trace_id"]


def _traces(uri: str, run_id: str) -> list:
    import mlflow

    client = mlflow.MlflowClient(uri)
    run = client.get_run(run_id)
    mlflow.set_tracking_uri(uri)
    return mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run_id, include_spans=False, return_type="list"
    )


def _rows(trace, human: bool) -> list[dict[str, Any]]:
    """The item verdicts of one trace whose source is (or is not) HUMAN, valid ones only."""
    meta = trace.info.trace_metadata or {}
    rows = []
    for assessment in trace.info.assessments or []:
        match = ITEM_NAME.match(assessment.name or "")
        is_human = assessment.source is not None and assessment.source.source_type == "HUMAN"
        if match is None or is_human != human or not assessment.valid or assessment.feedback is None:
            continue
        value = assessment.feedback.value
        rows.append(
            {
                "session_id": meta.get("physassist.session_id"),
                "epoch": int(meta.get("physassist.epoch") or 1),
                "turn": int(match.group(1)),
                "item": int(match.group(2)),
                "passed": _as_verdict(value),
                "rationale": assessment.rationale,
                "source_id": assessment.source.source_id if assessment.source else None,
                "time_ms": assessment.last_update_time_ms or assessment.create_time_ms,
                "trace_id": trace.info.trace_id,
            }
        )
    return rows


def _as_verdict(value: Any) -> bool | None:
    """A human's pass/fail: a boolean, yes/no, pass/fail, 1/0; anything else is undecided."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and not (isinstance(value, float) and math.isnan(value)) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in {"true", "yes", "pass", "passed", "1"}:
        return True
    if text in {"false", "no", "fail", "failed", "0"}:
        return False
    return None


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=VERDICT_COLUMNS)
    if frame.empty:
        return frame
    frame = frame.sort_values("time_ms").drop_duplicates(
        ["trace_id", "turn", "item", "source_id"], keep="last"
    )
    return frame.sort_values(["session_id", "epoch", "turn", "item", "source_id"]).reset_index(drop=True)


def human_verdicts(uri: str, run_id: str) -> pd.DataFrame:
    """Every valid HUMAN verdict on a rubric item in the traces of ``run_id`` (VERDICT_COLUMNS)."""
    return _frame([row for trace in _traces(uri, run_id) for row in _rows(trace, human=True)])


def judge_verdicts(uri: str, run_id: str) -> pd.DataFrame:
    """The judge's (non-human) item verdicts of the same traces, for agreement and item counts."""
    return _frame([row for trace in _traces(uri, run_id) for row in _rows(trace, human=False)])


def _majority(passed: pd.Series) -> bool | None:
    """Several people on one item: it passes when most passed it; a tie or an undecided vote
    leaves it undecided."""
    if passed.isna().any() or passed.sum() * 2 == len(passed):
        return None
    return bool(passed.sum() * 2 > len(passed))


def item_verdicts(verdicts: pd.DataFrame) -> dict[tuple[str, int, int, int], tuple[bool | None, str]]:
    """``(session, epoch, turn, item) -> (passed, rationales)``: one verdict per item."""
    out = {}
    for key, group in verdicts.groupby(["session_id", "epoch", "turn", "item"], sort=True):
        reasons = "; ".join(f"{who}: {why}" for who, why in zip(group["source_id"], group["rationale"], strict=True) if why)
        out[(str(key[0]), int(key[1]), int(key[2]), int(key[3]))] = (_majority(group["passed"]), reasons)
    return out


def human_turns(verdicts: pd.DataFrame, judge_items: pd.DataFrame) -> pd.DataFrame:
    """Human turn scores, one row per (session, epoch, turn) that any human assessed.

    A turn is ``scored`` when every rubric item (as many as the judge graded) has a decided
    human verdict (several people on one item: the majority, see ``_majority``); otherwise it
    is ``undecided``.
    """
    keys = ["session_id", "epoch", "turn"]
    columns = [*keys, "score", "status", "judge", "n_items", "n_passed", "n_undecided", "n_humans"]
    if verdicts.empty:
        return pd.DataFrame(columns=columns)
    n_items = judge_items.groupby(keys)["item"].nunique() if not judge_items.empty else pd.Series(dtype=int)
    per_item = item_verdicts(verdicts)
    rows = []
    for key, group in verdicts.groupby(keys, sort=True):
        sid, epoch, turn = str(key[0]), int(key[1]), int(key[2])
        expected = int(n_items.get(key, group["item"].max()))
        decided = [per_item.get((sid, epoch, turn, k), (None, ""))[0] for k in range(1, expected + 1)]
        passed = sum(1 for v in decided if v is True)
        undecided = sum(1 for v in decided if v is None)
        rows.append(
            {
                "session_id": sid,
                "epoch": epoch,
                "turn": turn,
                "score": passed / expected if undecided == 0 else math.nan,
                "status": "scored" if undecided == 0 else "undecided",
                "judge": "human",
                "n_items": expected,
                "n_passed": passed,
                "n_undecided": undecided,
                "n_humans": int(group["source_id"].nunique()),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def apply_human_verdicts(log, verdicts: pd.DataFrame):
    """The Inspect log judged by humans instead: each turn's items, score and status come from
    the human verdicts (``judge = "human"``); a turn with an item no human decided is
    ``undecided`` (unscored, counted, never a zero). Changes ``log`` in place and returns it,
    so the turn table, the metrics and judge agreement read it like any judging."""
    from physassist.results import SCORER_NAME

    per_item = item_verdicts(verdicts)
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER_NAME)
        if score is None or not isinstance((score.metadata or {}).get("turns"), list):
            continue
        sid, epoch = str(sample.id), int(sample.epoch or 1)
        turns = []
        for st in score.metadata["turns"]:
            t = int(st["turn"])
            items = []
            for k in range(1, len(st.get("items") or []) + 1):
                passed, reasons = per_item.get((sid, epoch, t, k), (None, ""))
                items.append({"passed": passed, "reason": reasons or "no human verdict"})
            decided = bool(items) and all(i["passed"] is not None for i in items)
            turns.append(
                {
                    **st,
                    "items": items,
                    "judge": "human",
                    "score": sum(i["passed"] for i in items) / len(items) if decided else None,
                    "status": "scored" if decided else "undecided",
                }
            )
        scored = [t["score"] for t in turns if t["score"] is not None]
        score.metadata = {**score.metadata, "turns": turns, "judge": "human"}
        score.value = sum(scored) / len(scored) if scored else math.nan
    return log


def attach_verdicts(uri: str, run_id: str, verdicts: pd.DataFrame) -> int:
    """Log each verdict (``session_id``, ``epoch``, ``turn``, ``item`` counted from 1,
    ``passed``, ``rationale``, ``reviewer``: ``physassist.labels.read_sheet``) as HUMAN feedback
    ``T<turn>.<item>`` on the run's trace of its session and epoch, as a clinician adding it in
    the MLflow UI would; ``human_verdicts`` reads them back. Every verdict's trace is found
    before any is logged (``LookupError`` naming the first without one). Returns the count."""
    import mlflow
    from mlflow.entities import AssessmentSource

    traces = {
        (str(t.info.trace_metadata.get("physassist.session_id")), int(t.info.trace_metadata.get("physassist.epoch") or 1)): t.info.trace_id
        for t in _traces(uri, run_id)
    }
    keys = list(zip(verdicts["session_id"].astype(str), verdicts["epoch"].astype(int), strict=True))
    missing = next((k for k in keys if k not in traces), None)
    if missing is not None:
        raise LookupError(f"run {run_id} has no trace of session {missing[0]} epoch {missing[1]} (written with tracking.trace_limit?)")
    for (sid, epoch), row in zip(keys, verdicts.itertuples(index=False), strict=True):
        mlflow.log_feedback(
            trace_id=traces[(sid, epoch)],
            name=f"T{int(row.turn)}.{int(row.item)}",
            value=bool(row.passed),
            source=AssessmentSource("HUMAN", str(row.reviewer)),
            rationale=row.rationale or None,
        )
    return len(keys)
