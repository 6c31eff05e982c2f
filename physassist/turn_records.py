"""A session's turns as the assistant loop lived them: one typed record per physician turn.

The loop (``solvers/session_loop.py``) builds a ``TurnRecord`` per turn, with a ``CallRecord``
per executed data-tool call, and writes them once per sample under ``TURNS_KEY`` in the
sample's store. Everything after it reads them back through ``read_turns``: the scorer (and so
``physassist-rescore``, which scores the stored turns again), the turn table
(``physassist.results``), the MLflow traces and the report's tables made from them.

The store holds them as plain JSON dicts (``stored()``), in the ``.eval`` log's long-standing
shape; ``from_stored`` is the one place a stored dict becomes a record, and it reads the
shapes of older logs too (a call's raw result as an object under ``raw`` instead of JSON text
under ``raw_json``; no ``started``; no ``history``). Not Inspect's ``StoreModel``: it names its
store keys after the class (the logs' key would change and every log written before would
need a second reader), and Inspect writes model values to the log without their ``None``
fields (``exclude_none``), which would change the shape old readers expect.

Extending: a new field gets a default (the value every older log meant), is written by
``stored()`` and read by ``from_stored`` without more code (both go over the dataclass
fields), and is documented below. What a scorer *derives* from a turn (a verdict, a grounding
fact) belongs in its score metadata, not here: this record is what the loop observed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from functools import cached_property
from typing import Any, Literal, Protocol

from physassist.options import History

__all__ = ["TURNS_KEY", "CallRecord", "End", "History", "TurnRecord", "read_turns", "stored_turns"]

#: Where the session loop keeps a sample's turn records (``state.store``; the log's
#: ``sample.store``).
TURNS_KEY = "physassist:turns"

#: How a turn ended. ``answered``: the terminal strategy took the model's answer; ``nudged``:
#: the answer came from the tool-free request for one (or never came); ``budget``: the
#: per-turn tool-call budget ran out; ``error``: a system fault ended it, unscored
#: (``physassist.faults.ERROR_STATUS``, the fault in ``error``); ``missing``: the loop never
#: recorded the turn (the scorer's view of a turn absent from the store).
End = Literal["answered", "nudged", "budget", "error", "missing"]


@dataclass(frozen=True)
class CallRecord:
    """One executed data-tool call (the strategy's control tool is never recorded).

    ``raw_json`` is the raw result as JSON text: a nested FHIR result would be hundreds of
    small dicts that Inspect converts, diffs and writes again for every copy of the store in
    the sample's events (issue 25), where a string is one value and is shared, never copied,
    between the loop, the store and this record. ``raw`` parses it on first use.
    """

    name: str  # dotted tool name, e.g. ``Observation.search`` (the API name has ``__``)
    arguments: dict[str, Any]  # as executed: the model's, with the ids the loop filled in
    raw_json: str  # the raw result (FHIR resource, Bundle, OperationOutcome, compat dict)
    text: str  # what the model was shown (rendered, after the ``observations`` option)
    started: float | None = None  # epoch seconds (None: logs before the traces placed calls)
    seconds: float = 0.0  # the call's wall time, including the worker thread's queue

    @cached_property
    def raw(self) -> Any:
        """The raw result as an object."""
        return json.loads(self.raw_json)

    @property
    def refused(self) -> bool:
        """The EHR layer refused the call instead of running it: an ``OperationOutcome``
        (strict, or a call Inspect could not parse or validate) or compat's bare
        ``{"error": ...}`` (the reference's)."""
        raw = self.raw
        return isinstance(raw, dict) and (
            raw.get("resourceType") == "OperationOutcome" or set(raw) == {"error"}
        )

    def stored(self) -> dict[str, Any]:
        """The call as the store holds it (shallow: ``arguments`` and ``raw_json`` are shared)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_stored(cls, value: Mapping[str, Any]) -> CallRecord:
        """A stored call, of this shape or an older log's (``raw``: the result as an object)."""
        known = {f.name: value[f.name] for f in fields(cls) if f.name in value}
        if not isinstance(known.get("raw_json"), str):
            known["raw_json"] = json.dumps(value.get("raw"), ensure_ascii=False, default=str)
        known["name"] = str(value.get("name", "?"))
        known["arguments"] = dict(value.get("arguments") or {})
        known["text"] = str(value.get("text") or "")
        return cls(**known)


@dataclass(frozen=True)
class TurnRecord:
    """One physician turn as the loop ran it."""

    turn: int  # 0-based index of the physician question
    question: str  # the question as asked (implicit or explicit, in the run's language)
    answer: str = ""  # the final answer ("" when none came or a fault ended the turn)
    end: End = "answered"  # how the turn ended (``End``)
    calls: tuple[CallRecord, ...] = ()  # executed data-tool calls, in order
    tokens_in: int = 0  # the assistant's input tokens over the turn's calls (nudges included)
    tokens_out: int = 0  # its output tokens
    started: float | None = None  # epoch seconds (None: logs before the traces used it)
    seconds: float = 0.0  # the turn's wall time
    error: str | None = None  # the system fault that ended the turn (``end == "error"``)
    #: the conversation the turn started from (the ``history`` option's ``History``): ``free``,
    #: the model's own earlier turns (what every earlier log meant); ``gold``, the gold
    #: conversation of the turns before it, their gold tool calls executed
    history: History = "free"
    #: ``history=gold``, every turn but the last: this turn's gold tool calls as executed after
    #: it, for the gold history the turns after it start from (what they received of it)
    gold_calls: tuple[CallRecord, ...] = ()

    def stored(self) -> dict[str, Any]:
        """The turn as the store holds it (plain JSON values; the calls' results shared)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["calls"] = [c.stored() for c in self.calls]
        out["gold_calls"] = [c.stored() for c in self.gold_calls]
        return out

    @classmethod
    def from_stored(cls, value: Mapping[str, Any]) -> TurnRecord:
        """A stored turn, of this shape or an older log's (fields it lacks take their
        defaults: what the loop did before it recorded them)."""
        known = {f.name: value[f.name] for f in fields(cls) if f.name in value}
        known["turn"] = int(value["turn"])
        known["calls"] = tuple(CallRecord.from_stored(c) for c in value.get("calls") or ())
        known["gold_calls"] = tuple(
            CallRecord.from_stored(c) for c in value.get("gold_calls") or ()
        )
        return cls(**known)


def read_turns(records: Iterable[Any] | None) -> list[TurnRecord]:
    """The turn records of a stored list (``store.get(TURNS_KEY)``; None when the sample has
    none). Entries that are no turn record (not a mapping, or without ``turn``) are skipped,
    as every reader did before the records were typed."""
    return [
        TurnRecord.from_stored(r) for r in records or () if isinstance(r, Mapping) and "turn" in r
    ]


class Keyed(Protocol):
    """What a sample's store is to a reader: a log's ``sample.store`` (a dict) or Inspect's
    ``Store``."""

    def get(self, key: str, /) -> Any: ...


def stored_turns(store: Keyed | None) -> list[TurnRecord]:
    """The turn records of a sample's store (None: a sample without one)."""
    return read_turns(store.get(TURNS_KEY) if store is not None else None)
