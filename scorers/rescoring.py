"""Judging stored runs again (``physassist-rescore``): find the sources, score their turns
again with the benchmark's scorer through Inspect's post-hoc scoring, log one run per rescoring.

The stored turns (answers, tool calls, write arguments in each sample's store) are scored
again through ``inspect_ai.score`` (action ``overwrite``), which rebuilds every sample's state
from the log; nothing is generated. Each rescoring writes a new Inspect log
(``<inspect.log_dir>/rescore/``) and one MLflow run (nested under the source run, tag
``physassist.rescore_of``) with the same metrics as an eval plus its agreement with the source
judging (``agreement.vs_source.*``). A rescoring is identified by (source, judge as it scores,
taus): running it again finds the FINISHED run and skips it. It takes the checked
``physassist.experiment.Rescore`` the command composed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Required, TypedDict

from physassist.experiment import ConfigError, JudgeSettings, Rescore, Role, build_role
from physassist.faults import FAULT_TAG, fault_summary
from physassist.tracking import ids
from physassist.tracking.tags import INSPECT_LOG_TAG
from scorers import judges

if TYPE_CHECKING:
    import pandas as pd
    from inspect_ai.log import EvalLog
    from mlflow.entities import Run

    from physassist.tracking.runs import Tracker

RESCORE_OF_TAG = "physassist.rescore_of"
RESCORE_KEY_TAG = "physassist.rescore_key"
JOBS_DIR = "rescore_jobs"
#: Source tags that describe the source run itself, not what it measured: never copied.
_OWN_TAGS = (
    "mlflow.",
    "physassist.sweep_id",
    "physassist.job_key",
    "physassist.kind",
    "physassist.run_name",
    INSPECT_LOG_TAG,
    "physassist.overrides",
    "physassist.rescore",
)


class RescoreError(ConfigError):
    """A source cannot be rescored; the message names it."""


@dataclass(frozen=True)
class Source:
    """A stored run to judge again: its Inspect log and, when known, its MLflow run."""

    log_path: Path
    run_id: str | None = None
    run_name: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    tags: Mapping[str, str] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.run_id or str(self.log_path.resolve())


def _log_of(run: Run, tracker: Tracker) -> Path:
    """The Inspect log of a run: the path in its tag, else its logged ``inspect/`` artifact."""
    from physassist.tracking.runs import inspect_log_of

    try:
        return inspect_log_of(run, tracker.client)
    except LookupError as exc:
        raise RescoreError(str(exc)) from exc


def _from_run(run: Run, tracker: Tracker) -> Source:
    from physassist.tracking.runs import RUN_NAME_TAG  # the name without its headline

    name = run.data.tags.get(RUN_NAME_TAG, run.info.run_name)
    return Source(
        _log_of(run, tracker), run.info.run_id, name, dict(run.data.params), dict(run.data.tags)
    )


def find_sources(source: str, tracker: Tracker | None) -> list[Source]:
    """The runs ``source`` names: an Inspect log file, an MLflow run id, or a sweep id."""
    from physassist.tracking.runs import KIND_TAG, SWEEP_TAG

    path = Path(source).expanduser()
    if path.is_file():
        if tracker is None:
            return [Source(path)]
        found = tracker.find_runs({INSPECT_LOG_TAG: str(path.resolve())}, status="FINISHED")
        found = [r for r in found if RESCORE_OF_TAG not in r.data.tags]
        return [_from_run(found[0], tracker) if found else Source(path)]
    if tracker is None:
        raise RescoreError(
            f"source={source}: not a log file, and tracking is off (a run or sweep id needs MLflow)"
        )
    if not ids.is_id(source):
        raise RescoreError(f"source={source}: not a log file, run id or sweep id")
    try:  # the whole id or a unique prefix, as a table printed it
        match = ids.resolve(
            tracker.client, [tracker.experiment_id], source, where=f"tags.`{KIND_TAG}` != 'sweep'"
        )
    except ids.IdError as exc:
        raise RescoreError(f"source={exc} (in {tracker.uri})") from exc
    if match.kind == "run":
        run = tracker.client.get_run(match.id)
        if run.info.status != "FINISHED":
            raise RescoreError(
                f"source={source}: run status is {run.info.status}, only FINISHED runs are rescored"
            )
        return [_from_run(run, tracker)]
    children = tracker.find_runs({SWEEP_TAG: match.id, KIND_TAG: "job"}, status="FINISHED")
    if not children:
        raise RescoreError(
            f"source={source}: sweep {match.id} has no FINISHED runs in {tracker.uri}"
        )
    return [_from_run(run, tracker) for run in children]


class JudgeSpec(TypedDict, total=False):
    """What of a judge config changes the scores (``judge_spec``): hashed into a rescoring's
    key and written into its log's metadata."""

    mode: Required[str]
    model: str | None  # a judge that grades with one model
    models: list[str]  # ... with several
    context: str | None  # either
    repeats: int  # more than one judging per turn


