"""Which tools the assistant is offered in a turn (the ``menu`` ablation).

* ``on``: every tool of the session's own ``tools`` list (the paper's setting).
* ``off``: no tools at all; the model answers from the conversation alone.
* ``scenario``: the session's tools restricted to the scenario's families (each tool's schema
  entry names its scenarios: ``physassist.ehr.tools.schemas``), so the menu is smaller but does
  not reveal the turn's gold tools.
* ``gold``: only the tools the gold trajectory of this turn calls (an upper bound on tool
  selection).

Control tools (``prepare_to_answer``, ``submit``) are added or removed by the terminal
strategy, not here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from physassist.ehr.tools.schemas import SCHEMAS
from physassist.vocab import SCENARIOS

from .terminal import CONTROL_TOOLS


def scenario_tools(scenario: str) -> frozenset[str]:
    """The tools of a scenario's families (from the tools' schema entries)."""
    return frozenset(n for n, s in SCHEMAS.items() if scenario in s.scenarios)


def schema_name(schema: dict[str, Any]) -> str:
    """Dotted tool name of an OpenAI function schema (``{"type": "function", "function": {...}}``
    or the bare function object)."""
    fn = schema.get("function", schema)
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool schema without a name: {str(schema)[:120]}")
    return name


def menu_schemas(
    menu: str,
    session_tools: list[dict[str, Any]],
    *,
    scenario: str | None,
    gold_names: Iterable[str] = (),
) -> list[dict[str, Any]]:
    """The session's tool schemas offered under ``menu`` (control tools excluded)."""
    data_tools = [s for s in session_tools if schema_name(s) not in CONTROL_TOOLS]
    if menu == "on":
        return data_tools
    if menu == "off":
        return []
    if menu == "scenario":
        if scenario not in SCENARIOS:
            raise ValueError(
                f"menu='scenario' needs a known clinical_scenario, got {scenario!r}; "
                f"valid: {', '.join(SCENARIOS)}"
            )
        allowed = scenario_tools(scenario)
        return [s for s in data_tools if schema_name(s) in allowed]
    wanted = set(gold_names)
    return [s for s in data_tools if schema_name(s) in wanted]


def control_schema(session_tools: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The session's own schema for a control tool (e.g. ``prepare_to_answer``), if any."""
    for s in session_tools:
        if schema_name(s) == name:
            return s
    return None
