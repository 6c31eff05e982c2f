"""Inspect ``ToolDef``s built from a session's own ``tools`` schemas.

Each data tool is bound to one sample's executor (``physassist.ehr.tools.call_tool`` on
that sample's ``ToolContext``) and renderer, is exposed under its API-safe name
(``Observation.search`` -> ``Observation__search``, since provider APIs reject dots) and
records every execution (dotted name, arguments, raw FHIR result, text the model saw).

Inspect's ``execute_tools`` runs the calls. Calls Inspect itself refuses (unknown name,
unparseable arguments, arguments failing the JSON schema) are answered here with what the
EHR layer returns for them -- an ``OperationOutcome``, or the result after the EHR layer's
own type coercion -- so the model always gets a FHIR answer and the loop continues.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, ChatMessageAssistant, ChatMessageTool, execute_tools
from inspect_ai.tool import ToolCall, ToolDef, ToolParams

from physassist.ehr.tools import from_api_name, to_api_name
from physassist.ehr.tools.fhir import operation_outcome
from physassist.turn_records import CallRecord

from .menu import schema_name
from .observations import seen_text
from .terminal import CONTROL_TOOLS, ControlTool

Executor = Callable[[str, dict[str, Any]], dict[str, Any]]
Renderer = Callable[[dict[str, Any]], str]


class SharedToolParams(ToolParams):
    """Tool parameters that are read, never mutated, after construction.

    Inspect deep-copies every tool's parameters twice per ``generate`` call (to protect
    them from hooks that edit the request); with 18 session tools that was ~15 % of an
    eval's CPU. Nothing in our loop (and no hook we install) mutates a schema, so a deep
    copy of these parameters is the object itself. ``model_copy(update=...)`` still makes
    a real (shallow) copy.
    """

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> SharedToolParams:
        return self


def _params(fn: dict[str, Any]) -> ToolParams:
    params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
    params.setdefault("properties", {})
    params.setdefault("required", [])
    return SharedToolParams.model_validate(params)


class SessionToolbox:
    """The tools of one sample, with their execution log.

    ``executor(dotted_name, arguments) -> raw dict`` raises only ``SystemFault`` (the EHR
    layer's ``call_tool`` contract), which ends the turn as a fault; it runs in a worker thread
    so DuckDB queries and live-patient calls do not block other samples.
    """

    def __init__(
        self,
        executor: Executor,
        renderer: Renderer,
        *,
        observations: str,
        language: str,
        inject: dict[str, Any] | None = None,
        session_key: str | None = None,
    ) -> None:
        self._executor = executor
        self._renderer = renderer
        self._observations = observations
        self._language = language
        self._inject = dict(inject or {})
        self._session_key = session_key
        self._batch: list[CallRecord] = []
        self.control_replies: dict[str, str] = {}  # API name -> reply

    # -- tool definitions ---------------------------------------------------------------
    def data_tool(self, schema: dict[str, Any]) -> ToolDef:
        """A ToolDef that executes ``schema``'s tool through the sample's executor."""
        fn = schema.get("function", schema)
        dotted = schema_name(schema)

        async def execute(**kwargs: Any) -> str:
            record = await self.call(dotted, kwargs)
            self._batch.append(record)
            return record.text

        return ToolDef(
            execute,
            name=to_api_name(dotted),
            description=str(fn.get("description") or dotted),
            parameters=_params(fn),
            parallel=False,
        )

    def control_tool(
        self, control: ControlTool, session_schema: dict[str, Any] | None = None
    ) -> ToolDef:
        """The strategy's control tool (the session's own schema for it when present); it
        answers with the strategy's reply and is never recorded as a data call."""
        fn = (session_schema or {}).get("function", session_schema) or control.schema
        reply = control.reply
        self.control_replies[to_api_name(control.name)] = reply

        async def execute(**kwargs: Any) -> str:
            return reply

        return ToolDef(
            execute,
            name=to_api_name(control.name),
            description=str(fn.get("description") or control.name),
            parameters=_params(fn),
            parallel=False,
        )

    def is_control(self, api_name: str) -> bool:
        return api_name in self.control_replies

    # -- execution ----------------------------------------------------------------------
    def _with_ids(self, dotted: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Fill in ids the model left out (never overriding what it passed)."""
        args = dict(arguments)
        for key, value in self._inject.items():
            if value is not None:
                args.setdefault(key, value)
        if dotted.startswith("patient.") and self._session_key is not None:
            args.setdefault("session_id", self._session_key)
        return args

    async def call(self, dotted: str, arguments: dict[str, Any]) -> CallRecord:
        """Execute one call and return its record (``started``: epoch seconds; the MLflow
        trace places the call's span with them)."""
        args = self._with_ids(dotted, arguments)
        started, clock = time.time(), time.perf_counter()
        raw = await anyio.to_thread.run_sync(self._executor, dotted, args)
        return self._record(dotted, args, raw, started, time.perf_counter() - clock)

    def _record(
        self,
        dotted: str,
        args: dict[str, Any],
        raw: dict[str, Any],
        started: float,
        seconds: float = 0.0,
    ) -> CallRecord:
        text = seen_text(self._observations, self._renderer(raw), self._language)
        # the raw result as text: ``CallRecord`` says why
        raw_json = json.dumps(raw, ensure_ascii=False, default=str)
        return CallRecord(dotted, args, raw_json, text, round(started, 6), round(seconds, 6))

    async def _fallback(self, call: ToolCall) -> CallRecord:
        """Answer a call Inspect refused (unknown tool, bad JSON, schema violation)."""
        dotted = from_api_name(call.function)
        if call.parse_error:
            raw = operation_outcome(
                f"Could not parse the arguments of {dotted}: {call.parse_error}", code="invalid"
            )
            return self._record(dotted, {}, raw, time.time())
        return await self.call(dotted, dict(call.arguments or {}))

    async def run(
        self,
        conversation: list[ChatMessage],
        tooldefs: list[ToolDef],
        *,
        over_budget: frozenset[str] = frozenset(),
        budget_text: str = "",
    ) -> tuple[list[ChatMessageTool], list[CallRecord]]:
        """Execute the tool calls of the last assistant message of ``conversation``.

        Returns the tool messages in the calls' declared order and the records of the
        executed data calls. Calls whose id is in ``over_budget`` are not executed; they
        get ``budget_text`` as their result.
        """
        message = conversation[-1]
        assert isinstance(message, ChatMessageAssistant) and message.tool_calls
        calls = message.tool_calls
        runnable = [c for c in calls if c.id not in over_budget]
        results: dict[str, ChatMessageTool] = {}
        self._batch = []
        if runnable:
            exec_message = (
                message
                if len(runnable) == len(calls)
                else message.model_copy(update={"tool_calls": runnable})
            )
            executed = await execute_tools([*conversation[:-1], exec_message], tooldefs)
            for m in executed.messages:
                if isinstance(m, ChatMessageTool) and m.tool_call_id:
                    results[m.tool_call_id] = m
        done = list(self._batch)
        self._batch = []

        tool_messages: list[ChatMessageTool] = []
        records: list[CallRecord] = []
        for call in calls:
            result = results.get(call.id)
            if call.id in over_budget:
                tool_messages.append(_tool_message(call, budget_text))
            elif result is not None and result.error is None:
                if not self.is_control(call.function):
                    records.append(done.pop(0))
                tool_messages.append(result)
            elif self.is_control(call.function) and result is not None:
                tool_messages.append(result)
            else:
                record = await self._fallback(call)
                if record.name not in CONTROL_TOOLS:  # steering, not tool use
                    records.append(record)
                tool_messages.append(_tool_message(call, record.text))
        return tool_messages, records


def _tool_message(call: ToolCall, text: str) -> ChatMessageTool:
    return ChatMessageTool(content=text, tool_call_id=call.id, function=call.function)
