"""A ``physassist-generate`` run: the generation task evaluated, its sessions collected,
validated and written, the run logged to MLflow.

The task (``generation/task.py``) leaves each slot's session and statistics in the score
metadata; ``collect`` gathers them from the EvalLog, ``write_output`` validates the sessions
with the strict loader and writes ``<output_dir>/<scenario>.jsonl`` plus ``manifest.json`` only
when everything validated (files are moved in at the end, so no partial output). It takes the
checked ``physassist.experiment.Generation`` the command composed.

As an evaluation's: every agent's model is built with the run's call bounds and watched
(``physassist.calls``: an endpoint that fails every call ends the run, ``EndpointDown``), and the
MLflow run is made RUNNING before the eval, so a signal ends it KILLED and an error FAILED, with
the reason, never leaving it RUNNING or missing (measured before: a SIGTERM left no run at all).
A signal writes nothing (``Interrupted``): the cancelled Inspect log keeps the finished slots.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from physassist.experiment import ConfigError, Generation
from physassist.providers import provider_error
from physassist.staging import Progress, local_path


class GenerationFailed(RuntimeError):
    """The generation eval itself failed (its log says why); nothing was written."""


def collect(log: Any) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Sessions (in sample order) and the run's statistics from an EvalLog."""
    from generation.pipeline.gates import GATES

    sessions: list[dict[str, Any]] = []
    produced: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    checked = dict.fromkeys(GATES, 0)
    failed = dict.fromkeys(GATES, 0)
    stages: dict[str, int] = defaultdict(int)
    fallbacks: dict[str, int] = defaultdict(int)
    tokens: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    models: dict[str, str] = {}
    attempts: list[int] = []
    slots = skipped = patients = 0
    errors: list[str] = []
    for sample in log.samples or []:
        score = next(iter((sample.scores or {}).values()), None)
        if score is None or not score.metadata:  # the sample errored (fail_on_error allowed it)
            slots += 1
            skipped += 1
            errors.append(
                f"{sample.id}: {sample.error.message if sample.error else 'no result'}"[:500]
            )
            continue
        meta = score.metadata
        stats = meta["stats"]
        slots += 1
        patients += stats["patients_tried"]
        for g in GATES:
            checked[g] += stats["checked"][g]
            failed[g] += stats["failed"][g]
        for k, v in stats["stage_failures"].items():
            stages[k] += v
        for k, v in stats["fallbacks"].items():
            fallbacks[k] += v
        for role, row in stats["tokens"].items():
            for k, v in row.items():
                tokens[role][k] += v
        models.update(stats["models"])
        if meta["session"] is None:
            skipped += 1
            continue
        sessions.append(meta["session"])
        produced[meta["scenario"]][f"L{meta['tier']}"] += 1
        attempts.append(sum(stats["turn_attempts"]))
    return sessions, {
        "slots": slots,
        "sessions": len(sessions),
        "slots_skipped": skipped,
        "slots_errored": len(errors),
        "errors": errors,
        "patients_tried": patients,
        "produced": {s: dict(t) for s, t in produced.items()},
        "attempts_per_session": (sum(attempts) / len(attempts)) if attempts else None,
        "gates": {
            g: {
                "checked": checked[g],
                "failed": failed[g],
                "failure_rate": failed[g] / checked[g] if checked[g] else None,
            }
            for g in GATES
        },
        "stage_failures": dict(sorted(stages.items())),
        "rewrite_fallbacks": dict(sorted(fallbacks.items())),
        "tokens": {r: dict(v) for r, v in tokens.items()},
        "models": models,
    }


