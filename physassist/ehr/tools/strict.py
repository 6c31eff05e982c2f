"""``strict`` semantics: the project's own tools, fixing official-implementation.md §8 items 1-7.

* One inclusive cutoff (``ctx.effective_cutoff()``) on every time-bearing table; a caller's
  ``date_to`` can narrow it but never extend it. Admissions still running at the cutoff show no
  end, no discharge disposition and no diagnoses (those are coded at discharge); a death after
  the cutoff is not revealed.
* Labels: exact -> synonyms -> conservative fuzzy over the patient's own labels; on a miss an
  empty searchset whose outcome entry lists the closest labels the patient has.
* ``Bundle.total`` is the number of matches; entries are truncated by ``_count`` (<= 200).
* Microbiology Observations from ``microbiologyevents``; working ``status`` (derived against the
  cutoff) and ``clinical_status``; ICD codes with or without dots; deterministic ids from keys.
* All SQL is parameterized; user text only reaches ``ILIKE`` with escaped wildcards.

Derivations (documented because MIMIC-IV has no such fields):
* MedicationRequest.status: ``active`` if the order has no stop time or stops after the cutoff;
  otherwise ``stopped`` when pharmacy says it was discontinued or replaced by a change order,
  else ``completed``.
* Condition.clinicalStatus: ``active`` for codes recorded at the patient's latest admission
  discharged by the cutoff (the anchor admission), ``inactive`` for codes only seen earlier;
  ``resolved`` is never derived (nothing in MIMIC-IV says a condition resolved).
* MedicationAdministration.status from the eMAR event text: given -> ``completed``,
  not given / not started / not applied -> ``not-done``, held -> ``on-hold``, stopped ->
  ``stopped``, otherwise ``unknown``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from . import fhir
from .context import ToolContext
from .db import and_equal, rows, ts
from .strict_common import Window, admission_miss, bundle
from .strict_medications import medication_administration_search, medication_request_search
from .strict_notes import careplan_search, diagnostic_report_search, document_reference_search
from .strict_observations import observation_search


def patient_read(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid = args["subject_id"]
    found = rows(
        ctx,
        f"SELECT gender, anchor_age, {ts('dod')} AS dod FROM patients WHERE subject_id = ? LIMIT 1",
        [sid],
    )
    if not found:
        return fhir.operation_outcome(f"Patient/{sid} not found in this EHR.")
    p = found[0]
    window = Window(ctx, {}, "Patient.read")
    out = {
        "resourceType": "Patient",
        "id": str(sid),
        "identifier": [{"system": "mimic-iv", "value": str(sid)}],
        "gender": {"M": "male", "F": "female"}.get(str(p["gender"]), "unknown"),
        "extension": [
            {
                "url": "https://physassist.dev/fhir/StructureDefinition/anchor-age",
                "valueInteger": p["anchor_age"],
            }
        ]
        if p["anchor_age"] is not None
        else None,
        "deceasedDateTime": str(p["dod"])[:10] if p["dod"] and window.visible(p["dod"]) else None,
    }
    return fhir.clean(out)


def encounter_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "Encounter.search")
    params: list[Any] = [sid]
    sql = (
        f"SELECT *, {ts('admittime')} AS a_t, {ts('dischtime')} AS d_t FROM admissions WHERE subject_id = ?"
        + window.sql("admittime", params)
    )
    sql += and_equal("hadm_id", hadm, params)
    found = rows(ctx, sql + " ORDER BY admittime DESC, hadm_id", params)
    if not found and (miss := admission_miss(ctx, sid, hadm, window)) is not None:
        return miss
    out = []
    for r in found:
        done = window.visible(r["d_t"])
        out.append(
            {
                "resourceType": "Encounter",
                "id": f"encounter-{r['hadm_id']}",
                "identifier": [{"system": "mimic-iv/hadm", "value": str(r["hadm_id"])}],
                "status": "finished" if done else "in-progress",
                "class": {"system": fhir.ACT_CODE, "code": "IMP", "display": "inpatient encounter"},
                "type": [{"text": r.get("admission_type")}] if r.get("admission_type") else None,
                "subject": fhir.patient_ref(sid),
                "period": {
                    "start": fhir.fhir_datetime(r["a_t"]),
                    "end": fhir.fhir_datetime(r["d_t"]) if done else None,
                },
                "hospitalization": {
                    "admitSource": {"text": r.get("admission_location")}
                    if r.get("admission_location")
                    else None,
                    "dischargeDisposition": {
                        "text": r.get("discharge_location")
                        or ("DIED" if r.get("hospital_expire_flag") else "unknown")
                    }
                    if done
                    else None,
                },
            }
        )
    return bundle(out)


# ----------------------------------------------------------------------------- Condition

_ICD_LIKE = re.compile(r"^[A-Za-z]?\d[0-9A-Za-z.]*$|^[A-Za-z]\d*$")


def condition_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    code, status = args.get("code"), args.get("clinical_status")
    window = Window(ctx, {}, "Condition.search")
    if (miss := admission_miss(ctx, sid, hadm, window)) is not None:
        return miss
    params: list[Any] = [sid]
    # diagnoses are coded at discharge: only admissions discharged by the cutoff
    visible = "SELECT hadm_id, admittime FROM admissions WHERE subject_id = ?" + window.sql(
        "dischtime", params
    )
    sql = (
        "SELECT d.hadm_id, d.seq_num, trim(d.icd_code) AS icd_code, d.icd_version, t.long_title, "
        "rank() OVER (ORDER BY a.admittime DESC) AS adm_rank "
        f"FROM diagnoses_icd d JOIN ({visible}) a ON a.hadm_id = d.hadm_id "
        "LEFT JOIN d_icd_diagnoses t ON trim(t.icd_code) = trim(d.icd_code) AND t.icd_version = d.icd_version "
        "WHERE d.subject_id = ?"
    )
    params.append(sid)
    found = rows(ctx, sql + " ORDER BY a.admittime DESC, d.seq_num", params)
    latest = {(r["icd_code"], r["icd_version"]) for r in found if r["adm_rank"] == 1}
    if hadm is not None:
        found = [r for r in found if r["hadm_id"] == hadm]
    if code is not None:
        if _ICD_LIKE.match(code.strip()):
            prefix = code.replace(".", "").replace(" ", "").upper()
            found = [
                r for r in found if str(r["icd_code"]).replace(".", "").upper().startswith(prefix)
            ]
        else:
            needle = code.lower()
            found = [r for r in found if needle in str(r["long_title"] or "").lower()]
    out = []
    for r in found:
        clinical = "active" if (r["icd_code"], r["icd_version"]) in latest else "inactive"
        if status is not None and status != clinical:
            continue
        system = fhir.ICD10 if str(r["icd_version"]) == "10" else fhir.ICD9
        title = r["long_title"] or r["icd_code"]
        out.append(
            {
                "resourceType": "Condition",
                "id": fhir.safe_id(f"condition-{sid}-{r['icd_code']}-{r['hadm_id']}"),
                "clinicalStatus": {
                    "coding": [{"system": fhir.CONDITION_CLINICAL, "code": clinical}]
                },
                "category": fhir.category(
                    fhir.CONDITION_CATEGORY, "encounter-diagnosis", "Encounter Diagnosis"
                ),
                "code": fhir.named_concept(system, r["icd_code"], title),
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
            }
        )
    hint = None
    if not out and status == "resolved":
        hint = "MIMIC-IV records no resolution of diagnoses; use clinical_status 'active' (latest admission) or 'inactive'."
    elif not out and code is not None:
        hint = f"No diagnosis code starting with '{code}' (dots ignored) or title containing it for this patient."
    return bundle(out, hint=hint)


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
