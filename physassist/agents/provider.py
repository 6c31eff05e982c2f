"""The ``physassist`` model API: ``physassist/oracle``, ``perturbed``, ``baseline``,
``explorer``, ``empty``, ``no_tools``.

Inspect resolves ``<api>/<model>`` by the API's unqualified registry name, so one API
named ``physassist`` serves both agents, chosen by the model name. Token counts use a local
estimate (``count_text_tokens``), so nothing downloads a tokenizer.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from ._common import estimate_tokens
from .baseline import BaselineAgent
from .explorer import ExplorerAgent
from .floors import EmptyAgent, NoToolsAgent
from .oracle import OracleAgent
from .perturbed import PerturbedAgent

AGENTS: dict[
    str,
    type[OracleAgent | BaselineAgent | ExplorerAgent | EmptyAgent | NoToolsAgent | PerturbedAgent],
] = {
    "oracle": OracleAgent,
    "baseline": BaselineAgent,
    "explorer": ExplorerAgent,
    "empty": EmptyAgent,
    "no_tools": NoToolsAgent,
    "perturbed": PerturbedAgent,
}


class PhysAssistAgents(ModelAPI):
    """Offline agents: no key, no network, deterministic."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        **model_args: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        agent = AGENTS.get(model_name)
        if agent is None:
            raise ValueError(
                f"physassist/{model_name} is not an offline agent; valid: "
                + ", ".join(f"physassist/{n}" for n in AGENTS)
            )
        self.agent = agent(model_name, **model_args)

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        return await self.agent.act(input, tools, tool_choice)

    async def count_text_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def max_connections(self) -> int:
        return 32


@modelapi(name="physassist")
def physassist_agents() -> type[ModelAPI]:
    return PhysAssistAgents
