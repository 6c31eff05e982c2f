"""Sessions as MLflow traces, with the judge's verdicts as assessments, written from the Inspect log.

One trace per evaluated session (and epoch), linked to the run (``mlflow.sourceRun``):

* the root span ``session <id>`` (inputs: scenario, tier, language, query; outputs: the turn
  scores);
* one span per turn ``T<n> <task type>`` (inputs: the question and the numbered rubric;
  outputs: the answer; attributes: end reason, tokens, seconds, score, status), at the time the
  loop recorded (``started``, ``seconds``; logs without ``started`` lay turns end to end from
  the sample's start);
* one child span per tool call, named by its dotted name (inputs: the arguments; outputs: the
  text the model saw; attribute ``fhir``: the raw FHIR JSON, cut at ``raw_chars``), at the call's
  recorded ``started`` for its ``seconds`` (older logs: an instant at the turn's start);
* assessments (MLflow ``Feedback``) on the turn span: ``T<n>.<k>`` per rubric item (pass /
  fail, the judge's reason as rationale; an undecided item carries an error instead of a
  value) and ``T<n> score`` (the turn score, 0-1). Their source is the judge: ``LLM_JUDGE``
  with the grader model as id, or ``CODE`` (``physassist rules judge``). A human who adds or
  overrides ``T<n>.<k>`` in the UI is read back by ``physassist.tracking.human``.

Written after the eval, so the eval's speed is unchanged; ``tracking.traces: false`` skips
them and ``tracking.trace_limit`` caps how many sessions get one.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from physassist.data.models import Session
from physassist.results import SCORER_NAME, TURNS_KEY, turn_rows
from physassist.vocab import PREPARE_TO_ANSWER

ITEM_NAME = re.compile(r"^T(\d+)\.(\d+)$")  # the assessment name of rubric item k of turn n
RULES_SOURCE_ID = "physassist rules judge"


def item_name(turn: int, item: int) -> str:
    """``T<turn>.<item>``, item counted from 1 as the rubric is shown."""
    return f"T{turn}.{item + 1}"


def score_name(turn: int) -> str:
    return f"T{turn} score"


@dataclass
class TraceRequest:
    """Traces to write for a run (``Tracker.log_run(traces=...)``); ``summary`` is filled in."""

    log: Any
    limit: int | None = None
    raw_chars: int = 2000
    summary: TraceSummary | None = None


@dataclass(frozen=True)
class TraceSummary:
    """What ``write_traces`` did: traces and assessments written, sessions left out, seconds."""

    traces: int
    assessments: int
    skipped: int
    seconds: float


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _start_ns(sample, fallback: str) -> int:
    stamp = getattr(sample, "started_at", None) or fallback
    return int(datetime.fromisoformat(str(stamp)).timestamp() * 1e9)


def _ns(started: Any, fallback: int) -> int:
    """Epoch seconds as recorded by the loop, in ns; ``fallback`` for logs that predate them."""
    return int(float(started) * 1e9) if started else fallback


def _judge_source(score_md: dict, grader: str | None):
    """``LLM_JUDGE`` (the grader model) for a judge that grades with models, else ``CODE``."""
    from mlflow.entities import AssessmentSource, AssessmentSourceType

    graders = score_md.get("graders") or ("one" if score_md.get("judge") == "llm" else "none")  # logs before "graders"
    if graders != "none":
        return AssessmentSource(AssessmentSourceType.LLM_JUDGE, grader or "grader")
    return AssessmentSource(AssessmentSourceType.CODE, RULES_SOURCE_ID)


def _grader(log) -> str | None:
    roles = getattr(log.eval, "model_roles", None) or {}
    grader = roles.get("grader")
    return getattr(grader, "model", None) if grader is not None else None


def _scored_samples(log) -> Iterator[tuple[Any, dict[str, Any]]]:
    for sample in log.samples or []:
        score = (sample.scores or {}).get(SCORER_NAME)
        if score is not None and isinstance((score.metadata or {}).get("turns"), list):
            yield sample, dict(score.metadata)


def _session(sample) -> Session | None:
    raw = (sample.metadata or {}).get("session")
    if raw is None:
        return None
    return Session.model_validate(json.loads(raw) if isinstance(raw, str) else raw)


def _write_trace(
    sample, score_md: Mapping[str, Any], source, *, experiment_id: str, run_id: str, start_ns: int, raw_chars: int
) -> int:
    """One session's trace with its verdicts; returns the number of assessments.

    The verdicts ride on the trace itself (its ``TraceInfo.assessments``), so the store writes
    them with the trace in one call: ``log_feedback`` per verdict cost ~18 ms each, about 20
    per session.
    """
    import mlflow
    from mlflow.entities import SpanType
    from mlflow.tracing.trace_manager import InMemoryTraceManager

    md = sample.metadata or {}
    session = _session(sample)
    language = str(md.get("language", "en"))
    records = {r.get("turn"): r for r in (sample.store or {}).get(TURNS_KEY) or []}
    rows = turn_rows(sample.id, sample.epoch, md, score_md["turns"], list(records.values()))
    root = mlflow.start_span_no_context(
        name=f"session {sample.id}",
        span_type=SpanType.AGENT,
        inputs={k: md.get(k) for k in ("scenario", "tier", "language", "query")} | {"epoch": sample.epoch},
        experiment_id=experiment_id,
        start_time_ns=start_ns,
        tags={"session_id": str(sample.id), "scenario": str(md.get("scenario")), "tier": str(md.get("tier"))},
        metadata={"mlflow.sourceRun": run_id, "physassist.session_id": str(sample.id), "physassist.epoch": str(sample.epoch)},
    )
    clock = start_ns
    verdicts = []
    for row, st in zip(rows, score_md["turns"], strict=True):
        turn = int(row["turn"])
        rec = records.get(turn, {})
        seconds = float(rec.get("seconds") or 0.0)
        clock = _ns(rec.get("started"), clock)
        rubric = session.rubric(turn, language) if session is not None else []
        span = mlflow.start_span_no_context(
            name=f"T{turn} {row['task_type'] or ''}".strip(),
            span_type=SpanType.CHAIN,
            parent_span=root,
            inputs={"question": row["question"], "rubric": [f"{k + 1}. {text}" for k, text in enumerate(rubric)]},
            attributes={
                "end": str(row["end"]),
                "tokens_in": int(rec.get("tokens_in") or 0),
                "tokens_out": int(rec.get("tokens_out") or 0),
                "seconds": seconds,
                "score": None if row["score"] != row["score"] else float(row["score"]),
                "status": str(row["status"]),
                "implicitness": str(row["subtype"]),
                "tool_source": str(row["tool_source"]),
            },
            start_time_ns=clock,
        )
        for call in rec.get("calls") or []:
            name = str(call.get("name"))
            tool = mlflow.start_span_no_context(
                name=name,
                span_type=SpanType.TOOL,
                parent_span=span,
                inputs=call.get("arguments"),
                attributes={"fhir": _cap(json.dumps(call.get("raw"), ensure_ascii=False, default=str), raw_chars)}
                if name != PREPARE_TO_ANSWER  # the loop records no other control call
                else None,
                start_time_ns=(called := _ns(call.get("started"), clock)),
            )
            tool.end(outputs=call.get("text"), end_time_ns=called + int(float(call.get("seconds") or 0.0) * 1e9))
        clock += int(seconds * 1e9)
        span.end(outputs={"answer": rec.get("answer", "")}, end_time_ns=clock)
        verdicts += _verdicts(turn, st, source, span.span_id)
    with InMemoryTraceManager.get_instance().get_trace(root.trace_id) as live:
        live.info.assessments.extend(verdicts)
    root.end(outputs={"turn_scores": [st.get("score") for st in score_md["turns"]]}, end_time_ns=clock)
    return len(verdicts)


def _verdicts(turn: int, st: Mapping[str, Any], source, span_id: str) -> list:
    """The judge's verdicts on one turn as MLflow ``Feedback``: one per rubric item, one score."""
    from mlflow.entities import AssessmentError, Feedback

    out = []
    for k, item in enumerate(st.get("items") or []):
        passed = item.get("passed")
        out.append(
            Feedback(
                name=item_name(turn, k),
                value=passed,
                error=None if passed is not None else AssessmentError("UNDECIDED", item.get("reason") or "undecided"),
                rationale=item.get("reason") or None,
                source=source,
                span_id=span_id,
            )
        )
    score = st.get("score")
    unscored = AssessmentError(str(st.get("status") or "unscored").upper(), st.get("error") or "turn not scored")
    out.append(
        Feedback(
            name=score_name(turn),
            value=float(score) if score is not None else None,
            error=None if score is not None else unscored,
            source=source,
            span_id=span_id,
        )
    )
    return out


