"""Per-session state every tool call needs: the store, the patient, the time cutoff, the sandbox."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from physassist.options import Semantics, check

if TYPE_CHECKING:  # the store module is built separately; tools only need `.cursor()`
    from physassist.ehr.store import EHRStore


@runtime_checkable
class PatientResponder(Protocol):
    """Answers the ``patient.*`` interview tools for one session."""

    def respond(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:  # {"patient_response": str, ...}
        ...


@dataclass
class WriteSandbox:
    """Simulated writes of one session. Never touches the store; two sessions never share one.

    ``next_seq`` gives deterministic, per-session sequence numbers so write ids do not depend
    on the wall clock or on other sessions.
    """

    writes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, resource: dict[str, Any]) -> None:
        self.writes.append(resource)

    def next_seq(self) -> int:
        return len(self.writes) + 1

    def __len__(self) -> int:
        return len(self.writes)


@dataclass
class ToolContext:
    """Everything a tool call is scoped to (one session, one patient)."""

    store: EHRStore
    subject_id: int
    hadm_id: int | None = None
    current_date: str | None = None
    cutoff: dt.datetime | None = None
    semantics: Semantics = "strict"
    session_id: str | None = None
    patient: PatientResponder | None = None
    allowed: frozenset[str] | None = None
    sandbox: WriteSandbox = field(default_factory=WriteSandbox)

    def __post_init__(self) -> None:
        """Fail at construction (naming the field) rather than on every later tool call."""
        check("semantics", self.semantics)
        if self.current_date is not None:
            try:
                dt.date.fromisoformat(str(self.current_date)[:10])
            except ValueError:
                raise ValueError(
                    f"ToolContext.current_date must be YYYY-MM-DD, got {self.current_date!r}"
                ) from None

    def effective_cutoff(self) -> dt.datetime | None:
        """Strict time cutoff (inclusive): ``cutoff``, else the last microsecond of ``current_date``."""
        if self.cutoff is not None:
            return self.cutoff
        if self.current_date:
            day = dt.date.fromisoformat(str(self.current_date)[:10])
            return dt.datetime.combine(day, dt.time.max)
        return None
