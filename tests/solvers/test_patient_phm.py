"""PHMResponder: the five patient tools, EN/ZH, three literacy registers, withheld information."""

from __future__ import annotations

import copy
import csv
import re

import pytest
from fixtures_synth import SAMPLE

from physassist.synth import load_phm
from physassist.vocab import LITERACY_LEVELS as LITERACY
from physassist.vocab import PATIENT_TOOLS as TOOLS
from solvers.patient.phm import PHMResponder, canonical_tool


def _subjects() -> list[dict]:
    with (SAMPLE / "meta" / "subjects.csv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _phm(**persona) -> dict:
    """A sample PHM whose persona matches the given fields."""
    for row in _subjects():
        if all(row[k] == v for k, v in persona.items()):
            return load_phm(SAMPLE, int(row["subject_id"]))
    raise AssertionError(f"no sample subject with persona {persona}")


def _withheld_phm() -> tuple[dict, dict]:
    phm = _phm(info_completeness="critical_withheld")
    med = next(m for m in phm["medications"] if m["withheld"])
    return phm, med


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("tool", TOOLS)
def test_every_tool_answers_in_three_registers(tool: str, language: str) -> None:
    phm = _phm(archetype="pneumonia_sepsis")
    args = (
        {"query": "cough"}
        if "symptom" in tool
        else {"drug": phm["medications"][0]["drug"]}
        if "adherence" in tool
        else {}
    )
    out = PHMResponder(phm, "medium", language).respond(
        tool, {"subject_id": phm["subject_id"], "session_id": "s", **args}
    )
    variants = out["patient_responses_all_literacy"]
    assert set(variants) == set(LITERACY)
    assert out["patient_response"] == variants["medium"]
    assert all(v.strip() for v in variants.values())
    assert len(set(variants.values())) >= 2  # registers differ in wording
    cjk = [bool(re.search(r"[\u4e00-\u9fff]", v)) for v in variants.values()]
    assert all(cjk) if language == "zh" else not any(cjk)


def test_symptom_history_facts_and_registers() -> None:
    phm = _phm(archetype="hf_discharge")
    sym = next(s for s in phm["symptoms"] if s["primary"])
    out = PHMResponder(phm, "high").respond(
        "patient.get_symptom_history", {"query": "shortness of breath"}
    )
    v = out["patient_responses_all_literacy"]
    assert sym["term"]["en"] in v["high"] and f"{sym['severity']}/10" in v["high"]
    assert sym["term"]["en"] not in v["low"] and not re.search(
        r"\d", v["low"]
    )  # plain words, no scores
    assert f"{sym['severity']} out of 10" in v["medium"] and sym["onset"]["en"] in v["low"]
    zh = PHMResponder(phm, "high", "zh").respond("patient.get_symptom_history", {"query": "喘"})
    assert sym["term"]["zh"] in zh["patient_response"]


def test_unknown_symptom_and_unknown_drug_get_natural_answers() -> None:
    phm = _phm(archetype="afib_apixaban")
    r = PHMResponder(phm, "low")
    assert r.respond("patient.get_symptom_history", {"query": "rash on my elbow"})[
        "patient_response"
    ].startswith("No")
    reply = r.respond("patient.get_medication_adherence", {"drug": "warfarin"})["patient_response"]
    assert "don't" in reply
    zh = PHMResponder(phm, "high", "zh").respond(
        "patient.get_medication_adherence", {"drug": "warfarin"}
    )
    assert "没有" in zh["patient_response"]


def test_withheld_non_adherence_is_revealed_only_when_asked_about_that_drug() -> None:
    phm, med = _withheld_phm()
    reason = med["reason"]["en"]
    r = PHMResponder(phm, "high")
    general = r.respond("patient.get_medication_adherence", {})["patient_response"]
    assert reason not in general and "as prescribed" in general
    other = next(m for m in phm["medications"] if not m["withheld"])
    assert (
        reason
        not in r.respond("patient.get_medication_adherence", {"drug": other["drug"]})[
            "patient_response"
        ]
    )
    assert reason not in r.respond("patient.get_symptom_history", {})["patient_response"]
    asked = r.respond("patient.get_medication_adherence", {"drug": med["names"][0]})[
        "patient_response"
    ]
    assert reason in asked and "didn't mention" in asked
    # stays revealed for this responder
    assert reason in r.respond("patient.get_medication_adherence", {})["patient_response"]
    # a new responder (a new session) starts withholding again
    assert (
        reason
        not in PHMResponder(phm, "high").respond("patient.get_medication_adherence", {})[
            "patient_response"
        ]
    )


def test_withheld_reveal_in_chinese_and_all_registers() -> None:
    phm, med = _withheld_phm()
    r = PHMResponder(phm, "low", "zh")
    assert (
        med["reason"]["zh"]
        not in r.respond("patient.get_medication_adherence", {})["patient_response"]
    )
    out = r.respond("patient.get_medication_adherence", {"drug": med["drug"]})
    assert all(med["reason"]["zh"] in v for v in out["patient_responses_all_literacy"].values())


def test_disclosed_non_adherence_when_nothing_is_withheld() -> None:
    phm = _phm(adherence="poor", info_completeness="full")
    bad = [m for m in phm["medications"] if m["adherence"] != "good"]
    assert bad
    general = PHMResponder(phm, "high").respond("patient.get_medication_adherence", {})[
        "patient_response"
    ]
    assert all(m["reason"]["en"] in general for m in bad)


def test_partial_persona_leaves_out_details_unless_asked() -> None:
    phm = _phm(info_completeness="partial")
    sym = next(s for s in phm["symptoms"] if s["primary"])
    r = PHMResponder(phm, "high")
    assert (
        sym["associated"]["en"]
        not in r.respond("patient.get_symptom_history", {})["patient_response"]
    )
    asked = r.respond("patient.get_symptom_history", {"query": sym["keywords"][0]})[
        "patient_response"
    ]
    assert sym["associated"]["en"][1:] in asked


def test_social_functional_and_pain_use_the_phm() -> None:
    phm = _phm(archetype="cirrhosis_ascites")
    r = PHMResponder(phm, "high")
    social = r.respond("patient.get_social_history", {})["patient_response"]
    assert phm["social_history"]["alcohol"]["en"] in social
    func = r.respond("patient.get_functional_status", {})["patient_response"]
    assert str(phm["functional_status"]["blocks"]) in func
    pain = r.respond("patient.get_pain_assessment", {})["patient_response"]
    assert f"{phm['pain']['score']}/10" in pain
    no_pain = PHMResponder(_phm(archetype="hf_discharge"), "medium").respond(
        "patient.get_pain_assessment", {}
    )
    assert "don't have any pain" in no_pain["patient_response"]


def test_deterministic_and_tool_name_spellings() -> None:
    phm = _phm(archetype="ckd_metformin")
    a = PHMResponder(copy.deepcopy(phm), "medium", "zh").respond(
        "patient__get_symptom_history", {"query": "恶心"}
    )
    b = PHMResponder(copy.deepcopy(phm), "medium", "zh").respond(
        "patient.get_symptom_history", {"query": "恶心"}
    )
    assert a == b
    assert canonical_tool("get_pain_assessment") == "patient.get_pain_assessment"
    with pytest.raises(ValueError, match="unknown patient tool"):
        PHMResponder(phm).respond("patient.get_everything", {})
    # malformed arguments are treated as absent, never raise
    assert PHMResponder(phm).respond("patient.get_medication_adherence", "not a dict")[
        "patient_response"
    ]
    assert PHMResponder(phm).respond("patient.get_medication_adherence", {"drug": 42})[
        "patient_response"
    ]


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"literacy": "expert"}, "literacy"), ({"language": "fr"}, "language")]
)
def test_bad_options_are_named(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PHMResponder(_phm(archetype="ckd_metformin"), **kwargs)
    with pytest.raises(ValueError, match="persona"):
        PHMResponder({"symptoms": []})


def test_arbitrary_arguments_never_raise() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    phm = _phm(archetype="hyperkalemia_raas")
    values = st.one_of(
        st.none(),
        st.integers(),
        st.floats(allow_nan=True),
        st.text(max_size=30),
        st.lists(st.text(max_size=5), max_size=3),
        st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    )

    @settings(max_examples=60, deadline=None)
    @given(
        tool=st.sampled_from(TOOLS),
        args=st.dictionaries(st.sampled_from(["query", "drug", "subject_id", "x"]), values),
        lit=st.sampled_from(LITERACY),
        lang=st.sampled_from(["en", "zh"]),
    )
    def check(tool: str, args: dict, lit: str, lang: str) -> None:
        out = PHMResponder(phm, lit, lang).respond(tool, args)
        assert isinstance(out["patient_response"], str) and out["patient_response"]

    check()
