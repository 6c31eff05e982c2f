"""MLflow as the home of a run: its datasets as inputs (one fingerprint string from the CLIs to
the run), its sessions as traces with the judge's verdicts, and human verdicts read back.

One real benchmark run (the offline oracle on two sample sessions) serves every test."""

from __future__ import annotations

import json
import re
from pathlib import Path

import mlflow
import pytest
from fixtures_tracking import compose, store_uri

import physassist.cli.eval as ev
from physassist.cli import data as data_cli
from physassist.cli import ehr as ehr_cli
from physassist.data.loader import SAMPLE_SESSIONS
from physassist.fingerprint import FINGERPRINT_CHARS

SAMPLE = Path(SAMPLE_SESSIONS)
SAMPLE_EHR = Path(__file__).resolve().parents[2] / "data" / "sample" / "cohort"


def _printed_fingerprint(text: str) -> str:
    [value] = re.findall(r"^fingerprint:\s+(\S+)$", text, flags=re.M)
    return value


@pytest.fixture(scope="module")
def two_sessions(tmp_path_factory) -> Path:
    """A released-format dataset of two sample sessions (cheap to evaluate whole)."""
    if not SAMPLE.exists():
        pytest.skip(f"sample sessions not built at {SAMPLE}")
    out = tmp_path_factory.mktemp("released")
    lines = (SAMPLE / "med_safety.jsonl").read_text().splitlines()[:2]
    (out / "med_safety.jsonl").write_text("\n".join(lines) + "\n")
    return out


@pytest.fixture(scope="module")
def oracle_run(two_sessions: Path, tmp_path_factory):
    """(store uri, outcome) of the oracle evaluated on the two sessions, tracked in MLflow."""
    tmp = tmp_path_factory.mktemp("run")
    cfg = compose(
        [
            "model=oracle",
            "dataset=physassistbench",
            f"dataset.source={two_sessions}",
            "dataset.ehr_source=sample",
            f"tracking.uri={store_uri(tmp)}",
            f"inspect.log_dir={tmp / 'logs'}",
            "inspect.display=none",
            "tracking.plots=false",
            "tracking.trace_raw_chars=300",
        ]
    )
    out = ev.run_experiment(cfg, ev.JobContext())
    assert out.status == "FINISHED" and out.tracking_error is None, out.tracking_error
    return store_uri(tmp), out


def test_validate_build_tags_and_digests_print_one_fingerprint(
    two_sessions: Path, oracle_run, capsys
) -> None:
    assert data_cli.main(["validate", str(two_sessions)]) == 0
    dataset_fp = _printed_fingerprint(capsys.readouterr().out)
    assert ehr_cli.main(["build", "sample"]) == 0
    ehr_fp = _printed_fingerprint(capsys.readouterr().out)
    assert len(dataset_fp) == len(ehr_fp) == FINGERPRINT_CHARS

    uri, out = oracle_run
    run = mlflow.MlflowClient(uri).get_run(out.run_id)
    assert run.data.tags["physassist.dataset_fingerprint"] == dataset_fp
    assert run.data.tags["physassist.ehr_fingerprint"] == ehr_fp
    inputs = {i.dataset.name: i for i in run.inputs.dataset_inputs}
    assert set(inputs) == {two_sessions.name, "ehr:sample"}
    sessions, ehr = inputs[two_sessions.name], inputs["ehr:sample"]
    assert sessions.dataset.digest == dataset_fp and ehr.dataset.digest == ehr_fp
    assert json.loads(sessions.dataset.profile)["num_rows"] == 2  # sessions evaluated
    assert json.loads(sessions.dataset.source)["uri"] == str(two_sessions.resolve())
    assert [(t.key, t.value) for t in sessions.tags] == [("mlflow.data.context", "eval")]
    assert [(t.key, t.value) for t in ehr.tags] == [("mlflow.data.context", "ehr")]
    tables = list(SAMPLE_EHR.glob("*/*.csv.gz"))  # the sample's source files, one per table
    assert json.loads(ehr.dataset.profile)["num_rows"] == len(tables) == 19


def _run_traces(uri: str, run_id: str) -> list:
    run = mlflow.MlflowClient(uri).get_run(run_id)
    mlflow.set_tracking_uri(uri)
    return mlflow.search_traces(
        locations=[run.info.experiment_id], run_id=run_id, return_type="list"
    )


