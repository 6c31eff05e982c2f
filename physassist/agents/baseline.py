"""``physassist/baseline``: a deterministic keyword agent, clearly worse than a real model.

Per turn it maps the physician's question to ONE plausible tool call by keywords (lab
names, medicines, imaging, patient-interview words; EN and ZH), then answers with the first
lines of what it retrieved, without interpretation. It resolves no implicit reference
beyond the words in the current question and never writes orders. It needs no session
data: subject and admission come from the opening message.
"""

from __future__ import annotations

import re
from typing import Any

from inspect_ai.model import ChatMessage, ModelOutput
from inspect_ai.tool import ToolChoice, ToolInfo

from physassist.ehr.tools import to_api_name

from ._common import Conversation, finish, offered, read_conversation, reply

# (keywords, lab label) -- first match wins; ZH keywords included
LABS: list[tuple[tuple[str, ...], str]] = [
    (("creatinine", "肌酐", "renal", "kidney", "肾"), "Creatinine"),
    (("potassium", "血钾", "钾", " k "), "Potassium"),
    (("sodium", "血钠", "钠"), "Sodium"),
    (("glucose", "sugar", "血糖"), "Glucose"),
    (("hemoglobin", "haemoglobin", "hgb", "血红蛋白"), "Hemoglobin"),
    (("platelet", "血小板"), "Platelet Count"),
    (("white", "wbc", "白细胞", "infection", "感染"), "White Blood Cells"),
    (("lactate", "乳酸"), "Lactate"),
    (("inr", "coag", "凝血"), "INR(PT)"),
    (("bilirubin", "胆红素", "liver", "肝"), "Bilirubin, Total"),
    (("urea", "bun", "尿素"), "Urea Nitrogen"),
    (("troponin", "肌钙蛋白"), "Troponin T"),
    (("magnesium", "镁"), "Magnesium"),
    (("a1c", "糖化"), "% Hemoglobin A1c"),
]
PATIENT: list[tuple[tuple[str, ...], str]] = [
    (("adheren", "taking", "skip", "missed", "依从", "按时吃", "漏服"), "patient.get_medication_adherence"),
    (("pain", "疼", "痛"), "patient.get_pain_assessment"),
    (("home", "live", "alone", "smok", "alcohol", "家", "吸烟", "饮酒"), "patient.get_social_history"),
    (("walk", "function", "mobility", "daily", "活动", "行走", "自理"), "patient.get_functional_status"),
    (("symptom", "feel", "complain", "ask her", "ask him", "症状", "感觉"), "patient.get_symptom_history"),
]
REPORTS = ("culture", "x-ray", "xray", "chest", "ct ", "mri", "imaging", "ultrasound", "echo",
           "radiolog", "培养", "影像", "胸片", "超声")
MEDS = ("dose", "dosing", "medication", "drug", "mg", "prescri", "anticoag", "antibiotic",
        "switch", "start", "stop", "用药", "药", "剂量")
CONDITIONS = ("diagnos", "history of", "condition", "comorbid", "诊断", "病史")
PLANS = ("discharge", "follow", "出院", "随访")
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]{3,}")
_STOP = {"what", "does", "dose", "dosing", "with", "this", "that", "them", "there", "their",
         "about", "should", "would", "given", "still", "taking", "have", "been", "will", "start",
         "stop", "switch", "drug", "medication", "medications", "patient", "adherence"}


def _has(text: str, words: tuple[str, ...]) -> bool:
    return any(w in text for w in words)


def _drug_word(question: str) -> str | None:
    words: list[str] = _WORD.findall(question)  # the pattern has no groups: the matches
    for word in words:
        if word.lower() not in _STOP and word[0].islower() is False:
            return word
    for word in words:
        if word.lower() not in _STOP:
            return word
    return None


def candidate_calls(conv: Conversation, names: set[str]) -> list[tuple[str, dict[str, Any]]]:
    """Every tool call the question's keywords suggest, most specific first, among the
    offered tools (API names), without repeats; a generic lab search comes last."""
    q = f" {conv.question.lower()} "
    subject = conv.value("subject_id")
    hadm = conv.value("hadm_id")
    ids: dict[str, Any] = {"subject_id": subject}
    if hadm is not None:
        ids["hadm_id"] = hadm
    candidates: list[tuple[str, dict[str, Any]]] = []
    for words, tool in PATIENT:
        if _has(q, words):
            args: dict[str, Any] = {"subject_id": subject, "session_id": conv.session_key}
            if tool == "patient.get_medication_adherence":
                drug = _drug_word(conv.question)
                if drug:
                    args["drug"] = drug
            candidates.append((tool, args))
    for words, label in LABS:
        if _has(q, words):
            candidates.append(("Observation.search", {**ids, "code": label, "category": "laboratory"}))
    if _has(q, REPORTS):
        candidates.append(("DiagnosticReport.search", dict(ids)))
    if _has(q, MEDS):
        candidates.append(("MedicationRequest.search", dict(ids)))
    if _has(q, CONDITIONS):
        candidates.append(("Condition.search", dict(ids)))
    if _has(q, PLANS):
        candidates.append(("CarePlan.search", dict(ids)))
    candidates.append(("Observation.search", {**ids, "category": "laboratory", "_count": 10}))
    out: list[tuple[str, dict[str, Any]]] = []
    for tool, args in candidates:
        call = (to_api_name(tool), args)
        if call[0] in names and call not in out:
            out.append(call)
    return out


def choose_call(conv: Conversation, names: set[str]) -> tuple[str, dict[str, Any]] | None:
    """The one tool call the question suggests, among the offered tools."""
    calls = candidate_calls(conv, names)
    return calls[0] if calls else None


def summarise(results: list[str], language: str, per_result: int = 6) -> str:
    """The first ``per_result`` non-empty lines of each result, verbatim."""
    lines = [ln for text in results for ln in [x.strip() for x in text.splitlines() if x.strip()][:per_result]]
    if not lines:
        return "没有检索到相关数据。" if language == "zh" else "I could not retrieve relevant data."
    head = "检索结果：" if language == "zh" else "Retrieved:"
    return head + "\n" + "\n".join(lines)


class BaselineAgent:
    """One keyword-chosen tool call per turn, then the retrieved lines as the answer."""

    def __init__(self, model_name: str = "baseline", **_: Any) -> None:
        self.model_name = model_name

    async def act(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice
    ) -> ModelOutput:
        conv = read_conversation(input, tool_choice)
        if conv.turn < 0:
            return reply(self.model_name, "Ready.", [], input)
        if not conv.acted() and not conv.nudged:
            call = choose_call(conv, offered(tools))
            if call is not None:
                return reply(self.model_name, "", [call], input)
        answer = summarise(conv.tool_results(), conv.language)
        return finish(self.model_name, answer, tools, conv, input)
