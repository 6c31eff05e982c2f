"""PhysAssistBench as an Inspect task: one sample per four-turn session.

Run with ``inspect eval physassist/physassistbench`` (registered through the package's
``inspect_ai`` entry point) or ``inspect eval tasks/physassistbench.py``; task parameters
(``-T name=value``) cover every ablation of docs/design.md#experiments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from functools import lru_cache
from pathlib import Path
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig

from physassist import options as opt
from physassist.data import Session
from physassist.data.loader import SAMPLE_SESSIONS
from physassist.data.models import session_json
from physassist.listarg import as_list
from physassist.options import DEFAULTS as D
from physassist.vocab import PATIENT_TOOLS, WRITE_TOOLS
from scorers import physassist_grounding, physassist_scorer
from solvers.context import cached_store
from solvers.prompting import opening_message
from solvers.session_loop import LoopSettings, physassist_session


def _tool_source(names: list[str]) -> str:
    if any(n in WRITE_TOOLS for n in names):
        return "write"
    patient = any(n in PATIENT_TOOLS for n in names)
    ehr = any(n not in PATIENT_TOOLS for n in names)
    return "mixed" if patient and ehr else "patient" if patient else "ehr"


def _source_stamp(dataset: str) -> tuple[tuple[str, int, int], ...]:
    """(file, mtime, size) of a local dataset's files, so a changed file is reloaded."""
    path = SAMPLE_SESSIONS if dataset == "sample" else Path(dataset).expanduser()
    files = sorted(path.rglob("*")) if path.is_dir() else [path] if path.is_file() else []
    return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files if f.is_file())


@lru_cache(maxsize=16)
def _load(
    dataset: str, language: str, scenarios: tuple[str, ...] | None, stamp: tuple[Any, ...]
) -> tuple[tuple[Session, dict[str, Any], str], ...]:
    """Sessions, their released dicts and JSON, loaded once per process and dataset version,
    and validated once per content (``physassist.data.verified``, beside the EHR stores):
    validation and the lossless dump cost ~0.4 s of CPU on the sample, tasks are built often."""
    from physassist.data.verified import verified_sessions
    from physassist.ehr.store import default_cache_dir

    cache = default_cache_dir() / "sessions"
    return tuple(
        verified_sessions(dataset, language=language, scenarios=scenarios, cache_dir=cache)
    )


def session_sample(
    session: Session,
    language: str,
    query: str,
    settings: dict[str, Any],
    data: dict[str, Any] | None = None,
    data_json: str | None = None,
) -> Sample:
    """The Sample of one session (ARCHITECTURE.md §6); ``data`` is ``session.to_dict()``
    and ``data_json`` its JSON (``physassist.data.models.session_json``)."""
    data = data if data is not None else session.to_dict()
    n = session.n_tasks
    tool_sources = list(session.tool_sources or [])
    if len(tool_sources) != n:
        tool_sources = [_tool_source(session.gold_tool_names(t)) for t in range(n)]
    return Sample(
        id=session.id,
        input=opening_message(data, language),
        target=[
            f"T{t}: {session.gold_answer(t, language)}" for t in range(n)
        ],  # Inspect View's TARGET
        metadata={
            # One JSON string, not the dict: Inspect copies, dumps and walks every sample's
            # metadata node by node several times per sample (set-up copy, init event, log
            # condensing); as a dict the session is ~3,000 nodes per copy, as a string one,
            # which cut the eval's CPU per turn by about a quarter.
            "session": data_json if data_json is not None else session_json(data),
            "language": language,
            "query": query,
            "scenario": session.scenario,
            "tier": session.tier,
            "task_types": list(session.task_types),
            "subtypes": list(session.turn_subtypes or [None] * n),
            "tool_sources": tool_sources,
            "settings": settings,
        },
    )


