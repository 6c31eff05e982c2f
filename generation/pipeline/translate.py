"""Chinese translation of one turn: questions, answer, rubric items, patient replies."""

from __future__ import annotations

from typing import Any

from .llm import AgentOutputError, Caller


def _same_shape(src: Any, out: Any, path: str) -> Any:
    if isinstance(src, str):
        if not isinstance(out, str) or not out.strip():
            raise AgentOutputError(f"translate: {path} must be a non-empty string")
        return out.strip()
    if isinstance(src, list):
        if not isinstance(out, list) or len(out) != len(src):
            raise AgentOutputError(f"translate: {path} must be a list of {len(src)} strings")
        return [
            _same_shape(s, o, f"{path}[{i}]") for i, (s, o) in enumerate(zip(src, out, strict=True))
        ]
    raise TypeError(f"translate: unsupported value at {path}")


async def translate_turn(caller: Caller, texts: dict[str, Any]) -> dict[str, Any]:
    """``texts`` maps keys to strings or lists of strings; the reply must mirror it."""
    reply = await caller.ask("translator", "translate", texts, temperature=0.0)
    return {k: _same_shape(v, reply.get(k), k) for k, v in texts.items()}