def judge_spec(judge: JudgeSettings) -> JudgeSpec:
    """What of the judge config changes the scores: the model(s) its judge grades with
    (``Judge.graders``) and the context; a judge without graders (``rules``, ``human``) is its
    mode alone."""
    mode = judge.mode
    graders = judges.graders(mode)
    spec: JudgeSpec
    if graders == "none":
        spec = {"mode": mode}
    elif graders == "many":
        spec = {"mode": mode, "models": list(judge.models or []), "context": judge.context}
    else:
        spec = {"mode": mode, "model": judge.model, "context": judge.context}
    if judge.repeats > 1:  # one judging: the key as before
        spec["repeats"] = judge.repeats
    return spec


def judge_label(judge: JudgeSettings) -> str:
    spec = judge_spec(judge)
    times = f"x{spec['repeats']}" if "repeats" in spec else ""
    if "context" not in spec:
        return spec["mode"] + times
    models: Sequence[str | None] = spec.get("models") or [spec.get("model")]
    return (
        f"{spec['mode']}:{'+'.join(str(m).split('/')[-1] for m in models)}:{spec['context']}{times}"
    )


def grader_roles(spec: Role | None) -> dict[str, Any]:
    """The ``grader`` role for the judge: one model, a list, or none (``Judge.graders``)."""
    if spec is None:
        return {}
    for one in spec if isinstance(spec, list) else [spec]:
        if one.api_key_env and not os.environ.get(one.api_key_env):
            raise RescoreError(
                f"judge {one.name} needs the environment variable {one.api_key_env} (an API key)"
            )
    return {"grader": build_role(spec)}


def rescore_log(
    log: EvalLog,
    judge: JudgeSettings,
    taus: list[float],
    roles: Mapping[str, Any] | None = None,
    grounding: str = "on",
) -> EvalLog:
    """The log scored again by ``judge`` and, with ``grounding`` on, grounded again (Inspect's
    post-hoc scoring; no model generates: a log written before the grounding check gets one).

    ``roles``: the grader role (``grader_roles``; tests pass scripted models). The log is
    changed in place: read it again for the source judging.
    """
    from inspect_ai import score
    from inspect_ai.model import get_model

    from scorers import physassist_grounding, physassist_scorer

    if log.status != "success":
        raise RescoreError(
            f"{log.location}: the source eval did not finish (status {log.status}); rescore a "
            "finished run"
        )
    roles = dict(roles or {})
    log.eval.model_roles = None  # the source's roles are not rebuilt (its keys may be absent here)
    scorers = [
        physassist_scorer(
            judge=judge.mode,
            context=judge.context or "gold_answer",
            taus=tuple(taus),
            repeats=judge.repeats,
        )
    ]
    scorers += [physassist_grounding()] if grounding == "on" else []
    new = score(
        log,
        scorers,
        action="overwrite",
        model=get_model("none"),
        model_roles=roles or None,
        display="none",
        copy=False,
    )
    new.eval.task_args = {
        **(new.eval.task_args or {}),
        "judge": judge.mode,
        "judge_context": judge.context or "gold_answer",
        "judge_repeats": judge.repeats,
        "grounding": grounding,
    }
    label = judge_label(judge)  # Inspect View: a rescoring is no copy of its source
    new.eval.task_display_name = (
        f"{new.eval.task_display_name or new.eval.task} [rescored: judge={label}]"
    )
    new.eval.tags = [f"rescore judge={label}", *(new.eval.tags or [])]
    new.eval.metadata = {
        **(new.eval.metadata or {}),
        "physassist_rescore": {"source": log.location, "judge": judge_spec(judge)},
    }
    return new


def source_taus(log: EvalLog, configured: tuple[float, ...] | None) -> list[float]:
    if configured:
        return [float(t) for t in configured]
    return [float(t) for t in (log.eval.task_args or {}).get("taus") or (0.6, 0.75)]


@dataclass
class Rescored:
    """One rescoring: where its log went, its run, its metrics."""

    source: Source
    label: str
    log_path: str
    run_id: str | None
    metrics: dict[str, float]
    skipped: bool = False
    degenerate: str | None = None  # physassist.degenerate.summary: no turn answered or scored
    faults: str | None = None  # physassist.faults.fault_summary: the judge could not grade turns


def _params(source: Source, rescore: Rescore) -> dict[str, str]:
    kept = {k: v for k, v in source.params.items() if k != "judge" and not k.startswith("judge.")}
    return {**kept, **rescore.params, "rescore.source": source.key}


def _tags(source: Source, judge: JudgeSettings, key: str, log_path: str) -> dict[str, str]:
    from physassist.tracking.tags import git_tags, package_versions

    tags = {k: v for k, v in source.tags.items() if not k.startswith(_OWN_TAGS)}
    tags.update({**git_tags(), **package_versions()})
    tags.update(
        {RESCORE_KEY_TAG: key, INSPECT_LOG_TAG: log_path, "choice.judge": judge_label(judge)}
    )
    if source.run_id:
        tags[RESCORE_OF_TAG] = source.run_id
    if source.tags.get("physassist.sweep_id"):
        tags["physassist.source_sweep_id"] = source.tags["physassist.sweep_id"]
    return tags


