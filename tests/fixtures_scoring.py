"""Hand-made session and turn records for the scorer and metric tests.

The session follows the released JSONL shape (docs/data.md#the-released-session-format) plus the
project's `rubric_checks`; values are invented, not MIMIC-IV data.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from inspect_ai.model import Model, ModelOutput, ModelUsage, get_model

from physassist.turn_records import CallRecord, TurnRecord
from scorers.judgement import TurnInput
from scorers.session_view import SessionView

SEP = "=" * 60


def _obs_bundle(code: str, values: list[tuple[float, str, str]]) -> dict[str, Any]:
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(values),
        "entry": [
            {
                "resource": {
                    "resourceType": "Observation",
                    "code": {"text": code},
                    "valueQuantity": {"value": v, "unit": u},
                    "effectiveDateTime": when,
                }
            }
            for v, u, when in values
        ],
    }


def make_session(
    session_id: str = "s1", scenario: str = "med_safety", tier: int = 2
) -> dict[str, Any]:
    """A 4-turn med-safety session: creatinine (IL), K + eGFR (DG), reasoning (CR), order (WU)."""
    answers = [
        "Creatinine: 1.4 mg/dL (high) on 2150-05-24.",
        "Potassium 5.1 mmol/L (mild hyperkalemia); eGFR 48 mL/min/1.73m2.",
        "Reduce the apixaban dose given renal function and bleeding risk; avoid NSAIDs.",
        "Ordered apixaban 2.5 mg oral BID.",
    ]
    questions = ["Creatinine?", "And potassium?", "Does it change the apixaban?", "Order it."]
    questions_zh = ["肌酐？", "钾呢？", "这会影响阿哌沙班吗？", "开医嘱。"]
    answer_list = [
        [
            {
                "action": {
                    "name": "Observation.search",
                    "arguments": {"subject_id": 1, "code": "Creatinine"},
                },
                "observation": _obs_bundle("Creatinine", [(1.4, "mg/dL", "2150-05-24")]),
                "dependency_list": [],
                "idx": 0,
            },
            {
                "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
                "observation": answers[0],
                "dependency_list": [0],
                "idx": 1,
            },
        ],
        [
            {
                "action": {
                    "name": "Observation.search",
                    "arguments": {"subject_id": 1, "code": "Potassium"},
                },
                "observation": _obs_bundle("Potassium", [(5.1, "mEq/L", "2150-05-24")]),
                "dependency_list": [],
                "idx": 0,
            },
            {
                "action": {"name": "Condition.search", "arguments": {"subject_id": 1}},
                "observation": {"resourceType": "OperationOutcome", "issue": []},
                "dependency_list": [],
                "idx": 1,
            },
            {
                "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
                "observation": answers[1],
                "dependency_list": [0, 1],
                "idx": 2,
            },
        ],
        [
            {
                "action": {
                    "name": "MedicationRequest.search",
                    "arguments": {"subject_id": 1, "medication": "Apixaban"},
                },
                "observation": {
                    "resourceType": "Bundle",
                    "type": "searchset",
                    "total": 0,
                    "entry": [],
                },
                "dependency_list": [],
                "idx": 0,
            },
            {
                "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
                "observation": answers[2],
                "dependency_list": [0],
                "idx": 1,
            },
        ],
        [
            {
                "action": {
                    "name": "MedicationRequest.create",
                    "arguments": {
                        "subject_id": 1,
                        "medication": "Apixaban",
                        "dose": "2.5 mg",
                        "route": "oral",
                        "frequency": "BID",
                    },
                },
                "observation": {
                    "resourceType": "MedicationRequest",
                    "id": "MR-sim-1",
                    "_simulated": True,
                },
                "dependency_list": [],
                "idx": 0,
            },
            {
                "action": {"name": "prepare_to_answer", "arguments": {"answer_type": "tool"}},
                "observation": answers[3],
                "dependency_list": [0],
                "idx": 1,
            },
        ],
    ]
    answer_list_zh = copy.deepcopy(answer_list)
    answer_list_zh[0][-1]["observation"] = "肌酐：1.4 mg/dL（偏高）。"
    messages: list[Any] = []
    for q, a in zip(questions, answers, strict=True):
        messages += [{"role": "user", "content": q}, {"role": "assistant", "content": a}, SEP]
    rubrics = [
        ["States creatinine 1.4 mg/dL", "Flags it as high", "Gives the date"],
        ["States potassium 5.1 mmol/L", "States eGFR 48", "Mentions hyperkalemia risk", "Concise"],
        [
            "Recommends dose reduction",
            "Does not recommend NSAIDs",
            "Mentions bleeding risk",
            "Cites renal function",
            "Clear",
        ],
        ["Orders apixaban", "Dose 2.5 mg", "Route oral", "Frequency BID"],
    ]
    checks = [
        [
            {
                "kind": "value",
                "label": "Creatinine",
                "value": 1.4,
                "unit": "mg/dL",
                "tolerance": 0.05,
            },
            {"kind": "concept", "any": {"en": ["high", "elevated"], "zh": ["偏高", "升高"]}},
            None,
        ],
        [
            {
                "kind": "value",
                "label": "Potassium",
                "value": 5.1,
                "unit": "mmol/L",
                "tolerance": 0.02,
            },
            {"kind": "value", "label": "eGFR", "value": 48, "unit": None, "tolerance": 0.05},
            {"kind": "concept", "any": {"en": ["hyperkalemia", "hyperkalaemia"], "zh": ["高钾"]}},
            None,
        ],
        [
            {
                "kind": "concept",
                "any": {"en": ["reduce", "lower dose", "dose reduction"], "zh": ["减量"]},
            },
            {
                "kind": "forbidden",
                "any": {"en": ["NSAID", "NSAIDs", "ibuprofen"], "zh": ["布洛芬"]},
            },
            {"kind": "concept", "any": {"en": ["bleeding"], "zh": ["出血"]}},
            {"kind": "concept", "any": {"en": ["creatinine", "renal", "kidney"], "zh": ["肾"]}},
            None,
        ],
        [
            {"kind": "write_call", "tool": "MedicationRequest.create"},
            {
                "kind": "write_arg",
                "tool": "MedicationRequest.create",
                "field": "dose",
                "accepted": ["2.5 mg"],
            },
            {
                "kind": "write_arg",
                "tool": "MedicationRequest.create",
                "field": "route",
                "accepted": ["oral", "PO"],
            },
            {
                "kind": "write_arg",
                "tool": "MedicationRequest.create",
                "field": "frequency",
                "accepted": ["BID", "twice daily"],
            },
        ],
    ]
    return {
        "id": session_id,
        "env_info": "session_id: x\nCurrent date: 2150-05-25. Patient is a 70-year-old F",
        "subject_id": 1,
        "hadm_id": 2,
        "session_id": f"physassistbench_{scenario}_{session_id}",
        "current_date": "2150-05-25",
        "clinical_scenario": scenario,
        "difficulty_level": tier,
        "tasks": questions,
        "tasks_en": questions,
        "tasks_explicit": questions,
        "tasks_en_explicit": questions,
        "tasks_zh": questions_zh,
        "task_types": [
            "Information Lookup",
            "Data Gathering",
            "Clinical Reasoning",
            "Write/Update",
        ],
        "turn_subtypes": [None, "PE", "AE", None],
        "tool_sources": ["ehr", "ehr", "patient", "write"],
        "messages": messages,
        "messages_en": messages,
        "messages_zh": [m for m in messages if isinstance(m, dict)],
        "answer_list": answer_list,
        "answer_list_zh": answer_list_zh,
        "rubrics": rubrics,
        "rubrics_zh": [[f"(zh) {i}" for i in items] for items in rubrics],
        "rubric_checks": checks,
        "tools": [],
    }


def sample_metadata(
    session: dict[str, Any], language: str = "en", query: str = "implicit"
) -> dict[str, Any]:
    """Sample metadata as the task builds it (ARCHITECTURE.md §6)."""
    return {
        "session": session,
        "language": language,
        "query": query,
        "scenario": session["clinical_scenario"],
        "tier": session["difficulty_level"],
        "task_types": session["task_types"],
        "subtypes": session["turn_subtypes"],
        "tool_sources": session["tool_sources"],
    }


def call(
    name: str, arguments: dict[str, Any] | None = None, raw: dict[str, Any] | None = None
) -> dict[str, Any]:
    raw = (
        raw
        if raw is not None
        else {"resourceType": "Bundle", "type": "searchset", "total": 0, "entry": []}
    )
    return {"name": name, "arguments": arguments or {}, "raw": raw, "text": json.dumps(raw)}


def gold_records(session: dict[str, Any], language: str = "en") -> list[dict[str, Any]]:
    """Turn records of an assistant that replays the gold trajectory and gold answers."""
    key = "answer_list_zh" if language == "zh" else "answer_list"
    records = []
    for t, items in enumerate(session[key]):
        calls = [
            call(i["action"]["name"], i["action"]["arguments"], i["observation"])
            for i in items[:-1]
        ]
        calls = [
            c if isinstance(c["raw"], dict) else {**c, "raw": {"text": c["raw"]}} for c in calls
        ]
        records.append(
            {
                "turn": t,
                "question": session["tasks_zh" if language == "zh" else "tasks_en"][t],
                "answer": items[-1]["observation"],
                "end": "answered",
                "calls": calls,
                "tokens_in": 100 + t,
                "tokens_out": 10 + t,
                "seconds": 0.5,
            }
        )
    return records


def turn_input(
    session: dict[str, Any],
    turn: int,
    answer: str,
    calls: list[dict[str, Any]] | None = None,
    language: str = "en",
    history: list[dict[str, str]] | None = None,
) -> TurnInput:
    view = SessionView(session)
    record = TurnRecord(
        turn,
        session["tasks_en"][turn],
        answer,
        calls=tuple(CallRecord.from_stored(c) for c in calls or ()),
    )
    return TurnInput(
        session=view,
        language=language,
        record=record,
        items=view.rubric(turn, language),
        checks=view.rubric_checks(turn),
        history=history or [],
    )


USAGE = ModelUsage(input_tokens=50, output_tokens=20, total_tokens=70)


def scripted(content: str) -> ModelOutput:
    """A scripted grader reply that carries usage (mockllm goes online without it)."""
    out = ModelOutput.from_content(model="mockllm/model", content=content)
    out.usage = USAGE
    return out


def verdict(passes: list[Any], reasons: list[Any] | None = None) -> str:
    reasons = reasons or [f"reason {i}" for i in range(1, len(passes) + 1)]
    return json.dumps(
        {
            "items": [
                {"id": i, "pass": p, "reason": r}
                for i, (p, r) in enumerate(zip(passes, reasons, strict=True), 1)
            ]
        }
    )


def grader(replies: list[str]) -> Model:
    """A mockllm grader that answers with `replies` in order (fresh instance, not memoized)."""
    return get_model("mockllm/model", custom_outputs=[scripted(r) for r in replies], memoize=False)
