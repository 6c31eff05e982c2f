"""What tracking reads of an Inspect log, as plain data the tracking agent can take.

The traces, the run's inputs and its sessions read a few fields of each sample (its id, epoch,
metadata, turn records, the scorer's metadata, its start) and of the eval's spec (its start, the
grader model). Pickling an ``EvalSample`` whole took ~6 ms a sample and importing Inspect in the
agent; these views are ~0.3 ms a sample and need neither. They answer to the same attribute
names, so the readers (``traces``, ``inputs``) take a view or an Inspect object alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from physassist.results import GROUNDING_SCORER, SCORER_NAME
from physassist.turn_records import TURNS_KEY

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample, EvalSpec


class ScoreLike(Protocol):
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...


class SampleLike(Protocol):
    """What the readers read of a sample: an Inspect ``EvalSample`` or a ``SampleView``
    (``started_at`` too, where it has one)."""

    @property
    def id(self) -> int | str: ...
    @property
    def epoch(self) -> int: ...
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...
    @property
    def store(self) -> Mapping[str, Any]: ...
    @property
    def scores(self) -> Mapping[str, ScoreLike] | None: ...


class SpecLike(Protocol):
    """What the readers read of an eval's spec: an Inspect ``EvalSpec`` or a ``SpecView``
    (``model_roles`` too, where it has them)."""

    @property
    def created(self) -> str: ...


class LogLike(Protocol):
    """What the readers read of a log: an Inspect ``EvalLog`` or a ``LogView``."""

    @property
    def eval(self) -> SpecLike: ...
    @property
    def samples(self) -> Sequence[SampleLike] | None: ...


@dataclass(frozen=True)
class ScoreView:
    metadata: dict[str, Any] | None


@dataclass(frozen=True)
class SampleView:
    id: Any
    epoch: int
    metadata: dict[str, Any] | None
    store: dict[str, Any]  # TURNS_KEY only: the loop's turn records
    scores: dict[str, ScoreView]  # SCORER_NAME and GROUNDING_SCORER only
    started_at: Any = None


@dataclass(frozen=True)
class RoleView:
    model: str | None


@dataclass(frozen=True)
class SpecView:
    created: str
    model_roles: dict[str, RoleView] = field(default_factory=dict)


@dataclass(frozen=True)
class LogView:
    status: str
    eval: SpecView
    samples: list[SampleView]


def sample_view(sample: EvalSample) -> SampleView:
    """The parts of an ``EvalSample`` tracking reads."""
    scores = sample.scores or {}
    return SampleView(
        id=sample.id,
        epoch=sample.epoch,
        metadata=dict(sample.metadata or {}),
        store={TURNS_KEY: (sample.store or {}).get(TURNS_KEY)},
        scores={
            name: ScoreView(dict(scores[name].metadata or {}))
            for name in (SCORER_NAME, GROUNDING_SCORER)
            if name in scores
        },
        started_at=getattr(sample, "started_at", None),
    )


def spec_view(spec: EvalSpec) -> SpecView:
    """The parts of an ``EvalSpec`` tracking reads: its start and the role's models."""
    roles = getattr(spec, "model_roles", None) or {}
    return SpecView(
        str(spec.created), {k: RoleView(getattr(v, "model", None)) for k, v in roles.items()}
    )


def log_view(log: EvalLog) -> LogView:
    """The parts of an ``EvalLog`` tracking reads (every sample)."""
    return LogView(
        str(log.status), spec_view(log.eval), [sample_view(s) for s in log.samples or []]
    )
