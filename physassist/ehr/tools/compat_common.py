"""Argument and result helpers shared by the compat tools (the reference's pandas behaviour:
subject ids as folder names, numeric hadm_id equality, regex-mode errors, ``head(n)``)."""

from __future__ import annotations

import math
import re
from typing import Any

from . import fhir
from .context import ToolContext
from .errors import bad_arguments, execution_error
from .records import subject_rows


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
        except re.error as exc:
            raise execution_error(tool, str(exc)) from None
    return value


def count_arg(tool: str, args: dict[str, Any], default: int | None) -> int | None:
    value = args.get("_count", default)
    if value is None:
        return None
    if isinstance(value, int):  # bool included: pandas sliced with it
        return int(value)
    raise bad_arguments(tool, f"_count must be an integer, got {type(value).__name__} {value!r}")


def head(items: list[Any], n: int | None) -> list[Any]:
    """pandas ``head(n)`` semantics (negative n drops the last |n| rows)."""
    return items if n is None else items[:n]


def empty(resource_type: str, subject: Any) -> dict[str, Any]:
    return fhir.operation_outcome(f"No {resource_type} resources found for subject {subject}.")


def nullable_hadm(ctx: ToolContext, table: str, sid: int) -> bool:
    """Whether pandas would have read this subject's hadm_id column as float (it has nulls)."""
    return any(r["hadm_id"] is None for r in subject_rows(ctx, table, sid))


def is_nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))
