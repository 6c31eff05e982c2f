"""An LLM patient for the interview tools (``patient=live``), Inspect model role ``patient``.

Grounding: the session's ``patient_model`` (the synthetic cohort's patient health model,
PHM) when present; for released data without one, a model derived from the record
(diagnoses and medications retrieved through the session's own EHR tools) and the gold
patient answers. The persona comes from the PHM or ``persona_config``.

``critical_withheld``: medicines the patient does not take as prescribed (adherence poor,
never filled, stopped, ran out, or flagged critical) are hidden from the facts the patient
is given, and the patient is told to claim adherence, until the assistant asks
``patient.get_medication_adherence`` about that medicine by name; from then on the medicine
is revealed for the rest of the session.

Consistency: each sample keeps the patient's own conversation (questions and answers) and
sends it with every new question, so later answers agree with earlier ones.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.from_thread
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
)

from physassist.calls import EndpointDown
from physassist.faults import SystemFault, describe

from ..prompting import prompt_json, prompt_text
from .replay import normalise
from .texts import PROMPTS, miss_answer

NON_ADHERENT = frozenset(
    {"poor", "never_filled", "ran_out", "self_discontinued", "not_taking", "stopped"}
)
_NAME_KEYS = ("drug", "medication", "name", "drug_name")
PATIENT_CONFIG = GenerateConfig(temperature=0.3, max_tokens=400)


def _drug_name(node: dict[str, Any]) -> str | None:
    for key in _NAME_KEYS:
        value = node.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _is_bad(value: Any) -> bool:
    """An adherence or status text meaning the medicine is not taken as prescribed."""
    return isinstance(value, str) and normalise(value).replace(" ", "_") in NON_ADHERENT


def _is_non_adherent(node: dict[str, Any]) -> bool:
    if node.get("critical_flag") or node.get("critical") is True:
        return True
    return any(_is_bad(node.get(key)) for key in ("adherence", "current_status", "status"))


def critical_medicines(model: Any) -> dict[str, set[str]]:
    """Medicines the patient does not take as prescribed, with the names they go by.

    Found anywhere in the patient model: medication nodes (``drug``/``name`` with poor
    adherence, a non-taking status or ``critical_flag``; aliases from ``names`` and
    ``patient_term``) and ``{"adherence": {drug: "poor"}}`` maps."""
    found: dict[str, set[str]] = {}

    def add(name: str, aliases: set[str]) -> None:
        for known in found:
            if normalise(known) == normalise(name):
                found[known] |= aliases
                return
        found[name] = {normalise(name)} | aliases

    def visit(obj: Any, parent: str = "") -> None:
        if isinstance(obj, dict):
            name = _drug_name(obj)
            if name and _is_non_adherent(obj):
                aliases = {normalise(a) for a in obj.get("names") or [] if isinstance(a, str)}
                term = obj.get("patient_term")
                if isinstance(term, dict):
                    aliases |= {normalise(v) for v in term.values() if isinstance(v, str)}
                add(name, aliases)
            for key, value in obj.items():
                if not name and "adherence" in parent and _is_bad(value):
                    add(key, set())  # {"adherence": {drug: "poor"}}
                visit(value, str(key).lower())
        elif isinstance(obj, list):
            for value in obj:
                visit(value, parent)

    visit(model)
    return found


def critical_drugs(model: Any) -> list[str]:
    """Names of the medicines the patient does not take as prescribed."""
    return list(critical_medicines(model))


def redact(model: Any, hidden: set[str]) -> Any:
    """A copy of ``model`` without the nodes or map entries of the ``hidden`` medicines."""
    if not hidden:
        return model
    if isinstance(model, dict):
        kept = {}
        for key, value in model.items():
            if normalise(key) in hidden:
                continue
            if isinstance(value, dict) and normalise(_drug_name(value) or "") in hidden:
                continue
            kept[key] = redact(value, hidden)
        return kept
    if isinstance(model, list):
        return [
            redact(v, hidden)
            for v in model
            if not (isinstance(v, dict) and normalise(_drug_name(v) or "") in hidden)
        ]
    return model


def derived_patient_model(
    persona: dict[str, Any] | None,
    gold_answers: list[dict[str, Any]],
    record: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Patient model for released sessions without a PHM: the persona, what the record says
    (diagnoses, medicines) and what the patient said in the gold trajectory."""
    model: dict[str, Any] = {"persona": dict(persona or {})}
    if record:
        model.update(record)
    withholding = (persona or {}).get("info_completeness") == "critical_withheld"
    answers = []
    medications = []
    for item in gold_answers:
        args = item.get("arguments") or {}
        topic = args.get("drug") or args.get("query") or ""
        if item.get("tool") == "patient.get_medication_adherence" and args.get("drug"):
            node = {"drug": args["drug"], "what_i_said": item.get("patient_response")}
            if withholding:  # the gold adherence answer is the truth hidden until asked by name
                node["adherence"] = "poor"
            medications.append(node)
            continue
        answers.append(
            {"question": f"{item.get('tool')} {topic}".strip(), "answer": item.get("patient_response")}
        )
    model["what_the_patient_said_before"] = answers
    if medications:
        model["medication_adherence"] = medications
    return model