def test_each_session_is_a_trace_with_turns_tool_calls_and_verdicts(oracle_run) -> None:
    from inspect_ai.log import read_eval_log

    from physassist.data.models import Session

    uri, out = oracle_run
    log = read_eval_log(out.log_path)
    traces = {
        t.info.trace_metadata["physassist.session_id"]: t for t in _run_traces(uri, out.run_id)
    }
    assert set(traces) == {str(s.id) for s in log.samples}
    run = mlflow.MlflowClient(uri).get_run(out.run_id)
    assert run.data.tags["physassist.traces"] == "2"
    assert int(run.data.tags["physassist.traces_assessments"]) == sum(
        len(a.info.assessments) for a in traces.values()
    )
    for sample in log.samples:
        trace = traces[str(sample.id)]
        session = Session.model_validate(json.loads(sample.metadata["session"]))
        records = sample.store["physassist:turns"]
        judged = sample.scores["physassist_scorer"].metadata["turns"]
        [root] = [s for s in trace.data.spans if s.parent_id is None]
        assert (
            root.name == f"session {sample.id}"
            and root.inputs["scenario"] == sample.metadata["scenario"]
        )
        turn_spans = sorted(
            (s for s in trace.data.spans if s.parent_id == root.span_id),
            key=lambda s: s.start_time_ns,
        )
        assert len(turn_spans) == len(records) == 4
        by_name: dict[str, list] = {}
        for a in trace.info.assessments:
            by_name.setdefault(a.name, []).append(a)
        for span, record, verdict in zip(turn_spans, records, judged, strict=True):
            t = record["turn"]
            assert (
                span.inputs["question"] == record["question"]
                and span.outputs["answer"] == record["answer"]
            )
            assert span.get_attribute("end") == record["end"]
            assert span.get_attribute("tokens_in") == record["tokens_in"]
            assert span.get_attribute("seconds") == pytest.approx(record["seconds"])
            assert span.inputs["rubric"] == [
                f"{k + 1}. {r}" for k, r in enumerate(session.rubric(t, "en"))
            ]
            tools = [s for s in trace.data.spans if s.parent_id == span.span_id]
            assert [s.name for s in tools] == [c["name"] for c in record["calls"]]  # dotted names
            assert span.start_time_ns == int(
                record["started"] * 1e9
            )  # where the loop timed the turn
            for tool, call in zip(tools, record["calls"], strict=True):
                assert tool.inputs == call["arguments"] and tool.outputs == call["text"]
                # each call's own time, inside its turn
                assert tool.end_time_ns - tool.start_time_ns == pytest.approx(
                    call["seconds"] * 1e9, abs=1_000
                )
                assert (
                    span.start_time_ns <= tool.start_time_ns <= tool.end_time_ns <= span.end_time_ns
                )
                fhir = tool.get_attribute("fhir")
                assert fhir is None or len(fhir) <= 300 + len("... [999999 more chars]")
                assert fhir is None or call["raw_json"].startswith(
                    fhir[:300]
                )  # the raw result, as recorded
            # the judge's verdicts: one per rubric item and the turn score, on the turn's span
            for k, item in enumerate(verdict["items"]):
                [a] = by_name[f"T{t}.{k + 1}"]
                assert a.span_id == span.span_id and a.feedback.value is item["passed"]
                assert a.rationale == (item["reason"] or None)
                assert (a.source.source_type, a.source.source_id) == (
                    "CODE",
                    "physassist rules judge",
                )
            [score] = by_name[f"T{t} score"]
            assert score.feedback.value == pytest.approx(verdict["score"])
        tool_spans = [s for s in trace.data.spans if s.span_type == "TOOL"]
        assert any(tool.get_attribute("fhir") for tool in tool_spans)
        assert all(
            tool.end_time_ns > tool.start_time_ns for tool in tool_spans
        )  # no zero-length calls


def test_trace_limit_caps_and_a_rewrite_replaces(oracle_run) -> None:
    from inspect_ai.log import read_eval_log

    from physassist.tracking.traces import write_traces

    uri, out = oracle_run
    client = mlflow.MlflowClient(uri)
    run = client.get_run(out.run_id)
    other = client.create_run(run.info.experiment_id, run_name="trace limit").info.run_id
    log = read_eval_log(out.log_path)
    kept = write_traces(log, uri=uri, experiment_id=run.info.experiment_id, run_id=other, limit=1)
    assert (kept.traces, kept.skipped) == (1, 1) and len(_run_traces(uri, other)) == 1
    again = write_traces(log, uri=uri, experiment_id=run.info.experiment_id, run_id=other)
    assert again.traces == 2 and len(_run_traces(uri, other)) == 2  # not 3: the old one is replaced


