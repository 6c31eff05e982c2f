"""Argument and result helpers shared by the compat tools (the reference's pandas behaviour:
subject ids as folder names, numeric hadm_id equality, regex-mode filters, ``head(n)``)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from re import _constants, _parser  # type: ignore[attr-defined]  # private parser: no stubs
from typing import Any

import regex

from .errors import ToolError, bad_arguments, execution_error
from .records import Row


def subject_key(tool: str, args: dict[str, Any]) -> int | None:
    """The reference only used ``subject_id`` in a file path: ``str(value)`` must name a folder."""
    if "subject_id" not in args:
        raise bad_arguments(tool, "missing 1 required positional argument: 'subject_id'")
    text = str(args["subject_id"])
    if text.isdigit() and str(int(text)) == text:
        return int(text)
    return None


def hadm_filter(tool: str, value: Any) -> tuple[bool, float | None]:
    """(usable, number). pandas compared hadm_id numerically: a string never matches."""
    if value is None:
        return True, None
    if isinstance(value, bool):
        return True, float(value)
    if isinstance(value, int | float):
        return True, float(value)
    if isinstance(value, str):
        return False, None
    raise execution_error(tool, f"cannot compare hadm_id with {type(value).__name__}")


def text_arg(tool: str, args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or isinstance(value, str):
        return value
    raise execution_error(tool, f"'{type(value).__name__}' object has no attribute 'lower'")


#: Wall-clock seconds one call may spend matching a model's pattern (all rows together; the
#: engine checks its clock now and then, so a stop can come a few times later). The reference
#: had no bound: a catastrophic pattern (``(a|aa)+$``) over a note ran for hours.
REGEX_BUDGET_S = 0.5
#: Pattern items the ``regex`` engine may unroll: it copies a repeated item ``min`` times
#: (``a{10000000}`` exhausted memory, ``(a{1000}){1000}`` took 1.9 s to compile).
MAX_UNROLLED = 20_000
_REPEATS = (_constants.MAX_REPEAT, _constants.MIN_REPEAT, _constants.POSSESSIVE_REPEAT)


def _unrolled(items: Any) -> int:
    """How many items a parsed pattern (``re._parser``) becomes once its repeats are copied."""
    total = 0
    for op, av in items:
        inner = sum(_unrolled(sub) for sub in _subpatterns(av))
        total += max(av[0], 1) * max(inner, 1) if op in _REPEATS else 1 + inner
    return total


def _subpatterns(av: Any) -> Iterator[Any]:
    if isinstance(av, _parser.SubPattern):
        yield av
    elif isinstance(av, tuple | list):
        for item in av:
            yield from _subpatterns(item)


def regex_matcher(tool: str, pattern: Any) -> Callable[[Any], bool]:
    """pandas' ``str.contains(pattern, case=False, regex=True)`` as the reference ran it: the
    pattern searched case-insensitively in each cell, a missing cell never matching.

    Compile errors are Python's own (``re``): a non-string pattern is the reference's "Bad
    arguments" (a TypeError), an invalid one or an overflowing repetition (``a{99999999999}``)
    its "Tool execution error". Matching runs on the ``regex`` engine (the same syntax with
    ``VERSION0``) because it can stop: over :data:`REGEX_BUDGET_S` the call is a tool execution
    error instead of a hung session, and so is a pattern it would unroll into more than
    :data:`MAX_UNROLLED` items.
    """
    if not isinstance(pattern, str):
        raise bad_arguments(tool, "first argument must be string or compiled pattern")
    try:
        re.compile(pattern, re.IGNORECASE)
        if _unrolled(_parser.parse(pattern)) > MAX_UNROLLED:
            raise execution_error(
                tool, f"the pattern repeats more than {MAX_UNROLLED:,} items; use a plain word"
            )
        compiled = regex.compile(pattern, regex.IGNORECASE | regex.VERSION0)
    except (re.error, regex.error, OverflowError, RecursionError) as exc:  # deep groups: pandas too
        raise execution_error(tool, str(exc)) from None
    deadline = time.monotonic() + REGEX_BUDGET_S

    def matches(cell: Any) -> bool:
        if cell is None:
            return False
        try:
            left = max(deadline - time.monotonic(), 0.001)
            return compiled.search(str(cell), timeout=left) is not None
        except TimeoutError:
            raise execution_error(
                tool,
                f"the pattern {pattern[:80]!r} took over {REGEX_BUDGET_S:g} s to match "
                "(catastrophic backtracking); use a plain word",
            ) from None

    return matches


def head(tool: str, rows: list[Row], n: Any) -> list[Row]:
    """``DataFrame.head(n)``: a slice (negative n drops the last |n| rows); any other type is
    the TypeError pandas raises, which names the frame's index type: a ``RangeIndex`` when the
    rows' labels (their index in the subject's file) are evenly spaced, else ``Index``."""
    if n is None or isinstance(n, int):
        return rows if n is None else rows[: int(n)]
    raise head_error(tool, [r["rowidx"] for r in rows], n)


def head_error(tool: str, labels: list[int], n: Any) -> ToolError:
    """``head(n)``'s TypeError for a frame whose index holds ``labels``."""
    steps = {b - a for a, b in zip(labels, labels[1:], strict=False)}
    index = "RangeIndex" if len(steps) <= 1 and 0 not in steps else "Index"
    return bad_arguments(
        tool,
        f"cannot do positional indexing on {index} with these indexers [{n}] of type "
        f"{type(n).__name__}",
    )


#: How the reference names what a search did not find (a resource it never had: "<type> resources").
NOT_FOUND = {
    "Encounter": "encounters",
    "Condition": "conditions",
    "Observation": "observations",
    "MedicationRequest": "medication requests",
    "MedicationAdministration": "medication administrations",
    "DiagnosticReport": "diagnostic reports",
    "DocumentReference": "documents",
}


def outcome(diagnostics: str) -> dict[str, Any]:
    """The reference's OperationOutcome: one error issue, no ``code``."""
    return {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": "error", "diagnostics": diagnostics}],
    }


def empty(resource_type: str, args: dict[str, Any], detail: str = "") -> dict[str, Any]:
    """An empty search, worded as the reference words it (the subject as the caller gave it)."""
    what = NOT_FOUND.get(resource_type, f"{resource_type} resources")
    return outcome(f"No {what} found for Patient/{args.get('subject_id')}{detail}")


def present(obj: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``obj`` without those of ``keys`` whose value is missing (NaN): the reference dropped
    them from its output."""
    return {k: v for k, v in obj.items() if not (k in keys and v is None)}


def nan_text(value: Any) -> str:
    """A cell as an f-string printed it: a missing value as ``nan``."""
    return "nan" if value is None else str(value)


def encounter(hadm_id: Any) -> dict[str, str] | None:
    """``Encounter/encounter-<hadm_id>`` as the cell prints (``...0`` from a float column)."""
    return None if hadm_id is None else {"reference": f"Encounter/encounter-{hadm_id}"}
