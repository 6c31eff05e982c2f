"""LLM rubric judge: one grader call per turn, every item judged pass/fail with a reason.

The reply must be `{"items": [{"id": 1, "pass": true, "reason": "..."}]}` with exactly one
entry per item, ids 1..n, booleans only. Anything else is rejected (no padding, no
truncation, no coercion of "1"/"yes"/"0") and the grader is asked again, up to
`max_attempts` calls; a turn that never gets a valid verdict is unscored (status failed).

Judge context (`context`):
- `gold_answer`: the reference behaviour: the gold answer is the verification material and
  the gold conversation is the history.
- `evidence`: the gold tool observations of the turn plus the observations the assistant
  actually retrieved, and the assistant's own earlier answers as history.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from string import Template
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ResponseSchema,
)
from inspect_ai.util import JSONSchema

from physassist.ehr.tools import render as render_result
from physassist.faults import describe
from physassist.options import check
from scorers.judgement import ErrorKind, ItemResult, TurnInput, TurnJudgement

NAME = "llm"
MAX_OBSERVATION_CHARS = 4000
MAX_EVIDENCE_CHARS = 40000


class VerdictError(ValueError):
    """The grader's reply is not a valid verdict for the items asked."""


@cache
def prompt(name: str) -> Template:
    """A judge prompt template from `scorers/prompts/<name>.txt`."""
    text = resources.files("scorers").joinpath("prompts", f"{name}.txt").read_text(encoding="utf-8")
    return Template(text)


def verdict_schema() -> ResponseSchema:
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


def render_observation(raw: Any) -> str:
    """Full text rendering of a tool result (the EHR layer's `full` renderer for a dict)."""
    if isinstance(raw, str):
        text = raw
    elif isinstance(raw, dict):
        try:
            text = render_result(raw, "full")
        except Exception:  # a renderer bug must not lose the evidence: fall back to JSON
            text = json.dumps(raw, ensure_ascii=False, default=str)
    else:
        text = json.dumps(raw, ensure_ascii=False, default=str)
    if len(text) > MAX_OBSERVATION_CHARS:
        text = (
            text[:MAX_OBSERVATION_CHARS]
            + f"\n... ({len(text) - MAX_OBSERVATION_CHARS} more characters)"
        )
    return text


def _call_line(name: str, arguments: dict[str, Any]) -> str:
    args = {k: v for k, v in (arguments or {}).items() if k not in ("subject_id", "hadm_id")}
    return f"{name}({json.dumps(args, ensure_ascii=False, default=str)})"


def evidence_block(ti: TurnInput) -> str:
    """Gold observations of the turn, then what the assistant retrieved, capped in length.

    A retrieved result identical to a reference one is listed by its call only, so the
    grader does not read the same data twice.
    """
    parts = ["### Reference observations (retrieved when the question was written)"]
    gold = ti.session.gold_calls(ti.turn, ti.language)
    gold_texts = set()
    for c in gold:
        text = render_observation(c["observation"])
        gold_texts.add(text)
        parts.append(f"- {_call_line(c['name'], c['arguments'])}\n{text}")
    if not gold:
        parts.append("(none)")
    parts.append("### Observations the assistant retrieved")
    mine = ti.calls  # everything the assistant saw, including OperationOutcomes
    for c in mine:
        line = _call_line(c.get("name", "?"), c.get("arguments") or {})
        text = render_observation(c.get("raw"))
        if text in gold_texts:
            parts.append(f"- {line}\n(same result as a reference observation above)")
        else:
            parts.append(f"- {line}\n{text}")
    if not mine:
        parts.append("(the assistant retrieved nothing in this turn)")
    text = "\n".join(parts)
    if len(text) > MAX_EVIDENCE_CHARS:
        text = text[:MAX_EVIDENCE_CHARS] + "\n... (evidence truncated)"
    return text


def history_for(ti: TurnInput, context: str) -> list[dict[str, str]]:
    if context == "gold_answer":
        return ti.session.gold_history(ti.turn, ti.language)
    return ti.history


def rubric_prompt(ti: TurnInput, context: str) -> tuple[str, str]:
    """(system, user) messages for a non-write turn."""
    if context == "gold_answer":
        title = "Reference answer (for checking facts)"
        material = ti.session.gold_answer(ti.turn, ti.language) or "(no reference answer available)"
    elif context == "evidence":
        title = "EHR and patient evidence (for checking facts)"
        material = evidence_block(ti)
    else:
        check("judge_context", context)  # raises: not a judge context
    user = prompt("rubric_user").substitute(
        question=ti.question,
        history=format_history(history_for(ti, context)),
        context_title=title,
        context=material,
        answer=ti.answer.strip() or "(empty reply)",
        n_items=len(ti.items),
        items=numbered(ti.items),
    )
    return prompt("rubric_system").template, user


async def judge_turn(ti: TurnInput, grader: Grader, context: str = "gold_answer") -> TurnJudgement:
    """Judge a non-write turn with the grader model."""
    return await grader.grade(ti, *rubric_prompt(ti, context))
