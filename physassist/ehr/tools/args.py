"""Argument handling: JSON parsing, alias renaming, placeholders, and (strict) type coercion.

``compat`` mirrors the reference: aliases renamed, unknown keys silently dropped, blank strings
and integer 0 treated as "not given", and no type coercion at all (type problems surface later,
where the reference's pandas code would have failed). ``strict`` validates every argument
against the tool's schema entry (:data:`~physassist.ehr.tools.schemas.SCHEMAS`) and says
exactly what to fix.
"""

from __future__ import annotations

import json
import math
from typing import Any

from physassist.vocab import PREPARE_TO_ANSWER

from .errors import ToolError, bad_arguments
from .schemas import SCHEMAS, STRICT_MAX_COUNT

ALIASES: dict[str, dict[str, str]] = {
    "Observation.search": {
        "test_name": "code",
        "lab_test": "code",
        "item_name": "code",
        "vital_name": "code",
        "type": "category",
        "limit": "_count",
    },
    "Condition.search": {"icd_code": "code", "diagnosis": "code"},
    "MedicationRequest.search": {"drug": "medication", "med": "medication"},
    "DiagnosticReport.search": {"type": "report_type"},
    "DocumentReference.search": {"type": "type_code", "query": "keyword"},
}

# strict accepts a few more spellings the schema does not list, so a model is not punished
STRICT_EXTRA_ALIASES: dict[str, dict[str, str]] = {
    "MedicationAdministration.search": {"drug": "medication", "med": "medication"},
    "Observation.search": {"count": "_count", "name": "code"},
}

# placeholder coercion exemptions (reference: ids and counts keep their raw value)
_PLACEHOLDER_EXEMPT = {"subject_id", "_count", "_sort", "abnormal_only", "answer_type"}
# the reference's placeholder decorator wrapped its FHIR searches: every read tool but this one
_UNWRAPPED_READ = "Patient.read"

ENUM_SYNONYMS: dict[str, dict[str, str]] = {
    "category": {
        "lab": "laboratory",
        "labs": "laboratory",
        "vital_signs": "vital-signs",
        "vitals": "vital-signs",
        "vital signs": "vital-signs",
        "vital": "vital-signs",
        "micro": "microbiology",
        "culture": "microbiology",
        "cultures": "microbiology",
        "discharge_planning": "discharge-planning",
        "follow-up": "followup",
        "follow_up": "followup",
    },
    "type_code": {
        "discharge": "discharge-summary",
        "discharge_summary": "discharge-summary",
        "discharge summary": "discharge-summary",
    },
}


#: Bounds on what a model may pass, checked before any tool runs. Tool parameters are flat
#: objects of short scalars (the released gold calls: depth 2, strings of at most 41
#: characters), so these are far above any real call; they keep every call fast and every
#: echo short (a 1 MB compat ``medication`` was compiled as a regex for 2.35 s, a 100k-deep
#: object raised RecursionError).
MAX_ARGUMENTS_TEXT = 100_000  # characters of a JSON arguments string
MAX_TEXT = 1_000  # characters of one string value or parameter name
MAX_DEPTH = 8  # nesting of objects and arrays
MAX_ITEMS = 200  # values in all objects and arrays together
MAX_INT_BITS = 64  # ids and counts are 64-bit integers
_CONTAINERS = (dict, list, tuple)


def parse_arguments(tool: str, arguments: Any) -> dict[str, Any]:
    """Accept a dict or a JSON object string within the bounds above; anything else is a
    ToolError naming the tool (and never echoing the oversized value)."""
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            return {}
        if len(text) > MAX_ARGUMENTS_TEXT:
            raise bad_arguments(
                tool, f"arguments are {len(text):,} characters long; at most {MAX_ARGUMENTS_TEXT:,}"
            )
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            raise bad_arguments(
                tool, f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
            ) from None
        except RecursionError:
            raise bad_arguments(
                tool, f"arguments are nested deeper than {MAX_DEPTH} levels"
            ) from None
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise bad_arguments(tool, f"arguments are not usable JSON ({str(exc)[:200]})") from None
    if not isinstance(arguments, dict):
        raise bad_arguments(
            tool, f"arguments must be a JSON object, got {type(arguments).__name__}"
        )
    _check_bounds(tool, arguments)
    return {str(k): v for k, v in arguments.items()}


