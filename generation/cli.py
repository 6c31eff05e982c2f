"""``physassist-generate``: run the generation task, write the sessions, log to MLflow.

The task (``generation/task.py``) leaves each slot's session and statistics in the score
metadata; this command collects them from the EvalLog, validates the sessions with the
strict loader, and writes ``<output_dir>/<scenario>.jsonl`` plus ``manifest.json`` only
when everything validated (files are moved in at the end, so no partial output).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from physassist.cli.config import ConfigError, check_passed_on, conf_dir, resolve
from physassist.cli.hydra_errors import reported
from physassist.experiment import ModelSpec, TrackingSettings
from physassist.providers import provider_error
from physassist.staging import local_path, open_tracker


class GenerationFailed(RuntimeError):
    """The generation eval itself failed (its log says why); nothing was written."""


def role_specs(config: dict[str, Any]) -> tuple[ModelSpec, dict[str, ModelSpec]]:
    from generation.pipeline.llm import ROLES

    gen = config.get("generator") or {}
    if not gen.get("name"):
        raise ConfigError("generator.name is required (an Inspect model string)")
    generator = ModelSpec.of(gen)
    roles: dict[str, ModelSpec] = {}
    for role, spec in (config.get("roles") or {}).items():
        if role not in ROLES:
            raise ConfigError(f"roles.{role}: unknown role; valid: {', '.join(ROLES)}")
        if spec:
            roles[role] = ModelSpec.of({"name": spec} if isinstance(spec, str) else spec)
    return generator, roles


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
    """Validate (strict loader) in a staging dir, then move the files into ``out``."""
    from physassist.data import load_sessions

    if out.is_dir() and any(out.glob("*.jsonl")) and not overwrite:
        raise ConfigError(f"output_dir {out} already holds sessions; pass overwrite=true or another output_dir")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".generate-", dir=out))
    try:
        by_scenario: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for s in sessions:
            by_scenario[s["clinical_scenario"]].append(s)
        for scenario, rows in by_scenario.items():
            with (staging / f"{scenario}.jsonl").open("w", encoding="utf-8", newline="\n") as fh:
                fh.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        if by_scenario:  # strict: raises SessionFormatError naming session/turn/field
            manifest["fingerprint"] = load_sessions(staging).fingerprint
        (staging / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n",
                                               encoding="utf-8")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        if created:
            shutil.rmtree(out, ignore_errors=True)  # nothing of a failed run is left behind
        raise
    written = []
    for f in sorted(staging.iterdir()):
        f.replace(out / f.name)
        written.append(out / f.name)
    shutil.rmtree(staging, ignore_errors=True)
    return written


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


def run_generation(config: dict[str, Any]) -> dict[str, Any]:
    """Generate, write and track; returns the manifest."""
    from inspect_ai import eval as inspect_eval

    from generation.pipeline.llm import ROLES
    from generation.task import generate
    from physassist.cli import console

    check_passed_on(config)
    generator, roles = role_specs(config)
    try:
        task = generate(store=str(config["store"]), scenarios=config.get("scenarios"),
                        tiers=config.get("tiers"), sessions_per_slot=int(config["sessions_per_slot"]),
                        seed=int(config["seed"]), attempts=int(config["attempts"]),
                        patient_limit=int(config["patient_limit"]), cache_dir=config.get("cache_dir"))
    except (ValueError, FileNotFoundError) as exc:
        raise ConfigError(str(exc)) from exc
    try:
        model = generator.build()
        role_models = {r: s.build() for r, s in roles.items()}
    except Exception as exc:  # noqa: BLE001 - unknown provider, missing key or package
        raise ConfigError(f"generator/roles: cannot create a model: {provider_error(exc)}") from exc
    ins = config.get("inspect") or {}
    options = {k: ins[k] for k in ("max_connections", "max_samples", "log_level") if ins.get(k)}
    options["display"] = console.inspect_display(ins.get("display"))
    if ins.get("fail_on_error") is not None:
        options["fail_on_error"] = ins["fail_on_error"]
    log = inspect_eval(task, model=model, model_roles=role_models or None, seed=int(config["seed"]),
                       log_dir=str(ins.get("log_dir") or "logs/generate"), **options)[0]
    if log.status != "success":
        raise GenerationFailed(f"generation eval {log.status}: {log.error.message if log.error else ''}; "
                           f"see {local_path(log.location)}")
    sessions, stats = collect(log)
    model_ids = {r: str(role_models[r]) if r in role_models else generator.name for r in ROLES}
    manifest = {"config": config, "seed": config["seed"], **stats, "models": model_ids,
                "store_fingerprint": (log.eval.metadata or {}).get("store_fingerprint"),
                "inspect_log": local_path(log.location)}
    out = Path(str(config["output_dir"])).expanduser()
    manifest["files"] = [str(p) for p in write_output(sessions, manifest, out, bool(config.get("overwrite")))]
    manifest["tracking_error"] = _track(config, manifest, out)
    return manifest


def _track(config: dict[str, Any], manifest: dict[str, Any], out: Path) -> str | None:
    tracking = TrackingSettings.of(config.get("tracking"))
    if not tracking.enabled:
        return None
    from physassist.tracking import runs
    from physassist.tracking.params import flatten_config
    from physassist.tracking.tags import provenance_tags

    try:
        tracker = open_tracker(tracking, experiment="physassist-generate")
        known = (manifest["fingerprint"], str(out)) if manifest.get("fingerprint") else None
        tags = provenance_tags(dataset=known, ehr=None, inspect_log=manifest["inspect_log"])
        tags[runs.KIND_TAG] = "generate"
        files = [(Path(f), "sessions") for f in manifest["files"]]
        if tracking.log_eval and manifest["inspect_log"] and Path(manifest["inspect_log"]).is_file():
            files.append((Path(manifest["inspect_log"]), "inspect"))
        tracker.log_run(run_name=tracking.run_name or f"generate-{config['generator']['name']}",
                        params=flatten_config(config), tags=tags, metrics=metrics_of(manifest),
                        files=files)
    except Exception as exc:  # noqa: BLE001 - the sessions are written; tracking must not lose them
        return f"MLflow logging failed: {str(exc).splitlines()[0] if str(exc) else repr(exc)}"
    return None


def summary(manifest: dict[str, Any]) -> str:
    lines = [f"sessions: {manifest['sessions']} of {manifest['slots']} slots "
             f"({manifest['slots_skipped']} skipped, of which {manifest['slots_errored']} errored; "
             f"{manifest['patients_tried']} patients tried)"]
    for scenario, tiers in manifest["produced"].items():
        lines.append(f"  {scenario}: " + ", ".join(f"{t}={n}" for t, n in sorted(tiers.items())))
    lines.append("gate      checked  failed  rate")
    for g, row in manifest["gates"].items():
        rate = "-" if row["failure_rate"] is None else f"{100 * row['failure_rate']:.1f}%"
        lines.append(f"  {g:<11} {row['checked']:>5}  {row['failed']:>6}  {rate}")
    if manifest["stage_failures"]:
        lines.append("stage failures: " + ", ".join(f"{k}={v}" for k, v in manifest["stage_failures"].items()))
    lines.append("written: " + ", ".join(manifest["files"]))
    return "\n".join(lines)


@hydra.main(config_path=str(conf_dir()), config_name="generate", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    from physassist.cli import console
    from physassist.data import SessionFormatError

    console.setup()

    try:
        manifest = run_generation(resolve(cfg))
    except ConfigError as exc:
        print(f"physassist-generate: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except (SessionFormatError, GenerationFailed) as exc:
        print(f"physassist-generate: error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    print(summary(manifest))
    if manifest.get("tracking_error"):
        print(f"physassist-generate: {manifest['tracking_error']}", file=sys.stderr)
        raise SystemExit(3)


def main() -> None:
    """Console entry point (``physassist-generate``); a composition error is one line, exit 2."""
    from physassist.cli import console

    console.start()
    reported(_hydra_main, "physassist-generate")


if __name__ == "__main__":
    main()
