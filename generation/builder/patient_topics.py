"""Patient-interview turns: which ones a patient health model (PHM) supports, and their facts.

Three topic kinds ask the simulated patient through the ``patient.*`` tools (one turn per
session at most): ``adherence_check`` (mixed: the inpatient order plus the patient's own
account of taking the drug), ``home_function`` (social history and functional status) and
``symptom_pain`` (symptom history and pain assessment). Gold replies come from
``PHMResponder`` at the persona's literacy; gold answers and rubric facts come from the PHM
the replies are generated from (it is shipped with the session as ``patient_model``).
"""

from __future__ import annotations

import re
from typing import Any

from .profile import Profile
from .vocab import drug_word

PATIENT_KINDS: tuple[str, ...] = ("adherence_check", "home_function", "symptom_pain")

#: PHM adherence value -> key of the answer text and of the concept synonyms.
ADHERENCE_CLASS: dict[str, str] = {
    "good": "good",
    "self_discontinued": "stopped",
    "never_filled": "stopped",
    "sometimes_forgets": "forgets",
    "ran_out": "ran_out",
    "poor": "stopped",
}


def phm_medication(phm: dict[str, Any] | None, word: str) -> dict[str, Any] | None:
    """The PHM medication entry whose name matches a prescription word."""
    if not phm:
        return None
    medications: list[dict[str, Any]] = phm.get("medications") or []
    for med in medications:
        names = [str(n).lower() for n in med.get("names") or []] + [
            str(med.get("drug", "")).lower()
        ]
        if any(word == drug_word(n) or word in n.split() for n in names if n):
            return med
    return None


def adherence_drugs(prof: Profile) -> list[str]:
    """Prescribed drugs the PHM has an adherence story for; non-adherent ones first."""
    phm = prof.phm
    if not phm:
        return []
    out: list[tuple[int, str]] = []
    for word in sorted(prof.drugs):
        med = phm_medication(phm, word)
        if (
            med is None
            or med.get("adherence") not in ADHERENCE_CLASS
            or not prof.drugs[word].numeric_dose
        ):
            continue
        out.append((0 if med.get("adherence") != "good" else 1, word))
    return [w for _, w in sorted(out)]


def has_home_function(prof: Profile) -> bool:
    phm = prof.phm or {}
    fs, social = phm.get("functional_status"), phm.get("social_history")
    return isinstance(fs, dict) and isinstance(social, dict) and isinstance(fs.get("blocks"), int)


def has_symptoms(prof: Profile) -> bool:
    phm = prof.phm or {}
    symptoms = phm.get("symptoms") or []
    return (
        bool(symptoms)
        and isinstance(symptoms[0].get("severity"), int | float)
        and isinstance(phm.get("pain"), dict)
    )


def primary_symptom(phm: dict[str, Any]) -> dict[str, Any]:
    symptoms: list[dict[str, Any]] = phm.get("symptoms") or []
    for s in symptoms:
        if s.get("primary"):
            return s
    return symptoms[0]


def home_facts(phm: dict[str, Any]) -> dict[str, Any]:
    """Living situation, mobility, walking distance, falls and smoking from the PHM."""
    fs, social = phm["functional_status"], phm["social_history"]
    falls_en = str((fs.get("falls") or {}).get("en", "")).lower()
    return {
        "alone": bool(social.get("lives_alone")),
        "device": fs.get("assistive_device") or "none",
        "blocks": int(fs["blocks"]),
        "fell": bool(falls_en) and not falls_en.startswith("no"),
        "smoking": str((social.get("smoking") or {}).get("status") or "never"),
    }


_ONSET_EN = re.compile(
    r"(?:about |over the (?:past|last) )?(?:a|an|one|two|three|four|five|six|seven|ten|\d+) "
    r"(?:days?|weeks?|months?)(?: ago)?|yesterday(?: morning| evening)?|this morning|last night",
    re.IGNORECASE,
)
_ONSET_ZH = re.compile(
    r"(?:大约|大概)?[一二两三四五六七八九十\d]+(?:天|周|个星期|个月)前|最近[一二两三四五六七八九十\d]+(?:天|周|个月)|昨天(?:早上|晚上)?|今天早上"
)


def onset_phrase(onset: dict[str, str], lang: str) -> str:
    """The time phrase of a PHM onset ("two days ago while I was ..." -> "two days ago")."""
    text = str(onset.get(lang) or "")
    m = (_ONSET_EN if lang == "en" else _ONSET_ZH).search(text)
    return m.group(0) if m else text