def _run_trace_ids(experiment_id: str, run_id: str) -> list[str]:
    import mlflow

    found = mlflow.search_traces(
        locations=[experiment_id], run_id=run_id, include_spans=False, return_type="list"
    )
    return [t.info.trace_id for t in found]


def write_traces(
    log, *, uri: str, experiment_id: str, run_id: str, limit: int | None = None, raw_chars: int = 2000
) -> TraceSummary:
    """Write the sessions of an Inspect log as the traces of run ``run_id`` (at most ``limit``).

    Traces an earlier attempt of the same run left behind are replaced. MLflow's exporter only
    logs a failed export, so the traces are counted back from the store: a shortfall raises.
    """
    import mlflow

    started = time.perf_counter()
    mlflow.set_tracking_uri(uri)
    stale = _run_trace_ids(experiment_id, run_id)
    if stale:
        mlflow.MlflowClient(uri).delete_traces(experiment_id, trace_ids=stale)
    samples = list(_scored_samples(log))
    kept = samples if limit is None else samples[: max(0, int(limit))]
    grader = _grader(log)
    assessments = 0
    for sample, score_md in kept:
        assessments += _write_trace(
            sample,
            score_md,
            _judge_source(score_md, grader),
            experiment_id=experiment_id,
            run_id=run_id,
            start_ns=_start_ns(sample, log.eval.created),
            raw_chars=raw_chars,
        )
    mlflow.flush_trace_async_logging()
    stored = len(_run_trace_ids(experiment_id, run_id))
    if stored != len(kept):
        raise RuntimeError(f"traces: {len(kept)} written but {stored} in the store for run {run_id}")
    return TraceSummary(len(kept), assessments, len(samples) - len(kept), time.perf_counter() - started)
