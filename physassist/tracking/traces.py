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
  overrides ``T<n>.<k>`` in the UI is read back by ``physassist.tracking.human``. With the
  grounding check on, ``T<n> grounding`` too (source ``CODE``, ``physassist grounding check``):
  the share of the answer's facts grounded (0-1; none when it states none), its counts as
  metadata, every fact not grounded in the rationale.

Written in batches as the sessions end, while the eval runs (``trace_stream``; with a
``tracking.trace_limit``, after it: ``write_traces``), and linked to their run, so the run
page's Traces tab shows that run's sessions only; ``tracking.traces: false`` skips them and
``tracking.trace_limit`` caps how many sessions get one.
"""  # noqa: E501 - the summary line stays as written (101 chars; wrapping changes the docstring)

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from physassist.data.models import Session
from physassist.results import GROUNDING_SCORER, SCORER_NAME, turn_rows
from physassist.tracking.views import LogLike, SampleLike, SpecLike
from physassist.turn_records import TurnRecord, stored_turns
from physassist.vocab import PREPARE_TO_ANSWER

if TYPE_CHECKING:
    from mlflow.entities import Assessment, AssessmentSource, Feedback, Span, Trace

ITEM_NAME = re.compile(r"^T(\d+)\.(\d+)$")  # the assessment name of rubric item k of turn n
RULES_SOURCE_ID = "physassist rules judge"
GROUNDING_SOURCE_ID = "physassist grounding check"


def item_name(turn: int, item: int) -> str:
    """``T<turn>.<item>``, item counted from 1 as the rubric is shown."""
    return f"T{turn}.{item + 1}"


def score_name(turn: int) -> str:
    return f"T{turn} score"


def grounding_name(turn: int) -> str:
    return f"T{turn} grounding"


@dataclass
class TraceRequest:
    """Traces to write for a run (``Tracker.log_run(traces=...)``); ``summary`` is filled in."""

    log: LogLike
    limit: int | None = None
    raw_chars: int = 2000
    summary: TraceSummary | None = None
    # trace_stream.TraceStream: the sessions it wrote as the eval ran are not written again
    stream: Any = None


@dataclass(frozen=True)
class TraceSummary:
    """What ``write_traces`` did: traces and assessments written, sessions left out, seconds,
    and how many of the traces were written after the eval (not streamed as it ran)."""

    traces: int
    assessments: int
    skipped: int
    seconds: float
    after_eval: int


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _start_ns(sample: SampleLike, fallback: str) -> int:
    stamp = getattr(sample, "started_at", None) or fallback
    return int(datetime.fromisoformat(str(stamp)).timestamp() * 1e9)


def _ns(started: Any, fallback: int) -> int:
    """Epoch seconds as recorded by the loop, in ns; ``fallback`` for logs that predate them."""
    return int(float(started) * 1e9) if started else fallback


def _judge_source(score_md: Mapping[str, Any], grader: str | None) -> AssessmentSource:
    """``LLM_JUDGE`` (the grader model) for a judge that grades with models, else ``CODE``."""
    from mlflow.entities import AssessmentSource, AssessmentSourceType

    graders = score_md.get("graders") or (
        "one" if score_md.get("judge") == "llm" else "none"
    )  # logs before "graders"
    if graders != "none":
        return AssessmentSource(AssessmentSourceType.LLM_JUDGE, grader or "grader")
    return AssessmentSource(AssessmentSourceType.CODE, RULES_SOURCE_ID)


def _grader(spec: SpecLike) -> str | None:
    roles = getattr(spec, "model_roles", None) or {}
    grader = roles.get("grader")
    # A role's config (Inspect's ModelConfig, a RoleView) names its model; a panel's list none.
    model: str | None = getattr(grader, "model", None) if grader is not None else None
    return model


def scored(samples: Iterable[SampleLike]) -> Iterator[tuple[SampleLike, dict[str, Any]]]:
    """The samples the scorer scored, with its metadata (the turns): those that get a trace."""
    for sample in samples:
        score = (sample.scores or {}).get(SCORER_NAME)
        metadata = score.metadata if score is not None else None
        if metadata is not None and isinstance(metadata.get("turns"), list):
            yield sample, dict(metadata)


def _session(sample: SampleLike) -> Session | None:
    raw = (sample.metadata or {}).get("session")
    if raw is None:
        return None
    return Session.model_validate(json.loads(raw) if isinstance(raw, str) else raw)


class _Spans:
    """The spans of one trace as MLflow ``Span`` entities, built without MLflow's tracing
    runtime: its exporter wrote every span in a transaction of its own as the span ended
    (~20 per session, ~390 ms per session on SQLite), these are written in one batch."""

    def __init__(self, trace_id: str) -> None:
        self.trace_id = trace_id
        self.spans: list[Span] = []

    def add(
        self,
        name: str,
        span_type: str,
        start_ns: int,
        end_ns: int,
        *,
        parent: str | None = None,
        inputs: Any = None,
        outputs: Any = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> str:
        """Add a finished span; returns its id. Values are stored as MLflow does (JSON text)."""
        from mlflow.entities import Span
        from mlflow.tracing.constant import SpanAttributeKey
        from mlflow.tracing.utils import dump_span_attribute_value as dump

        span_id = f"{random.getrandbits(64):016x}"
        values = {SpanAttributeKey.REQUEST_ID: self.trace_id, SpanAttributeKey.SPAN_TYPE: span_type}
        values |= {k: v for k, v in (attributes or {}).items()}
        if inputs is not None:
            values[SpanAttributeKey.INPUTS] = inputs
        if outputs is not None:
            values[SpanAttributeKey.OUTPUTS] = outputs
        self.spans.append(
            Span.from_dict(
                {
                    "trace_id": self.trace_id,
                    "span_id": span_id,
                    "parent_span_id": parent,
                    "name": name,
                    "start_time_unix_nano": start_ns,
                    "end_time_unix_nano": end_ns,
                    "status": {"code": "STATUS_CODE_OK", "message": ""},
                    "events": [],
                    "attributes": {k: dump(v) for k, v in values.items()},
                }
            )
        )
        return span_id


def _build_trace(
    sample: SampleLike,
    score_md: Mapping[str, Any],
    source: AssessmentSource,
    *,
    experiment_id: str,
    run_id: str,
    start_ns: int,
    raw_chars: int,
) -> Trace:
    """One session's trace with its verdicts (its ``TraceInfo.assessments``, written with it:
    ``log_feedback`` per verdict cost ~18 ms each, about 20 per session)."""
    from mlflow.entities import SpanType, Trace, TraceData, TraceInfo, TraceLocation, TraceState
    from mlflow.tracing.constant import (
        TRACE_SCHEMA_VERSION,
        TRACE_SCHEMA_VERSION_KEY,
        TraceMetadataKey,
        TraceTagKey,
    )
    from mlflow.tracing.utils.truncation import set_request_response_preview

    md = sample.metadata or {}
    session = _session(sample)
    language = str(md.get("language", "en"))
    records = {r.turn: r for r in stored_turns(sample.store)}
    grounding_score = (sample.scores or {}).get(GROUNDING_SCORER)
    grounding = {
        g.get("turn"): g
        for g in ((grounding_score.metadata or {}).get("turns") or [] if grounding_score else [])
    }
    rows = turn_rows(sample.id, sample.epoch, md, score_md["turns"], list(records.values()))
    turns = [records.get(int(row["turn"])) for row in rows]
    windows = _windows(turns, start_ns)
    spans = _Spans(f"tr-{random.getrandbits(128):032x}")
    verdicts: list[Assessment] = []
    clock = windows[-1][1] if windows else start_ns
    root_id = spans.add(
        f"session {sample.id}",
        SpanType.AGENT,
        start_ns,
        clock,
        inputs={k: md.get(k) for k in ("scenario", "tier", "language", "query")}
        | {"epoch": sample.epoch},
        outputs={"turn_scores": [st.get("score") for st in score_md["turns"]]},
        attributes={"mlflow.experimentId": experiment_id},
    )
    for row, st, rec, (turn_start, turn_end) in zip(
        rows, score_md["turns"], turns, windows, strict=True
    ):
        turn = int(row["turn"])
        rubric = session.rubric(turn, language) if session is not None else []
        span_id = spans.add(
            f"T{turn} {row['task_type'] or ''}".strip(),
            SpanType.CHAIN,
            turn_start,
            turn_end,
            parent=root_id,
            inputs={
                "question": row["question"],
                "rubric": [f"{k + 1}. {text}" for k, text in enumerate(rubric)],
            },
            outputs={"answer": rec.answer if rec else ""},
            attributes={
                "end": str(row["end"]),
                "tokens_in": rec.tokens_in if rec else 0,
                "tokens_out": rec.tokens_out if rec else 0,
                "seconds": float(rec.seconds) if rec else 0.0,
                "score": None if row["score"] != row["score"] else float(row["score"]),
                "status": str(row["status"]),
                "implicitness": str(row["subtype"]),
                "tool_source": str(row["tool_source"]),
            },
        )
        for call in rec.calls if rec else ():
            called = _ns(
                call.started, turn_start
            )  # logs without it: an instant at the turn's start
            spans.add(
                call.name,
                SpanType.TOOL,
                called,
                called + int(call.seconds * 1e9),
                parent=span_id,
                inputs=call.arguments,
                outputs=call.text,
                attributes={"fhir": _cap(call.raw_json, raw_chars)}
                if call.name != PREPARE_TO_ANSWER  # the loop records no other control call
                else None,
            )
        verdicts += _verdicts(turn, st, source, span_id)
        if turn in grounding:
            verdicts.append(_grounding(turn, grounding[turn], span_id))
    info = TraceInfo(
        trace_id=spans.trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=start_ns // 1_000_000,
        execution_duration=(clock - start_ns) // 1_000_000,
        state=TraceState.OK,
        trace_metadata={
            TRACE_SCHEMA_VERSION_KEY: str(TRACE_SCHEMA_VERSION),
            TraceMetadataKey.SOURCE_RUN: run_id,  # the run page's Traces tab filters on it
            "physassist.session_id": str(sample.id),
            "physassist.epoch": str(sample.epoch),
        },
        tags={
            TraceTagKey.TRACE_NAME: f"session {sample.id}",
            "session_id": str(sample.id),
            "scenario": str(md.get("scenario")),
            "tier": str(md.get("tier")),
        },
        assessments=verdicts,
    )
    trace = Trace(info, TraceData(spans.spans))
    set_request_response_preview(info, trace.data)
    return trace


def _windows(turns: list[TurnRecord | None], start_ns: int) -> list[tuple[int, int]]:
    """Each turn's (start, end) in ns: as the loop recorded it, or (logs without ``started``, a
    turn with no record) right after the turn before, from the sample's start."""
    clock, out = start_ns, []
    for rec in turns:
        begin = _ns(rec.started if rec else None, clock)
        clock = begin + int((rec.seconds if rec else 0.0) * 1e9)
        out.append((begin, clock))
    return out


