"""``compat`` semantics: the reference implementation's behaviour, reproduced on our store.

Every quirk listed in official-implementation.md §2.3-§2.5 that our tables allow is kept on
purpose (lab-only day-exclusive date gate, dictionary-wide substring matching with its
"no dictionary match -> unfiltered" rule, default 20, OperationOutcome on empty results, the
``.0`` encounter reference, ...), so replaying a released gold trajectory returns the released
observations. Deviations forced by our store are
noted where they occur. The store keeps each row's source-file position (``_row``), so "file
order" and the CSV row indices the reference used in ids are reproduced exactly; ties in the
reference's (unstable) pandas sorts are broken by file order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from . import fhir
from .context import ToolContext
from .db import placeholders, rows, ts
from .errors import ToolError, bad_arguments, execution_error
from .schemas import DEFAULT_COUNT

VITAL_CATEGORIES = {"vital-signs", "vital_signs", "vitals"}
MICRO_LAB_WORDS = ("micro", "culture", "bacteria")
MICRO_REPORT_WORDS = ("micro", "culture", "blood", "urine", "sputum", "csf", "wound")
RADIOLOGY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "X-RAY": ("CHEST", "PORTABLE", "AP", "PA", "RADIOGRAPH"),
    "XRAY": ("CHEST", "PORTABLE", "AP", "PA", "RADIOGRAPH"),
    "CXR": ("CHEST", "PORTABLE", "AP", "PA", "RADIOGRAPH"),
    "MRI": ("MR ",),
    "ULTRASOUND": ("US ", "SONO"),
    "ECHO": ("ECHO",),
    "CT": ("CT",),
}


# ----------------------------------------------------------------------------- argument helpers


def subject_key(tool: str, args: dict[str, Any]) -> int | None:
    """The reference only used ``subject_id`` in a file path: ``str(value)`` must name a folder."""
    if "subject_id" not in args:
        raise bad_arguments(tool, "missing 1 required positional argument: 'subject_id'")
    text = str(args["subject_id"])
    if text.isdigit() and str(int(text)) == text:
        return int(text)
    return None


def hadm_filter(tool: str, value: Any) -> tuple[bool, float | None]:
    """(usable, number). pandas compared hadm_id numerically: a string never matches."""
    if value is None:
        return True, None
    if isinstance(value, bool):
        return True, float(value)
    if isinstance(value, int | float):
        return True, float(value)
    if isinstance(value, str):
        return False, None
    raise execution_error(tool, f"cannot compare hadm_id with {type(value).__name__}")


def text_arg(tool: str, args: dict[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or isinstance(value, str):
        return value
    raise execution_error(tool, f"'{type(value).__name__}' object has no attribute 'lower'")


def regex_arg(tool: str, args: dict[str, Any], key: str) -> str | None:
    """Filters the reference ran through pandas regex mode: an invalid pattern was an error.

    The pattern is only compiled to reproduce that error; matching itself is a literal,
    case-insensitive substring test (no user-built regex is ever executed).
    """
    value = text_arg(tool, args, key)
    if value is not None:
        try:
            re.compile(value)
        except re.error as exc:
            raise execution_error(tool, str(exc)) from None
    return value


def count_arg(tool: str, args: dict[str, Any], default: int | None) -> int | None:
    value = args.get("_count", default)
    if value is None:
        return None
    if isinstance(value, int):  # bool included: pandas sliced with it
        return int(value)
    raise bad_arguments(tool, f"_count must be an integer, got {type(value).__name__} {value!r}")


def head(items: list[Any], n: int | None) -> list[Any]:
    """pandas ``head(n)`` semantics (negative n drops the last |n| rows)."""
    return items if n is None else items[:n]


def contains(haystack: Any, needle: str) -> bool:
    return haystack is not None and needle.lower() in str(haystack).lower()


def empty(resource_type: str, subject: Any) -> dict[str, Any]:
    return fhir.operation_outcome(f"No {resource_type} resources found for subject {subject}.")


def nullable_hadm(ctx: ToolContext, table: str, sid: int) -> bool:
    """Whether pandas would have read this subject's hadm_id column as float (it has nulls)."""
    got = rows(
        ctx, f"SELECT bool_or(hadm_id IS NULL) AS n FROM {table} WHERE subject_id = ?", [sid]
    )
    return bool(got and got[0]["n"])