def _check_bounds(tool: str, arguments: dict[str, Any]) -> None:
    """Walk the arguments iteratively (no recursion, stops at the first excess)."""
    if len(arguments) > MAX_ITEMS:
        raise bad_arguments(tool, f"more than {MAX_ITEMS} values in the arguments")
    for key, value in arguments.items():  # the common case, flat and short, in one cheap pass
        kind = type(value)
        if (
            type(key) is not str
            or len(key) > MAX_TEXT
            or kind in _CONTAINERS
            or (kind is str and len(value) > MAX_TEXT)
            or (kind is int and value.bit_length() > MAX_INT_BITS)
        ):
            break
    else:
        return
    items = 0
    stack: list[tuple[str, Any, int]] = [(str(k), v, 1) for k, v in arguments.items()]
    while stack:
        key, value, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            raise bad_arguments(tool, f"more than {MAX_ITEMS} values in the arguments")
        if len(key) > MAX_TEXT:
            raise bad_arguments(
                tool, f"a parameter name is {len(key):,} characters long; at most {MAX_TEXT:,}"
            )
        name = key if len(key) <= 40 else key[:40] + "..."
        if isinstance(value, str) and len(value) > MAX_TEXT:
            raise bad_arguments(
                tool, f"'{name}' is {len(value):,} characters long; at most {MAX_TEXT:,}"
            )
        if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise bad_arguments(tool, f"'{name}' is an integer of {value.bit_length():,} bits")
        if isinstance(value, dict | list | tuple):
            if depth >= MAX_DEPTH:
                raise bad_arguments(tool, f"'{name}' is nested deeper than {MAX_DEPTH} levels")
            children = value.items() if isinstance(value, dict) else enumerate(value)
            for child_key, child in children:
                stack.append(
                    (str(child_key) if isinstance(value, dict) else name, child, depth + 1)
                )
                if len(stack) + items > MAX_ITEMS:
                    raise bad_arguments(tool, f"more than {MAX_ITEMS} values in the arguments")


def _rename(args: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    out = dict(args)
    for alias, canonical in aliases.items():
        if alias in out:
            value = out.pop(alias)
            out.setdefault(canonical, value)
    return out


def compat_arguments(
    tool: str, args: dict[str, Any], gate_date: str | None = None
) -> dict[str, Any]:
    """The reference's normalisation, in its order: rename aliases, drop unknown keys, the
    Observation date gate (``date_to = gate_date`` when the caller gave none), then blank/0 ->
    not given. Because the gate runs first, ``date_to=""`` escapes it (no upper bound at all)."""
    args = _rename(args, ALIASES.get(tool, {}))
    schema = SCHEMAS[tool]
    args = {k: v for k, v in args.items() if k in schema.params}
    if tool == "Observation.search" and gate_date and "date_to" not in args:
        args["date_to"] = gate_date
    if schema.group == "read" and tool != _UNWRAPPED_READ:
        for key, value in list(args.items()):
            if key in _PLACEHOLDER_EXEMPT:
                continue
            if isinstance(value, str):
                value = value.strip()
                args[key] = value or None
            elif isinstance(value, int) and not isinstance(value, bool) and value == 0:
                args[key] = None
    return {k: v for k, v in args.items() if v is not None}


def _as_int(tool: str, key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise ToolError(f"{tool}: '{key}' must be an integer, got a boolean ({value}).")
    if isinstance(value, int) and abs(value) < 2**63:
        return value
    if (
        isinstance(value, float)
        and math.isfinite(value)
        and value.is_integer()
        and abs(value) < 2**63
    ):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and number.is_integer() and abs(number) < 2**63:
            return int(number)
    raise ToolError(f"{tool}: '{key}' must be an integer, got {value!r}.")


def _as_enum(tool: str, key: str, value: str, choices: tuple[str, ...]) -> str:
    low = value.strip().lower()
    low = ENUM_SYNONYMS.get(key, {}).get(low, low)
    for choice in choices:
        if low == choice.lower():
            return choice
    raise ToolError(f"{tool}: '{key}' must be one of {list(choices)}, got {value!r}.")


def strict_arguments(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """Validate and coerce against the schema; unknown keys and bad values are refused.

    Ids and counts given as strings or integral floats are coerced; ``_count`` is capped at
    :data:`STRICT_MAX_COUNT`; blank strings and ``hadm_id=0`` mean "not given".
    """
    aliases = {**ALIASES.get(tool, {}), **STRICT_EXTRA_ALIASES.get(tool, {})}
    args = _rename(args, aliases)
    spec = SCHEMAS[tool].params
    unknown = sorted(k for k in args if k not in spec)
    if unknown:
        raise ToolError(
            f"{tool}: unknown parameter(s) {unknown}; accepted parameters are {list(spec)}."
        )
    out: dict[str, Any] = {}
    for key, value in args.items():
        param = spec[key]
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if param.type == "integer":
            number = _as_int(tool, key, value)
            if key == "hadm_id" and number == 0:
                continue
            if key == "_count":
                if number < 1:
                    raise ToolError(f"{tool}: '_count' must be at least 1, got {number}.")
                number = min(number, STRICT_MAX_COUNT)
            out[key] = number
        else:
            if isinstance(value, bool) or not isinstance(value, str | int | float):
                raise ToolError(
                    f"{tool}: '{key}' must be a string, got {type(value).__name__} {value!r}."
                )
            text = str(value).strip()
            if len(text) > 500:
                raise ToolError(
                    f"{tool}: '{key}' is too long ({len(text)} characters; at most 500)."
                )
            out[key] = _as_enum(tool, key, text, param.enum) if param.enum else text
    missing = [k for k, p in spec.items() if p.required and k not in out]
    if missing and tool != PREPARE_TO_ANSWER:
        raise ToolError(f"{tool}: missing required parameter(s) {missing}.")
    return out
