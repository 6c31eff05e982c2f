"""One structured call to a generation agent: prompt file + JSON input -> strict JSON object.

Every agent is an Inspect model role; an unbound role falls back to the eval's model (the
``generator``). Token usage is accumulated per role so the run can report it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model

PROMPTS = Path(__file__).resolve().parent / "prompts"
ROLES: tuple[str, ...] = ("planner", "user", "answer", "checker", "patient", "rubric", "translator")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class AgentOutputError(ValueError):
    """An agent's reply is not the JSON object its prompt asks for."""


@cache
def prompt_text(kind: str) -> str:
    path = PROMPTS / f"{kind}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"generation prompt {kind!r} not found at {path}")
    return path.read_text(encoding="utf-8").strip()


def render_prompt(kind: str, payload: dict[str, Any]) -> str:
    """The prompt file, then the input as JSON after an ``INPUT:`` line."""
    return f"{prompt_text(kind)}\n\nINPUT:\n{json.dumps(payload, ensure_ascii=False, default=str)}"


def parse_object(text: str, kind: str) -> dict[str, Any]:
    """Strict: the whole reply (optionally in one ```json fence) must be one JSON object."""
    m = _FENCE.match(text)
    body = m.group(1) if m else text.strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        raise AgentOutputError(f"{kind}: reply is not JSON ({exc.msg} at {exc.pos}): {body[:120]!r}") from exc
    if not isinstance(value, dict):
        raise AgentOutputError(f"{kind}: reply must be a JSON object, got {type(value).__name__}")
    return value


def need_str(obj: dict[str, Any], key: str, kind: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not value.strip():
        raise AgentOutputError(f"{kind}: field {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


@dataclass
class Usage:
    """Tokens per role over one slot."""

    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)

    def add(self, role: str, model: str, input_tokens: int, output_tokens: int) -> None:
        row = self.tokens.setdefault(role, {"input": 0, "output": 0, "calls": 0})
        row["input"] += input_tokens
        row["output"] += output_tokens
        row["calls"] += 1
        self.models[role] = model


@dataclass
class Caller:
    """Calls agents with per-slot seeds (seed + call number) and records their usage."""

    seed: int
    usage: Usage = field(default_factory=Usage)
    calls: int = 0

    async def ask(self, role: str, kind: str, payload: dict[str, Any],
                  temperature: float = 0.0) -> dict[str, Any]:
        if role not in ROLES:
            raise ValueError(f"unknown generation role {role!r}; valid: {', '.join(ROLES)}")
        model = get_model(role=role, default=get_model(role="generator"))
        self.calls += 1
        config = GenerateConfig(temperature=temperature, seed=self.seed + self.calls)
        out = await model.generate([ChatMessageUser(content=render_prompt(kind, payload))],
                                   config=config)
        u = out.usage
        self.usage.add(role, str(model), u.input_tokens if u else 0, u.output_tokens if u else 0)
        if out.error:
            raise AgentOutputError(f"{kind}: model error: {out.error}")
        if out.stop_reason == "max_tokens":  # a runaway reply: its JSON would be cut short anyway
            budget = f"{model.config.max_tokens} tokens" if model.config.max_tokens else "the provider's"
            raise AgentOutputError(f"{kind}: reply cut at the output budget ({budget})")
        if out.stop_reason == "content_filter":
            raise AgentOutputError(f"{kind}: the model refused: {out.completion[:120]!r}")
        if not out.completion.strip():
            raise AgentOutputError(f"{kind}: empty reply")
        return parse_object(out.completion, kind)
