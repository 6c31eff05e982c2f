"""``build_sessions``: sessions in the released format from any EHR store, without an LLM.

Per scenario x tier slot: pre-filter patients (SQL), then for each chosen patient pick an
eligible arc, plan topics, execute the gold calls through ``call_tool`` (strict semantics,
cutoff = the end of the anchor admission's discharge date, or with ``timepoint="in-stay"`` a
morning inside the stay: :mod:`.timepoint`), render answers and rubrics from the
observations, and encode. A topic whose call returns nothing is banned and the session is
replanned. All randomness comes from ``random.Random`` instances seeded from ``seed``.
"""

from __future__ import annotations

import datetime as dt
import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from physassist.data.folder import FolderError, holds_sessions
from physassist.data.folder import write as write_folder
from physassist.data.loader import fingerprint
from physassist.ehr.store import EHRStore, open_store
from physassist.ehr.tools import ToolContext, call_tool
from physassist.synth import load_phm
from physassist.vocab import LITERACY_LEVELS, SCENARIOS, TIERS, TIMEPOINTS
from solvers.patient.phm import PHMResponder

from . import facts as F
from .arcs import ARCS, eligible_arcs
from .encode import BuiltTurn, encode, session_id
from .gold import answer, digest, rubric
from .grounding import anchor_note_grounding
from .plan import choose_topics
from .prefilter import Candidate, qualify
from .profile import Profile, load_profile
from .questions import antecedents, builds_on, count_subtype, new_question
from .recheck import record_check
from .timepoint import in_stay_cutoff
from .topics import SCENARIO_FOCUS, Topic, calls, candidates, fits, required

MAX_REPLANS = 8
PATIENT_SHARE = 0.5  # share of sessions (with a PHM) that try to include a patient turn
ARCS_PER_PATIENT = 6


@dataclass
class BuildReport:
    """What a build did: qualifying patients and built sessions per scenario x tier."""

    qualifying: dict[str, dict[int, int]] = field(default_factory=dict)
    built: dict[str, dict[int, int]] = field(default_factory=dict)
    patients_used: dict[str, dict[int, int]] = field(default_factory=dict)
    failed_patients: int = 0
    rejects: dict[str, int] = field(default_factory=dict)  # sessions the record check rejected
    unfit: dict[str, int] = field(default_factory=dict)  # charts without what a scenario asks
    files: list[Path] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def n_sessions(self) -> int:
        return sum(sum(t.values()) for t in self.built.values())

    def __str__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        lines = ["scenario             tier  qualifying  built"]
        for s in self.qualifying:
            for t in sorted(self.qualifying[s]):
                lines.append(
                    f"{s:<20} L{t:<4} {self.qualifying[s][t]:>10}  "
                    f"{self.built.get(s, {}).get(t, 0):>5}"
                )
        lines.append(
            f"total sessions: {self.n_sessions} in {self.seconds:.1f} s"
            + (f" -> {self.files[0].parent}" if self.files else "")
        )
        rejected = ", ".join(f"{reason} {n}" for reason, n in sorted(self.rejects.items()))
        lines.append(
            f"rejected by the record check: {sum(self.rejects.values())}"
            + (f" ({rejected})" if rejected else "")
        )
        unfit = ", ".join(f"{scenario} {n}" for scenario, n in sorted(self.unfit.items()))
        lines.append(
            f"charts without a safety signal or a measured treatment response: "
            f"{sum(self.unfit.values())}" + (f" ({unfit})" if unfit else "")
        )
        return "\n".join(lines)


