"""The offline generator: ``physassist-generate generator=scripted`` (``conf/generator/``).

``physassist-generate/scripted`` answers every generation agent (by the ``[physassist-generate:
kind]`` line of its prompt) from the prompt's INPUT JSON, deterministically, with no key and no
network, and always reports usage (so nothing fetches a tokenizer): the pipeline end to end on
the sample, for a dry run, a demo and the tests, as ``model=explorer`` is for the eval.
``+generator.args.fail=<mode>`` makes one agent misbehave (``fail_times`` times each, default
always; several modes as a list or comma-separated) to drive each rejection path:
``gate1_rules`` (IL with two calls), ``gate1_llm``, ``gate2`` (a lab that does not exist),
``gate3``, ``gate3_error`` (checker replies non-JSON), ``drift`` (off-topic rewrite),
``rubric`` (a value not in the results), ``planner`` (three turns instead of four),
``crash`` (the answer call raises, as a provider outage would).
"""

from __future__ import annotations

import json
import re
from typing import Any

from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    ModelAPI,
    ModelOutput,
    ModelUsage,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

#: The model API's name: the generator is ``physassist-generate/scripted``.
API = "physassist-generate"
_KIND = re.compile(r"^\[physassist-generate: (\w+)\]")


def _content(message: ChatMessage) -> str:
    return message.text if hasattr(message, "text") else str(message.content)