class LivePatient:
    """``PatientResponder`` backed by an LLM (role ``patient``), one instance per sample."""

    def __init__(
        self,
        model: Model,
        patient_model: dict[str, Any],
        *,
        persona: dict[str, Any] | None = None,
        language: str = "en",
        literacy: str | None = None,
        seed: int | None = None,
    ) -> None:
        self.model = model
        # the ``patient.seed`` option: runs that differ only in it measure the patient's noise
        self.config = PATIENT_CONFIG.merge(GenerateConfig(seed=seed)) if seed is not None else PATIENT_CONFIG
        self.patient_model = patient_model
        self.persona = dict(persona or patient_model.get("persona") or {})
        self.language = language
        self.literacy = literacy or str(self.persona.get("health_literacy") or "medium")
        self.withholding = self.persona.get("info_completeness") == "critical_withheld"
        self.aliases = critical_medicines(patient_model) if self.withholding else {}
        self.critical = list(self.aliases)
        self.revealed: list[str] = []
        self.history: list[ChatMessage] = []

    # -- prompt -------------------------------------------------------------------------
    def _hidden(self) -> set[str]:
        revealed = {normalise(n) for n in self.revealed}
        return {normalise(n) for n in self.critical if normalise(n) not in revealed}

    def system_prompt(self) -> str:
        rules = prompt_json("rules", self.language, PROMPTS)
        hidden = [n for n in self.critical if normalise(n) in self._hidden()]
        withheld = []
        if hidden:
            withheld.append(rules["withheld"].format(drugs=", ".join(hidden)))
        if self.revealed:
            withheld.append(rules["revealed"].format(drugs=", ".join(self.revealed)))
        literacy_rule = rules.get(f"literacy_{self.literacy}", rules["literacy_medium"])
        facts = redact(self.patient_model, self._hidden())
        if isinstance(facts, dict):
            facts = {k: v for k, v in facts.items() if k != "persona"}
        return prompt_text("system", self.language, PROMPTS).format(
            persona=json.dumps(self.persona, ensure_ascii=False),
            facts=json.dumps(facts, ensure_ascii=False, indent=1, default=str),
            literacy_rule=literacy_rule,
            withheld_rule="\n".join(withheld),
        )

    def question(self, tool: str, arguments: dict[str, Any]) -> str:
        """The assistant's tool call, phrased as a question to the patient."""
        templates = prompt_json("questions", self.language, PROMPTS)
        template = templates.get(tool)
        about = ""
        if arguments.get("drug"):
            about = templates["about_drug"].format(value=arguments["drug"])
        elif arguments.get("query"):
            about = templates["about_query"].format(value=arguments["query"])
        if template is None:
            return str(arguments.get("query") or arguments.get("drug") or tool)
        return template.format(about=about)

    # -- answering ----------------------------------------------------------------------
    def _reveal_for(self, tool: str, arguments: dict[str, Any]) -> None:
        drug = normalise(arguments.get("drug"))
        if tool != "patient.get_medication_adherence" or not drug:
            return
        for name, aliases in self.aliases.items():
            named = any(a and (a == drug or a in drug or drug in a) for a in aliases)
            if named and name not in self.revealed:
                self.revealed.append(name)

    async def arespond(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self._reveal_for(tool, arguments)
        question = ChatMessageUser(content=self.question(tool, arguments))
        messages = [ChatMessageSystem(content=self.system_prompt()), *self.history, question]
        try:
            output = await self.model.generate(messages, config=self.config)
        except EndpointDown:  # the run gave up on the patient's endpoint: it ends
            raise
        except Exception as exc:  # the patient's provider, after Inspect's retries
            raise SystemFault(f"patient model call failed: {describe(exc)}") from exc
        answer = output.completion.strip() or miss_answer(self.language)
        self.history.extend([question, ChatMessageAssistant(content=answer)])
        return {"patient_response": answer, "_live": True, "_revealed": list(self.revealed)}

    def respond(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Synchronous entry for the EHR layer, which calls it from a worker thread."""
        return anyio.from_thread.run(self.arespond, tool, arguments)
