"""physassist-rescore: stored turns judged again through Inspect's post-hoc scoring.

The source is a real eval of the offline baseline agent on the sample. Graders are scripted
``mockllm`` models (usage set, offline) that reply per item by a fixed rule, so their
agreement is known by hand.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest
from fixtures_tracking import CONF, REPO, cli, search_runs, store_uri
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ModelOutput,
    ModelUsage,
    get_model,
)

from physassist.agreement import compare, panel
from physassist.experiment import JudgeSettings
from physassist.faults import fault_summary
from physassist.metrics import summarize
from physassist.results import item_table, turn_table
from physassist.turn_records import TURNS_KEY
from scorers.rescoring import rescore_log

USAGE = ModelUsage(input_tokens=50, output_tokens=20, total_tokens=70)
LLM = JudgeSettings("llm", "gold_answer")


SAMPLE_SESSIONS = Path(__file__).resolve().parents[2] / "data" / "sample" / "sessions"


def _slice() -> tuple[str, int, list[int]]:
    """The sample's first (scenario, tier) whose first session has no Write/Update turn (every
    turn judged item by item), and its rubric sizes: read from the sessions, so the hand
    computations below follow a rebuilt sample."""
    for path in sorted(SAMPLE_SESSIONS.glob("*.jsonl")):
        firsts: dict[int, dict] = {}
        for line in path.read_text().splitlines():
            session = json.loads(line)
            firsts.setdefault(session["difficulty_level"], session)
        for tier, session in sorted(firsts.items()):
            if not {"write", "mixed"} & set(session["tool_sources"]):
                return path.stem, tier, [len(r) for r in session["rubrics"]]
    raise AssertionError(f"every first session of {SAMPLE_SESSIONS} writes")


SCENARIO, TIER, SIZES = _slice()


@pytest.fixture(scope="module")
def source_log(tmp_path_factory) -> Path:
    """The baseline agent on the first session of ``_slice()``, judged by rules."""
    from physassist.agents import provider  # noqa: F401  (registers physassist/baseline)
    from tasks.physassistbench import physassistbench

    task = physassistbench(scenarios=[SCENARIO], tiers=[TIER])
    log_dir = tmp_path_factory.mktemp("logs")
    [log] = inspect_eval(
        task, model="physassist/baseline", limit=1, log_dir=str(log_dir), display="none"
    )
    assert log.status == "success"
    return Path(log.location)


def expected(rule) -> list[bool]:
    """What a scripted grader following ``rule`` passes, item by item, over ``SIZES``."""
    return [rule(i, n) for n in SIZES for i in range(1, n + 1)]


def _reply(passes: list[bool]) -> ModelOutput:
    body = {
        "items": [{"id": i, "pass": p, "reason": "scripted"} for i, p in enumerate(passes, start=1)]
    }
    message = ChatMessageAssistant(content=json.dumps(body))
    return ModelOutput(
        model="mockllm/model",
        choices=[ChatCompletionChoice(message=message, stop_reason="stop")],
        usage=USAGE,
    )


def grader(rule, garbage_for: str | None = None):
    """A scripted grader: item i (1-based) of an n-item turn passes iff ``rule(i, n)``; it
    answers prose instead of JSON when the question is ``garbage_for``."""

    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        prompt = messages[1].text
        n = int(re.search(r"## Rubric items \((\d+)\)", prompt).group(1))
        if garbage_for is not None and f"## Physician's question\n{garbage_for}\n" in prompt:
            return ModelOutput(
                model="mockllm/model",
                choices=[
                    ChatCompletionChoice(
                        message=ChatMessageAssistant(content="Looks fine to me."),
                        stop_reason="stop",
                    )
                ],
                usage=USAGE,
            )
        return _reply([rule(i, n) for i in range(1, n + 1)])

    return get_model("mockllm/model", custom_outputs=outputs, memoize=False)


def first_two(i: int, n: int) -> bool:
    return i <= 2


def odd_and_one(i: int, n: int) -> bool:
    return i in (1, 3)


def test_rules_rescore_reproduces_the_scores(source_log):
    before_turns, before_items = turn_table(source_log), item_table(source_log)
    new = rescore_log(read_eval_log(str(source_log)), JudgeSettings("rules"), [0.6, 0.75])
    after_turns = turn_table(new)
    assert after_turns["score"].tolist() == before_turns["score"].tolist()
    assert summarize(after_turns, n_boot=200) == summarize(before_turns, n_boot=200)
    m = compare(before_items, item_table(new), before_turns, after_turns)
    assert m["agreement.kappa"] == 1.0 and m["agreement.items"] == 100.0
    assert m["agreement.items_compared"] == sum(SIZES)  # nothing re-generated: the same items
    # the turns the agent produced are untouched: same store, same answers
    old = read_eval_log(str(source_log)).samples[0].store[TURNS_KEY]
    assert new.samples[0].store[TURNS_KEY] == old


def test_two_scripted_graders_give_the_hand_computed_kappa_and_alpha(source_log):
    a = rescore_log(
        read_eval_log(str(source_log)), LLM, [0.6, 0.75], roles={"grader": grader(first_two)}
    )
    b = rescore_log(
        read_eval_log(str(source_log)), LLM, [0.6, 0.75], roles={"grader": grader(odd_and_one)}
    )
    items_a, items_b = item_table(a), item_table(b)
    pa, pb = expected(first_two), expected(odd_and_one)
    assert items_a["passed"].tolist() == pa and items_b["passed"].tolist() == pb
    # by hand: Cohen's kappa from each grader's own marginals; Krippendorff's nominal alpha from
    # the coincidences (every disagreeing item adds one T-F and one F-T pair)
    units, agree = len(pa), sum(x == y for x, y in zip(pa, pb, strict=True))
    ta, tb = sum(pa) / units, sum(pb) / units
    p_e = ta * tb + (1 - ta) * (1 - tb)
    kappa = (agree / units - p_e) / (1 - p_e)
    n, n_t = 2 * units, sum(pa) + sum(pb)
    alpha = 1 - (n - 1) * 2 * (units - agree) / (2 * n_t * (n - n_t))
    m = compare(items_a, items_b, turn_table(a), turn_table(b))
    assert m["agreement.kappa"] == pytest.approx(kappa)
    assert m["agreement.alpha"] == pytest.approx(alpha)
    assert panel({"a": items_a, "b": items_b})["agreement.judges.alpha"] == pytest.approx(alpha)
    assert summarize(turn_table(a))["judge_unparseable_rate"] == 0.0


def test_unparseable_replies_are_unscored_and_counted(source_log):
    log = read_eval_log(str(source_log))
    question = log.samples[0].store[TURNS_KEY][1]["question"]
    new = rescore_log(log, LLM, [0.6], roles={"grader": grader(first_two, garbage_for=question)})
    turns = turn_table(new)
    assert turns["status"].tolist() == ["scored", "failed", "scored", "scored"]
    assert turns["error_kind"].tolist()[1] == "unparseable"
    metrics = summarize(turns)
    assert metrics["judge_unparseable"] == 1 and metrics["judge_unparseable_rate"] == 25.0
    assert metrics["unscored_turns"] == 1
    # a judge that could not grade is a system fault (JUDGE_FAILED_MAX = 0): the rescore run is
    # FAILED, exit 4
    assert fault_summary(turns).startswith(
        "the judge could not grade 1 of 4 turns (1 unparseable replies): 1x "
    )


def test_panel_takes_the_majority_and_leaves_ties_unscored(source_log):
    log = read_eval_log(str(source_log))
    question = log.samples[0].store[TURNS_KEY][1]["question"]
    graders = [
        grader(first_two),
        grader(odd_and_one),
        grader(lambda i, n: i <= 3, garbage_for=question),
    ]
    new = rescore_log(log, JudgeSettings("panel", "gold_answer"), [0.6], roles={"grader": graders})
    turns = turn_table(new)
    # items 1-3 vote TTT, TFT, FTT -> pass; items 4+ FFF -> fail: a turn of n items scores
    # min(3, n) / n. T1: the third grader did not parse, so item 2 is T vs F: a tie, undecided,
    # and the turn is unscored.
    scores = [min(3, n) / n for n in SIZES]
    assert turns["score"].tolist()[0] == scores[0]
    assert turns["score"].tolist()[2:] == pytest.approx(scores[2:])
    assert turns["status"].tolist()[1] == "undecided" and math.isnan(turns["score"].tolist()[1])
    reasons = [
        i["reason"]
        for i in new.samples[0].scores["physassist_scorer"].metadata["turns"][1]["items"]
    ]
    assert reasons[1].startswith("tie:")


@pytest.mark.slow
def test_cli_rescores_a_run_under_it_and_skips_a_repeat(tmp_path):
    """physassist-rescore source=<run id> judge=rules: same metrics, kappa 1, nested, logged."""
    common = [f"tracking.uri={store_uri(tmp_path)}", f"inspect.log_dir={tmp_path / 'logs'}"]
    proc = cli(
        [
            "physassist-eval",
            "model=baseline",
            "inspect.limit=3",
            "inspect.display=none",
            f"hydra.run.dir={tmp_path / 'out'}",
            *common,
        ],
        cwd=tmp_path,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    [source_id] = search_runs(store_uri(tmp_path))["run_id"].tolist()
    rescore = [
        "python",
        "-m",
        "physassist.cli.rescore",
        "-m",
        f"source={source_id[:8]}",
        *common,
    ]  # as tables print it
    env = {"PYTHONPATH": str(REPO)}
    proc = cli(
        [*rescore, "judge=rules", "judge.model=a,b", f"hydra.sweep.dir={tmp_path / 'multi'}"],
        cwd=tmp_path,
        timeout=240,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "(already done)" in proc.stdout  # judge.model does not change the rules judge
    runs = search_runs(store_uri(tmp_path)).set_index("run_id")
    assert len(runs) == 2
    source = runs.loc[source_id]
    child = runs.drop(index=source_id).iloc[0]
    assert (
        child["tags.mlflow.parentRunId"] == source_id
        and child["tags.physassist.rescore_of"] == source_id
    )
    assert child["params.judge"] == "rules" and child["params.model"] == "physassist/baseline"
    assert child["metrics.agreement.vs_source.kappa"] == 1.0
    import mlflow

    logged = mlflow.MlflowClient(store_uri(tmp_path)).get_run(child.name).data.metrics
    assert {"mrs", "pass_session_0.60", "task_type/mrs.task_type.CR", "n_turns"} <= set(logged)
    for name in [
        k for k in logged if not k.startswith("agreement.")
    ]:  # every metric of the rescoring
        a, b = child[f"metrics.{name}"], source[f"metrics.{name}"]
        assert a == b or (math.isnan(a) and math.isnan(b)), name
    assert Path(child["tags.physassist.inspect_log"]).is_file()
    from inspect_ai.log import read_eval_log  # Inspect View: a rescoring is no copy of its source

    spec = read_eval_log(child["tags.physassist.inspect_log"], header_only=True).eval
    assert (
        spec.task_display_name.endswith(" [rescored: judge=rules]")
        and "rescore judge=rules" in spec.tags
    )
    assert child["tags.mlflow.runName"].startswith(
        f"{source['tags.physassist.run_name']} [judge=rules] | mRS "
    )


def test_judgings_of_one_source_are_compared_together(source_log, tmp_path):
    """After -m: the source's judging and every rescoring, all together (alpha, kappas)."""
    from inspect_ai.log import write_eval_log

    from scorers.rescoring import judges_agreement

    records = []
    for name, rule in (("a", first_two), ("b", odd_and_one)):
        log = rescore_log(
            read_eval_log(str(source_log)), LLM, [0.6], roles={"grader": grader(rule)}
        )
        path = tmp_path / f"{name}.eval"
        write_eval_log(log, str(path))
        records.append(
            {
                "source": "src",
                "source_log": str(source_log),
                "log": str(path),
                "run_id": None,
                "judge": name,
            }
        )
    result = judges_agreement(records)["src"]
    expected = panel(
        {
            "source": item_table(source_log),
            "a": item_table(tmp_path / "a.eval"),
            "b": item_table(tmp_path / "b.eval"),
        }
    )
    assert result == pytest.approx(expected) and result["agreement.judges.n"] == 3
    assert judges_agreement(records[:1]) == {}  # one rescoring: agreement.vs_source says it all