def _verdicts(
    turn: int, st: Mapping[str, Any], source: AssessmentSource, span_id: str
) -> list[Feedback]:
    """The judge's verdicts on one turn as MLflow ``Feedback``: one per rubric item, one score."""
    from mlflow.entities import AssessmentError, Feedback

    out: list[Feedback] = []
    for k, item in enumerate(st.get("items") or []):
        passed = item.get("passed")
        out.append(
            Feedback(
                name=item_name(turn, k),
                value=passed,
                error=None
                if passed is not None
                else AssessmentError("UNDECIDED", item.get("reason") or "undecided"),
                rationale=item.get("reason") or None,
                source=source,
                span_id=span_id,
            )
        )
    score = st.get("score")
    unscored = AssessmentError(
        str(st.get("status") or "unscored").upper(), st.get("error") or "turn not scored"
    )
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


def _grounding(turn: int, g: Mapping[str, Any], span_id: str) -> Feedback:
    """The grounding check of one turn as one ``Feedback`` (see the module docstring)."""
    from mlflow.entities import AssessmentSource, AssessmentSourceType, Feedback

    facts = int(g.get("facts") or 0)
    counts = {
        k: str(int(g.get(k) or 0)) for k in ("facts", "grounded", "contradicted", "unsupported")
    }
    missed = [v for v in g.get("verdicts") or [] if v.get("status") != "grounded"]
    lines = [
        f"{counts['facts']} facts: {counts['grounded']} grounded, {counts['contradicted']} "
        f"contradicted, {counts['unsupported']} unsupported"
        if facts
        else "no facts stated"
    ]
    for v in missed:
        held = f"; the record holds {', '.join(v.get('seen') or [])}" if v.get("seen") else ""
        where = f" ({v['where']}: {v.get('line')!r})" if v.get("where") else ""
        lines.append(f"{v.get('status')}: {v.get('kind')} {v.get('fact')!r}{held}{where}")
    return Feedback(
        name=grounding_name(turn),
        value=int(counts["grounded"]) / facts if facts else None,
        rationale=_cap("\n".join(lines), 4000),
        metadata=counts,
        source=AssessmentSource(AssessmentSourceType.CODE, GROUNDING_SOURCE_ID),
        span_id=span_id,
    )