class _Rejected(Exception):
    """A built turn states a fact the record does not support (:mod:`.recheck`)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Replan(Exception):
    """A planned topic turned out empty on execution; it is banned and the plan redone."""

    def __init__(self, topic: Topic) -> None:
        super().__init__(topic.label())
        self.topic = topic


@dataclass
class _Env:
    store: EHRStore
    seed: int
    cohort: Path | None  # the synthetic cohort folder when the source has PHMs (``phm/``)
    timepoint: str = "discharge"  # physassist.vocab.TIMEPOINTS
    rejects: dict[str, int] = field(default_factory=dict)
    subtype_use: dict[str, int] = field(default_factory=dict)
    global_index: int = 0
    profiles: dict[tuple[int, int, str, dt.datetime | None], Profile] = field(default_factory=dict)
    asked: set[str] = field(default_factory=set)  # every question the build asked (English)
    used: dict[str, set[int]] = field(default_factory=dict)  # scenario -> admissions used
    unfit: dict[str, int] = field(default_factory=dict)  # scenario -> charts that lack it

    def profile(self, cand: Candidate, until: dt.datetime | None = None) -> Profile:
        """The candidate's profile at its discharge date, or at the in-stay instant ``until``,
        read once per build (each arc tried reuses it)."""
        day = until.date().isoformat() if until is not None else cand.current_date
        key = (cand.subject_id, cand.hadm_id, day, until)
        if key not in self.profiles:
            self.profiles[key] = load_profile(self.store.cursor(), *key)
        return self.profiles[key]


def session_persona(phm: dict[str, Any] | None, rng: random.Random) -> dict[str, Any]:
    """The session persona: the cohort's PHM persona when there is one, else a seeded draw."""
    if phm and isinstance(phm.get("persona"), dict):
        p = phm["persona"]
        keys = ("health_literacy", "adherence", "anxiety_level", "info_completeness")
        if all(k in p for k in keys):
            return {k: p[k] for k in keys}
    return {
        "health_literacy": rng.choice(list(LITERACY_LEVELS)),
        "adherence": rng.choice(["good", "uncertain", "poor"]),
        "anxiety_level": rng.choice(["low", "medium", "high"]),
        "info_completeness": rng.choice(["full", "partial", "critical_withheld"]),
    }


def _execute(
    topic: Topic, prof: Profile, ctx: ToolContext, zh_patient: Any
) -> tuple[list[tuple[str, dict]], list[Any], list[Any]]:
    """Run a topic's gold calls; returns the calls and the EN and ZH observations (they
    differ only for patient tools, whose replies are in the session language)."""
    planned = calls(topic, prof, ctx.session_id or "")
    observations, observations_zh = [], []
    for name, args in planned:
        obs = call_tool(ctx, name, args)
        if F.is_empty(obs):
            raise _Replan(topic)
        observations.append(obs)
        if name.startswith("patient.") and zh_patient is not None:
            obs_zh = zh_patient.respond(name, dict(args))
            if F.is_empty(obs_zh):
                raise _Replan(topic)
            observations_zh.append(obs_zh)
        else:
            observations_zh.append(obs)
    return planned, observations, observations_zh


def _responders(phm: dict[str, Any] | None, literacy: str) -> tuple[Any, Any]:
    """EN and ZH patient responders for a PHM (None, None without a PHM or responder)."""
    if not phm:
        return None, None
    return PHMResponder(phm, literacy, "en"), PHMResponder(phm, literacy, "zh")


def patient_annotations(
    turn: int, planned: list[tuple[str, dict]], observations: list[Any]
) -> list[dict[str, Any]]:
    """`patient_agent_annotations` entries for the patient-tool calls of one turn."""
    out = []
    for (name, args), obs in zip(planned, observations, strict=True):
        if not name.startswith("patient."):
            continue
        extra = {
            k: v
            for k, v in obs.items()
            if k not in ("patient_response", "patient_responses_all_literacy")
        }
        out.append(
            {
                "turn": turn,
                "query_type": name.split(".", 1)[1],
                "query": args.get("query"),
                "drug": args.get("drug"),
                "patient_response": obs.get("patient_response"),
                "annotation": extra,
            }
        )
    return out


def answer_list_items(
    planned: list[tuple[str, dict]], observations: list[Any], final: str
) -> list[dict]:
    """One turn's `answer_list`: the executed calls, then `prepare_to_answer` carrying the answer."""
    items = [
        {"action": {"name": n, "arguments": a}, "observation": o, "dependency_list": [], "idx": i}
        for i, ((n, a), o) in enumerate(zip(planned, observations, strict=True))
    ]
    items.append(
        {
            "action": {
                "name": "prepare_to_answer",
                "arguments": {"answer_type": "tool" if items else "chat"},
            },
            "observation": final,
            "dependency_list": list(range(len(items))),
            "idx": len(items),
        }
    )
    return items