@pytest.mark.slow
def test_human_verdicts_rescore_a_run(tmp_path):
    """judge=human: the people's item verdicts on the run's traces judge its stored turns; new
    verdicts make a new rescoring, the same ones are skipped."""
    import mlflow
    from hydra import compose, initialize_config_dir
    from mlflow.entities import AssessmentSource

    import physassist.cli.eval as ev
    from physassist.cli.rescore import run_rescore
    from physassist.tracking.human import judge_verdicts

    released = tmp_path / "released"
    released.mkdir()
    lines = (
        (REPO / "data" / "sample" / "sessions" / "med_safety.jsonl").read_text().splitlines()[:2]
    )
    (released / "med_safety.jsonl").write_text("\n".join(lines) + "\n")
    common = [f"tracking.uri={store_uri(tmp_path)}", f"inspect.log_dir={tmp_path / 'logs'}"]
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose(
            "eval",
            [
                *common,
                "model=oracle",
                "dataset=physassistbench",
                f"dataset.source={released}",
                "dataset.ehr_source=sample",
                "inspect.display=none",
                "tracking.plots=false",
            ],
        )
        out = ev.run_experiment(cfg, ev.JobContext())
        rescore_cfg = compose("rescore", [*common, f"source={out.run_id}", "judge=human"])
    judge = judge_verdicts(store_uri(tmp_path), out.run_id)
    sid = sorted(judge["session_id"])[0]
    items = sorted(judge[(judge.session_id == sid) & (judge.turn == 1)]["item"])
    mlflow.set_tracking_uri(store_uri(tmp_path))
    trace = next(
        t
        for t in mlflow.search_traces(
            locations=[mlflow.get_run(out.run_id).info.experiment_id],
            run_id=out.run_id,
            return_type="list",
        )
        if t.info.trace_metadata["physassist.session_id"] == sid
    )
    for item in items:  # a clinician fails item 1 of T1 and passes the others
        mlflow.log_feedback(
            trace_id=trace.info.trace_id,
            name=f"T1.{item}",
            value=item != 1,
            source=AssessmentSource("HUMAN", "dr.a@example.org"),
        )
    [done] = run_rescore(rescore_cfg)
    m = done.metrics
    assert (
        done.label == "human" and m["scored_turns"] == 1 and m["unscored_turns"] == m["n_turns"] - 1
    )
    assert m["agreement.vs_source.items_compared"] == len(items)  # only what the people decided
    assert m["agreement.vs_source.items"] == pytest.approx(100 * (len(items) - 1) / len(items))
    run = mlflow.get_run(done.run_id)
    assert (
        run.data.tags["physassist.rescore_of"] == out.run_id and run.data.params["judge"] == "human"
    )
    assert run_rescore(rescore_cfg)[0].skipped  # the same verdicts: already done
    mlflow.log_feedback(
        trace_id=trace.info.trace_id,
        name="T2.1",
        value=True,
        source=AssessmentSource("HUMAN", "dr.b@example.org"),
    )
    again = run_rescore(rescore_cfg)[0]
    assert not again.skipped and again.run_id != done.run_id


