"""Asking a grader model for a rubric verdict, shared by the LLM judges (``llm_judge`` on
ordinary turns, ``write_judge`` on Write/Update turns, ``panel_judge`` through them).

The reply must be `{"items": [{"id": 1, "pass": true, "reason": "..."}]}` with exactly one
entry per item, ids 1..n, booleans only. Anything else is rejected (no padding, no
truncation, no coercion of "1"/"yes"/"0") and the grader is asked again, up to
`max_attempts` calls; a turn that never gets a valid verdict is unscored (status failed).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import TYPE_CHECKING

from physassist.calls import EndpointDown
from physassist.faults import describe
from scorers.judgement import ErrorKind, ItemResult, TurnInput, TurnJudgement

if TYPE_CHECKING:  # Inspect is imported where a grader is asked: the CLI lists judges without it
    from inspect_ai.model import ChatMessage, Model, ResponseSchema

NAME = "llm"  # the judge a grader's verdicts are recorded under


class VerdictError(ValueError):
    """The grader's reply is not a valid verdict for the items asked."""


@cache
def prompt(name: str) -> Template:
    """A judge prompt template from `scorers/prompts/<name>.txt`."""
    text = resources.files("scorers").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    return Template(text)


def verdict_schema() -> ResponseSchema:
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import JSONSchema

    item = JSONSchema(
        type="object",
        properties={
            "id": JSONSchema(type="integer"),
            "pass": JSONSchema(type="boolean"),
            "reason": JSONSchema(type="string"),
        },
        required=["id", "pass", "reason"],
        additionalProperties=False,
    )
    schema = JSONSchema(
        type="object",
        properties={"items": JSONSchema(type="array", items=item)},
        required=["items"],
        additionalProperties=False,
    )
    return ResponseSchema(name="rubric_verdict", json_schema=schema, strict=True)


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_verdict(text: str, n_items: int) -> list[ItemResult]:
    """Parse a grader reply strictly into `n_items` results, ordered by id."""
    body = _FENCE.sub("", text.strip()).strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise VerdictError("no JSON object found")
    try:
        data = json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise VerdictError(f"invalid JSON ({exc.msg} at position {exc.pos})") from exc
    if not isinstance(data, dict) or not isinstance(data.get("items"), list):
        raise VerdictError('the object must have an "items" list')
    entries = data["items"]
    if len(entries) != n_items:
        raise VerdictError(f"expected {n_items} items, got {len(entries)}")
    by_id: dict[int, ItemResult] = {}
    for pos, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise VerdictError(f"entry {pos} is not an object")
        item_id, passed, reason = entry.get("id"), entry.get("pass"), entry.get("reason", "")
        if isinstance(item_id, bool) or not isinstance(item_id, int) or not 1 <= item_id <= n_items:
            raise VerdictError(f"entry {pos}: id must be an integer from 1 to {n_items}")
        if item_id in by_id:
            raise VerdictError(f"entry {pos}: id {item_id} appears twice")
        if not isinstance(passed, bool):
            raise VerdictError(f"entry {pos}: pass must be true or false, got {passed!r}")
        if not isinstance(reason, str):
            raise VerdictError(f"entry {pos}: reason must be a string")
        by_id[item_id] = ItemResult(passed, reason.strip())
    return [by_id[i] for i in range(1, n_items + 1)]


@dataclass(frozen=True)
class Grader:
    """The grader model and how to ask it, shared by the rubric and the write judge."""

    model: Model
    max_attempts: int = 3
    max_tokens: int = 2000
    structured: bool = False

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"judge option max_attempts must be >= 1, got {self.max_attempts}")

    async def ask(
        self, system: str, user: str, n_items: int
    ) -> tuple[list[ItemResult] | None, int, str | None, ErrorKind | None]:
        """Ask until a valid verdict arrives: (items or None, attempts used, last error, its
        kind: the last reply did not parse, or the call itself failed)."""
        from inspect_ai.model import (
            ChatMessageAssistant,
            ChatMessageSystem,
            ChatMessageUser,
            GenerateConfig,
        )

        config = GenerateConfig(
            temperature=0.0,
            max_tokens=self.max_tokens,
            response_schema=verdict_schema() if self.structured else None,
        )
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=system),
            ChatMessageUser(content=user),
        ]
        error: str | None = None
        kind: ErrorKind | None = None
        for attempt in range(1, self.max_attempts + 1):
            try:
                output = await self.model.generate(messages, config=config)
            except EndpointDown:  # the run gave up on the grader's endpoint: it ends
                raise
            except Exception as exc:  # provider failure after Inspect's own retries: count, go on
                error, kind = f"grader call failed: {describe(exc)}", "provider"
                continue
            if output.error:
                error, kind = f"grader error: {output.error}", "provider"
                continue
            text = output.completion
            try:
                return parse_verdict(text, n_items), attempt, None, None
            except VerdictError as exc:
                error, kind = str(exc), "unparseable"
            retry = prompt("retry").substitute(error=error, n_items=n_items)
            messages = [
                *messages,
                ChatMessageAssistant(content=text),
                ChatMessageUser(content=retry),
            ]
        return None, self.max_attempts, error, kind

    async def grade(
        self,
        ti: TurnInput,
        system: str,
        user: str,
        decided: dict[int, ItemResult] | None = None,
    ) -> TurnJudgement:
        """The turn's judgement from the verdict; `decided` items keep their own result.

        A turn whose grader never gives a valid verdict is failed (unscored) with the last error;
        one whose last grader call failed (the provider, after Inspect's retries) is a system
        fault (status `error`).
        """
        items, _, error, kind = await self.ask(system, user, len(ti.items))
        if items is None and kind == "provider":
            return TurnJudgement.fault(len(ti.items), NAME, error or "grader call failed", kind)
        if items is None:
            return TurnJudgement.failed(len(ti.items), NAME, error or "no valid verdict", kind)
        decided = decided or {}
        return TurnJudgement.from_items(
            [decided.get(i, item) for i, item in enumerate(items)], NAME
        )


def numbered(items: list[str]) -> str:
    return "\n".join(f"{i}. {item}" for i, item in enumerate(items, start=1))


def format_history(messages: list[dict[str, str]]) -> str:
    if not messages:
        return "(this is the first question of the encounter)"
    return "\n\n".join(f"[{m['role'].upper()}]: {m['content']}" for m in messages)


def history_for(ti: TurnInput, context: str) -> list[dict[str, str]]:
    if context == "gold_answer":
        return ti.session.gold_history(ti.turn, ti.language)
    return ti.history