def _situation(scenario: str, prof: Profile, until: dt.datetime | None) -> str:
    sex = "woman" if prof.gender.upper().startswith("F") else "man"
    stay = prof.timeline.stay if prof.timeline is not None else None
    when = (
        f"discharged {prof.current_date}"
        if until is None or stay is None
        else f"on hospital day {(until.date() - stay.admitted.date()).days + 1} "
        f"({until:%Y-%m-%d %H:%M})"
    )
    return (
        f"{prof.age}-year-old {sex}, admission {prof.hadm_id} {when}; "
        f"{scenario.replace('_', ' ')} session over {len(prof.labs)} lab types, "
        f"{len(prof.drugs)} drugs, {prof.n_dx} coded diagnoses."
    )


def _try_session(
    env: _Env,
    scenario: str,
    tier: int,
    cand: Candidate,
    arc_index: int,
    rng: random.Random,
    index: int,
) -> dict[str, Any] | None:
    con = env.store.cursor()
    until = None
    if env.timepoint == "in-stay":
        until = in_stay_cutoff(con, cand.subject_id, cand.hadm_id, rng)
        if until is None:
            return None
    prof = env.profile(cand, until)
    if until is not None and not fits(scenario, prof):
        return None  # the chart supports the scenario at discharge, not at this instant
    phm = load_phm(env.cohort, cand.subject_id) if env.cohort is not None else None
    persona = session_persona(phm, rng)
    literacy = str(persona["health_literacy"])
    prof.phm = phm if _responders(phm, literacy)[0] is not None else None
    prefer_patient = prof.phm is not None and rng.random() < PATIENT_SHARE
    arc = ARCS[arc_index]
    pools = [candidates(scenario, arc[t], prof) for t in range(4)]
    musts = required(scenario, prof)
    banned: set[Topic] = set()
    sid = session_id(scenario, index)
    for _ in range(MAX_REPLANS):
        topics = choose_topics(
            arc_index,
            [[p for p in pool if p not in banned] for pool in pools],
            rng,
            prefer_patient=prefer_patient,
            focus=SCENARIO_FOCUS[scenario],
            require=frozenset(t for t in musts if t not in banned) if musts else None,
        )
        if topics is None:
            return None
        responder_en, responder_zh = _responders(prof.phm, literacy)  # fresh state per attempt
        ctx = ToolContext(
            store=env.store,
            subject_id=prof.subject_id,
            hadm_id=prof.hadm_id,
            current_date=prof.current_date,
            cutoff=until,
            semantics="strict",
            session_id=sid,
            patient=responder_en,
        )
        used_before = dict(env.subtype_use)
        try:
            turns = _build_turns(env, topics, prof, ctx, rng, responder_zh)
        except _Replan as bad:
            banned.add(bad.topic)
            env.subtype_use.clear()
            env.subtype_use.update(used_before)
            continue
        except _Rejected as bad:
            env.rejects[bad.reason] = env.rejects.get(bad.reason, 0) + 1
            env.subtype_use.clear()
            env.subtype_use.update(used_before)
            return None
        env.global_index += 1
        session = encode(
            scenario=scenario,
            tier=tier,
            index=index,
            prof=prof,
            arc_index=arc_index,
            turns=turns,
            persona=persona,
            patient_model=phm,
            situation=_situation(scenario, prof, until),
            seed=env.seed,
            global_index=env.global_index,
            cutoff=until,
        )
        if scenario == "discharge_planning":
            session["note_grounding"] = anchor_note_grounding(con, prof.subject_id, prof.hadm_id)
        return session
    return None


