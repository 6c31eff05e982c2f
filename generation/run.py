"""A ``physassist-generate`` run: the generation task evaluated, its sessions collected,
validated and written, the run logged to MLflow.

The task (``generation/task.py``) leaves each slot's session and statistics in the score
metadata; ``collect`` gathers them from the EvalLog, ``write_output`` validates the sessions
with the strict loader and writes ``<output_dir>/<scenario>.jsonl`` plus ``manifest.json`` only
when everything validated (files are moved in at the end, so no partial output). It takes the
checked ``physassist.experiment.Generation`` the command composed.
"""

from __future__ import annotations

import json
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

from physassist.experiment import ConfigError, Generation
from physassist.providers import provider_error
from physassist.staging import local_path


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
            errors.append(f"{sample.id}: {sample.error.message if sample.error else 'no result'}"[:500])
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
        "slots": slots, "sessions": len(sessions), "slots_skipped": skipped,
        "slots_errored": len(errors), "errors": errors,
        "patients_tried": patients,
        "produced": {s: dict(t) for s, t in produced.items()},
        "attempts_per_session": (sum(attempts) / len(attempts)) if attempts else None,
        "gates": {g: {"checked": checked[g], "failed": failed[g],
                      "failure_rate": failed[g] / checked[g] if checked[g] else None} for g in GATES},
        "stage_failures": dict(sorted(stages.items())),
        "rewrite_fallbacks": dict(sorted(fallbacks.items())),
        "tokens": {r: dict(v) for r, v in tokens.items()}, "models": models,
    }


def write_output(sessions: list[dict[str, Any]], manifest: dict[str, Any], out: Path,
                 overwrite: bool) -> list[Path]:
    """Validate the sessions (strict loader), then write them and the manifest as the folder
    ``out``, whole, in one rename (``physassist.data.folder``: ``overwrite`` replaces it)."""
    from physassist.data import folder, load_sessions

    if folder.holds_sessions(out) and not overwrite:
        raise ConfigError(f"output_dir {out} already holds sessions or other files; pass overwrite=true or another output_dir")
    by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for s in sessions:
        by_scenario[s["clinical_scenario"]].append(s)
    texts = {f"{scenario}.jsonl": "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
             for scenario, rows in by_scenario.items()}
    if texts:  # strict: raises SessionFormatError naming session/turn/field
        with tempfile.TemporaryDirectory(prefix="physassist-generate-") as staging:
            for name, text in texts.items():
                (Path(staging) / name).write_text(text, encoding="utf-8", newline="\n")
            manifest["fingerprint"] = load_sessions(staging).fingerprint
    try:
        return folder.write(out, texts, json.loads(json.dumps(manifest, default=str)), force=overwrite)
    except folder.FolderError as exc:  # another process made it meanwhile
        raise ConfigError(str(exc)) from exc


def metrics_of(stats: dict[str, Any]) -> dict[str, float]:
    m: dict[str, float] = {"sessions": stats["sessions"], "slots": stats["slots"],
                           "slots_skipped": stats["slots_skipped"],
                           "slots_errored": stats["slots_errored"],
                           "patients_tried": stats["patients_tried"]}
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
    m["tokens.total"] = sum(r.get("input", 0) + r.get("output", 0) for r in stats["tokens"].values())
    return m


def generate_sessions(run: Generation) -> dict[str, Any]:
    """Generate, write and track; returns the manifest."""
    from inspect_ai import eval as inspect_eval

    from generation.pipeline.llm import ROLES
    from generation.task import generate

    try:
        task = generate(**run.task)
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc)) from exc
    try:
        model = run.generator.build()
        role_models = {r: s.build() for r, s in run.roles.items()}
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing key or package
        raise ConfigError(f"generator/roles: cannot create a model: {provider_error(exc)}") from exc
    log = inspect_eval(task, model=model, model_roles=role_models or None, seed=run.task["seed"],
                       log_dir=run.log_dir, **run.eval_options)[0]
    if log.status != "success":
        raise GenerationFailed(f"generation eval {log.status}: {log.error.message if log.error else ''}; "
                           f"see {local_path(log.location)}")
    sessions, stats = collect(log)
    model_ids = {r: str(role_models[r]) if r in role_models else run.generator.name for r in ROLES}
    manifest = {"config": run.config, "seed": run.config["seed"], **stats, "models": model_ids,
                "store_fingerprint": (log.eval.metadata or {}).get("store_fingerprint"),
                "inspect_log": local_path(log.location)}
    out = run.output_dir
    manifest["files"] = [str(p) for p in write_output(sessions, manifest, out, run.overwrite)]
    manifest["tracking_error"] = _track(run, manifest, out)
    return manifest


def _track(run: Generation, manifest: dict[str, Any], out: Path) -> str | None:
    tracking = run.tracking
    if not tracking.enabled:
        return None
    from physassist.tracking import runs
    from physassist.tracking.tags import provenance_tags

    try:
        tracker = runs.open_tracker(tracking, experiment="physassist-generate")
        known = (manifest["fingerprint"], str(out)) if manifest.get("fingerprint") else None
        tags = provenance_tags(dataset=known, ehr=None, inspect_log=manifest["inspect_log"])
        tags[runs.KIND_TAG] = "generate"
        files = [(Path(f), "sessions") for f in manifest["files"]]
        if tracking.log_eval and manifest["inspect_log"] and Path(manifest["inspect_log"]).is_file():
            files.append((Path(manifest["inspect_log"]), "inspect"))
        tracker.log_run(run_name=tracking.run_name or f"generate-{run.generator.name}",
                        params=dict(run.params), tags=tags, metrics=metrics_of(manifest),
                        files=files)
    except Exception as exc:  # noqa: BLE001 - the sessions are written; tracking must not lose them
        return f"MLflow logging failed: {str(exc).splitlines()[0] if str(exc) else repr(exc)}"
    return None
