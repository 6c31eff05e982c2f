"""``strict`` semantics: the project's own tools, fixing docs/compat.md#what-strict-does-instead (items 1-7).

* One inclusive cutoff (``ToolContext.effective_cutoff()``) on every time-bearing table; a caller's
  ``date_to`` can narrow it but never extend it. A lab value or a microbiology result is shown
  from its report time, and a specimen drawn by the cutoff but not yet reported as pending; an
  admission's specimens include those without ``hadm_id`` drawn in its window (``reported.py``). Admissions still running at the cutoff show no
  end, no discharge disposition and no diagnoses (those are coded at discharge); a death after
  the cutoff is not revealed.
* Labels: exact -> synonyms -> conservative fuzzy over the patient's own labels; on a miss an
  empty searchset whose outcome entry lists the closest labels the patient has.
* ``Bundle.total`` is the number of matches; entries are truncated by ``_count`` (<= 200;
  by default 20 observations, 200 medication orders), newest first.
* Microbiology Observations from ``microbiologyevents``, one per test and isolate with its
  antibiotics' S/I/R, the test's kind, flags and resistances (``microbiology.py``); working
  ``status`` (derived against the cutoff) and ``clinical_status``; ICD codes with or without
  dots; deterministic ids from keys.
* No user text ever reaches SQL or a regex: the subject's rows are filtered in Python
  (``records.py``), names and keywords matched as literal, case-insensitive substrings.

Derivations (documented because MIMIC-IV has no such fields):
* MedicationRequest.status: ``active`` if the order has no stop time or stops after the cutoff;
  otherwise ``stopped`` when pharmacy says it was discontinued or replaced by a change order,
  else ``completed``.
* Condition.clinicalStatus: ``active`` for codes recorded at the patient's latest admission
  discharged by the cutoff (the anchor admission), ``inactive`` for codes only seen earlier;
  ``resolved`` is never derived (nothing in MIMIC-IV says a condition resolved).
* MedicationAdministration.status from the eMAR event text: given -> ``completed``,
  not given / not started / not applied -> ``not-done``, held -> ``on-hold``, stopped ->
  ``stopped``, otherwise ``unknown``. ICU administrations (``icu/inputevents``, shaped as
  MIMIC-on-FHIR's MedicationAdministrationICU) from ``statusdescription``: finished running or
  ended by a dose/rate change -> ``completed``, paused -> ``on-hold``, stopped -> ``stopped``,
  rewritten -> ``entered-in-error``; a row running at the cutoff -> ``in-progress``.
"""

from __future__ import annotations

import re
from typing import Any

from . import fhir
from .chart import Chart, Where, Window
from .records import by, joined, keep, order, text
from .registry import read_tool
from .strict_common import admission_miss, bundle


@read_tool(reads={"patients": ("gender", "anchor_age", "dod")})
def patient_read(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid = args["subject_id"]
    found = chart.subject_rows("patients", sid)
    if not found:
        return fhir.operation_outcome(f"Patient/{sid} not found in this EHR.")
    p = found[0]
    window = Window(chart.cutoff, {}, "Patient.read")
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
        "deceasedDateTime": (text(p["dod"]) or "")[:10]
        if p["dod"] and window.visible(p["dod"])
        else None,
    }
    resource: dict[str, Any] = fhir.clean(out)
    return resource


_ENCOUNTER_COLUMNS = ("hadm_id", "admittime", "dischtime", "admission_type", "admission_location",
                      "discharge_location", "hospital_expire_flag")  # fmt: skip


@read_tool(reads={"admissions": _ENCOUNTER_COLUMNS})
def encounter_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "Encounter.search")
    admissions = keep(chart.subject_rows("admissions", sid), hadm_id=hadm)
    found = order(
        (a for a in admissions if window.keeps(a["admittime"])),
        by("admittime", desc=True),
        by("hadm_id"),
    )
    if not found and (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    out = []
    for r in found:
        done = window.visible(r["dischtime"])
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
                    "start": fhir.fhir_datetime(text(r["admittime"])),
                    "end": fhir.fhir_datetime(text(r["dischtime"])) if done else None,
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


@read_tool(
    reads={
        "admissions": ("hadm_id", "admittime", "dischtime"),
        "diagnoses_icd": ("hadm_id", "seq_num", "icd_code", "icd_version"),
    },
)
def condition_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    code, status = args.get("code"), args.get("clinical_status")
    window = Window(chart.cutoff, {}, "Condition.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    # diagnoses are coded at discharge: only admissions discharged by the cutoff
    admitted = {
        a["hadm_id"]: a["admittime"]
        for a in chart.subject_rows("admissions", sid)
        if window.keeps(a["dischtime"])
    }
    coded = Where().among("hadm_id", list(admitted))
    latest = _latest_codes(chart, sid, coded, admitted)
    titles = chart.lookup("d_icd_diagnoses", "icd_code", "icd_version")
    where = Where().among("hadm_id", list(admitted)).equal("hadm_id", hadm)
    prefix = None
    if code is not None and _ICD_LIKE.match(code.strip()):
        prefix = code.replace(".", "").replace(" ", "").upper()
        codes = chart.distinct("diagnoses_icd", sid, "icd_code", where)
        matched = {c for c in codes if _undotted(c).startswith(prefix)}  # NULL as "NONE"
        term = f"({'icd_code IS NULL OR ' if None in matched else ''}{Where.IN.format('icd_code', 'VARCHAR')})"
        where.add(term, lambda r: r["icd_code"] in matched, list(matched))
    found = order(
        (
            {
                **d,
                "admittime": admitted[d["hadm_id"]],
                "long_title": joined(titles, (d["icd_code"], d["icd_version"]), "long_title"),
            }
            for d in chart.rows("diagnoses_icd", sid, where)
        ),
        by("admittime", desc=True),
        by("seq_num"),
    )
    if code is not None and prefix is None:
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
        hint = (
            "MIMIC-IV records no resolution of diagnoses; use clinical_status 'active' (latest "
            "admission) or 'inactive'."
        )
    elif not out and code is not None:
        hint = (
            f"No diagnosis code starting with '{code}' (dots ignored) or title containing it "
            "for this patient."
        )
    return bundle(out, hint=hint)


def _undotted(code: Any) -> str:
    return str(code).replace(".", "").upper()


def _latest_codes(
    chart: Chart, sid: int, coded: Where, admitted: dict[Any, Any]
) -> set[tuple[Any, Any]]:
    """The (code, version) pairs of the newest admission with diagnoses (NULL times last), of
    those ``coded`` keeps: what ``clinical_status`` calls active."""
    with_codes = chart.distinct("diagnoses_icd", sid, "hadm_id", coded)
    times = [admitted[h] for h in with_codes]
    if not times:
        return set()
    newest = max((t for t in times if t is not None), default=None)
    anchor = Where().among("hadm_id", [h for h in with_codes if admitted[h] == newest])
    return {(r["icd_code"], r["icd_version"]) for r in chart.rows("diagnoses_icd", sid, anchor)}
