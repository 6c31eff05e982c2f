"""Small builders shared by both semantics: Bundle, OperationOutcome, references, coded
concepts, dates.

Non-standard keys (leading ``_``) appear only in compat results, where the reference emitted
them (``_fhir_resource_type``, ``_anchor_age``, ``_mimic``, ``_seq_num``, ``_drug_type``,
``_event_txt``, ``_stay_id``, ``_simulated``, ``_created_at``). Strict results are valid
FHIR R4 (checked against ``fhir.resources`` R4B models in the tests).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from typing import Any

OBS_CATEGORY = "http://terminology.hl7.org/CodeSystem/observation-category"
INTERPRETATION = "http://terminology.hl7.org/CodeSystem/v3-ObservationInterpretation"
CONDITION_CLINICAL = "http://terminology.hl7.org/CodeSystem/condition-clinical"
CONDITION_CATEGORY = "http://terminology.hl7.org/CodeSystem/condition-category"
ICD10 = "http://hl7.org/fhir/sid/icd-10-cm"
ICD9 = "http://hl7.org/fhir/sid/icd-9-cm"
LOINC = "http://loinc.org"
CAREPLAN_CATEGORY = "http://hl7.org/fhir/us/core/CodeSystem/careplan-category"
ACT_CODE = "http://terminology.hl7.org/CodeSystem/v3-ActCode"
#: Where the project's own extensions are defined (``extension``).
EXTENSION = "https://physassist.dev/fhir/StructureDefinition/"


#: Longest diagnostics text. Outcomes echo what the model sent (ids, names, values), which
#: the argument bounds keep short, but not the tool name; a 1 MB echo is nobody's answer.
MAX_DIAGNOSTICS = 2_000


def capped(text: str, limit: int = MAX_DIAGNOSTICS) -> str:
    """``text`` cut at ``limit`` characters, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def operation_outcome(
    diagnostics: str, code: str = "not-found", severity: str = "error"
) -> dict[str, Any]:
    return {
        "resourceType": "OperationOutcome",
        "issue": [{"severity": severity, "code": code, "diagnostics": capped(diagnostics)}],
    }


def compat_bundle(resource_type: str, resources: list[dict[str, Any]]) -> dict[str, Any]:
    """The reference's searchset: ``total`` = entries returned, plus ``_fhir_resource_type``."""
    return {
        "resourceType": "Bundle",
        "type": "searchset",
        "total": len(resources),
        "entry": [{"resource": r} for r in resources],
        "_fhir_resource_type": resource_type,
    }


def strict_bundle(
    resources: list[dict[str, Any]], total: int, hint: str | None = None
) -> dict[str, Any]:
    """A valid searchset: ``total`` = number of matches; an optional outcome entry carries hints."""
    entries: list[dict[str, Any]] = [
        {"fullUrl": f"{r['resourceType']}/{r['id']}", "resource": r, "search": {"mode": "match"}}
        for r in resources
    ]
    if hint:
        entries.append(
            {
                "resource": operation_outcome(hint, code="informational", severity="information"),
                "search": {"mode": "outcome"},
            }
        )
    return {"resourceType": "Bundle", "type": "searchset", "total": total, "entry": entries}


def patient_ref(subject_id: Any) -> dict[str, str]:
    return {"reference": f"Patient/{subject_id}"}


def encounter_ref(hadm_id: Any) -> dict[str, str] | None:
    """``Encounter/encounter-<hadm>``."""
    if hadm_id is None or (isinstance(hadm_id, float) and math.isnan(hadm_id)):
        return None
    hid = str(int(hadm_id))
    return {"reference": f"Encounter/encounter-{hid}"}


def concept(system: str, code: Any, display: Any, text: Any = None) -> dict[str, Any]:
    """A CodeableConcept with one coding; ``text`` only when one is given."""
    out: dict[str, Any] = {"coding": [{"system": system, "code": code, "display": display}]}
    if text is not None:
        out["text"] = text
    return out


def named_concept(system: str, code: Any, name: Any) -> dict[str, Any]:
    """A resource's ``code``: one coding whose display is also the concept's ``text``."""
    return {"coding": [{"system": system, "code": code, "display": name}], "text": name}


def category(system: str, code: str, display: str, text: str | None = None) -> list[dict[str, Any]]:
    """A resource's ``category``: a list holding one concept."""
    return [concept(system, code, display, text)]


_OBS_CATEGORY_DISPLAY = {"laboratory": "Laboratory", "vital-signs": "Vital Signs"}


def extension(name: str, **value: Any) -> dict[str, Any]:
    """One of the project's extensions: ``extension("reported", valueDateTime=...)``."""
    return {"url": EXTENSION + name, **value}


def observation(
    resource_id: str,
    subject_id: Any,
    category_code: str,
    code: dict[str, Any],
    category_text: str | None = None,
) -> dict[str, Any]:
    """The head every final Observation of both semantics starts with (id, status, category,
    code, subject, in this order); callers add the value, time and encounter keys after it."""
    return {
        "resourceType": "Observation",
        "id": resource_id,
        "status": "final",
        "category": category(
            OBS_CATEGORY, category_code, _OBS_CATEGORY_DISPLAY[category_code], category_text
        ),
        "code": code,
        "subject": patient_ref(subject_id),
    }


def fhir_datetime(value: Any) -> str | None:
    """MIMIC ``YYYY-MM-DD HH:MM:SS`` -> FHIR dateTime. MIMIC times carry no zone (they are
    date-shifted local times); FHIR requires one once a time is given, so ``+00:00`` is added."""
    if value is None:
        return None
    text = str(value)
    if len(text) <= 10:
        return text
    return text[:19].replace(" ", "T") + "+00:00"


def b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8")).decode("ascii")


def stable_id(prefix: str, *parts: Any) -> str:
    """Deterministic FHIR id from key fields (not row order): ``prefix-<12 hex>``."""
    digest = hashlib.sha1("|".join("" if p is None else str(p) for p in parts).encode()).hexdigest()
    return f"{prefix}-{digest[:12]}"


_SAFE_ID = re.compile(r"[A-Za-z0-9.\-]*")


def safe_id(text: str) -> str:
    """Make a FHIR-legal id ([A-Za-z0-9-.], <= 64 chars) from a key."""
    if _SAFE_ID.fullmatch(text):  # the common case, a key built from ids and digits
        return text[:64]
    cleaned = "".join(c if c.isalnum() or c in "-." else "-" for c in text)
    return cleaned[:64]


def as_number(value: Any) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def clean(obj: Any) -> Any:
    """Drop ``None`` values and empty containers recursively (FHIR forbids empty elements)."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            if isinstance(v, dict | list):
                v = clean(v)
                if v:
                    out[k] = v
            elif v is not None:
                out[k] = v
        return out
    if isinstance(obj, list):
        items = []
        for v in obj:
            if isinstance(v, dict | list):
                v = clean(v)
                if v:
                    items.append(v)
            elif v is not None:
                items.append(v)
        return items
    return obj