def build_dataset(
    dataset: str,
    *,
    language: str,
    query: str,
    settings: dict[str, Any],
    scenarios: list[str] | None = None,
    tiers: list[int] | None = None,
) -> MemoryDataset:
    """Samples for the sessions of ``dataset`` ("sample", a JSONL/Parquet file or directory,
    or ``hf:<id>``), filtered by scenario and tier."""
    loaded = _load(
        dataset, language, tuple(scenarios) if scenarios else None, _source_stamp(dataset)
    )
    sessions = [(s, d, j) for s, d, j in loaded if tiers is None or s.tier in tiers]
    if not sessions:
        raise ValueError(
            f"dataset={dataset!r} has no sessions for scenarios={scenarios} tiers={tiers} "
            f"language={language!r}"
        )
    return MemoryDataset(
        [session_sample(s, language, query, settings, d, j) for s, d, j in sessions],
        name=f"physassistbench-{dataset}" if dataset == "sample" else str(dataset),
    )


@task
def physassistbench(
    dataset: str = D["dataset"],
    ehr_source: str = D["ehr_source"],
    language: opt.Language = D["language"],
    query: opt.Query = D["query"],
    menu: opt.Menu = D["menu"],
    observations: opt.Observations = D["observations"],
    terminal: opt.Terminal = D["terminal"],
    tool_budget: int = D["tool_budget"],
    nudge: bool = D["nudge"],
    patient: opt.PatientMode = D["patient"],
    literacy: opt.Literacy = D["literacy"],
    patient_miss: opt.PatientMiss = D["patient_miss"],
    patient_seed: int | None = D["patient_seed"],
    semantics: opt.Semantics = D["semantics"],
    render: opt.Render = D["render"],
    judge: opt.Judge = D["judge"],
    judge_context: opt.JudgeContext = D["judge_context"],
    judge_repeats: int = D["judge_repeats"],
    grounding: opt.GroundingMode = D["grounding"],
    history: opt.History = D["history"],
    taus: Sequence[float] | str = tuple(D["taus"]),
    scenarios: Sequence[str] | str | None = D["scenarios"],
    tiers: Sequence[int] | str | None = D["tiers"],
    temperature: float = D["temperature"],
) -> Task:
    """PhysAssistBench: an LLM assists a physician over FHIR EHR tools, four turns per session.

    Every parameter is an option of ``physassist.options.OPTIONS`` (values, default and meaning
    there; ``python -m physassist.options`` prints the table); list parameters also accept a
    comma-separated string (``-T tiers=1,3``).
    """
    args = dict(locals())  # the parameters as given: nothing else is bound yet
    args.update(
        dataset=str(dataset),
        ehr_source=str(ehr_source),
        taus=as_list(taus, "taus", float) or list(D["taus"]),
        scenarios=as_list(scenarios, "scenarios"),
        tiers=as_list(tiers, "tiers", int),
    )
    loop = {f.name for f in fields(LoopSettings)}
    settings = LoopSettings(**{name: args[name] for name in loop})  # checks (and spells) each
    # the other options, each checked (and spelled: -T grounding=off arrives as False, YAML 1.1)
    options = {
        **settings.as_dict(),
        **{name: opt.check(name, value) for name, value in args.items() if name not in loop},
    }
    samples = build_dataset(
        options["dataset"],
        language=settings.language,
        query=settings.query,
        settings=options,
        scenarios=options["scenarios"],
        tiers=options["tiers"],
    )
    # opened (built, or rebuilt if damaged) here, once per process: a store that cannot be
    # used stops the task before any sample instead of failing every one of them
    cached_store(settings.ehr_source)
    return Task(
        dataset=samples,
        solver=physassist_session(**settings.as_dict()),
        scorer=[
            physassist_scorer(
                judge=options["judge"],
                context=options["judge_context"],
                taus=tuple(options["taus"]),
                repeats=options["judge_repeats"],
            ),
            *([physassist_grounding()] if options["grounding"] == "on" else []),
        ],
        config=GenerateConfig(temperature=float(options["temperature"])),
        metadata={"physassist": options},
    )
