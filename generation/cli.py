"""``physassist-generate``: run the generation task, write the sessions, log to MLflow.

This command composes and checks its config into a ``physassist.experiment.Generation``
(``generation_of``) and prints; the run itself is ``generation/run.py``.
"""

from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from dataclasses import fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

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
from physassist.experiment import Generation, InspectSettings, ModelSpec


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
            node = {"name": spec} if isinstance(spec, str) else dict(spec)
            if (
                node.get("max_tokens") is None
            ):  # a role's output budget is the generator's unless its own
                node["max_tokens"] = gen.get("max_tokens")
            roles[role] = model_spec(node)
    return generator, roles


def generation_of(config: dict[str, Any]) -> Generation:
    """The composition checked and typed once (``ConfigError`` naming the key)."""
    from physassist.cli import console
    from physassist.tracking.params import flatten_config

    check_passed_on(config)
    generator, roles = role_specs(config)
    task = {
        "store": str(config["store"]),
        "scenarios": config.get("scenarios"),
        "tiers": config.get("tiers"),
        "sessions_per_slot": int(config["sessions_per_slot"]),
        "seed": int(config["seed"]),
        "attempts": int(config["attempts"]),
        "patient_limit": int(config["patient_limit"]),
        "cache_dir": config.get("cache_dir"),
    }
    ins = InspectSettings(
        **{f.name: (config.get("inspect") or {}).get(f.name) for f in fields(InspectSettings)}
    )
    if ins.epochs not in (None, 1):
        raise ConfigError(
            f"inspect.epochs={ins.epochs!r}: a slot is made once (sessions_per_slot makes more)"
        )
    passed = (
        "max_connections",
        "max_samples",
        "limit",
        "fail_on_error",
        "retry_on_error",
        "log_level",
        "log_realtime",
    )
    options: dict[str, Any] = {k: getattr(ins, k) for k in passed if getattr(ins, k) is not None}
    options["display"] = console.inspect_display(ins.display)
    options["seed"] = task["seed"] if ins.seed is None else ins.seed
    recorded = redaction.redact(config)  # what the run writes: no secret
    return Generation(
        task=MappingProxyType(task),
        generator=generator,
        roles=MappingProxyType(roles),
        inspect=ins,
        eval_options=MappingProxyType(options),
        log_dir=str(ins.log_dir or "logs/generate"),
        output_dir=Path(str(config["output_dir"])).expanduser(),
        overwrite=bool(config.get("overwrite")),
        tracking=tracking_settings(config.get("tracking")),
        params=MappingProxyType(flatten_config(recorded)),
        config=recorded,
    )


def run_generation(config: dict[str, Any]) -> dict[str, Any]:
    """Check the composition and the endpoints (``EndpointError``), generate, write and track;
    returns the manifest."""
    from generation.run import generate_sessions
    from physassist.cli.preflight import check_endpoints

    run = generation_of(config)
    check_endpoints(
        [("generator", run.generator), *((f"roles.{r}", s) for r, s in run.roles.items())]
    )

    def progress(total: int) -> AbstractContextManager[None]:
        # imported once the models exist: Inspect announces the hooks registered before its first
        # model
        from physassist.cli.progress import reporting

        return reporting(total, every_s=run.inspect.progress_s, tally=SlotTally)

    return generate_sessions(run, progress)


class SlotTally:
    """What ``physassist-generate``'s progress lines count: slots done, sessions made, rejections
    so far by gate or stage (``gates.rejections``: also of the slots still running)."""

    def __init__(self, total: int) -> None:
        from generation.pipeline import gates

        self.total, self.done, self.sessions, self.rejections = total, 0, 0, gates.rejections
        self.rejections.clear()

    def add(self, sample: Any) -> None:
        score = next(iter((sample.scores or {}).values()), None)
        self.done += 1
        self.sessions += score is not None and (score.metadata or {}).get("session") is not None

    def line(self, tail: str = "") -> None:
        rejected = ", ".join(f"{k} {n}" for k, n in sorted(self.rejections.items())) or "none"
        text = f"slots {self.done}/{self.total}  sessions {self.sessions}  rejected {rejected}"
        print(text + (f"  {tail}" if tail else ""), flush=True)


def summary(manifest: dict[str, Any]) -> str:
    lines = [
        f"sessions: {manifest['sessions']} of {manifest['slots']} slots "
        f"({manifest['slots_skipped']} skipped, of which {manifest['slots_errored']} errored; "
        f"{manifest['patients_tried']} patients tried)"
    ]
    for scenario, tiers in manifest["produced"].items():
        lines.append(f"  {scenario}: " + ", ".join(f"{t}={n}" for t, n in sorted(tiers.items())))
    lines.append("gate      checked  failed  rate")
    for g, row in manifest["gates"].items():
        rate = "-" if row["failure_rate"] is None else f"{100 * row['failure_rate']:.1f}%"
        lines.append(f"  {g:<11} {row['checked']:>5}  {row['failed']:>6}  {rate}")
    if manifest["stage_failures"]:
        lines.append(
            "stage failures: "
            + ", ".join(f"{k}={v}" for k, v in manifest["stage_failures"].items())
        )
    lines.append("written: " + ", ".join(manifest["files"]))
    return "\n".join(lines)


def _stop(line: str, code: int) -> NoReturn:
    """End the command with one line on stderr, masked (an error may quote a secret)."""
    print(f"physassist-generate: {redaction.scrub(line)}", file=sys.stderr)
    raise SystemExit(code)


@hydra.main(config_path=str(conf_dir()), config_name="generate", version_base="1.3")
def _hydra_main(cfg: DictConfig) -> None:
    from generation.run import GenerationFailed, Interrupted
    from physassist import signals
    from physassist.calls import EndpointDown
    from physassist.cli import console
    from physassist.cli.preflight import EndpointError
    from physassist.data import SessionFormatError
    from physassist.faults import EXIT_FAULTS

    console.setup()

    try:
        manifest = run_generation(resolve(cfg))
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM, SIGHUP: the run is KILLED
        signals.taken()
        kept = (
            f" (the Inspect log in {exc.log_dir} keeps the finished slots)"
            if isinstance(exc, Interrupted)
            else ""
        )
        _stop(f"{signals.reason()}; nothing written{kept}", signals.exit_code())
    except ConfigError as exc:
        signals.interrupt_instead(exc)
        _stop(f"error: {exc}", 2)
    except (
        EndpointError,
        EndpointDown,
    ) as exc:  # a system fault: before any run, or the run FAILED
        _stop(f"fault: {exc}", EXIT_FAULTS)
    except (SessionFormatError, GenerationFailed) as exc:
        _stop(f"error: {exc}", 1)
    print(summary(manifest))
    if manifest.get("tracking_error"):
        _stop(manifest["tracking_error"], 3)


def main() -> int:
    """Console entry point (``physassist-generate``); a composition error is one line, exit 2;
    a signal ends the run KILLED, exit 128 + its number (``physassist.signals``)."""
    from physassist.cli import console, entry

    console.start()
    return entry.run("physassist-generate", lambda: reported(_hydra_main, "physassist-generate"))


if __name__ == "__main__":
    sys.exit(main())
