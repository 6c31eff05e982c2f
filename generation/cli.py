"""``physassist-generate``: run the generation task, write the sessions, log to MLflow.

This command composes and checks its config into a ``physassist.experiment.Generation``
(``generation_of``) and prints; the run itself is ``generation/run.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from types import MappingProxyType
from typing import Any

import hydra
from omegaconf import DictConfig

from physassist import redaction
from physassist.cli.config import (
    ConfigError,
    check_passed_on,
    conf_dir,
    model_spec,
    resolve,
    tracking_settings,
)
from physassist.cli.hydra_errors import reported
from physassist.experiment import Generation, ModelSpec


def role_specs(config: dict[str, Any]) -> tuple[ModelSpec, dict[str, ModelSpec]]:
    from generation.pipeline.llm import ROLES

    gen = config.get("generator") or {}
    if not gen.get("name"):
        raise ConfigError("generator.name is required (an Inspect model string)")
    generator = model_spec(gen)
    roles: dict[str, ModelSpec] = {}
    for role, spec in (config.get("roles") or {}).items():
        if role not in ROLES:
            raise ConfigError(f"roles.{role}: unknown role; valid: {', '.join(ROLES)}")
        if spec:
            roles[role] = model_spec({"name": spec} if isinstance(spec, str) else spec)
    return generator, roles


def generation_of(config: dict[str, Any]) -> Generation:
    """The composition checked and typed once (``ConfigError`` naming the key)."""
    from physassist.cli import console
    from physassist.tracking.params import flatten_config

    check_passed_on(config)
    generator, roles = role_specs(config)
    task = {"store": str(config["store"]), "scenarios": config.get("scenarios"), "tiers": config.get("tiers"),
            "sessions_per_slot": int(config["sessions_per_slot"]), "seed": int(config["seed"]),
            "attempts": int(config["attempts"]), "patient_limit": int(config["patient_limit"]),
            "cache_dir": config.get("cache_dir")}
    ins = config.get("inspect") or {}
    options = {k: ins[k] for k in ("max_connections", "max_samples", "log_level") if ins.get(k)}
    options["display"] = console.inspect_display(ins.get("display"))
    if ins.get("fail_on_error") is not None:
        options["fail_on_error"] = ins["fail_on_error"]
    recorded = redaction.redact(config)  # what the run writes: no secret
    return Generation(
        task=MappingProxyType(task), generator=generator, roles=MappingProxyType(roles),
        eval_options=MappingProxyType(options), log_dir=str(ins.get("log_dir") or "logs/generate"),
        output_dir=Path(str(config["output_dir"])).expanduser(), overwrite=bool(config.get("overwrite")),
        tracking=tracking_settings(config.get("tracking")), params=MappingProxyType(flatten_config(recorded)),
        config=recorded,
    )


def run_generation(config: dict[str, Any]) -> dict[str, Any]:
    """Check the composition, generate, write and track; returns the manifest."""
    from generation.run import generate_sessions

    return generate_sessions(generation_of(config))


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
    from generation.run import GenerationFailed
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


def main() -> int:
    """Console entry point (``physassist-generate``); a composition error is one line, exit 2."""
    from physassist.cli import console, entry

    console.start()
    return entry.run("physassist-generate", lambda: reported(_hydra_main, "physassist-generate"))


if __name__ == "__main__":
    sys.exit(main())
