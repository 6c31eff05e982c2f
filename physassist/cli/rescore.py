"""``physassist-rescore``: judge stored runs again, without re-running the assistant.

    physassist-rescore source=<run id> judge=llm                  # one run, the LLM judge
    physassist-rescore source=logs/<...>.eval judge=rules          # an Inspect log file
    physassist-rescore source=<sweep id> judge=llm judge.context=evidence   # every child run
    physassist-rescore -m source=<run id> judge=rules,llm judge.model=a,b   # several judges

The stored turns (answers, tool calls, write arguments in each sample's store) are scored
again through Inspect's own post-hoc scoring (``inspect_ai.score``, action ``overwrite``),
which rebuilds every sample's state from the log; nothing is generated. Each rescoring writes
a new Inspect log (``<inspect.log_dir>/rescore/``) and one MLflow run (nested under the source
run, tag ``physassist.rescore_of``) with the same metrics as an eval plus its agreement with
the source judging (``agreement.vs_source.*``). After a ``-m`` sweep the judgings of each
source are compared all together (``agreement.judges.*``, logged on each of their runs).

A rescoring is identified by (source, judge as it scores, taus): running it again finds the
FINISHED run and skips it, so ``judge=rules,llm judge.model=a,b`` judges with rules once.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from physassist.cli.config import (
    ConfigError,
    check_passed_on,
    conf_dir,
    grader_spec,
    resolve,
)
from physassist.cli.hydra_errors import reported
from physassist.experiment import TrackingSettings, build_role
from physassist.faults import EXIT_FAULTS, FAULT_TAG, fault_summary
from physassist.staging import end_abandoned, open_tracker
from physassist.tracking.params import flatten_config
from scorers import judges

RUN_ID = re.compile(r"^[0-9a-f]{32}$")
RESCORE_OF_TAG = "physassist.rescore_of"
RESCORE_KEY_TAG = "physassist.rescore_key"
JOBS_DIR = "rescore_jobs"
#: Source tags that describe the source run itself, not what it measured: never copied.
_OWN_TAGS = ("mlflow.", "physassist.sweep_id", "physassist.job_key", "physassist.kind", "physassist.inspect_log", "physassist.overrides", "physassist.rescore")


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


def _log_of(run, tracker) -> Path:
    """The Inspect log of a run: the path in its tag, else its logged ``inspect/`` artifact."""
    tagged = run.data.tags.get("physassist.inspect_log")
    if tagged and Path(tagged).is_file():
        return Path(tagged)
    run_id = run.info.run_id
    try:
        files = [f.path for f in tracker.client.list_artifacts(run_id, "inspect") if f.path.endswith((".eval", ".json"))]
    except Exception as exc:  # noqa: BLE001 - an unreadable artifact store
        raise RescoreError(f"run {run_id}: cannot list its artifacts: {exc}") from exc
    if not files:
        raise RescoreError(f"run {run_id}: its Inspect log {tagged!r} is gone and no inspect/ artifact was logged")
    local = tracker.client.download_artifacts(run_id, files[0], tempfile.mkdtemp(prefix="physassist-rescore-"))
    return Path(local)


def _from_run(run, tracker) -> Source:
    return Source(_log_of(run, tracker), run.info.run_id, run.info.run_name, dict(run.data.params), dict(run.data.tags))


def find_sources(source: str, tracker) -> list[Source]:
    """The runs ``source`` names: an Inspect log file, an MLflow run id, or a sweep id."""
    from physassist.tracking.runs import KIND_TAG, SWEEP_TAG

    path = Path(source).expanduser()
    if path.is_file():
        if tracker is None:
            return [Source(path)]
        found = tracker.find_runs({"physassist.inspect_log": str(path.resolve())}, status="FINISHED")
        found = [r for r in found if RESCORE_OF_TAG not in r.data.tags]
        return [_from_run(found[0], tracker) if found else Source(path)]
    if tracker is None:
        raise RescoreError(f"source={source}: not a log file, and tracking is off (a run or sweep id needs MLflow)")
    if RUN_ID.match(source):
        try:
            run = tracker.client.get_run(source)
        except Exception as exc:  # noqa: BLE001 - unknown id
            raise RescoreError(f"source={source}: no such MLflow run in {tracker.uri}") from exc
        if run.info.status != "FINISHED":
            raise RescoreError(f"source={source}: run status is {run.info.status}, only FINISHED runs are rescored")
        return [_from_run(run, tracker)]
    children = tracker.find_runs({SWEEP_TAG: source, KIND_TAG: "job"}, status="FINISHED")
    if not children:
        raise RescoreError(f"source={source}: not a log file, run id or sweep id with FINISHED runs in {tracker.uri}")
    return [_from_run(run, tracker) for run in children]


def judge_spec(judge: Mapping[str, Any]) -> dict[str, Any]:
    """What of the judge config changes the scores: the model(s) its judge grades with
    (``Judge.graders``) and the context; a judge without graders (``rules``, ``human``) is its
    mode alone."""
    mode = judge["mode"]
    graders = judges.graders(mode)
    if graders == "none":
        return {"mode": mode}
    if graders == "many":
        return {"mode": mode, "models": list(judge.get("models") or []), "context": judge.get("context")}
    return {"mode": mode, "model": judge.get("model"), "context": judge.get("context")}


def judge_label(judge: Mapping[str, Any]) -> str:
    spec = judge_spec(judge)
    if "context" not in spec:
        return spec["mode"]
    models = spec.get("models") or [spec.get("model")]
    return f"{spec['mode']}:{'+'.join(str(m).split('/')[-1] for m in models)}:{spec['context']}"


def grader_roles(judge: Mapping[str, Any]) -> dict[str, Any]:
    """The ``grader`` role for the judge: one model, a list, or none (``Judge.graders``)."""
    spec = grader_spec(judge)
    if spec is None:
        return {}
    for one in spec if isinstance(spec, list) else [spec]:
        if one.api_key_env and not os.environ.get(one.api_key_env):
            raise RescoreError(f"judge {one.name} needs the environment variable {one.api_key_env} (an API key)")
    return {"grader": build_role(spec)}


def rescore_log(log, judge: Mapping[str, Any], taus: list[float], roles: Mapping[str, Any] | None = None):
    """The log scored again by ``judge`` (Inspect's post-hoc scoring; no model generates).

    ``roles`` overrides the grader role (tests pass scripted models). The log is changed in
    place: read it again for the source judging.
    """
    from inspect_ai import score
    from inspect_ai.model import get_model

    from scorers import physassist_scorer

    if log.status != "success":
        raise RescoreError(f"{log.location}: the source eval did not finish (status {log.status}); rescore a finished run")
    roles = dict(grader_roles(judge) if roles is None else roles)
    log.eval.model_roles = None  # the source's roles are not rebuilt (its keys may be absent here)
    scorer = physassist_scorer(judge=judge["mode"], context=judge.get("context") or "gold_answer", taus=tuple(taus))
    new = score(log, scorer, action="overwrite", model=get_model("none"), model_roles=roles or None, display="none", copy=False)
    new.eval.task_args = {**(new.eval.task_args or {}), "judge": judge["mode"], "judge_context": judge.get("context") or "gold_answer"}
    new.eval.metadata = {**(new.eval.metadata or {}), "physassist_rescore": {"source": log.location, "judge": judge_spec(judge)}}
    return new


def source_taus(log, configured: list[float] | None) -> list[float]:
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


def _params(source: Source, config: Mapping[str, Any]) -> dict[str, str]:
    kept = {k: v for k, v in source.params.items() if k != "judge" and not k.startswith("judge.")}
    return {**kept, **flatten_config({"judge": config["judge"]}), "rescore.source": source.key}


def _tags(source: Source, config: Mapping[str, Any], key: str, log_path: str) -> dict[str, str]:
    from physassist.tracking.tags import git_tags, package_versions

    tags = {k: v for k, v in source.tags.items() if not k.startswith(_OWN_TAGS)}
    tags.update({**git_tags(), **package_versions()})
    tags.update({RESCORE_KEY_TAG: key, "physassist.inspect_log": log_path, "choice.judge": judge_label(config["judge"])})
    if source.run_id:
        tags[RESCORE_OF_TAG] = source.run_id
    if source.tags.get("physassist.sweep_id"):
        tags["physassist.source_sweep_id"] = source.tags["physassist.sweep_id"]
    return tags


def _human_verdicts(source: Source, tracker):  # -> pd.DataFrame
    """The people's item verdicts on the source run's traces (judge=human)."""
    from physassist.tracking.human import human_verdicts

    if tracker is None or source.run_id is None:
        raise RescoreError(f"judge=human needs an MLflow run as source (the verdicts live on its traces), got {source.key}")
    verdicts = human_verdicts(tracker.uri, source.run_id)
    if verdicts.empty:
        raise RescoreError(
            f"run {source.run_id}: no human verdicts on its traces (feedback from source HUMAN named T<turn>.<item>)"
        )
    return verdicts


def rescore_source(source: Source, config: Mapping[str, Any], tracker) -> Rescored:
    """Rescore one source, write its log, log its run (unless one FINISHED already)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    from physassist import comparability, degenerate
    from physassist.agreement import compare
    from physassist.results import item_table, turn_table
    from physassist.staging import results
    from physassist.tracking import runs
    from physassist.tracking.metric_names import for_mlflow, summary_names

    judge = config["judge"]
    label = judge_label(judge)
    log = read_eval_log(str(source.log_path))
    taus = source_taus(log, config.get("taus"))
    verdicts = _human_verdicts(source, tracker) if judge["mode"] == "human" else None
    digest = None if verdicts is None else [len(verdicts), int(verdicts["time_ms"].max())]
    key = runs.stable_hash(source.key, judge_spec(judge), taus, *([digest] if digest else []))
    if tracker is not None:
        done = tracker.find_runs({RESCORE_KEY_TAG: key}, status="FINISHED")
        if done:
            run = done[0]
            return Rescored(source, label, run.data.tags.get("physassist.inspect_log", ""), run.info.run_id, summary_names(run.data.metrics), skipped=True)
    before_items, before_turns = item_table(log), turn_table(log)
    if verdicts is not None:
        from inspect_ai.log import recompute_metrics

        from physassist.tracking.human import apply_human_verdicts

        new = apply_human_verdicts(log, verdicts)
        recompute_metrics(new)
    else:
        new = rescore_log(log, judge, taus)
    out_dir = Path(str(config["inspect"]["log_dir"])).expanduser() / "rescore"
    out_dir.mkdir(parents=True, exist_ok=True)
    out_path = out_dir / f"{source.log_path.stem}-{key}.eval"
    write_eval_log(new, str(out_path))
    new = read_eval_log(str(out_path))
    turns, metrics = results(new, taus)
    warning = degenerate.summary(turns)
    metrics.update(compare(before_items, item_table(new), before_turns, turns, taus, prefix="agreement.vs_source."))
    faults = fault_summary(turns)
    run_id = None
    if tracker is not None:
        staging = runs.staging_dir()
        try:
            files = [(out_path, "inspect")] + [(p, "tables") for p in runs.write_turn_tables(turns, staging / "tables")]
            resolved = staging / "rescore.yaml"
            resolved.write_text(OmegaConf.to_yaml(OmegaConf.create(dict(config))))
            files.append((resolved, "config"))
            name = f"{source.run_name or source.log_path.stem} [judge={label}]"
            params = _params(source, config)
            tags = _tags(source, config, key, str(out_path.resolve()))
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
    return Rescored(source, label, str(out_path), run_id, metrics, degenerate=warning, faults=faults)


def run_rescore(cfg: DictConfig, sweep_dir: Path | None = None) -> list[Rescored]:
    """Rescore every source of the composition; in a sweep, note each result for the callback."""
    config = resolve(cfg)
    check_passed_on(config)
    tracking = TrackingSettings.of(config.get("tracking"))
    tracker = open_tracker(tracking) if tracking.enabled else None
    if tracker is not None:
        end_abandoned(tracker)
    judge = config["judge"]
    known = (*judges.JUDGES, "human")  # the registered judges and this command's own
    if judge["mode"] not in known:
        raise RescoreError(f"judge.mode={judge['mode']!r} is not one of {', '.join(known)}")
    done = [rescore_source(s, config, tracker) for s in find_sources(str(config["source"]), tracker)]
    if sweep_dir is not None:
        jobs = sweep_dir / JOBS_DIR
        jobs.mkdir(parents=True, exist_ok=True)
        record = [{"source": r.source.key, "source_log": str(r.source.log_path), "log": r.log_path, "run_id": r.run_id, "judge": r.label} for r in done]
        (jobs / f"{HydraConfig.get().job.num}.json").write_text(json.dumps(record, indent=1))
    return done


def print_results(done: list[Rescored], taus: list[float] | None = None) -> None:
    from physassist.agreement import kappa_text

    rows = [("source", "judge", "mRS", "kappa vs source", "items agree", "unparseable", "run")]
    for r in done:
        m = r.metrics
        rows.append(
            (
                (r.source.run_name or r.source.log_path.name)[:40],
                r.label,
                f"{m.get('mrs', float('nan')):.1f}",
                kappa_text(m),
                f"{m.get('agreement.vs_source.items', float('nan')):.1f}",
                f"{m.get('judge_unparseable_rate', float('nan')):.1f}",
                (r.run_id or "-") + (" (already done)" if r.skipped else ""),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)))
    for r in done:
        if not r.skipped:
            print(f"Inspect log: {r.log_path}")
    for r in done:
        if r.degenerate:
            print(f"physassist-rescore: warning: {r.label} on {r.source.key}: {r.degenerate}", file=sys.stderr)