def is_nan(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


# ----------------------------------------------------------------------------- tools


def patient_read(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid = subject_key("Patient.read", args)
    found = (
        []
        if sid is None
        else rows(
            ctx,
            f"SELECT subject_id, gender, anchor_age, {ts('dod')} AS dod FROM patients WHERE subject_id = ? LIMIT 1",
            [sid],
        )
    )
    if not found:
        return fhir.operation_outcome(f"Patient/{args.get('subject_id')} not found")
    p = found[0]
    out: dict[str, Any] = {
        "resourceType": "Patient",
        "id": str(p["subject_id"]),
        "identifier": [{"system": "mimic-iv", "value": str(p["subject_id"])}],
        "gender": {"M": "male", "F": "female"}.get(str(p["gender"]), "unknown"),
        "_anchor_age": None if p["anchor_age"] is None else int(p["anchor_age"]),
    }
    if p["dod"]:
        out["deceasedDateTime"] = str(p["dod"])[:10]
    return out


def encounter_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Encounter.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    if sid is None or not ok:
        return empty("Encounter", args.get("subject_id"))
    sql = (
        f"SELECT *, {ts('admittime')} AS a_t, {ts('dischtime')} AS d_t FROM admissions "
        "WHERE subject_id = ?" + (" AND hadm_id = ?" if hadm is not None else "") + " ORDER BY _row"
    )
    found = rows(ctx, sql, [sid] + ([hadm] if hadm is not None else []))
    if not found:
        return empty("Encounter", sid)
    return fhir.compat_bundle("Encounter", [_encounter(r, sid) for r in found])


def _encounter(r: dict[str, Any], sid: int) -> dict[str, Any]:
    return {
        "resourceType": "Encounter",
        "id": f"encounter-{r['hadm_id']}",
        "status": "finished",
        "class": {"code": "IMP", "display": "inpatient encounter"},
        "subject": fhir.patient_ref(sid),
        "period": {"start": r["a_t"], "end": r["d_t"]},
        "identifier": [{"system": "mimic-iv/hadm", "value": str(r["hadm_id"])}],
        "_mimic": {
            k: r.get(k)
            for k in (
                "admission_type",
                "admission_location",
                "discharge_location",
                "insurance",
                "language",
                "marital_status",
                "race",
                "hospital_expire_flag",
            )
        },
    }


def condition_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Condition.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    code = text_arg(tool, args, "code")
    status = text_arg(tool, args, "clinical_status")
    if sid is None or not ok or (status is not None and status != "active"):
        return empty("Condition", args.get("subject_id"))
    sql = (
        "SELECT d.hadm_id, d.seq_num, trim(d.icd_code) AS icd_code, d.icd_version, t.long_title "
        "FROM diagnoses_icd d LEFT JOIN d_icd_diagnoses t "
        "ON trim(t.icd_code) = trim(d.icd_code) AND t.icd_version = d.icd_version "
        "WHERE d.subject_id = ?"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND d.hadm_id = ?"
        params.append(hadm)
    if code is not None:  # prefix on the upper-cased argument, dots kept (I48.91 never matches)
        sql += " AND starts_with(trim(d.icd_code), ?)"
        params.append(code.upper())
    found = rows(ctx, sql + " ORDER BY d.hadm_id, d.seq_num, d._row", params)
    if not found:
        return empty("Condition", sid)
    out = []
    for r in found:
        system = fhir.ICD10 if str(r["icd_version"]) == "10" else fhir.ICD9
        title = r["long_title"] or r["icd_code"]
        out.append(
            {
                "resourceType": "Condition",
                "id": f"condition-{sid}-{r['icd_code']}-{r['hadm_id']}",
                "clinicalStatus": {
                    "coding": [{"system": fhir.CONDITION_CLINICAL, "code": "active"}]
                },
                "category": [
                    {
                        "coding": [
                            {
                                "system": fhir.CONDITION_CATEGORY,
                                "code": "encounter-diagnosis",
                                "display": "Encounter Diagnosis",
                            }
                        ]
                    }
                ],
                "code": {
                    "coding": [{"system": system, "code": r["icd_code"], "display": title}],
                    "text": title,
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "_seq_num": r["seq_num"],
            }
        )
    return fhir.compat_bundle("Condition", out)


def _matching_itemids(ctx: ToolContext, dictionary: str, code: str) -> list[int] | None:
    """Dictionary-wide case-insensitive substring match; ``None`` = no label matched (no filter)."""
    found = rows(
        ctx, f"SELECT itemid FROM {dictionary} WHERE strpos(lower(label), lower(?)) > 0", [code]
    )
    return [r["itemid"] for r in found] or None


def observation_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Observation.search"
    sid = subject_key(tool, args)
    category = text_arg(tool, args, "category")
    code = text_arg(tool, args, "code")
    count = count_arg(tool, args, DEFAULT_COUNT)
    if category is not None and category in VITAL_CATEGORIES:
        return _vitals(ctx, sid, args, code, count)
    # the date gate was injected by compat_arguments; bounds are compared as strings
    date_to = args.get("date_to")
    date_from = args.get("date_from")
    for key, value in (("date_from", date_from), ("date_to", date_to)):
        if value is not None and not isinstance(value, str):
            raise bad_arguments(
                tool,
                f"'<=' not supported between instances of 'str' and '{type(value).__name__}' ({key})",
            )
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    if sid is None or not ok:
        return empty("Observation", args.get("subject_id"))
    sql = (
        f"SELECT l.labevent_id, l.itemid, l.hadm_id, {ts('l.charttime')} AS t, l.value, l.valuenum, "
        "l.valueuom, l.ref_range_lower, l.ref_range_upper, l.flag, d.label "
        "FROM labevents l LEFT JOIN d_labitems d ON d.itemid = l.itemid WHERE l.subject_id = ?"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND l.hadm_id = ?"
        params.append(hadm)
    if code is not None:
        itemids = _matching_itemids(ctx, "d_labitems", code)
        if itemids is not None:
            sql += f" AND l.itemid IN ({placeholders(itemids)})"
            params.extend(itemids)
    if date_from is not None:
        sql += f" AND {ts('l.charttime')} >= ?"
        params.append(date_from)
    if date_to is not None:
        sql += f" AND {ts('l.charttime')} <= ?"
        params.append(date_to)
    found = head(rows(ctx, sql + " ORDER BY l.charttime DESC, l._row", params), count)
    if category == "microbiology":
        found = [
            r for r in found if any(w in str(r["label"] or "").lower() for w in MICRO_LAB_WORDS)
        ]
    if not found:
        return empty("Observation", sid)
    as_float = nullable_hadm(ctx, "labevents", sid)
    return fhir.compat_bundle("Observation", [_lab(r, sid, as_float) for r in found])


def _lab(r: dict[str, Any], sid: int, as_float: bool) -> dict[str, Any]:
    label = r["label"] or str(r["itemid"])
    obs: dict[str, Any] = {
        "resourceType": "Observation",
        "id": f"lab-{r['labevent_id']}",
        "status": "final",
        "category": [
            {
                "coding": [
                    {"system": fhir.OBS_CATEGORY, "code": "laboratory", "display": "Laboratory"}
                ]
            }
        ],
        "code": {
            "coding": [{"system": "mimic-iv/itemid", "code": str(r["itemid"]), "display": label}],
            "text": label,
        },
        "subject": fhir.patient_ref(sid),
    }
    enc = fhir.encounter_ref(r["hadm_id"], as_float=as_float)
    if enc:
        obs["encounter"] = enc
    obs["effectiveDateTime"] = r["t"]
    if not is_nan(r["valuenum"]):
        obs["valueQuantity"] = {"value": r["valuenum"], "unit": r["valueuom"] or ""}
    else:
        obs["valueString"] = r["value"] if r["value"] is not None else ""
    if r["flag"] in ("abnormal", "delta"):
        obs["interpretation"] = [
            {"coding": [{"system": fhir.INTERPRETATION, "code": "A", "display": "Abnormal"}]}
        ]
    if not is_nan(r["ref_range_lower"]) or not is_nan(r["ref_range_upper"]):
        rr: dict[str, Any] = {}
        if not is_nan(r["ref_range_lower"]):
            rr["low"] = {"value": r["ref_range_lower"], "unit": r["valueuom"] or ""}
        if not is_nan(r["ref_range_upper"]):
            rr["high"] = {"value": r["ref_range_upper"], "unit": r["valueuom"] or ""}
        obs["referenceRange"] = [rr]
    return obs


def _vitals(
    ctx: ToolContext, sid: int | None, args: dict[str, Any], code: str | None, count: int | None
) -> dict[str, Any]:
    """ICU chartevents (hadm_id, dates and the gate all ignored), OMR only when that is empty."""
    if sid is None:
        return empty("Observation", args.get("subject_id"))
    sql = (
        f"SELECT c.stay_id, c.itemid, {ts('c.charttime')} AS t, c.value, c.valuenum, d.label, d.unitname "
        "FROM chartevents c LEFT JOIN d_items d ON d.itemid = c.itemid WHERE c.subject_id = ?"
    )
    params: list[Any] = [sid]
    if code is not None:
        itemids = _matching_itemids(ctx, "d_items", code)
        if itemids is not None:
            sql += f" AND c.itemid IN ({placeholders(itemids)})"
            params.extend(itemids)
    found = head(rows(ctx, sql + " ORDER BY c.charttime DESC, c._row", params), count)
    out = []
    for r in found:
        label = r["label"] or str(r["itemid"])
        obs: dict[str, Any] = {
            "resourceType": "Observation",
            "id": f"vital-{sid}-{r['itemid']}-{r['t']}",
            "status": "final",
            "category": [
                {
                    "coding": [
                        {
                            "system": fhir.OBS_CATEGORY,
                            "code": "vital-signs",
                            "display": "Vital Signs",
                        }
                    ]
                }
            ],
            "code": {
                "coding": [
                    {"system": "mimic-iv/icu-itemid", "code": str(r["itemid"]), "display": label}
                ],
                "text": label,
            },
            "subject": fhir.patient_ref(sid),
            "effectiveDateTime": r["t"],
            "_stay_id": r["stay_id"],
        }
        if not is_nan(r["valuenum"]):
            obs["valueQuantity"] = {"value": r["valuenum"], "unit": r["unitname"] or ""}
        else:
            obs["valueString"] = r["value"] if r["value"] is not None else ""
        out.append(obs)
    if not out:
        out = _omr(ctx, sid, code, count)
    if not out:
        return empty("Observation", sid)
    return fhir.compat_bundle("Observation", out)


def _omr(ctx: ToolContext, sid: int, code: str | None, count: int | None) -> list[dict[str, Any]]:
    # ids use the row's index in the subject's file (the store keeps file order in _row)
    sql = (
        f"SELECT * FROM (SELECT {ts('chartdate')} AS t, result_name, result_value, "
        "row_number() OVER (ORDER BY _row) - 1 AS rowidx "
        "FROM omr WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    if code is not None:
        sql += " AND strpos(lower(result_name), lower(?)) > 0"
        params.append(code)
    found = head(rows(ctx, sql + " ORDER BY t DESC, rowidx", params), count)
    return [
        {
            "resourceType": "Observation",
            "id": f"omr-{sid}-{r['rowidx']}",
            "status": "final",
            "category": [
                {
                    "coding": [
                        {
                            "system": fhir.OBS_CATEGORY,
                            "code": "vital-signs",
                            "display": "Vital Signs",
                        }
                    ]
                }
            ],
            "code": {
                "coding": [
                    {
                        "system": "mimic-iv/omr",
                        "code": r["result_name"],
                        "display": r["result_name"],
                    }
                ],
                "text": r["result_name"],
            },
            "subject": fhir.patient_ref(sid),
            "effectiveDateTime": r["t"],
            "valueString": r["result_value"],
        }
        for r in found
    ]


def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationRequest.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = regex_arg(tool, args, "medication")
    status = text_arg(tool, args, "status")
    if sid is None or not ok:
        return empty("MedicationRequest", args.get("subject_id"))
    # rx ids are the row's index in the subject's prescriptions file (store column _row)
    sql = (
        f"SELECT * FROM (SELECT hadm_id, {ts('starttime')} AS s, {ts('stoptime')} AS e, drug, drug_type, "
        "dose_val_rx, dose_unit_rx, route, row_number() OVER (ORDER BY _row) - 1 AS rowidx "
        "FROM prescriptions WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    if medication is not None:
        sql += " AND strpos(lower(drug), lower(?)) > 0"
        params.append(medication)
    found = rows(ctx, sql + " ORDER BY s DESC NULLS LAST, rowidx", params)
    out = []
    for r in found:
        derived = "completed" if r["s"] and r["e"] else ("active" if r["s"] else "unknown")
        if status is not None and status != derived:
            continue
        dose = r["dose_val_rx"]
        unit = r["dose_unit_rx"] or ""
        route = r["route"] or ""
        out.append(
            {
                "resourceType": "MedicationRequest",
                "id": f"rx-{sid}-{r['rowidx']}",
                "status": derived,
                "intent": "order",
                "medicationCodeableConcept": {
                    "coding": [{"system": "mimic-iv/drug", "display": r["drug"]}],
                    "text": r["drug"],
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "dosageInstruction": [
                    {
                        "doseAndRate": [
                            {"doseQuantity": {"value": fhir.as_number(dose), "unit": unit}}
                        ],
                        "route": {"text": route},
                        "timing": {"repeat": {"boundsPeriod": {"start": r["s"], "end": r["e"]}}},
                        "text": f"{dose or ''}{unit} {route}",
                    }
                ],
                "_drug_type": r["drug_type"],
            }
        )
    if not out:
        return empty("MedicationRequest", sid)
    return fhir.compat_bundle("MedicationRequest", out)


def medication_administration_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "MedicationAdministration.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    medication = regex_arg(tool, args, "medication")
    if sid is None or not ok:
        return empty("MedicationAdministration", args.get("subject_id"))
    sql = (
        f"SELECT * FROM (SELECT hadm_id, {ts('charttime')} AS t, medication, event_txt, "
        "row_number() OVER (ORDER BY _row) - 1 AS rowidx FROM emar WHERE subject_id = ?) WHERE 1=1"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    if medication is not None:
        sql += " AND strpos(lower(medication), lower(?)) > 0"
        params.append(medication)
    sql += " ORDER BY t DESC NULLS LAST, rowidx"
    if medication is None and hadm is None:
        sql += " LIMIT 100"
    found = rows(ctx, sql, params)
    if not found:
        return empty("MedicationAdministration", sid)
    as_float = nullable_hadm(ctx, "emar", sid)
    out = [
        {
            "resourceType": "MedicationAdministration",
            "id": f"emar-{sid}-{r['rowidx']}",
            "status": "completed",
            "medicationCodeableConcept": {"text": r["medication"]},
            "subject": fhir.patient_ref(sid),
            "context": fhir.encounter_ref(r["hadm_id"], as_float=as_float),
            "effectiveDateTime": r["t"],
            "_event_txt": r["event_txt"],
        }
        for r in found
    ]
    return fhir.compat_bundle("MedicationAdministration", out)


def report_title(text: str) -> str:
    """First non-empty line not starting with INDICATION, at most 120 characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.upper().startswith("INDICATION"):
            return line[:120]
    return "Radiology report"


def diagnostic_report_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "DiagnosticReport.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    report_type = text_arg(tool, args, "report_type")
    if sid is None or not ok:
        return empty("DiagnosticReport", args.get("subject_id"))
    sql = f"SELECT note_id, hadm_id, note_type, {ts('charttime')} AS t, text FROM radiology WHERE subject_id = ?"
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    notes = rows(ctx, sql + " ORDER BY charttime DESC, _row", params)
    if report_type is not None:
        wanted = report_type.upper()
        terms = [wanted]
        for key, synonyms in RADIOLOGY_SYNONYMS.items():
            if key in wanted:
                terms.extend(synonyms)
        notes = [
            n
            for n in notes
            if any(
                t in str(n["note_type"] or "").upper() or t in str(n["text"] or "")[:200].upper()
                for t in terms
            )
        ]
    as_float = nullable_hadm(ctx, "radiology", sid)
    out: list[dict[str, Any]] = []
    for n in notes[:5]:
        text = str(n["text"] or "")
        out.append(
            {
                "resourceType": "DiagnosticReport",
                "id": f"dr-{n['note_id']}",
                "status": "final",
                "category": [
                    {
                        "coding": [
                            {"system": fhir.LOINC, "code": "LP29684-5", "display": "Radiology"}
                        ]
                    }
                ],
                "code": {"text": report_title(text)},
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(n["hadm_id"], as_float=as_float),
                "effectiveDateTime": n["t"],
                "presentedForm": [{"contentType": "text/plain", "data": text[:3000]}],
            }
        )
    low = (report_type or "").lower()
    if report_type is None or any(w in low for w in MICRO_REPORT_WORDS):
        keywords = [w for w in MICRO_REPORT_WORDS[2:] if w in low]
        out.extend(_micro_reports(ctx, sid, hadm, args.get("hadm_id"), keywords, 10 - len(out)))
    if not out:
        return empty("DiagnosticReport", sid)
    return fhir.compat_bundle("DiagnosticReport", out)


def micro_summary(r: dict[str, Any]) -> str:
    interp = f" ({r['interpretation']})" if r.get("interpretation") else ""
    return (
        f"Specimen: {r.get('spec_type_desc') or ''} | Organism: {r.get('org_name') or 'none'} | "
        f"Antibiotic: {r.get('ab_name') or 'n/a'}{interp}"
    )


def _micro_reports(
    ctx: ToolContext, sid: int, hadm: float | None, hadm_given: Any, keywords: list[str], room: int
) -> list[dict[str, Any]]:
    if room <= 0:
        return []
    sql = (
        f"SELECT {ts('charttime')} AS t, spec_type_desc, org_name, ab_name, interpretation "
        "FROM microbiologyevents WHERE subject_id = ?"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    found = rows(ctx, sql + " ORDER BY charttime DESC NULLS LAST, _row", params)
    if keywords:
        found = [
            r
            for r in found
            if any(contains(r["spec_type_desc"], k) or contains(r["org_name"], k) for k in keywords)
        ]
    seen: set[tuple[Any, Any]] = set()
    out: list[dict[str, Any]] = []
    for r in found:
        key = (r["spec_type_desc"], r["t"])
        if key in seen:
            continue
        seen.add(key)
        if len(out) >= room:
            break
        report: dict[str, Any] = {
            "resourceType": "DiagnosticReport",
            "id": f"micro-{sid}-{r['t']}",
            "status": "final",
            "category": [
                {"coding": [{"system": fhir.LOINC, "code": "LP7820-4", "display": "Microbiology"}]}
            ],
            "code": {"text": r["spec_type_desc"] or "Microbiology"},
            "subject": fhir.patient_ref(sid),
            "effectiveDateTime": r["t"],
            "presentedForm": [{"contentType": "text/plain", "data": micro_summary(r)}],
        }
        if hadm_given is not None:
            report["encounter"] = {"reference": f"Encounter/encounter-{hadm_given}"}
        out.append(report)
    return out


DOC_TYPES = (
    ("discharge-summary", "discharge", "Discharge summary"),
    ("radiology", "radiology", "Radiology report"),
)


def document_reference_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "DocumentReference.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    type_code = text_arg(tool, args, "type_code")
    keyword = regex_arg(tool, args, "keyword")
    if sid is None or not ok:
        return empty("DocumentReference", args.get("subject_id"))
    out: list[dict[str, Any]] = []
    for code, table, display in DOC_TYPES:
        if type_code is not None and not (type_code.lower() in code or code in type_code.lower()):
            continue
        sql = f"SELECT note_id, hadm_id, {ts('charttime')} AS t, text FROM {table} WHERE subject_id = ?"
        params: list[Any] = [sid]
        if hadm is not None:
            sql += " AND hadm_id = ?"
            params.append(hadm)
        if keyword is not None:
            sql += " AND strpos(lower(text), lower(?)) > 0"
            params.append(keyword)
        found = rows(ctx, sql + " ORDER BY charttime DESC, _row LIMIT 5", params)
        as_float = table == "radiology" and nullable_hadm(ctx, table, sid)
        for n in found:
            enc = fhir.encounter_ref(n["hadm_id"], as_float=as_float)
            out.append(
                {
                    "resourceType": "DocumentReference",
                    "id": f"docref-{n['note_id']}",
                    "status": "current",
                    "type": {
                        "coding": [{"system": fhir.LOINC, "code": code, "display": display}],
                        "text": display,
                    },
                    "subject": fhir.patient_ref(sid),
                    "date": n["t"],
                    "content": [
                        {
                            "attachment": {
                                "contentType": "text/plain",
                                "data": str(n["text"] or "")[:4000],
                            }
                        }
                    ],
                    "context": {"encounter": [enc] if enc else []},
                }
            )
    if not out:
        return empty("DocumentReference", sid)
    return fhir.compat_bundle("DocumentReference", out)


# section header -> care-plan category (the reference's three sections plus a free-text "Plan:")
CAREPLAN_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("Discharge Instructions", "discharge-planning", "Discharge Planning"),
    ("Discharge Condition", "discharge-planning", "Discharge Planning"),
    ("Followup Instructions", "followup", "Follow-up"),
    ("Plan", "treatment", "Treatment"),
)
_FRAGMENT = {
    header: re.compile(rf"(?:^|\n)\s*{re.escape(header)}:\s*(.+?)(?:\n\s*\n|\Z)", re.S | re.I)
    for header, _, _ in CAREPLAN_SECTIONS
}


def careplan_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Sections pulled from the first 3 discharge notes; bodies stop at the first blank line,
    which is why the reference's bodies are often fragments. Always a Bundle."""
    tool = "CarePlan.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    category = text_arg(tool, args, "category")
    if sid is None or not ok:
        return fhir.compat_bundle("CarePlan", [])
    sql = (
        f"SELECT note_id, hadm_id, {ts('charttime')} AS t, text FROM discharge WHERE subject_id = ?"
    )
    params: list[Any] = [sid]
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    notes = rows(ctx, sql + " ORDER BY _row LIMIT 3", params)
    out: list[dict[str, Any]] = []
    for n in notes:
        for header, cat, display in CAREPLAN_SECTIONS:
            if category is not None and category != cat:
                continue
            m = _FRAGMENT[header].search(str(n["text"] or ""))
            if not m or not m.group(1).strip():
                continue
            out.append(
                {
                    "resourceType": "CarePlan",
                    "id": f"careplan-{n['note_id']}-{cat}",
                    "status": "completed",
                    "intent": "plan",
                    "category": [
                        {
                            "coding": [
                                {"system": fhir.CAREPLAN_CATEGORY, "code": cat, "display": display}
                            ],
                            "text": header,
                        }
                    ],
                    "note": [{"text": m.group(1).strip()[:1000]}],
                    "encounter": fhir.encounter_ref(n["hadm_id"]),
                    "period": {"end": n["t"]},
                }
            )
    return fhir.compat_bundle("CarePlan", out)


READ_TOOLS: dict[str, Callable[[ToolContext, dict[str, Any]], dict[str, Any]]] = {
    "Patient.read": patient_read,
    "Encounter.search": encounter_search,
    "Condition.search": condition_search,
    "Observation.search": observation_search,
    "MedicationRequest.search": medication_request_search,
    "MedicationAdministration.search": medication_administration_search,
    "DiagnosticReport.search": diagnostic_report_search,
    "DocumentReference.search": document_reference_search,
    "CarePlan.search": careplan_search,
}

__all__ = ["READ_TOOLS", "ToolError"]