def _build_turns(
    env: _Env,
    topics: list[Topic],
    prof: Profile,
    ctx: ToolContext,
    rng: random.Random,
    zh_patient: Any,
) -> list[BuiltTurn]:
    turns: list[BuiltTurn] = []
    held: set[str] = set()  # drugs an earlier turn advised holding: never renewed later
    asked: set[str] = set()  # this session's questions (the build's are in env.asked)
    for t, topic in enumerate(topics):
        if topic.kind == "continue_med" and topic.drug in held:
            raise _Replan(topic)
        planned, observations, observations_zh = _execute(topic, prof, ctx, zh_patient)
        d = digest(topic, observations, prof, [a for _, a in planned])
        if d is None:
            raise _Replan(topic)
        if prof.timeline is not None and (reason := record_check(d, prof.timeline)):
            raise _Rejected(reason)
        if d.verdict == "hold" and topic.drug:
            held.add(topic.drug)
        previous = topics[t - 1] if t else None
        referents = antecedents(previous)
        question = new_question(
            topic,
            t,
            referents,
            builds_on(previous, topic),
            prof.gender,
            env.subtype_use,
            rng,
            env.asked | asked,
            prof.at_discharge,
        )
        if question is None:
            raise _Replan(topic)
        asked.add(question.implicit_en)
        if question.subtype:
            count_subtype(env.subtype_use, question.subtype, t)
        en, zh = answer(d, "en"), answer(d, "zh")
        items = rubric(d)
        turns.append(
            BuiltTurn(
                task_type=topic.task_type,
                source=topic.source,
                topic=topic.label(),
                entities=list(topic.entities),
                question=question,
                actions_en=answer_list_items(planned, observations, en),
                actions_zh=answer_list_items(planned, observations_zh, zh),
                answer_en=en,
                answer_zh=zh,
                items=items,
                tool_hint=", ".join(n for n, _ in planned),
                annotations=patient_annotations(t, planned, observations),
            )
        )
    return turns


def build_sessions(
    store_source: str | Path | EHRStore,
    out_dir: str | Path,
    *,
    sessions_per_slot: int = 3,
    seed: int = 0,
    scenarios: Sequence[str] | None = None,
    tiers: Sequence[int] | None = None,
    cache_dir: str | Path | None = None,
    timepoint: str = "discharge",
    force: bool = False,
    store_record: Mapping[str, Any] | None = None,
) -> BuildReport:
    """Build sessions from a store into the folder ``out_dir`` (``<scenario>.jsonl`` and
    ``manifest.json``; see the module docstring).

    ``store_source`` is anything ``open_store`` accepts, or an open :class:`EHRStore`.
    Patient-interview turns are built only when the source has a ``phm/`` folder (a synthetic
    cohort); ``cache_dir`` is passed to ``open_store``. ``timepoint`` (``physassist.vocab.
    TIMEPOINTS``): ``discharge`` (the end of the discharge date) or ``in-stay``
    (:mod:`.timepoint`). The folder is written whole, in one rename
    (``physassist.data.folder``); one that holds anything is refused (``FolderError``) unless
    ``force``, before anything is built. ``store_record``: how the manifest names the store
    (default: its source and the EHR store's fingerprint).
    """
    out = Path(out_dir)
    if holds_sessions(out) and not force:
        raise FolderError(
            f"{out} already exists and holds files; pass --force to replace it, or choose another "
            "folder"
        )
    started = time.perf_counter()
    scen = tuple(scenarios) if scenarios else SCENARIOS
    tier_list = tuple(tiers) if tiers else TIERS
    if sessions_per_slot < 1:
        raise ValueError(f"sessions_per_slot must be >= 1, got {sessions_per_slot}")
    if timepoint not in TIMEPOINTS:
        raise ValueError(f"timepoint must be one of {', '.join(TIMEPOINTS)}, got {timepoint!r}")
    store = (
        store_source
        if isinstance(store_source, EHRStore)
        else open_store(store_source, cache_dir=cache_dir)
    )
    qualified = qualify(store.cursor(), scen, tier_list)
    source = Path(store.source)
    env = _Env(
        store=store,
        seed=seed,
        cohort=source if (source / "phm").is_dir() else None,
        timepoint=timepoint,
    )
    report = BuildReport()
    files: dict[str, list[dict[str, Any]]] = {}
    for scenario in scen:
        entries: list[dict[str, Any]] = []
        report.qualifying[scenario], report.built[scenario] = {}, {}
        report.patients_used[scenario] = {}
        # The slot with the fewest qualified charts picks first: an admission serves a
        # scenario once, and the higher tiers' charts qualify for the lower tiers too.
        for tier in sorted(tier_list, key=lambda t: (len(qualified[(scenario, t)]), -t)):
            pool = qualified[(scenario, tier)]
            report.qualifying[scenario][tier] = len(pool)
            built, used = _fill_slot(env, scenario, tier, pool, sessions_per_slot, entries, report)
            report.built[scenario][tier] = built
            report.patients_used[scenario][tier] = used
        report.qualifying[scenario] = dict(sorted(report.qualifying[scenario].items()))
        report.built[scenario] = dict(sorted(report.built[scenario].items()))
        files[scenario] = sorted(entries, key=lambda e: e["difficulty_level"])
    # Written only once every slot is built, as one new folder: a failed or killed build leaves
    # the folder as it was.
    texts = {
        f"{s}.jsonl": "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries)
        for s, entries in files.items()
    }
    manifest = {
        "code": f"physassist {_version()}",
        "store": dict(store_record)
        if store_record is not None
        else {"source": str(store.source), "fingerprint": store.fingerprint},
        "seed": seed,
        "per_slot": sessions_per_slot,
        "scenarios": list(scen),
        "tiers": list(tier_list),
        "timepoint": timepoint,
        "sessions": sum(len(e) for e in files.values()),
        "fingerprint": fingerprint([e for entries in files.values() for e in entries]),
    }
    written = write_folder(out, texts, manifest, force=force)
    report.files = [p for p in written if p.suffix == ".jsonl"]
    report.rejects = dict(sorted(env.rejects.items()))
    report.unfit = dict(sorted(env.unfit.items()))
    report.seconds = time.perf_counter() - started
    return report