def test_rules_rescore_of_the_default_oracle_run_says_kappa_is_undefined(tmp_path, capsys):
    """docs/reports.md's sanity check on the run its quick start makes (the oracle, rules
    judge): every item passes on both sides, so kappa has no variance to measure; it is reported
    as undefined beside the observed agreement (100), never as a bare nan."""
    from physassist.agents import provider  # noqa: F401  (registers physassist/oracle)
    from physassist.cli.rescore import print_results
    from scorers.rescoring import Rescored
    from tasks.physassistbench import physassistbench

    [log] = inspect_eval(
        physassistbench(), model="physassist/oracle", limit=2, log_dir=str(tmp_path), display="none"
    )
    new = rescore_log(read_eval_log(log.location), JudgeSettings("rules"), [0.6, 0.75])
    before_turns, after_turns = turn_table(log.location), turn_table(new)
    assert (before_turns["score"] == 1.0).all() and after_turns["score"].tolist() == before_turns[
        "score"
    ].tolist()
    m = compare(
        item_table(log.location),
        item_table(new),
        before_turns,
        after_turns,
        prefix="agreement.vs_source.",
    )
    assert math.isnan(m["agreement.vs_source.kappa"]) and m["agreement.vs_source.items"] == 100.0
    source = type("Source", (), {"run_name": "oracle", "log_path": Path(log.location)})()
    print_results(
        [Rescored(source, "rules", str(tmp_path / "r.eval"), None, {**summarize(after_turns), **m})]
    )
    out = capsys.readouterr().out
    assert "nan" not in out
    assert (
        f"undefined (no variance: all {m['agreement.vs_source.items_compared']:.0f} items one "
        "verdict; items agree 100.0)" in out
    )