class ScriptedGenerator(ModelAPI):
    """Every agent's reply, derived from its prompt's input; ``fail`` modes misbehave on purpose."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig | None = None,
        fail: str | list[str] | None = None,
        fail_times: int = 10**9,
        **_: Any,
    ) -> None:
        super().__init__(model_name, base_url, api_key, [], config or GenerateConfig())
        listed = fail if isinstance(fail, list | tuple) else str(fail or "").split(",")
        modes = [str(m).strip() for m in listed if str(m).strip()]
        self.fail_left = dict.fromkeys(modes, int(fail_times))
        self.calls: dict[str, int] = {}

    def _failing(self, mode: str) -> bool:
        if self.fail_left.get(mode, 0) <= 0:
            return False
        self.fail_left[mode] -= 1
        return True

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> ModelOutput:
        prompt = _content(input[-1])
        m = _KIND.match(prompt)
        if not m:
            raise ValueError(f"{API}/scripted: not a generation prompt: {prompt[:80]!r}")
        kind = m.group(1)
        self.calls[kind] = self.calls.get(kind, 0) + 1
        payload = json.loads(prompt.split("\nINPUT:\n", 1)[1])
        reply = getattr(self, f"_{kind}")(payload)
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return ModelOutput(
            model=self.model_name,
            choices=[
                ChatCompletionChoice(message=ChatMessageAssistant(content=text), stop_reason="stop")
            ],
            usage=ModelUsage(
                input_tokens=len(prompt) // 4,
                output_tokens=len(text) // 4,
                total_tokens=len(prompt) // 4 + len(text) // 4,
            ),
        )

    async def count_text_tokens(self, text: str) -> int:
        return len(text) // 4

    # -- agents ------------------------------------------------------------------------------
    def _planner(self, p: dict[str, Any]) -> dict[str, Any]:
        labs = [lab["label"] for lab in p["snapshot"]["labs"] if lab["n_results"] > 0]
        labs = labs or ["Creatinine"]
        patient_left = bool(p["patient_available"])
        turns = []
        for t, kind in enumerate(p["arc"]):
            a, b = labs[t % len(labs)], labs[(t + 1) % len(labs)]
            if kind == "Write/Update":
                turns.append(
                    {
                        "topic": f"repeat {a}",
                        "tool_source": "write",
                        "entities": [a],
                        "tool_hint": f"ServiceRequest.create service_type=Repeat {a}",
                    }
                )
                continue
            source = "ehr"
            if patient_left and t >= 1 and kind != "Information Lookup":
                source, patient_left = "mixed", False
            hint = f"Observation.search code={a}"
            entities = [a]
            if kind == "Data Gathering":
                hint += f"; Observation.search code={b}"
                entities.append(b)
            if source == "mixed":
                hint += "; patient.get_symptom_history query=current symptoms"
            if self._failing("gate2"):
                hint = "Observation.search code=Unobtainium level"
            turns.append(
                {
                    "topic": f"{kind} on {a}",
                    "tool_source": source,
                    "entities": entities,
                    "tool_hint": hint,
                }
            )
        if self._failing("planner"):
            turns = turns[:3]
        return {
            "clinical_situation": f"{p['snapshot']['age']}-year-old under review",
            "turns": turns,
        }

    def _question(self, p: dict[str, Any]) -> dict[str, Any]:
        e = p["entities"]
        q = {
            "Information Lookup": f"What is the latest {e[0]}?",
            "Data Gathering": f"Pull the latest {' and '.join(e)}.",
            "Clinical Reasoning": f"Should we worry about the {e[0]}?",
            "Write/Update": f"Order a repeat {e[0]}.",
        }[p["task_type"]]
        if p["tool_source"] == "mixed":
            q = q.rstrip(".?") + ", and ask about symptoms."
        return {"question": q}

    def _rewrite(self, p: dict[str, Any]) -> dict[str, Any]:
        q = p["question"]
        if self._failing("drift"):
            return {"question": "How was the weekend?"}
        if p["subtype"] == "PE":
            return {"question": q.rstrip(".?").split()[-1] + "?"}
        lead = {"NA": "And ", "AE": "Given all that, "}[p["subtype"]]
        return {"question": lead + q[0].lower() + q[1:]}

    def _tool_planner(self, p: dict[str, Any]) -> dict[str, Any]:
        actions = []
        for part in p["tool_hint"].split(";"):
            name, _, kv = part.strip().partition(" ")
            key, _, value = kv.partition("=")
            args: dict[str, Any] = {"subject_id": p["subject_id"], key: value}
            if name == "Observation.search":
                args.update(hadm_id=p["hadm_id"], _count=3)
            elif name.startswith("patient."):
                args["session_id"] = p["session_id"]
            elif name == "ServiceRequest.create":
                args["priority"] = "routine"
            actions.append({"name": name, "arguments": args})
        if self._failing("gate1_rules"):
            actions = actions + actions
        return {"actions": actions}

    def _plan_check(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"valid": not self._failing("gate1_llm"), "reason": "scripted review"}

    def _patient(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"patient_response": "I have been more tired and a bit short of breath this week."}

    def _answer(self, p: dict[str, Any]) -> dict[str, Any]:
        if self._failing("crash"):
            raise RuntimeError("scripted provider outage")
        facts = []
        for e in p["evidence"]:
            if e["values"]:
                v = e["values"][0]
                facts.append(f"{v['label']}: {v['value']} {v['unit']}".strip())
            elif e["tool"].startswith("patient."):
                facts.append("Patient reports tiredness and breathlessness")
            elif e["tool"] == "ServiceRequest.create":
                facts.append(f"Ordered {e['arguments'].get('service_type')} (routine)")
        kind = p["task_type"]
        if kind == "Clinical Reasoning":
            return {
                "answer": f"Worth attention: {'; '.join(facts)}. This rests on the newest result."
            }
        if kind == "Information Lookup":
            return {"answer": facts[0]}
        return {"answer": "\n".join(f"- {f}" for f in facts[:3])}

    def _clinical_check(self, p: dict[str, Any]) -> Any:
        if self._failing("gate3_error"):
            return "sorry, cannot review"
        ok = not self._failing("gate3")
        return {
            "verdict": "pass" if ok else "fail",
            "hallucination": not ok,
            "contradiction": False,
            "safety": False,
            "incomplete": False,
            "reason": "scripted review",
        }

    def _rubric(self, p: dict[str, Any]) -> dict[str, Any]:
        low, high = p["item_count"]
        items: list[dict[str, Any]] = []
        for w in p["write_calls"]:
            st = w["arguments"]["service_type"]
            items += [
                {
                    "text": f"Places the {w['name']} order",
                    "check": {"kind": "write_call", "tool": w["name"]},
                },
                {
                    "text": f"Orders {st}",
                    "check": {
                        "kind": "write_arg",
                        "tool": w["name"],
                        "field": "service_type",
                        "accepted": [st],
                    },
                },
                {"text": "Says the order was placed", "check": _concept("Ordered")},
            ]
        for e in p["evidence"]:
            for v in e["values"][:1]:
                value = "999.9" if self._failing("rubric") else v["value"]
                items += [
                    {
                        "text": f"States {v['label']} {v['value']} {v['unit']}",
                        "check": {
                            "kind": "value",
                            "label": v["label"],
                            "value": float(value),
                            "unit": v["unit"],
                        },
                    },
                    {"text": f"Names {v['label']}", "check": _concept(v["label"])},
                    {"text": f"Gives the number {v['value']}", "check": _concept(v["value"])},
                ]
            if e["tool"].startswith("patient."):
                items.append(
                    {"text": "Reports what the patient said", "check": _concept("Patient reports")}
                )
        while len(items) < low:
            items.append(
                {
                    "text": "Answers in the requested format",
                    "check": _concept(p["answer"].split()[1].strip(":;-")),
                }
            )
        return {"items": items[:high]}

    def _translate(self, p: dict[str, Any]) -> dict[str, Any]:
        def zh(v: Any) -> Any:
            return [zh(x) for x in v] if isinstance(v, list) else f"（译）{v}"

        return {k: zh(v) for k, v in p.items()}


def _concept(term: str) -> dict[str, Any]:
    return {"kind": "concept", "any": {"en": [term], "zh": [term]}}


@modelapi(name=API)
def scripted_generator() -> type[ModelAPI]:
    return ScriptedGenerator