def test_human_verdicts_added_like_the_ui_are_read_back_as_a_judge(oracle_run) -> None:
    from mlflow.entities import AssessmentSource

    from physassist.tracking.human import human_turns, human_verdicts, judge_verdicts

    uri, out = oracle_run
    traces = sorted(
        _run_traces(uri, out.run_id), key=lambda t: t.info.trace_metadata["physassist.session_id"]
    )
    trace = traces[0]
    sid = trace.info.trace_metadata["physassist.session_id"]
    judge = judge_verdicts(uri, out.run_id)
    t1 = judge[(judge.session_id == sid) & (judge.turn == 1)]
    assert len(t1) >= 3 and human_verdicts(uri, out.run_id).empty
    # one clinician fails item 1 of T1 and passes the others; a second passes item 1 of T2 only
    for item in sorted(t1["item"]):
        mlflow.log_feedback(
            trace_id=trace.info.trace_id,
            name=f"T1.{item}",
            value=item != 1,
            rationale="dose not stated" if item == 1 else "ok",
            source=AssessmentSource("HUMAN", "dr.a@example.org"),
        )
    mlflow.log_feedback(
        trace_id=trace.info.trace_id,
        name="T2.1",
        value="yes",
        source=AssessmentSource("HUMAN", "dr.b@example.org"),
    )
    verdicts = human_verdicts(uri, out.run_id)
    assert len(verdicts) == len(t1) + 1
    first = verdicts[(verdicts.turn == 1) & (verdicts.item == 1)].iloc[0]
    assert (first.session_id, first.passed, first.rationale, first.source_id) == (
        sid,
        False,
        "dose not stated",
        "dr.a@example.org",
    )
    turns = human_turns(verdicts, judge).set_index(["session_id", "turn"])
    assert turns.loc[(sid, 1), "status"] == "scored" and turns.loc[(sid, 1), "judge"] == "human"
    assert turns.loc[(sid, 1), "score"] == pytest.approx((len(t1) - 1) / len(t1))
    assert turns.loc[(sid, 2), "status"] == "undecided"  # one item of T2 assessed, not all
    assert len(judge_verdicts(uri, out.run_id)) == len(judge)  # the judge's own verdicts unchanged

    # the log judged by the humans: only their complete turn is scored, the rest are unscored
    from inspect_ai.log import read_eval_log

    from physassist.metrics import summarize
    from physassist.results import turn_table
    from physassist.tracking.human import apply_human_verdicts

    table = turn_table(apply_human_verdicts(read_eval_log(out.log_path), verdicts)).set_index(
        ["session_id", "turn"]
    )
    assert set(table["judge"]) == {"human"}
    assert (
        table.loc[(sid, 1), "status"] == "scored" and table.loc[(sid, 1), "n_passed"] == len(t1) - 1
    )
    assert table.loc[(sid, 1), "score"] == pytest.approx((len(t1) - 1) / len(t1))
    assert table.loc[(sid, 2), "status"] == "undecided"
    metrics = summarize(table.reset_index(), n_boot=0)
    assert metrics["scored_turns"] == 1 and metrics["unscored_turns"] == len(table) - 1


def test_a_judge_that_grades_with_models_is_an_llm_judge_source() -> None:
    """The trace source follows the scorer's ``graders`` (Judge.graders), not a judge's name:
    a panel's verdicts are its graders', not code's."""
    from physassist.tracking.traces import RULES_SOURCE_ID, _judge_source

    panel = _judge_source({"judge": "panel", "graders": "many"}, None)
    assert (panel.source_type, panel.source_id) == ("LLM_JUDGE", "grader")
    rules = _judge_source({"judge": "rules", "graders": "none"}, None)
    assert (rules.source_type, rules.source_id) == ("CODE", RULES_SOURCE_ID)
    old = _judge_source({"judge": "llm"}, "openai/gpt-5.4-mini")  # a log scored before "graders"
    assert (old.source_type, old.source_id) == ("LLM_JUDGE", "openai/gpt-5.4-mini")


def test_a_runs_traces_are_its_own_in_an_experiment_shared_with_other_runs(oracle_run) -> None:
    """The run page's Traces tab filters on the trace metadata ``mlflow.sourceRun``; the traces
    are also linked to the run (MLflow's run-trace links, what ``search_traces(run_id=)`` joins)."""
    from inspect_ai.log import read_eval_log

    from physassist.tracking.traces import write_traces

    uri, out = oracle_run
    client = mlflow.MlflowClient(uri)
    experiment = client.get_run(out.run_id).info.experiment_id
    other = client.create_run(experiment, run_name="another run").info.run_id
    write_traces(read_eval_log(out.log_path), uri=uri, experiment_id=experiment, run_id=other)
    seen = []
    for run_id in (out.run_id, other):
        mine = {t.info.trace_id for t in _run_traces(uri, run_id)}
        shown = client.search_traces(
            locations=[experiment], filter_string=f"metadata.`mlflow.sourceRun` = '{run_id}'"
        )
        assert len(mine) == 2 and {t.info.trace_id for t in shown} == mine
        assert {t.info.trace_metadata["mlflow.sourceRun"] for t in shown} == {run_id}
        seen.append(mine)
    assert not seen[0] & seen[1]