def judges_agreement(records: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per source: agreement of all its judgings (the source's own and each rescoring)."""
    from physassist.agreement import panel
    from physassist.results import item_table

    by_source: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_source.setdefault(rec["source"], []).append(rec)
    out: dict[str, dict[str, float]] = {}
    for source, recs in by_source.items():
        logs = {"source": recs[0]["source_log"], **{r["judge"]: r["log"] for r in recs}}
        if len(logs) < 3:  # the source and one rescoring: agreement.vs_source says it all
            continue
        out[source] = panel({name: item_table(path) for name, path in logs.items()})
    return out


class RescoreSweepCallback(Callback):
    """After ``-m``: the agreement of all judgings of each source, logged on their runs; exit
    ``EXIT_FAULTS`` when a job's judge could not grade (noted by the job, another process)."""

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from physassist.cli.sweep import FAULTS_FILE

        (Path(config.hydra.sweep.dir).resolve() / FAULTS_FILE).unlink(missing_ok=True)  # an earlier run's

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep_dir = Path(config.hydra.sweep.dir).resolve()
        records = [rec for path in sorted((sweep_dir / JOBS_DIR).glob("*.json")) for rec in json.loads(path.read_text())]
        self._log_agreement(config, judges_agreement(records), records)
        from physassist.cli.sweep import FAULTS_FILE

        if (sweep_dir / FAULTS_FILE).is_file():  # a job's judge could not grade: as a single rescore
            raise SystemExit(EXIT_FAULTS)

    @staticmethod
    def _log_agreement(config: DictConfig, results: dict[str, dict[str, float]], records: list[dict]) -> None:
        if not results:
            return
        tracking = TrackingSettings.of(OmegaConf.to_container(config.tracking, resolve=True) if "tracking" in config else None)
        tracker = open_tracker(tracking) if tracking.enabled else None
        from physassist.tracking.metric_names import for_mlflow

        for source, metrics in results.items():
            shown = ", ".join(f"{k.rsplit('.', 1)[-1]}={v:.3f}" for k, v in metrics.items())
            print(f"judges' agreement on {source}: {shown}")
            run_ids = {r["run_id"] for r in records if r["source"] == source and r["run_id"]}
            for run_id in sorted(run_ids) if tracker is not None else ():
                tracker.log_metrics(run_id, for_mlflow(metrics))


def _fail(message: str, code: int = 2) -> None:
    print(f"physassist-rescore: error: {message}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(config_path=str(conf_dir()), config_name="rescore", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> list[Rescored] | None:
    from physassist.cli import console

    console.setup()  # in every process that runs a job
    hc = HydraConfig.get()
    sweep_dir = Path(hc.sweep.dir).resolve() if hc.mode == RunMode.MULTIRUN else None
    try:
        done = run_rescore(cfg, sweep_dir)
    except ConfigError as exc:
        if sweep_dir is not None:
            raise
        _fail(str(exc))
        return None
    print_results(done)
    faulted = [r for r in done if r.faults]
    for r in faulted:
        print(f"physassist-rescore: system faults in {r.source.key} [judge={r.label}]: {r.faults}", file=sys.stderr)
    if faulted and sweep_dir is None:
        raise SystemExit(EXIT_FAULTS)
    if faulted:  # a sweep's job: its callback exits EXIT_FAULTS once every job has run
        from physassist.cli.sweep import record_faults

        for r in faulted:
            record_faults(sweep_dir, f"{r.source.key} [judge={r.label}]: {r.faults}")
    return done


def main() -> None:
    """Console entry point (``physassist-rescore``); a composition error is one line, exit 2."""
    from physassist.cli import console

    console.start()
    reported(_hydra_main, "physassist-rescore")


if __name__ == "__main__":
    main()
