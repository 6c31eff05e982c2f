"""Shared fixtures for the evaluation tests (``tests/test_eval_*.py``).

* ``build_session(store, semantics)``: a four-turn session in the released JSONL format on
  a real admission of ``store`` (EN + ZH; IL -> DG -> CR with a patient interview -> WU),
  whose gold observations are produced by executing the gold calls with the project's own
  tools in ``semantics`` -- the way the benchmark's gold trajectories were recorded.
* scripted ``mockllm`` helpers whose outputs always carry ``usage`` (offline).
* ``run_sample``: one Inspect eval of one session with the PhysAssist loop.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset
from inspect_ai.log import EvalSample
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    Model,
    ModelOutput,
    ModelUsage,
    get_model,
)
from inspect_ai.tool import ToolCall

from physassist.data import Session
from physassist.ehr.store import EHRStore
from physassist.ehr.tools import ToolContext, WriteSandbox, call_tool, to_api_name
from physassist.turn_records import TurnRecord, stored_turns
from solvers.session_loop import physassist_session
from tasks.physassistbench import session_sample

USAGE = ModelUsage(input_tokens=10, output_tokens=5, total_tokens=15)
_ids = itertools.count()


# -- scripted model outputs ------------------------------------------------------------
def text(content: str) -> ModelOutput:
    return ModelOutput(
        model="mockllm/model",
        choices=[
            ChatCompletionChoice(message=ChatMessageAssistant(content=content), stop_reason="stop")
        ],
        usage=USAGE,
    )


def calls(*specs: tuple[str, dict[str, Any]] | ToolCall, content: str = "") -> ModelOutput:
    """An assistant message with tool calls (dotted names are exposed API-safe)."""
    tool_calls = [
        s
        if isinstance(s, ToolCall)
        else ToolCall(id=f"c{next(_ids)}", function=to_api_name(s[0]), arguments=s[1])
        for s in specs
    ]
    return ModelOutput(
        model="mockllm/model",
        choices=[
            ChatCompletionChoice(
                message=ChatMessageAssistant(content=content, tool_calls=tool_calls),
                stop_reason="tool_calls",
            )
        ],
        usage=USAGE,
    )


def scripted(outputs: Iterable[ModelOutput] | Callable[..., ModelOutput]) -> Model:
    return get_model("mockllm/model", custom_outputs=outputs)


# -- a released-format session on a real admission -----------------------------------------
def _pick_admission(store: EHRStore) -> dict[str, Any]:
    """A (subject, hadm) with creatinine, potassium and sodium labs and a prescription."""
    rows = store.rows(
        """
        SELECT l.subject_id, l.hadm_id, count(*) AS n
        FROM labevents l JOIN d_labitems d USING (itemid)
        WHERE d.label IN ('Creatinine', 'Potassium', 'Sodium') AND l.hadm_id IS NOT NULL
          AND l.hadm_id IN (SELECT hadm_id FROM prescriptions)
        GROUP BY 1, 2 ORDER BY n DESC, 1, 2 LIMIT 1
        """
    )
    assert rows, "store has no admission with creatinine/potassium/sodium and prescriptions"
    pick = rows[0]
    adm = store.rows("SELECT dischtime FROM admissions WHERE hadm_id = ?", [int(pick["hadm_id"])])[
        0
    ]
    drug = store.rows(
        "SELECT drug FROM prescriptions WHERE hadm_id = ? AND drug IS NOT NULL "
        "AND NOT regexp_matches(lower(drug), 'chloride|dextrose|flush|syringe|bag|water|lactated') "
        "GROUP BY drug ORDER BY count(*) DESC, drug LIMIT 1",
        [int(pick["hadm_id"])],
    )[0]["drug"]
    return {
        "subject_id": int(pick["subject_id"]),
        "hadm_id": int(pick["hadm_id"]),
        "current_date": str(adm["dischtime"])[:10],
        "drug": str(drug),
    }


def _first_value(raw: dict[str, Any]) -> str:
    for entry in raw.get("entry") or []:
        res = entry.get("resource") or {}
        q = res.get("valueQuantity") or {}
        if q.get("value") is not None:
            return f"{q['value']} {q.get('unit') or ''}".strip()
        if res.get("valueString"):
            return str(res["valueString"])
    return "not available"


ADHERENCE = {
    "en": {
        "high": "I stopped taking it about a week ago because it upset my stomach.",
        "medium": "I quit it a week or so back, it bothered my stomach.",
        "low": "I stopped those pills a while ago, my tummy didn't like them.",
    },
    "zh": {
        "high": "大概一周前我停药了，因为胃不舒服。",
        "medium": "一个星期前左右不吃了，胃难受。",
        "low": "那个药我早就不吃了，吃了肚子不舒服。",
    },
}


def build_session(
    store: EHRStore, semantics: str = "strict", session_id: str = "eval_fixture_01"
) -> dict[str, Any]:
    """A released-format session whose gold observations come from executing its gold calls."""
    adm = _pick_admission(store)
    sid, hadm, drug = adm["subject_id"], adm["hadm_id"], adm["drug"]
    ctx = ToolContext(
        store=store,
        subject_id=sid,
        hadm_id=hadm,
        current_date=adm["current_date"],  # the cutoff: the end of that date
        semantics=semantics,  # type: ignore[arg-type]
        session_id=session_id,
        sandbox=WriteSandbox(),
    )
    ids = {"subject_id": sid, "hadm_id": hadm}
    plan: list[list[tuple[str, dict[str, Any]]]] = [
        [("Observation.search", {**ids, "code": "Creatinine", "category": "laboratory"})],
        [
            ("Observation.search", {**ids, "code": "Potassium", "category": "laboratory"}),
            ("Observation.search", {**ids, "code": "Sodium", "category": "laboratory"}),
        ],
        [
            ("MedicationRequest.search", {**ids, "medication": drug}),
            (
                "patient.get_medication_adherence",
                {"subject_id": sid, "session_id": session_id, "drug": drug},
            ),
        ],
        [
            (
                "MedicationRequest.create",
                {
                    "subject_id": sid,
                    "medication": drug,
                    "dose": "5 mg",
                    "route": "oral",
                    "frequency": "BID",
                    "indication": "restart",
                },
            )
        ],
    ]
    answer_list: list[list[dict[str, Any]]] = []
    answer_list_zh: list[list[dict[str, Any]]] = []
    raws: list[list[dict[str, Any]]] = []
    for turn_calls in plan:
        items, items_zh, turn_raws = [], [], []
        for idx, (name, args) in enumerate(turn_calls):
            if name.startswith("patient."):
                obs = {
                    "patient_response": ADHERENCE["en"]["high"],
                    "patient_responses_all_literacy": dict(ADHERENCE["en"]),
                }
                obs_zh = {
                    "patient_response": ADHERENCE["zh"]["high"],
                    "patient_responses_all_literacy": dict(ADHERENCE["zh"]),
                }
            else:
                obs = call_tool(ctx, name, dict(args))
                obs_zh = obs
            turn_raws.append(obs)
            item = {
                "action": {"name": name, "arguments": args},
                "observation": obs,
                "dependency_list": [],
                "idx": idx,
            }
            items.append(item)
            items_zh.append({**copy.deepcopy(item), "observation": obs_zh})
        answer_list.append(items)
        answer_list_zh.append(items_zh)
        raws.append(turn_raws)
    cr, k, na = _first_value(raws[0][0]), _first_value(raws[1][0]), _first_value(raws[1][1])
    answers = [
        f"Creatinine: {cr} (latest).",
        f"Potassium {k}; sodium {na}.",
        f"{drug} is prescribed, but the patient stopped taking it a week ago (stomach upset): non-adherent.",
        f"Ordered {drug} 5 mg oral BID.",
    ]
    answers_zh = [
        f"肌酐：{cr}（最近一次）。",
        f"血钾 {k}；血钠 {na}。",
        f"已开具{drug}，但患者一周前因胃部不适自行停药：不依从。",
        f"已下医嘱：{drug} 5 mg 口服 每日两次。",
    ]
    for t in range(4):
        n = len(answer_list[t])
        for items, ans in ((answer_list, answers[t]), (answer_list_zh, answers_zh[t])):
            items[t].append(
                {
                    "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
                    "observation": ans,
                    "dependency_list": list(range(n)),
                    "idx": n,
                }
            )
    tasks = [
        "Creatinine?",
        "And the potassium and sodium?",
        f"Is she actually taking the {drug}?",
        f"Restart {drug} 5 mg twice daily.",
    ]
    tasks_explicit = [
        "What is the creatinine?",
        "What are the potassium and sodium levels?",
        f"Is the patient taking the prescribed {drug}? Ask the patient.",
        f"Restart {drug} 5 mg twice daily.",
    ]
    tasks_zh = [
        "肌酐？",
        "那血钾和血钠呢？",
        f"她真的在吃{drug}吗？",
        f"恢复{drug} 5 mg 每日两次。",
    ]
    tasks_zh_explicit = [
        "肌酐是多少？",
        "血钾和血钠是多少？",
        f"患者是否在服用{drug}？请询问患者。",
        f"恢复{drug} 5 mg 每日两次。",
    ]
    rubrics = [
        [
            "The answer states the creatinine value.",
            "The answer gives the unit.",
            "The answer is concise.",
        ],
        [
            "The answer states the potassium value.",
            "The answer states the sodium value.",
            "The answer gives units.",
            "The answer says whether they are normal.",
        ],
        [
            "The answer says the drug is prescribed.",
            "The answer says the patient stopped taking it.",
            "The answer gives the reason (stomach upset).",
            "The answer calls this non-adherence.",
            "The answer does not invent data.",
        ],
        [
            "A MedicationRequest for the drug was created.",
            "The dose is 5 mg.",
            "The route is oral.",
            "The frequency is BID.",
        ],
    ]
    rubrics_zh = [[f"[zh] {r}" for r in turn] for turn in rubrics]
    messages: list[Any] = []
    messages_zh: list[Any] = []
    for t in range(4):
        if t:
            messages.append("=" * 60)
        messages += [
            {"role": "user", "content": tasks[t]},
            {"role": "assistant", "content": answers[t]},
        ]
        messages_zh += [
            {"role": "user", "content": tasks_zh[t]},
            {"role": "assistant", "content": answers_zh[t]},
        ]
    from physassist.ehr.tools import tool_schemas

    return {
        "id": f"physassistbench_MedRecon_med_safety_{session_id}_L2",
        "env_info": f"session_id: {session_id}\nCurrent date: {adm['current_date']}. Patient is a 60-year-old F",
        "tools": tool_schemas(),
        "tasks": tasks,
        "tasks_en": tasks,
        "tasks_explicit": tasks_explicit,
        "tasks_en_explicit": tasks_explicit,
        "tasks_zh": tasks_zh,
        "tasks_zh_explicit": tasks_zh_explicit,
        "messages": messages,
        "messages_en": messages,
        "messages_zh": messages_zh,
        "answer_list": answer_list,
        "answer_list_zh": answer_list_zh,
        "turn_types": [False, True, True, True],
        "task_types": [
            "Information Lookup",
            "Data Gathering",
            "Clinical Reasoning",
            "Write/Update",
        ],
        "turn_subtypes": [None, "PE", "NA", None],
        "tool_sources": ["ehr", "ehr", "mixed", "write"],
        "clinical_task_domain": "MedRecon",
        "clinical_scenario": "med_safety",
        "subject_id": sid,
        "hadm_id": hadm,
        "session_id": session_id,
        "difficulty_level": 2,
        "current_date": adm["current_date"],
        "rubrics": rubrics,
        "rubrics_zh": rubrics_zh,
        "persona_config": {
            "health_literacy": "low",
            "adherence": "poor",
            "anxiety_level": "high",
            "info_completeness": "critical_withheld",
        },
        "tool_set": "fhir",
    }


# -- running one session through the loop ---------------------------------------------
def run_sample(
    session: dict[str, Any],
    model: Model | str,
    store: EHRStore,
    log_dir: Path,
    *,
    model_roles: dict[str, Model] | None = None,
    scorer: Any = None,
    **settings: Any,
) -> EvalSample:
    """Evaluate ``session`` once with the PhysAssist loop and return the logged sample."""
    language = settings.get("language", "en")
    query = settings.get("query", "implicit")
    sample = session_sample(Session.model_validate(session), language, query, dict(settings))
    task = Task(
        dataset=MemoryDataset([sample]),
        solver=physassist_session(ehr_source=str(store.path), **settings),
        scorer=scorer,
    )
    log = eval(
        task,
        model=model,
        model_roles=model_roles,
        log_dir=str(log_dir),
        display="none",
        fail_on_error=True,
    )[0]
    assert log.status == "success", log.error
    assert log.samples, "no sample logged"
    return log.samples[0]


def turns_of(sample: EvalSample) -> list[TurnRecord]:
    return stored_turns(sample.store)


class Script:
    """A scripted assistant for ``mockllm``: returns ``steps`` in order (then ``default``)
    and records every request (messages, offered tool names, tool choice)."""

    def __init__(
        self, steps: Iterable[ModelOutput | Callable[..., ModelOutput]], default: str = "Done."
    ) -> None:
        self.steps = list(steps)
        self.default = default
        self.requests: list[tuple[list[Any], list[str], Any]] = []

    def __call__(
        self, input: list[Any], tools: list[Any], tool_choice: Any, config: Any
    ) -> ModelOutput:
        self.requests.append((list(input), [t.name for t in tools], tool_choice))
        if not self.steps:
            return text(self.default)
        step = self.steps.pop(0)
        return step(input) if callable(step) else step

    def model(self) -> Model:
        return scripted(self)