def write_output(
    sessions: list[dict[str, Any]], manifest: dict[str, Any], out: Path, overwrite: bool
) -> list[Path]:
    """Validate the sessions (strict loader), then write them and the manifest as the folder
    ``out``, whole, in one rename (``physassist.data.folder``: ``overwrite`` replaces it)."""
    from physassist.data import folder, load_sessions

    refuse_existing(out, overwrite)  # again: another process may have made it meanwhile
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in sessions:
        by_scenario[s["clinical_scenario"]].append(s)
    texts = {
        f"{scenario}.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        for scenario, rows in by_scenario.items()
    }
    if texts:  # strict: raises SessionFormatError naming session/turn/field
        with tempfile.TemporaryDirectory(prefix="physassist-generate-") as staging:
            for name, text in texts.items():
                (Path(staging) / name).write_text(text, encoding="utf-8", newline="\n")
            manifest["fingerprint"] = load_sessions(staging).fingerprint
    try:
        return folder.write(
            out, texts, json.loads(json.dumps(manifest, default=str)), force=overwrite
        )
    except folder.FolderError as exc:  # another process made it meanwhile
        raise ConfigError(str(exc)) from exc


def metrics_of(stats: dict[str, Any]) -> dict[str, float]:
    m: dict[str, float] = {
        "sessions": stats["sessions"],
        "slots": stats["slots"],
        "slots_skipped": stats["slots_skipped"],
        "slots_errored": stats["slots_errored"],
        "patients_tried": stats["patients_tried"],
    }
    if stats["attempts_per_session"] is not None:
        m["attempts_per_session"] = stats["attempts_per_session"]
    for scenario, tiers in stats["produced"].items():
        for tier, n in tiers.items():
            m[f"produced.{scenario}.{tier}"] = n
    for g, row in stats["gates"].items():
        m[f"gate.{g}.checked"] = row["checked"]
        m[f"gate.{g}.failed"] = row["failed"]
        if row["failure_rate"] is not None:
            m[f"gate.{g}.failure_rate"] = row["failure_rate"]
    for stage, n in stats["stage_failures"].items():
        m[f"stage_failures.{stage}"] = n
    for kind, n in stats["rewrite_fallbacks"].items():
        m[f"rewrite_fallbacks.{kind}"] = n
    for role, row in stats["tokens"].items():
        m[f"tokens.{role}.input"] = row.get("input", 0)
        m[f"tokens.{role}.output"] = row.get("output", 0)
    m["tokens.total"] = sum(
        r.get("input", 0) + r.get("output", 0) for r in stats["tokens"].values()
    )
    return m


def refuse_existing(out: Path, overwrite: bool) -> None:
    """An output directory that already holds sessions is refused (before anything runs)."""
    from physassist.data import folder

    if folder.holds_sessions(out) and not overwrite:
        raise ConfigError(
            f"output_dir {out} already holds sessions or other files; pass overwrite=true or "
            "another output_dir"
        )


class Interrupted(KeyboardInterrupt):
    """A signal ended the generation: nothing was written; Inspect's log in ``log_dir`` (status
    cancelled) keeps the slots that finished, their sessions in its score metadata."""

    def __init__(self, log_dir: str) -> None:
        super().__init__(log_dir)
        self.log_dir = log_dir


