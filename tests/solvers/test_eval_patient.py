"""Patient interview: deterministic replay (hits, misses, literacy, ZH) and the live LLM
patient with withheld non-adherence (scripted ``patient`` role)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import fixtures_eval as fe
import fixtures_store as fs
import pytest

from physassist.data import Session
from solvers.patient.live import LivePatient, critical_drugs, derived_patient_model
from solvers.patient.replay import ReplayPatient
from solvers.patient.texts import miss_answer

store_cache = fs.store_cache
demo_store = fs.demo_store

REPLIES = [
    {
        "tool": "patient.get_medication_adherence",
        "arguments": {"drug": "Apixaban"},
        "patient_response": "I take it twice a day.",
        "variants": {
            "high": "I take apixaban 5 mg twice daily.",
            "low": "I take the blood thinner.",
        },
    },
    {
        "tool": "patient.get_symptom_history",
        "arguments": {"query": "shortness of breath"},
        "patient_response": "I get winded on the stairs.",
        "variants": {},
    },
    {
        "tool": "patient.get_social_history",
        "arguments": {},
        "patient_response": "I live alone.",
        "variants": {},
    },
]


def test_replay_exact_overlap_and_general_hits() -> None:
    patient = ReplayPatient(REPLIES, literacy="high")
    assert patient.respond("patient.get_medication_adherence", {"drug": " apixaban "}) == {
        "patient_response": "I take apixaban 5 mg twice daily.",
        "_replay": "exact",
    }
    assert (
        patient.lookup("patient.get_medication_adherence", {"drug": "Apixaban 5mg tablet"})[1]
        == "overlap"
    )
    assert (
        patient.lookup("patient.get_symptom_history", {"query": "breath at night"})[1] == "overlap"
    )
    assert patient.lookup("patient.get_symptom_history", {})[1] == "tool"
    assert (
        patient.respond("patient.get_social_history", {"query": "smoking"})["patient_response"]
        == "I live alone."
    )


def test_replay_literacy_variant_falls_back_to_patient_response() -> None:
    low = ReplayPatient(REPLIES, literacy="low")
    assert (
        low.respond("patient.get_medication_adherence", {"drug": "apixaban"})["patient_response"]
        == "I take the blood thinner."
    )
    medium = ReplayPatient(REPLIES, literacy="medium")
    assert (
        medium.respond("patient.get_medication_adherence", {"drug": "apixaban"})["patient_response"]
        == "I take it twice a day."
    )


def test_replay_miss_policies() -> None:
    unknown = ReplayPatient(REPLIES)
    miss = unknown.respond("patient.get_medication_adherence", {"drug": "warfarin"})
    assert miss == {"patient_response": miss_answer("en"), "_replay": "miss"}
    assert unknown.respond("patient.get_pain_assessment", {})["_replay"] == "miss"
    same = ReplayPatient(REPLIES, miss="same_tool")
    assert (
        same.respond("patient.get_medication_adherence", {"drug": "warfarin"})["_replay"]
        == "same_tool"
    )
    zh = ReplayPatient([], language="zh")
    assert zh.respond("patient.get_pain_assessment", {})["patient_response"] == miss_answer("zh")
    with pytest.raises(ValueError, match="patient_miss"):
        ReplayPatient(REPLIES, miss="guess")


def test_replay_has_no_side_effects() -> None:
    patient = ReplayPatient(REPLIES)
    first = [
        patient.respond("patient.get_medication_adherence", {"drug": "apixaban"}) for _ in range(3)
    ]
    assert first[0] == first[1] == first[2]


@pytest.fixture(scope="module")
def session(demo_store) -> dict[str, Any]:
    return fe.build_session(demo_store, "strict")


def _drug(session: dict[str, Any]) -> str:
    return session["answer_list"][2][1]["action"]["arguments"]["drug"]


def test_replay_through_the_loop_hit_miss_and_zh(session, demo_store, tmp_path: Path) -> None:
    sid = session["subject_id"]
    ask = "patient.get_medication_adherence"
    script = fe.Script(
        [
            fe.calls(
                (ask, {"subject_id": sid, "drug": _drug(session).upper()}),
                (ask, {"subject_id": sid, "drug": "unobtainium"}),
            ),
            fe.calls(("prepare_to_answer", {}), content="Stopped it."),
        ]
    )
    sample = fe.run_sample(session, script.model(), demo_store, tmp_path, literacy="low")
    hit, miss = fe.turns_of(sample)[0].calls
    assert hit.raw["patient_response"] == fe.ADHERENCE["en"]["low"]
    assert hit.arguments["session_id"] == session["session_id"]  # injected when left out
    assert miss.raw["patient_response"] == miss_answer("en")

    script_zh = fe.Script([fe.calls((ask, {"subject_id": sid, "drug": _drug(session)}))])
    sample_zh = fe.run_sample(session, script_zh.model(), demo_store, tmp_path, language="zh")
    [call] = fe.turns_of(sample_zh)[0].calls
    assert call.raw["patient_response"] == fe.ADHERENCE["zh"]["high"]


class PatientScript:
    """A scripted ``patient`` role that records the system prompt of every question."""

    def __init__(self) -> None:
        self.systems: list[str] = []
        self.histories: list[int] = []

    def __call__(self, input: list[Any], tools: Any, tool_choice: Any, config: Any):
        self.systems.append(input[0].text)
        self.histories.append(len(input))
        return fe.text(f"Patient answer {len(self.systems)}.")


def test_live_patient_withholds_until_asked_by_name(session, demo_store, tmp_path: Path) -> None:
    sid = session["subject_id"]
    drug = _drug(session)
    ask = "patient.get_medication_adherence"
    script = fe.Script(
        [
            fe.calls((ask, {"subject_id": sid})),  # general question: withheld
            fe.calls((ask, {"subject_id": sid, "drug": drug.lower()})),  # by name: revealed
            fe.calls(("patient.get_symptom_history", {"subject_id": sid})),  # stays revealed
            fe.calls(("prepare_to_answer", {}), content="Non-adherent."),
        ]
    )
    patient = PatientScript()
    sample = fe.run_sample(
        session,
        script.model(),
        demo_store,
        tmp_path,
        patient="live",
        model_roles={"patient": fe.scripted(patient)},
    )
    calls = fe.turns_of(sample)[0].calls
    assert [c.raw["patient_response"] for c in calls] == [
        "Patient answer 1.",
        "Patient answer 2.",
        "Patient answer 3.",
    ]
    first, second, third = patient.systems
    assert "not ready to admit" in first and drug in first
    assert fe.ADHERENCE["en"]["high"] not in first  # the truth is hidden
    assert "already admitted" in second and fe.ADHERENCE["en"]["high"] in second
    assert "already admitted" in third and "not ready to admit" not in third
    assert patient.histories == [2, 4, 6]  # the patient's own conversation is kept
    assert calls[1].raw["_revealed"] == [drug]


def test_live_patient_with_cohort_phm() -> None:
    phm = {
        "persona": {"health_literacy": "low", "info_completeness": "critical_withheld"},
        "medications": [
            {"drug": "Metformin", "adherence": "good"},
            {
                "drug": "Lisinopril",
                "adherence": "self_discontinued",
                "patient_explanation": "cough",
                "names": ["lisinopril", "zestril"],
            },
        ],
        "symptoms": [{"name": "cough", "onset": "2 weeks"}],
    }
    assert critical_drugs(phm) == ["Lisinopril"]
    patient_model = PatientScript()
    live = LivePatient(fe.scripted(patient_model), phm, language="en")

    async def ask() -> None:
        await live.arespond("patient.get_medication_adherence", {})
        await live.arespond("patient.get_medication_adherence", {"drug": "Zestril 10 mg"})

    anyio.run(ask)
    assert (
        "self_discontinued" not in patient_model.systems[0]
        and "Metformin" in patient_model.systems[0]
    )
    assert "self_discontinued" in patient_model.systems[1]
    assert "everyday words" in patient_model.systems[0]  # low literacy rule
    assert live.revealed == ["Lisinopril"]  # asked by its brand name
    assert critical_drugs({"adherence": {"Warfarin": "poor", "Aspirin": "good"}}) == ["Warfarin"]


def test_derived_patient_model_from_released_session(session) -> None:
    s = Session.model_validate(session)
    model = derived_patient_model(
        s.persona_config, s.gold_patient_answers("en"), {"diagnoses": ["AKI"]}
    )
    assert model["diagnoses"] == ["AKI"]
    assert critical_drugs(model) == [_drug(session)]


def test_live_patient_provider_failure_ends_the_turn_as_a_fault(
    session, demo_store, tmp_path: Path
) -> None:
    """A patient model call that fails is a system fault, not a tool answer the model sees."""

    def down(*_: Any) -> Any:
        raise ConnectionError("patient endpoint refused the connection")

    script = fe.Script(
        [
            fe.calls(("patient.get_symptom_history", {"subject_id": session["subject_id"]})),
            fe.calls(("prepare_to_answer", {}), content="Never reached."),
        ]
    )
    sample = fe.run_sample(
        session,
        script.model(),
        demo_store,
        tmp_path,
        patient="live",
        model_roles={"patient": fe.scripted(down)},
    )
    t0 = fe.turns_of(sample)[0]
    assert t0.end == "error" and t0.answer == ""
    assert t0.error.startswith("SystemFault: patient model call failed: ConnectionError")
    # the assistant never saw the failure as a tool result
    assert not any("refused" in m.text for m in script.requests[-1][0] if m.role == "tool")