def _run_trace_ids(experiment_id: str, run_id: str) -> list[str]:
    import mlflow

    found = mlflow.search_traces(
        locations=[experiment_id], run_id=run_id, include_spans=False, return_type="list"
    )
    return [t.info.trace_id for t in found]


def delete_run_traces(uri: str, experiment_id: str, run_id: str) -> None:
    """Delete the traces an earlier attempt of run ``run_id`` left behind."""
    import mlflow

    mlflow.set_tracking_uri(uri)
    stale = _run_trace_ids(experiment_id, run_id)
    if stale:
        mlflow.MlflowClient(uri).delete_traces(experiment_id, trace_ids=stale)


#: Spans per ``log_spans`` call (one transaction each; a session has ~15-25).
SPAN_BATCH = 2000
LINK_BATCH = 100  # MLflow's limit per link_traces_to_run call


def sample_key(sample: SampleLike) -> tuple[str, int]:
    """A session's trace is one per (sample id, epoch)."""
    return str(sample.id), int(sample.epoch)


def build_traces(
    samples: Iterable[tuple[SampleLike, Mapping[str, Any]]],
    spec: SpecLike,
    *,
    experiment_id: str,
    run_id: str,
    raw_chars: int,
) -> list[Trace]:
    """The traces (MLflow ``Trace``) of the scored ``samples`` (``EvalSample``) of the eval
    ``spec`` (``EvalSpec``: the grader model, the eval's start for logs without sample times)."""
    grader = _grader(spec)
    return [
        _build_trace(
            sample,
            score_md,
            _judge_source(score_md, grader),
            experiment_id=experiment_id,
            run_id=run_id,
            start_ns=_start_ns(sample, spec.created),
            raw_chars=raw_chars,
        )
        for sample, score_md in samples
    ]