def _human_verdicts(source: Source, tracker: Tracker | None) -> pd.DataFrame:
    """The people's item verdicts on the source run's traces (judge=human)."""
    from physassist.tracking.human import human_verdicts

    if tracker is None or source.run_id is None:
        raise RescoreError(
            "judge=human needs an MLflow run as source (the verdicts live on its traces), got "
            f"{source.key}"
        )
    verdicts = human_verdicts(tracker.uri, source.run_id)
    if verdicts.empty:
        raise RescoreError(
            f"run {source.run_id}: no human verdicts on its traces (feedback from source HUMAN "
            "named T<turn>.<item>)"
        )
    return verdicts


def rescore_source(source: Source, rescore: Rescore, tracker: Tracker | None) -> Rescored:
    """Rescore one source, write its log, log its run (unless one FINISHED already)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    from physassist import comparability, degenerate
    from physassist.agreement import compare
    from physassist.results import item_table, turn_table
    from physassist.staging import results
    from physassist.tracking import runs
    from physassist.tracking.metric_names import for_mlflow, summary_names

    judge = rescore.judge
    label = judge_label(judge)
    log = read_eval_log(str(source.log_path))
    taus = source_taus(log, rescore.taus)
    verdicts = _human_verdicts(source, tracker) if judge.mode == "human" else None
    digest = None if verdicts is None else [len(verdicts), int(verdicts["time_ms"].max())]
    key = runs.stable_hash(
        source.key,
        judge_spec(judge),
        taus,
        {"grounding": rescore.grounding},
        *([digest] if digest else []),
    )
    if tracker is not None:
        done = tracker.find_runs({RESCORE_KEY_TAG: key}, status="FINISHED")
        if done:
            run = done[0]
            return Rescored(
                source,
                label,
                run.data.tags.get(INSPECT_LOG_TAG, ""),
                run.info.run_id,
                summary_names(run.data.metrics),
                skipped=True,
            )
    before_items, before_turns = item_table(log), turn_table(log)
    if verdicts is not None:
        from inspect_ai.log import recompute_metrics

        from physassist.tracking.human import apply_human_verdicts

        new = apply_human_verdicts(log, verdicts)
        recompute_metrics(new)
    else:
        new = rescore_log(log, judge, taus, grader_roles(rescore.graders), rescore.grounding)
    out_dir = rescore.log_dir / "rescore"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"{source.log_path.stem}-{key}.eval"
    write_eval_log(new, str(out_path))
    new = read_eval_log(str(out_path))
    turns, metrics = results(new, taus)
    warning = degenerate.summary(turns)
    metrics.update(
        compare(
            before_items, item_table(new), before_turns, turns, taus, prefix="agreement.vs_source."
        )
    )
    faults = fault_summary(turns)
    run_id = None
    if tracker is not None:
        staging = runs.staging_dir()
        try:
            files = [(out_path, "inspect")] + [
                (p, "tables") for p in runs.write_turn_tables(turns, staging / "tables")
            ]
            resolved = staging / "rescore.yaml"
            resolved.write_text(rescore.resolved)
            files.append((resolved, "config"))
            name = f"{source.run_name or source.log_path.stem} [judge={label}]"
            params = _params(source, rescore)
            tags = _tags(source, judge, key, str(out_path.resolve()))
            tags.update(comparability.tags_for(params, tags))
            if warning:
                tags[degenerate.DEGENERATE_TAG] = warning
            if faults:  # not a result: FAILED, the reasons in a tag
                tags[FAULT_TAG] = faults[:5000]
            run_id = tracker.log_run(
                run_name=name,
                params=params,
                tags=tags,
                metrics=for_mlflow(metrics),
                files=files,
                parent_run_id=source.run_id,
                status="FAILED" if faults else "FINISHED",
            )
        finally:
            runs.remove_dir(staging)
    return Rescored(
        source, label, str(out_path), run_id, metrics, degenerate=warning, faults=faults
    )


class JudgingRecord(TypedDict):
    """One rescoring as a sweep's job notes it for the sweep's callback (another process: JSON)."""

    source: str  # Source.key
    source_log: str  # the source's Inspect log
    log: str  # the rescoring's Inspect log
    run_id: str | None
    judge: str  # judge_label


def judges_agreement(records: list[JudgingRecord]) -> dict[str, dict[str, float]]:
    """Per source: agreement of all its judgings (the source's own and each rescoring)."""
    from physassist.agreement import panel
    from physassist.results import item_table

    by_source: dict[str, list[JudgingRecord]] = {}
    for rec in records:
        by_source.setdefault(rec["source"], []).append(rec)
    out: dict[str, dict[str, float]] = {}
    for source, recs in by_source.items():
        logs = {"source": recs[0]["source_log"], **{r["judge"]: r["log"] for r in recs}}
        if len(logs) < 3:  # the source and one rescoring: agreement.vs_source says it all
            continue
        out[source] = panel({name: item_table(path) for name, path in logs.items()})
    return out
