"""Argument and result helpers shared by the compat tools (the reference's pandas behaviour:
subject ids as folder names, numeric hadm_id equality, regex-mode errors, ``head(n)``)."""

from __future__ import annotations

import re
from typing import Any

from .errors import bad_arguments, execution_error
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


def regex_arg(tool: str, args: dict[str, Any], key: str) -> str | None:
    """Filters the reference ran through pandas regex mode: an invalid pattern was an error.

    The pattern is only compiled to reproduce that error; matching itself is a literal,
    case-insensitive substring test (no user-built regex is ever executed).
    """
    value = text_arg(tool, args, key)
    if value is not None:
        try:
            re.compile(value)
        except (re.error, RecursionError) as exc:  # deep groups: what pandas hit too
            raise execution_error(tool, str(exc)) from None
    return value


def head(tool: str, rows: list[Row], n: Any) -> list[Row]:
    """``DataFrame.head(n)``: a slice (negative n drops the last |n| rows); any other type is
    the TypeError pandas raises, which names the frame's index type: a ``RangeIndex`` when the
    rows' labels (their index in the subject's file) are evenly spaced, else ``Index``."""
    if n is None or isinstance(n, int):
        return rows if n is None else rows[: int(n)]
    labels = [r["rowidx"] for r in rows]
    steps = {b - a for a, b in zip(labels, labels[1:], strict=False)}
    index = "RangeIndex" if len(steps) <= 1 and 0 not in steps else "Index"
    raise bad_arguments(
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