def viable_arcs(arcs: list[int], scenario: str, prof: Profile) -> list[int]:
    """The arcs whose every turn has a candidate topic of its task type, and (when the scenario
    requires one of its chart's topics) a turn of that topic's type."""
    types = {tt for arc in arcs for tt in ARCS[arc]}
    offered = {tt for tt in types if candidates(scenario, tt, prof)}
    needed = {t.task_type for t in required(scenario, prof)}
    return [
        a for a in arcs if set(ARCS[a]) <= offered and (not needed or needed & set(ARCS[a][1:]))
    ]


def _version() -> str:
    from importlib import metadata

    try:
        return metadata.version("physassist")
    except metadata.PackageNotFoundError:
        return "unknown"


def _fill_slot(
    env: _Env,
    scenario: str,
    tier: int,
    pool: list[Candidate],
    wanted: int,
    entries: list[dict[str, Any]],
    report: BuildReport,
) -> tuple[int, int]:
    """Build up to ``wanted`` sessions for one slot from charts that fit the scenario
    (:func:`.topics.fits`); an admission serves a scenario once per build, so a slot with too
    few qualified charts left builds fewer sessions."""
    rng = random.Random(f"{env.seed}:{scenario}:L{tier}")
    order = list(pool)
    rng.shuffle(order)
    arcs = eligible_arcs(tier)
    used = env.used.setdefault(scenario, set())
    built = 0
    for cand in order:
        if built >= wanted:
            break
        if cand.hadm_id in used:
            continue
        if not fits(scenario, env.profile(cand)):
            env.unfit[scenario] = env.unfit.get(scenario, 0) + 1
            used.add(cand.hadm_id)  # never fits this scenario: not tried again
            continue
        options = viable_arcs(arcs, scenario, env.profile(cand))
        rng.shuffle(options)
        entry = None
        for arc_index in options[:ARCS_PER_PATIENT]:
            entry = _try_session(env, scenario, tier, cand, arc_index, rng, len(entries))
            if entry is not None:
                break
        if entry is None:
            report.failed_patients += 1
            continue
        entries.append(entry)
        used.add(cand.hadm_id)
        env.asked.update(entry["tasks_en"])
        built += 1
    return built, built
