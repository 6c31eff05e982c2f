"""``compat`` semantics: the reference implementation's behaviour, reproduced on our store.

Every quirk listed in docs/compat.md#the-quirks-once-each that our tables allow is kept on
purpose (lab-only day-exclusive date gate, dictionary-wide substring matching with its
"no dictionary match -> unfiltered" rule, default 20, OperationOutcome on empty results, the
``.0`` encounter reference, ...), so replaying a released gold trajectory returns the released
observations. Deviations forced by our store are
noted where they occur. The store keeps each row's source-file position (``_row``), so "file
order" and the CSV row indices the reference used in ids are reproduced exactly; ties in the
reference's (unstable) pandas sorts are broken by file order.
"""

from __future__ import annotations

from typing import Any

from . import fhir
from .compat_common import empty, encounter, hadm_filter, outcome, present, subject_key, text_arg
from .compat_frames import frame
from .context import ToolContext
from .records import by, joined, lookup, order
from .registry import read_tool

#: The admission details the reference put under ``_mimic``.
_MIMIC = ("admission_type", "admission_location", "discharge_location", "insurance", "language",
          "marital_status", "race", "hospital_expire_flag")  # fmt: skip


@read_tool(reads={"patients": ("gender", "anchor_age", "dod")})
def patient_read(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid = subject_key("Patient.read", args)
    found = () if sid is None else frame(ctx.store, "patients", sid)
    if not found:
        return outcome(f"Patient/{args.get('subject_id')} not found")
    p = found[0]
    out: dict[str, Any] = {
        "resourceType": "Patient",
        "id": str(sid),
        "identifier": [{"system": "mimic-iv", "value": str(sid)}],
        "gender": {"M": "male", "F": "female"}.get(str(p["gender"]), "unknown"),
        "_anchor_age": None if p["anchor_age"] is None else int(p["anchor_age"]),
    }
    if p["dod"] is not None:
        out["deceasedDateTime"] = str(p["dod"])[:10]
    return out


@read_tool(
    reads={"admissions": ("hadm_id", "admittime", "dischtime", *_MIMIC)},
)
def encounter_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Encounter.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    if sid is None or not ok:
        return empty("Encounter", args)
    found = [r for r in frame(ctx.store, "admissions", sid) if hadm is None or r["hadm_id"] == hadm]
    if not found:
        return empty("Encounter", args)
    return fhir.compat_bundle("Encounter", [_encounter(r, sid) for r in found])


def _encounter(r: dict[str, Any], sid: int) -> dict[str, Any]:
    return {
        "resourceType": "Encounter",
        "id": f"encounter-{r['hadm_id']}",
        "status": "finished",
        "class": {"code": "IMP", "display": "inpatient encounter"},
        "subject": fhir.patient_ref(sid),
        "period": present({"start": r["admittime"], "end": r["dischtime"]}, "start", "end"),
        "identifier": [{"system": "mimic-iv/hadm", "value": str(r["hadm_id"])}],
        "_mimic": {k: r[k] for k in _MIMIC if r[k] is not None},
    }


@read_tool(
    reads={"diagnoses_icd": ("hadm_id", "seq_num", "icd_code", "icd_version")},
)
def condition_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "Condition.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    code = text_arg(tool, args, "code")
    status = text_arg(tool, args, "clinical_status")
    if sid is None or not ok or (status is not None and status != "active"):
        return empty("Condition", args)
    found = [
        r for r in frame(ctx.store, "diagnoses_icd", sid) if hadm is None or r["hadm_id"] == hadm
    ]
    if code is not None:  # prefix on the upper-cased argument, dots kept (I48.91 never matches)
        prefix = code.upper()
        found = [r for r in found if str(r["icd_code"]).startswith(prefix)]
    found = order(found, by("hadm_id"), by("seq_num"))
    if not found:
        return empty("Condition", args)
    titles = lookup(ctx, "d_icd_diagnoses", "icd_code", "icd_version")
    out = []
    for r in found:
        system = fhir.ICD10 if str(r["icd_version"]) == "10" else fhir.ICD9
        icd = str(r["icd_code"])  # a code pandas read as a number prints without its zeros
        version = None if r["icd_version"] is None else int(r["icd_version"])
        title = joined(titles, (icd, version), "long_title") or icd
        out.append(
            {
                "resourceType": "Condition",
                "id": f"condition-{sid}-{icd}-{r['hadm_id']}",
                "clinicalStatus": {
                    "coding": [{"system": fhir.CONDITION_CLINICAL, "code": "active"}]
                },
                "category": fhir.category(
                    fhir.CONDITION_CATEGORY, "encounter-diagnosis", "Encounter Diagnosis"
                ),
                "code": fhir.named_concept(system, icd, title),
                "subject": fhir.patient_ref(sid),
                "encounter": encounter(r["hadm_id"]),
                "_seq_num": r["seq_num"],
            }
        )
    return fhir.compat_bundle("Condition", out)