def store_traces(uri: str, experiment_id: str, run_id: str, traces: list[Trace]) -> None:
    """Write ``traces`` into the store: one trace record (with its verdicts) per session, the
    spans of many sessions per transaction, linked to run ``run_id``."""
    import mlflow
    from mlflow.tracing.client import TracingClient

    if not traces:
        return
    tracing = TracingClient(uri)
    for trace in traces:
        tracing.start_trace(trace.info)
    spans = [span for trace in traces for span in trace.data.spans]
    try:
        for begin in range(0, len(spans), SPAN_BATCH):
            tracing.log_spans(experiment_id, spans[begin : begin + SPAN_BATCH])
    except NotImplementedError:  # a tracking server older than 3.4 keeps spans as artifacts
        for trace in traces:
            tracing._upload_trace_data(trace.info, trace.data)
    ids = [trace.info.trace_id for trace in traces]
    client = mlflow.MlflowClient(uri)
    for begin in range(0, len(ids), LINK_BATCH):
        client.link_traces_to_run(ids[begin : begin + LINK_BATCH], run_id)


@dataclass(frozen=True)
class Streamed:
    """What was written while the eval ran (``physassist.tracking.trace_stream``)."""

    keys: frozenset[tuple[str, int]]  # ``sample_key`` of every session written
    assessments: int
    seconds: float


def write_traces(
    log: LogLike,
    *,
    uri: str,
    experiment_id: str,
    run_id: str,
    limit: int | None = None,
    raw_chars: int = 2000,
    streamed: Streamed | None = None,
) -> TraceSummary:
    """Write the sessions of an Inspect log as the traces of run ``run_id`` (at most ``limit``).

    Each trace carries the run in its metadata (``mlflow.sourceRun``: what the run page's Traces
    tab filters on) and is linked to the run (``link_traces_to_run``), so a run shows only its
    own sessions. Written in batches: one trace record (with its verdicts) per session, the spans
    of many sessions per transaction. Traces an earlier attempt of the same run left behind are
    replaced, and the traces are counted back from the store: a shortfall raises. ``streamed``:
    the sessions already written as the eval ran (which replaced the stale ones first); only
    the others are written here (a resumed ``eval_set``'s earlier samples).
    """
    import mlflow

    started = time.perf_counter()
    mlflow.set_tracking_uri(uri)
    if streamed is None:
        delete_run_traces(uri, experiment_id, run_id)
    samples = list(scored(log.samples or []))
    kept = samples if limit is None else samples[: max(0, int(limit))]
    done = streamed.keys if streamed is not None else frozenset()
    todo = [(sample, md) for sample, md in kept if sample_key(sample) not in done]
    traces = build_traces(
        todo, log.eval, experiment_id=experiment_id, run_id=run_id, raw_chars=raw_chars
    )
    store_traces(uri, experiment_id, run_id, traces)
    stored = len(_run_trace_ids(experiment_id, run_id))
    if stored != len(kept):
        raise RuntimeError(
            f"traces: {len(kept)} written but {stored} in the store for run {run_id}"
        )
    assessments = sum(len(trace.info.assessments) for trace in traces)
    seconds = time.perf_counter() - started
    if streamed is not None:
        assessments, seconds = assessments + streamed.assessments, seconds + streamed.seconds
    return TraceSummary(len(kept), assessments, len(samples) - len(kept), seconds, len(todo))