def generate_sessions(
    run: Generation, progress: Progress = lambda total: nullcontext()
) -> dict[str, Any]:
    """Generate, write and track; returns the manifest. The MLflow run is made (RUNNING) before
    the eval and ended KILLED by a signal, FAILED by an error (with the reason), FINISHED with
    the sessions. ``progress``: what shows the run (given the number of slots)."""
    from inspect_ai import eval as inspect_eval

    from generation.pipeline.llm import ROLES
    from generation.task import generate
    from physassist import calls

    refuse_existing(run.output_dir, run.overwrite)
    try:
        task = generate(**run.task)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc)) from exc
    bounds = run.inspect.bounds
    try:
        model = run.generator.build("generator", bounds)
        role_models = {r: s.build(f"roles.{r}", bounds) for r, s in run.roles.items()}
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing key or package
        raise ConfigError(f"generator/roles: cannot create a model: {provider_error(exc)}") from exc
    tracked = _Tracked.claim(run)
    with tracked.holding():
        slots = min(len(task.dataset), run.inspect.limit or len(task.dataset))
        with progress(slots):
            logs = inspect_eval(
                task,
                model=model,
                model_roles=role_models or None,
                log_dir=run.log_dir,
                **run.eval_options,
            )
        if (
            not logs or logs[0].status == "cancelled"
        ):  # a signal: Inspect kept what it had in log_dir
            from physassist import signals

            signals.taken()
            raise Interrupted(run.log_dir)
        log = logs[0]
        if down := calls.down():
            raise calls.EndpointDown(
                f"{down}; nothing written (Inspect log: {local_path(log.location)})"
            )
        if log.status != "success":
            raise GenerationFailed(
                f"generation eval {log.status}: {log.error.message if log.error else ''}; "
                f"see {local_path(log.location)}"
            )
        sessions, stats = collect(log)
        model_ids = {
            r: str(role_models[r]) if r in role_models else run.generator.name for r in ROLES
        }
        manifest = {
            "config": run.config,
            "seed": run.config["seed"],
            **stats,
            "models": model_ids,
            "store_fingerprint": (log.eval.metadata or {}).get("store_fingerprint"),
            "inspect_log": local_path(log.location),
        }
        out = run.output_dir
        manifest["files"] = [str(p) for p in write_output(sessions, manifest, out, run.overwrite)]
        manifest["tracking_error"] = tracked.log(run, manifest, out)
    return manifest


@dataclass
class _Tracked:
    """The generation's MLflow run, claimed before the eval (none: untracked or failed)."""

    tracker: Any = None
    run_id: str | None = None
    error: str | None = None  # tracking failed: the generation goes on, the command exits 3

    @classmethod
    def claim(cls, run: Generation) -> _Tracked:
        if not run.tracking.enabled:
            return cls()
        from physassist.staging import end_abandoned
        from physassist.tracking import claims, runs
        from physassist.tracking.mlflow_store import error_line

        try:
            tracker = runs.open_tracker(run.tracking, experiment="physassist-generate")
            end_abandoned(tracker)
            name = run.tracking.run_name or f"generate-{run.generator.name}"
            return cls(
                tracker, claims.claim(tracker, name, {runs.KIND_TAG: "generate"}, None, None).run_id
            )
        except Exception as exc:  # noqa: BLE001 - tracking must not stop the generation
            return cls(error=f"MLflow: cannot create the run: {error_line(exc)}")

    def holding(self) -> AbstractContextManager[Any]:
        """While the run is held: its heartbeat; KILLED on a signal, FAILED on an error."""
        if self.run_id is None:
            return nullcontext()
        from physassist.tracking import claims

        stack = ExitStack()
        stack.enter_context(
            claims.holding(
                lambda status, reason: claims.end_run(self.tracker, self.run_id, status, reason)
            )
        )
        stack.enter_context(claims.heartbeat(self.tracker, self.run_id))
        return stack

    def log(self, run: Generation, manifest: dict[str, Any], out: Path) -> str | None:
        """Log the params, metrics and files, and end the run FINISHED; the error, if any."""
        if self.tracker is None:
            return self.error
        from physassist.tracking import runs
        from physassist.tracking.tags import provenance_tags

        try:
            known = (manifest["fingerprint"], str(out)) if manifest.get("fingerprint") else None
            tags = provenance_tags(dataset=known, ehr=None, inspect_log=manifest["inspect_log"])
            tags[runs.KIND_TAG] = "generate"
            files = [(Path(f), "sessions") for f in manifest["files"]]
            if (
                run.tracking.log_eval
                and manifest["inspect_log"]
                and Path(manifest["inspect_log"]).is_file()
            ):
                files.append((Path(manifest["inspect_log"]), "inspect"))
            self.tracker.log_run(
                run_name=run.tracking.run_name or f"generate-{run.generator.name}",
                params=dict(run.params),
                tags=tags,
                metrics=metrics_of(manifest),
                files=files,
                run_id=self.run_id,
            )
        except Exception as exc:  # noqa: BLE001 - the sessions are written; tracking must not lose them
            from physassist.tracking.mlflow_store import error_line

            return f"MLflow logging failed: {error_line(exc)}"
        return None
