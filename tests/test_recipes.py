"""The recipes of ARCHITECTURE.md §9, done: each adds something the way the page says and
checks that nothing else had to change."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import fixtures_eval as fe
import fixtures_store as fs
import pytest
from fixtures_tracking import compose
from inspect_ai.model import ChatMessageAssistant

from physassist import options
from physassist.cli.config import ConfigError, check_config, resolve
from physassist.tracking.params import flatten_config
from solvers import terminal
from solvers.terminal import ControlTool, Decision, TerminalStrategy

store_cache = fs.store_cache
demo_store = fs.demo_store


def test_recipe_add_an_ablation_option(monkeypatch) -> None:
    """One Option line (+ the key in the group's YAML; here an override stands in for it)."""
    option = options.Option(
        "terminal.max_seconds", None, 60, "wall-clock limit per turn", rule=lambda v: isinstance(v, int) and v > 0,
        expects="seconds > 0",
    )
    monkeypatch.setattr(options, "OPTIONS", (*options.OPTIONS, option))
    config = resolve(compose(["+terminal.max_seconds=30"]))
    check_config(config)  # the CLI checks it ...
    assert flatten_config(config)["terminal.max_seconds"] == "30"  # ... and MLflow logs it
    assert "`terminal.max_seconds`" in options.markdown_table()  # ... README / --help show it
    with pytest.raises(ConfigError, match=r"^terminal.max_seconds=0 is not valid; expected: seconds > 0$"):
        check_config(resolve(compose(["+terminal.max_seconds=0"])))


class Finish(TerminalStrategy):
    """A third strategy with its own control tool: the answer is the ``text`` argument."""

    name = "finish"
    control = ControlTool(
        "finish",
        "Finish the turn with your answer.",
        {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        reply="Finished.",
    )

    def rule(self, language: str) -> str:  # a real strategy ships prompts/terminal_finish_<lang>.txt
        return "Call finish(text=...) with your answer."

    def decide(self, message: ChatMessageAssistant) -> Decision:
        for call in message.tool_calls or []:
            if call.function == self.control.name:
                return Decision(True, str((call.arguments or {}).get("text") or "") or None)
        return Decision(not message.tool_calls, message.text or None)


def test_recipe_add_a_terminal_strategy(monkeypatch, demo_store, tmp_path: Path) -> None:
    """One module (here: the class above) + its value in options.Terminal (+ its YAML)."""
    monkeypatch.setitem(terminal.STRATEGIES, "finish", Finish)
    declared = options.BY_PARAM["terminal"]
    monkeypatch.setitem(options.BY_PARAM, "terminal", dataclasses.replace(declared, choices=(*declared.values, "finish")))
    session = fe.build_session(demo_store, "strict")
    script = fe.Script([fe.calls(("finish", {"text": "Creatinine 2.9 mg/dL."}))])
    sample = fe.run_sample(session, script.model(), demo_store, tmp_path, terminal="finish")
    turns: list[dict[str, Any]] = fe.turns_of(sample)
    assert turns[0]["answer"] == "Creatinine 2.9 mg/dL." and turns[0]["end"] == "answered"
    assert turns[0]["calls"] == []  # a control call is steering, not tool use
    offered = script.requests[0][1]
    assert "finish" in offered and "submit" not in offered and "prepare_to_answer" not in offered
    finish_replies = [m for m in sample.messages if m.role == "tool" and m.function == "finish"]
    assert [m.text for m in finish_replies][:1] == ["Finished."]  # its own reply, not submit's
