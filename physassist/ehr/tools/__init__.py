"""The 18 PhysAssistBench tools as plain Python callables over the EHR store (no Inspect here).

``call_tool(ctx, name, arguments)`` returns raw FHIR (or a patient-answer dict). A mistake of
the model (unknown tool, bad or oversized arguments, another patient) becomes a FHIR
``OperationOutcome`` whose diagnostics tell it how to correct the call; anything else (the
store unreadable, a bug of ours) raises ``physassist.faults.SystemFault``, which ends the turn
unscored instead of reaching the model as an EHR answer.
``render`` turns a result into the text a model sees.

Every tool is a schema entry (``schemas.SCHEMAS``: name, group, description, parameters); a
read tool is answered by the functions its line in ``readers.READ_TOOLS`` names: strict ones
given the call's store access (``chart.Chart``), compat ones the session's ``ToolContext``.
"""

from __future__ import annotations

import logging
from typing import Any

from physassist.faults import SystemFault, describe
from physassist.options import Semantics

from .args import compat_arguments, parse_arguments, strict_arguments
from .chart import Chart
from .context import PatientResponder, ToolContext, WriteSandbox
from .errors import ToolError
from .fhir import capped, operation_outcome
from .names import EHR_READ_TOOLS, TOOL_NAMES, from_api_name, to_api_name
from .readers import READ_TOOLS, unimplemented
from .records import open_chart
from .render import render
from .schemas import SCHEMAS, ToolGroup, tool_group, tool_schemas
from .writes import compat_write, strict_write

if _missing := unimplemented():
    raise ImportError(f"read tools without their functions in readers.py: {', '.join(_missing)}")

__all__ = [
    "EHR_READ_TOOLS",
    "TOOL_NAMES",
    "PatientResponder",
    "ToolContext",
    "WriteSandbox",
    "call_tool",
    "from_api_name",
    "open_chart",
    "render",
    "to_api_name",
    "tool_group",
    "tool_schemas",
]

log = logging.getLogger(__name__)


def _outcome(err: ToolError, semantics: Semantics) -> dict[str, Any]:
    if semantics == "compat" and err.reference_error is not None:
        # the reference's call_tool answered a bare error
        return {"error": capped(err.reference_error)}
    return operation_outcome(err.diagnostics, code=err.code)


def call_tool(
    ctx: ToolContext, name: str, arguments: dict[str, Any] | str | None
) -> dict[str, Any]:
    """Run one tool call in the session ``ctx``. Raises only ``SystemFault`` (module docstring)."""
    tool = from_api_name(str(name))
    try:
        schema = SCHEMAS.get(tool)
        if schema is None:
            raise ToolError(
                f"Unknown tool: {name}. Available tools: "
                f"{', '.join(sorted(ctx.allowed or TOOL_NAMES))}.",
                code="not-supported",
                reference_error=f"Unknown tool: {name}" if ctx.semantics == "compat" else None,
            )
        if ctx.allowed is not None and tool not in ctx.allowed:
            raise ToolError(
                f"Tool {tool} is not offered in this session. Offered tools: "
                f"{', '.join(sorted(ctx.allowed))}.",
                code="not-supported",
            )
        args = parse_arguments(tool, arguments)
        if ctx.semantics == "compat":
            return _compat(ctx, tool, schema.group, args)
        return _strict(ctx, tool, schema.group, args)
    except ToolError as err:
        return _outcome(err, ctx.semantics)
    except SystemFault:  # the system failed, not the model: the loop ends the turn unscored
        raise
    except Exception as exc:
        # Not the model's mistake (those are ToolErrors, and its arguments are bounded): a
        # store that cannot be read (DuckDB I/O, a corrupt block), a patient responder or a
        # bug of ours. Handing it to the model as if the EHR said so would score the fault.
        log.exception("tool %s failed", tool)
        raise SystemFault(f"tool {tool} failed: {describe(exc)}") from exc


def _patient(ctx: ToolContext, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    if ctx.patient is None:
        return operation_outcome(
            f"{tool}: no patient is available to interview in this session.", code="not-supported"
        )
    args = dict(args)
    args["subject_id"] = ctx.subject_id
    if ctx.session_id is not None:
        args["session_id"] = ctx.session_id
    answer = ctx.patient.respond(tool, args)
    if not isinstance(answer, dict):
        answer = {"patient_response": str(answer)}
    return answer


def _prepare(args: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ready", "answer_type": args.get("answer_type") or "tool"}


def _compat(ctx: ToolContext, tool: str, group: ToolGroup, raw: dict[str, Any]) -> dict[str, Any]:
    if group == "write":
        return compat_write(ctx, tool, raw)
    args = compat_arguments(tool, raw, ctx.current_date)
    if group == "patient":
        return _patient(ctx, tool, args)
    if group == "control":
        return _prepare(args)
    return READ_TOOLS[tool].compat(ctx, args)


def _strict(ctx: ToolContext, tool: str, group: ToolGroup, raw: dict[str, Any]) -> dict[str, Any]:
    if group == "patient":
        # the interview is always with this session's patient: ids the model left out are filled
        raw = {"subject_id": ctx.subject_id, **raw, "session_id": ctx.session_id or "session"}
    if group == "control":  # ids a model adds out of habit are harmless here
        raw = {k: v for k, v in raw.items() if k not in ("subject_id", "session_id")}
    args = strict_arguments(tool, raw)
    if group == "control":
        return _prepare(args)
    subject = args.get("subject_id")
    if subject != ctx.subject_id:
        raise ToolError(
            f"{tool}: this session is about subject_id {ctx.subject_id}; records of subject "
            f"{subject} are not accessible.",
            code="forbidden",
        )
    if group == "patient":
        return _patient(ctx, tool, args)
    if group == "write":
        return strict_write(ctx, tool, args)
    return READ_TOOLS[tool].strict(Chart.of(ctx), args)
