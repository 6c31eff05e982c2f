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

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

from . import fhir
from .context import ToolContext
from .db import like_escape, placeholders, rows, ts
from .errors import ToolError
from .labels import LabelMatch, match_label
from .schemas import DEFAULT_COUNT

MAR_LIMIT = 100
REPORT_LIMIT = 10
NOTES_PER_TYPE = 5


# ----------------------------------------------------------------------------- time window


class Window:
    """The time filter of one call: ``[date_from, min(date_to end-of-day, cutoff)]``."""

    def __init__(self, ctx: ToolContext, args: dict[str, Any], tool: str):
        self.cutoff = ctx.effective_cutoff()
        self.start = _parse_day(tool, "date_from", args.get("date_from"), end=False)
        upper = _parse_day(tool, "date_to", args.get("date_to"), end=True)
        self.end = min((t for t in (upper, self.cutoff) if t is not None), default=None)

    def sql(self, column: str, params: list[Any], use_start: bool = True) -> str:
        """SQL conditions for ``column`` (stored as TIMESTAMP, DATE or text), adding params."""
        clause = ""
        expr = f"TRY_CAST({column} AS TIMESTAMP)"
        if use_start and self.start is not None:
            clause += f" AND {expr} >= ?"
            params.append(self.start)
        if self.end is not None:
            clause += f" AND {expr} <= ?"
            params.append(self.end)
        return clause

    def visible(self, value: Any) -> bool:
        """Whether a timestamp string is at or before the cutoff."""
        if value is None or self.cutoff is None:
            return value is not None
        return _to_dt(value) <= self.cutoff


def _to_dt(value: Any) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value
    text = str(value)
    return (
        dt.datetime.fromisoformat(text[:19])
        if len(text) > 10
        else dt.datetime.fromisoformat(text[:10])
    )


def _parse_day(tool: str, key: str, value: Any, end: bool) -> dt.datetime | None:
    if value is None:
        return None
    text = str(value).strip()
    try:
        if len(text) > 10:
            return dt.datetime.fromisoformat(text.replace("Z", "")[:19])
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            f"{tool}: '{key}' must be a date like 2180-05-06 (YYYY-MM-DD); got {value!r}."
        ) from None
    return dt.datetime.combine(day, dt.time.max if end else dt.time.min)


# ----------------------------------------------------------------------------- shared helpers


def _bundle(
    resources: list[dict[str, Any]], total: int | None = None, hint: str | None = None
) -> dict[str, Any]:
    return fhir.strict_bundle(
        [fhir.clean(r) for r in resources], len(resources) if total is None else total, hint
    )


class _NoAdmission(Exception):
    def __init__(self, hint: str):
        self.hint = hint


def _check_admission(ctx: ToolContext, sid: int, hadm: int | None, window: Window) -> None:
    """An unknown (or not yet started) admission gives an empty searchset listing the real ones."""
    if hadm is None:
        return
    params: list[Any] = [sid]
    sql = "SELECT hadm_id FROM admissions WHERE subject_id = ?"
    if window.cutoff is not None:
        sql += " AND TRY_CAST(admittime AS TIMESTAMP) <= ?"
        params.append(window.cutoff)
    ids = [r["hadm_id"] for r in rows(ctx, sql + " ORDER BY admittime", params)]
    if hadm not in ids:
        listed = ", ".join(str(i) for i in ids) or "none"
        raise _NoAdmission(
            f"Admission hadm_id {hadm} is not one of this patient's admissions (known: {listed})."
        )


def _miss_hint(kind: str, query: str, match: LabelMatch) -> str:
    closest = ", ".join(f"'{c}'" for c in match.closest) or "none"
    return (
        f"No {kind} named '{query}' for this patient (no exact, synonym or close match). "
        f"Closest {kind} labels this patient has: {closest}."
    )


def _interpretation(
    value: float | None, low: float | None, high: float | None, flag: Any
) -> list[dict] | None:
    code = None
    if value is not None and high is not None and value > high:
        code, display = "H", "High"
    elif value is not None and low is not None and value < low:
        code, display = "L", "Low"
    elif flag in ("abnormal", "delta"):
        code, display = "A", "Abnormal"
    if code is None:
        return None
    return [{"coding": [{"system": fhir.INTERPRETATION, "code": code, "display": display}]}]


def _quantity(value: float | None, unit: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    return {"value": value, "unit": str(unit) if unit not in (None, "") else None}


# ----------------------------------------------------------------------------- Patient, Encounter


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
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    found = rows(ctx, sql + " ORDER BY admittime DESC, hadm_id", params)
    if not found and hadm is not None:
        try:
            _check_admission(ctx, sid, hadm, window)
        except _NoAdmission as miss:
            return _bundle([], 0, miss.hint)
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
    return _bundle(out)


# ----------------------------------------------------------------------------- Condition

_ICD_LIKE = re.compile(r"^[A-Za-z]?\d[0-9A-Za-z.]*$|^[A-Za-z]\d*$")


def condition_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    code, status = args.get("code"), args.get("clinical_status")
    window = Window(ctx, {}, "Condition.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
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
            }
        )
    hint = None
    if not out and status == "resolved":
        hint = "MIMIC-IV records no resolution of diagnoses; use clinical_status 'active' (latest admission) or 'inactive'."
    elif not out and code is not None:
        hint = f"No diagnosis code starting with '{code}' (dots ignored) or title containing it for this patient."
    return _bundle(out, hint=hint)


# ----------------------------------------------------------------------------- Observation


def observation_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, args, "Observation.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    count = args.get("_count", DEFAULT_COUNT)
    category = args.get("category") or "laboratory"
    if category == "vital-signs":
        return _vitals(ctx, sid, hadm, args.get("code"), window, count)
    if category == "microbiology":
        return _micro_observations(ctx, sid, hadm, args.get("code"), window, count)
    return _labs(ctx, sid, hadm, args.get("code"), window, count)


def _labs(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    params: list[Any] = [sid]
    base = (
        "FROM labevents l LEFT JOIN d_labitems d ON d.itemid = l.itemid WHERE l.subject_id = ?"
        + window.sql("l.charttime", params, use_start=False)
    )
    if code is not None:
        labels = rows(ctx, f"SELECT DISTINCT d.label, d.fluid {base}", params)
        match = match_label(code, [r["label"] for r in labels if r["label"]])
        if not match.matched:
            return _bundle([], 0, _miss_hint("laboratory test", code, match))
        chosen = set(match.labels)
        fluids = {r["fluid"] for r in labels if r["label"] in chosen}
        params2 = list(params)
        base += f" AND d.label IN ({placeholders(chosen)})"
        params2.extend(sorted(chosen))
        if (
            len(fluids) > 1
            and "Blood" in fluids
            and not any(f and f.lower() in code.lower() for f in fluids - {"Blood"})
        ):
            base += " AND d.fluid = 'Blood'"  # "Creatinine" means serum unless a fluid is named
        params = params2
    if hadm is not None:
        base += " AND l.hadm_id = ?"
        params.append(hadm)
    base += window.sql("l.charttime", params)
    sql = (
        f"SELECT l.labevent_id, l.itemid, l.hadm_id, {ts('l.charttime')} AS t, l.value, l.valuenum, l.valueuom, "
        "l.ref_range_lower, l.ref_range_upper, l.flag, l.comments, d.label, count(*) OVER () AS n_total "
        f"{base} ORDER BY l.charttime DESC, l.labevent_id LIMIT ?"
    )
    found = rows(ctx, sql, params + [count])
    total = found[0]["n_total"] if found else 0
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        low, high = fhir.as_number(r["ref_range_lower"]), fhir.as_number(r["ref_range_upper"])
        unit = r["valueuom"]
        label = r["label"] or str(r["itemid"])
        comment = str(r["comments"] or "").strip()
        out.append(
            {
                "resourceType": "Observation",
                "id": f"lab-{r['labevent_id']}",
                "status": "final",
                "category": [
                    {
                        "coding": [
                            {
                                "system": fhir.OBS_CATEGORY,
                                "code": "laboratory",
                                "display": "Laboratory",
                            }
                        ]
                    }
                ],
                "code": {
                    "coding": [
                        {"system": "mimic-iv/itemid", "code": str(r["itemid"]), "display": label}
                    ],
                    "text": label,
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
                "valueQuantity": _quantity(value, unit),
                "valueString": None
                if value is not None
                else (r["value"] if r["value"] not in (None, "") else None),
                "interpretation": _interpretation(value, low, high, r["flag"]),
                "referenceRange": [{"low": _quantity(low, unit), "high": _quantity(high, unit)}]
                if low is not None or high is not None
                else None,
                "note": [{"text": comment}] if comment and comment != "___" else None,
            }
        )
    return _bundle(out, total)


def _vitals(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    params: list[Any] = [sid]
    base = (
        "FROM chartevents c LEFT JOIN d_items d ON d.itemid = c.itemid WHERE c.subject_id = ?"
        + window.sql("c.charttime", params, use_start=False)
    )
    chart_labels = [
        r["label"] for r in rows(ctx, f"SELECT DISTINCT d.label {base}", params) if r["label"]
    ]
    omr_params: list[Any] = [sid]
    omr_base = "FROM omr WHERE subject_id = ?" + window.sql(
        "chartdate", omr_params, use_start=False
    )
    if hadm is not None:  # OMR has no admission: keep the admission's days
        omr_base += (
            " AND CAST(chartdate AS DATE) BETWEEN (SELECT CAST(admittime AS DATE) FROM admissions WHERE hadm_id = ?)"
            " AND (SELECT CAST(dischtime AS DATE) FROM admissions WHERE hadm_id = ?)"
        )
        omr_params += [hadm, hadm]
    use_omr = False
    if code is not None:
        match = match_label(code, chart_labels)
        if match.matched:
            base += f" AND d.label IN ({placeholders(match.labels)})"
            params.extend(match.labels)
        else:
            omr_names = [
                r["result_name"]
                for r in rows(ctx, f"SELECT DISTINCT result_name {omr_base}", omr_params)
            ]
            omr_match = match_label(code, omr_names)
            if not omr_match.matched:
                merged = LabelMatch(
                    (), "none", tuple(dict.fromkeys(match.closest + omr_match.closest))[:6]
                )
                return _bundle([], 0, _miss_hint("vital sign", code, merged))
            use_omr = True
            omr_base += f" AND result_name IN ({placeholders(omr_match.labels)})"
            omr_params.extend(omr_match.labels)
    elif not chart_labels:
        use_omr = True
    if use_omr:
        return _omr(ctx, sid, omr_base, omr_params, window, count)
    if hadm is not None:
        base += (
            " AND (c.hadm_id = ? OR c.stay_id IN (SELECT stay_id FROM icustays WHERE hadm_id = ?))"
        )
        params += [hadm, hadm]
    base += window.sql("c.charttime", params)
    sql = (
        f"SELECT c.stay_id, c.hadm_id, c.itemid, {ts('c.charttime')} AS t, c.value, c.valuenum, c.valueuom, "
        f"d.label, d.unitname, count(*) OVER () AS n_total {base} ORDER BY c.charttime DESC, c.itemid LIMIT ?"
    )
    found = rows(ctx, sql, params + [count])
    total = found[0]["n_total"] if found else 0
    out = []
    for r in found:
        value = fhir.as_number(r["valuenum"])
        label = r["label"] or str(r["itemid"])
        stamp = re.sub(r"\D", "", str(r["t"]))[:14]
        out.append(
            {
                "resourceType": "Observation",
                "id": fhir.safe_id(f"vital-{r['stay_id']}-{r['itemid']}-{stamp}"),
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
                            "system": "mimic-iv/icu-itemid",
                            "code": str(r["itemid"]),
                            "display": label,
                        }
                    ],
                    "text": label,
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
                "valueQuantity": _quantity(value, r["valueuom"] or r["unitname"]),
                "valueString": None if value is not None else r["value"],
            }
        )
    return _bundle(out, total)


def _omr(
    ctx: ToolContext, sid: int, base: str, params: list[Any], window: Window, count: int
) -> dict[str, Any]:
    params = list(params)
    if window.start is not None:
        base += " AND TRY_CAST(chartdate AS TIMESTAMP) >= ?"
        params.append(window.start)
    sql = (
        f"SELECT {ts('chartdate')} AS t, seq_num, result_name, result_value, count(*) OVER () AS n_total "
        f"{base} ORDER BY chartdate DESC, seq_num, result_name LIMIT ?"
    )
    found = rows(ctx, sql, params + [count])
    total = found[0]["n_total"] if found else 0
    out = []
    for r in found:
        name = str(r["result_name"])
        value = fhir.as_number(r["result_value"])
        unit = re.search(r"\(([^)]+)\)", name)
        out.append(
            {
                "resourceType": "Observation",
                "id": fhir.stable_id("omr", sid, r["t"], r["seq_num"], name),
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
                    "coding": [{"system": "mimic-iv/omr", "code": name, "display": name}],
                    "text": name,
                },
                "subject": fhir.patient_ref(sid),
                "effectiveDateTime": str(r["t"])[:10],
                "valueQuantity": _quantity(value, unit.group(1) if unit else None),
                "valueString": None if value is not None else r["result_value"],
            }
        )
    return _bundle(out, total)


def _micro_rows(
    ctx: ToolContext, sid: int, hadm: int | None, window: Window, code: str | None = None
) -> list[dict[str, Any]]:
    params: list[Any] = [sid]
    when = "coalesce(charttime, chartdate)"
    sql = (
        f"SELECT micro_specimen_id, {ts(when)} AS t, hadm_id, spec_type_desc, test_itemid, test_name, "
        "org_name, isolate_num, ab_name, dilution_text, interpretation, comments "
        "FROM microbiologyevents WHERE subject_id = ?" + window.sql(when, params)
    )
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    if code is not None and normalize_micro(code):
        needle = f"%{like_escape(normalize_micro(code))}%"
        sql += (
            " AND (spec_type_desc ILIKE ? ESCAPE '\\' OR test_name ILIKE ? ESCAPE '\\' "
            "OR org_name ILIKE ? ESCAPE '\\')"
        )
        params += [needle, needle, needle]
    return rows(
        ctx,
        sql + f" ORDER BY {when} DESC, micro_specimen_id, test_seq, isolate_num, ab_name",
        params,
    )


def normalize_micro(code: str) -> str:
    """'blood culture' -> 'blood'; generic words ('culture', 'micro') mean every specimen."""
    words = [
        w
        for w in re.split(r"\s+", code.lower().strip())
        if w not in {"culture", "cultures", "micro", "microbiology", "cx"}
    ]
    return " ".join(words)


def _micro_observations(
    ctx: ToolContext, sid: int, hadm: int | None, code: str | None, window: Window, count: int
) -> dict[str, Any]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in _micro_rows(ctx, sid, hadm, window, code):
        key = (r["micro_specimen_id"], r["test_itemid"], r["org_name"], r["isolate_num"])
        groups.setdefault(key, []).append(r)
    out = []
    for key, items in list(groups.items())[:count]:
        first = items[0]
        organism = first["org_name"]
        comment = str(first["comments"] or "").strip()
        value = organism or (comment if comment and comment != "___" else "No organism reported")
        components = [
            {
                "code": {"text": r["ab_name"]},
                "valueString": " ".join(x for x in (r["interpretation"], r["dilution_text"]) if x)
                or "reported",
            }
            for r in items
            if r["ab_name"]
        ]
        out.append(
            {
                "resourceType": "Observation",
                "id": fhir.safe_id(
                    f"micro-{key[0]}-{key[1]}-{key[3] if key[3] is not None else 0}-{fhir.stable_id('o', key[2])[2:8]}"
                ),
                "status": "final",
                "category": [
                    {
                        "coding": [
                            {
                                "system": fhir.OBS_CATEGORY,
                                "code": "laboratory",
                                "display": "Laboratory",
                            }
                        ],
                        "text": "Microbiology",
                    }
                ],
                "code": {
                    "text": f"{first['test_name'] or 'Culture'} ({first['spec_type_desc'] or 'specimen'})"
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(first["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(first["t"]),
                "valueString": value,
                "component": components or None,
            }
        )
    hint = None
    if not out and code is not None:
        hint = f"No microbiology specimen, test or organism matching '{code}' for this patient."
    return _bundle(out, len(groups), hint)


# ----------------------------------------------------------------------------- medications


_STOPPED = ("discontinued", "inactive")


def _rx_status(stop: Any, pharmacy_status: Any, window: Window) -> str:
    if stop is None or (window.cutoff is not None and _to_dt(stop) > window.cutoff):
        return "active"
    status = str(pharmacy_status or "").lower()
    if status.startswith(_STOPPED) and "discharge" not in status:
        return "stopped"
    return "completed"


def medication_request_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "MedicationRequest.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    params: list[Any] = [sid]
    sql = (
        f"SELECT p.hadm_id, p.pharmacy_id, p.poe_id, p.poe_seq, {ts('p.starttime')} AS s, {ts('p.stoptime')} AS e, "
        "p.drug, p.dose_val_rx, p.dose_unit_rx, p.route, ph.status AS ph_status, ph.frequency "
        "FROM prescriptions p LEFT JOIN (SELECT pharmacy_id, any_value(status) AS status, any_value(frequency) AS frequency "
        "FROM pharmacy WHERE subject_id = ? GROUP BY pharmacy_id) ph ON ph.pharmacy_id = p.pharmacy_id "
        "WHERE p.subject_id = ?"
    )
    params.append(sid)
    sql += window.sql("p.starttime", params)
    if hadm is not None:
        sql += " AND p.hadm_id = ?"
        params.append(hadm)
    if args.get("medication"):
        sql += " AND p.drug ILIKE ? ESCAPE '\\'"
        params.append(f"%{like_escape(args['medication'])}%")
    found = rows(ctx, sql + " ORDER BY p.starttime DESC, p.drug, p.pharmacy_id", params)
    out = []
    for r in found:
        status = _rx_status(r["e"], r["ph_status"], window)
        if args.get("status") and args["status"] != status:
            continue
        dose, unit, route = r["dose_val_rx"], r["dose_unit_rx"], r["route"]
        text = " ".join(str(x) for x in (dose, unit, route, r["frequency"]) if x)
        out.append(
            {
                "resourceType": "MedicationRequest",
                "id": fhir.stable_id(
                    "rx", sid, r["pharmacy_id"], r["poe_id"], r["poe_seq"], r["drug"], r["s"]
                ),
                "status": status,
                "intent": "order",
                "medicationCodeableConcept": {
                    "coding": [{"system": "mimic-iv/drug", "display": r["drug"]}],
                    "text": r["drug"] or "(drug not recorded)",
                },
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(r["hadm_id"]),
                "authoredOn": fhir.fhir_datetime(r["s"]),
                "dosageInstruction": [
                    {
                        "text": text or None,
                        "route": {"text": route} if route else None,
                        "timing": {
                            "code": {"text": r["frequency"]} if r["frequency"] else None,
                            "repeat": {
                                "boundsPeriod": {
                                    "start": fhir.fhir_datetime(r["s"]),
                                    "end": fhir.fhir_datetime(r["e"])
                                    if status != "active"
                                    else None,
                                }
                            },
                        },
                        "doseAndRate": [{"doseQuantity": _quantity(fhir.as_number(dose), unit)}]
                        if fhir.as_number(dose) is not None
                        else None,
                    }
                ],
            }
        )
    hint = None
    if not out and args.get("medication"):
        hint = f"No medication order whose drug name contains '{args['medication']}' for this patient up to the current date."
    return _bundle(out, hint=hint)


_NOT_DONE = (
    "not given",
    "not started",
    "not applied",
    "not flushed",
    "not confirmed",
    "not assessed",
    "not removed",
    "not read",
    "not done",
)


def mar_status(event: Any) -> str:
    text = str(event or "").strip().lower()
    if not text:
        return "unknown"
    if any(p in text for p in _NOT_DONE):
        return "not-done"
    if "hold" in text or "held" in text:
        return "on-hold"
    if text.startswith("stopped") or "delayed stopped" in text:
        return "stopped"
    if any(
        w in text
        for w in (
            "administered",
            "given",
            "applied",
            "started",
            "confirmed",
            "flushed",
            "assessed",
            "removed",
            "read",
            "rate change",
            "reconciliation",
        )
    ):
        return "completed"
    return "unknown"


def medication_administration_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "MedicationAdministration.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    params: list[Any] = [sid]
    where = "WHERE e.subject_id = ?" + window.sql("e.charttime", params)
    if hadm is not None:
        where += " AND e.hadm_id = ?"
        params.append(hadm)
    if args.get("medication"):
        where += " AND e.medication ILIKE ? ESCAPE '\\'"
        params.append(f"%{like_escape(args['medication'])}%")
    sql = (
        f"WITH m AS (SELECT e.emar_id, e.hadm_id, {ts('e.charttime')} AS t, e.charttime AS ct, e.medication, e.event_txt, "
        f"count(*) OVER () AS n_total FROM emar e {where} ORDER BY e.charttime DESC, e.emar_id LIMIT ?) "
        "SELECT m.*, d.dose_given, d.dose_given_unit, d.route FROM m LEFT JOIN ("
        "SELECT emar_id, arg_min(dose_given, parent_field_ordinal) AS dose_given, "
        "arg_min(dose_given_unit, parent_field_ordinal) AS dose_given_unit, arg_min(route, parent_field_ordinal) AS route "
        "FROM emar_detail WHERE subject_id = ? AND dose_given IS NOT NULL AND emar_id IN (SELECT emar_id FROM m) "
        "GROUP BY emar_id) d ON d.emar_id = m.emar_id ORDER BY m.ct DESC, m.emar_id"
    )
    found = rows(ctx, sql, params + [MAR_LIMIT, sid])
    total = found[0]["n_total"] if found else 0
    out = []
    for r in found:
        status = mar_status(r["event_txt"])
        dose_value = fhir.as_number(r["dose_given"])
        dosage = None
        if r["dose_given"] is not None or r["route"]:
            dosage = {
                "text": " ".join(
                    str(x) for x in (r["dose_given"], r["dose_given_unit"], r["route"]) if x
                )
                or None,
                "route": {"text": r["route"]} if r["route"] else None,
                "dose": _quantity(dose_value, r["dose_given_unit"]),
            }
        event = str(r["event_txt"] or "").strip()
        out.append(
            {
                "resourceType": "MedicationAdministration",
                "id": fhir.safe_id(f"emar-{r['emar_id']}"),
                "status": status,
                "statusReason": [{"text": event}]
                if status in ("not-done", "on-hold", "stopped") and event
                else None,
                "medicationCodeableConcept": {
                    "text": r["medication"] or "(medication not recorded)"
                },
                "subject": fhir.patient_ref(sid),
                "context": fhir.encounter_ref(r["hadm_id"]),
                "effectiveDateTime": fhir.fhir_datetime(r["t"]),
                "note": [{"text": event}] if event else None,
                "dosage": dosage,
            }
        )
    return _bundle(out, total)


# ----------------------------------------------------------------------------- reports and notes

_MODALITIES: dict[str, tuple[str, ...]] = {
    "x-ray": ("CHEST", "RADIOGRAPH", "PORTABLE", "X-RAY", "XRAY", " AP", " PA", "(PA", "(AP"),
    "ct": ("CT ", "CTA ", "CT-", "COMPUTED TOMOGRAPHY"),
    "mri": ("MR ", "MRI", "MRA ", "MAGNETIC RESONANCE"),
    "ultrasound": ("US ", "ULTRASOUND", "SONO", "DUPLEX", "DOPPLER"),
    "echo": ("ECHO", "TTE", "TEE"),
}
_MODALITY_ALIASES = {
    "xray": "x-ray",
    "x ray": "x-ray",
    "cxr": "x-ray",
    "chest x-ray": "x-ray",
    "chest xray": "x-ray",
    "radiograph": "x-ray",
    "chest": "x-ray",
    "ct scan": "ct",
    "cat scan": "ct",
    "mr": "mri",
    "us": "ultrasound",
    "sonogram": "ultrasound",
    "echocardiogram": "echo",
    "tte": "echo",
    "imaging": "radiology",
    "radiology": "radiology",
}
_MICRO_WORDS = (
    "micro",
    "culture",
    "cultures",
    "blood",
    "urine",
    "sputum",
    "csf",
    "wound",
    "swab",
    "stool",
    "microbiology",
)


def _impression(text: str) -> str | None:
    m = re.search(r"IMPRESSION:\s*(.+?)(?:\n\s*\n[A-Z ]{3,}:|\Z)", text, re.S)
    return " ".join(m.group(1).split())[:1000] if m else None


def diagnostic_report_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "DiagnosticReport.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    wanted = (args.get("report_type") or "").strip().lower()
    modality = _MODALITY_ALIASES.get(wanted, wanted)
    want_micro = not wanted or any(w in wanted for w in _MICRO_WORDS)
    want_rad = not wanted or modality in _MODALITIES or modality == "radiology"
    if wanted and not want_micro and not want_rad:
        want_rad = True  # free text: search it in the exam line of radiology reports
    reports: list[tuple[str, dict[str, Any]]] = []
    if want_rad:
        params: list[Any] = [sid]
        sql = f"SELECT note_id, hadm_id, note_type, {ts('charttime')} AS t, text FROM radiology WHERE subject_id = ?"
        sql += window.sql("charttime", params)
        if hadm is not None:
            sql += " AND hadm_id = ?"
            params.append(hadm)
        for n in rows(ctx, sql + " ORDER BY charttime DESC, note_id", params):
            text = str(n["text"] or "")
            head = f" {n['note_type'] or ''} {text[:200]}".upper()
            if modality in _MODALITIES and not any(k in head for k in _MODALITIES[modality]):
                continue
            if (
                wanted
                and modality not in _MODALITIES
                and modality != "radiology"
                and wanted.upper() not in head
            ):
                continue
            reports.append(
                (
                    str(n["t"]),
                    {
                        "resourceType": "DiagnosticReport",
                        "id": fhir.safe_id(f"dr-{n['note_id']}"),
                        "status": "final",
                        "category": [
                            {
                                "coding": [
                                    {
                                        "system": fhir.LOINC,
                                        "code": "LP29684-5",
                                        "display": "Radiology",
                                    }
                                ]
                            }
                        ],
                        "code": {"text": _title(text)},
                        "subject": fhir.patient_ref(sid),
                        "encounter": fhir.encounter_ref(n["hadm_id"]),
                        "effectiveDateTime": fhir.fhir_datetime(n["t"]),
                        "conclusion": _impression(text),
                        "presentedForm": [{"contentType": "text/plain", "data": fhir.b64(text)}],
                    },
                )
            )
    if want_micro:
        specimen = normalize_micro(wanted) if wanted else None
        by_specimen: dict[Any, list[dict[str, Any]]] = {}
        for r in _micro_rows(ctx, sid, hadm, window, specimen or None):
            by_specimen.setdefault(r["micro_specimen_id"], []).append(r)
        for spec_id, items in by_specimen.items():
            first = items[0]
            lines = _micro_lines(items)
            organisms = sorted({r["org_name"] for r in items if r["org_name"]})
            reports.append(
                (
                    str(first["t"]),
                    {
                        "resourceType": "DiagnosticReport",
                        "id": fhir.safe_id(f"micro-{spec_id}"),
                        "status": "final",
                        "category": [
                            {
                                "coding": [
                                    {
                                        "system": fhir.LOINC,
                                        "code": "LP7820-4",
                                        "display": "Microbiology",
                                    }
                                ]
                            }
                        ],
                        "code": {"text": f"{first['spec_type_desc'] or 'Specimen'} microbiology"},
                        "subject": fhir.patient_ref(sid),
                        "encounter": fhir.encounter_ref(first["hadm_id"]),
                        "effectiveDateTime": fhir.fhir_datetime(first["t"]),
                        "conclusion": ("Organisms: " + ", ".join(organisms))
                        if organisms
                        else "No organism reported",
                        "presentedForm": [
                            {"contentType": "text/plain", "data": fhir.b64("\n".join(lines))}
                        ],
                    },
                )
            )
    reports.sort(key=lambda x: x[0], reverse=True)
    hint = None
    if not reports and wanted:
        hint = (
            f"No report of type '{args['report_type']}' for this patient. Types understood: x-ray, CT, MRI, "
            "ultrasound, echo, radiology, or microbiology (culture, blood, urine, sputum, csf, wound)."
        )
    return _bundle([r for _, r in reports[:REPORT_LIMIT]], len(reports), hint)


def _micro_lines(items: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    seen: dict[tuple[Any, Any], list[str]] = {}
    for r in items:
        key = (r["test_name"], r["org_name"])
        if key not in seen:
            seen[key] = []
            comment = str(r["comments"] or "").strip()
            result = r["org_name"] or (
                comment if comment and comment != "___" else "no organism reported"
            )
            lines.append(f"{r['test_name'] or 'Test'}: {result}")
        if r["ab_name"]:
            lines.append(
                f"  {r['ab_name']}: {' '.join(x for x in (r['interpretation'], r['dilution_text']) if x)}"
            )
    return lines


def _title(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.upper().startswith("INDICATION"):
            return line[:120]
    return "Radiology report"


_DOC_TYPES = (
    ("discharge-summary", "discharge", "18842-5", "Discharge summary"),
    ("radiology", "radiology", "18748-4", "Diagnostic imaging study"),
)


def document_reference_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "DocumentReference.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    out: list[dict[str, Any]] = []
    total = 0
    for code, table, loinc, display in _DOC_TYPES:
        if args.get("type_code") and args["type_code"] != code:
            continue
        params: list[Any] = [sid]
        sql = f"SELECT note_id, hadm_id, {ts('charttime')} AS t, text, count(*) OVER () AS n_total FROM {table} WHERE subject_id = ?"
        sql += window.sql("charttime", params)
        if hadm is not None:
            sql += " AND hadm_id = ?"
            params.append(hadm)
        if args.get("keyword"):
            sql += " AND text ILIKE ? ESCAPE '\\'"
            params.append(f"%{like_escape(args['keyword'])}%")
        found = rows(
            ctx, sql + " ORDER BY charttime DESC, note_id LIMIT ?", params + [NOTES_PER_TYPE]
        )
        total += found[0]["n_total"] if found else 0
        for n in found:
            out.append(
                {
                    "resourceType": "DocumentReference",
                    "id": fhir.safe_id(f"docref-{n['note_id']}"),
                    "status": "current",
                    "type": {
                        "coding": [{"system": fhir.LOINC, "code": loinc, "display": display}],
                        "text": code,
                    },
                    "subject": fhir.patient_ref(sid),
                    "date": fhir.fhir_datetime(n["t"]),
                    "content": [
                        {
                            "attachment": {
                                "contentType": "text/plain",
                                "data": fhir.b64(str(n["text"] or "")),
                            }
                        }
                    ],
                    "context": {
                        "encounter": [fhir.encounter_ref(n["hadm_id"])]
                        if n["hadm_id"] is not None
                        else None
                    },
                }
            )
    hint = None
    if not out and args.get("keyword"):
        hint = f"No note containing '{args['keyword']}' for this patient up to the current date."
    return _bundle(out, total, hint)


# top-level headers of MIMIC-IV discharge notes (a section ends where the next one starts)
DISCHARGE_HEADERS = (
    "Name",
    "Unit No",
    "Admission Date",
    "Discharge Date",
    "Date of Birth",
    "Sex",
    "Service",
    "Allergies",
    "Attending",
    "Chief Complaint",
    "Major Surgical or Invasive Procedure",
    "History of Present Illness",
    "Past Medical History",
    "Social History",
    "Family History",
    "Physical Exam",
    "Pertinent Results",
    "Brief Hospital Course",
    "Medications on Admission",
    "Discharge Medications",
    "Discharge Disposition",
    "Discharge Diagnosis",
    "Discharge Condition",
    "Discharge Instructions",
    "Followup Instructions",
    "Facility",
    "Assessment and Plan",
    "Plan",
)
_HEADER = re.compile(
    r"^[ \t]*("
    + "|".join(re.escape(h) for h in sorted(DISCHARGE_HEADERS, key=len, reverse=True))
    + r")[ \t]*:",
    re.M | re.I,
)
CAREPLAN_CATEGORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "discharge-planning": (
        "Discharge planning",
        ("Discharge Disposition", "Discharge Condition", "Discharge Instructions"),
    ),
    "followup": ("Follow-up", ("Followup Instructions",)),
    "treatment": ("Treatment plan", ("Discharge Medications", "Assessment and Plan", "Plan")),
}


def note_sections(text: str) -> dict[str, str]:
    """Split a discharge note into its top-level sections (header -> body)."""
    marks = [(m.start(), m.end(), m.group(1)) for m in _HEADER.finditer(text)]
    out: dict[str, str] = {}
    for i, (_, end, name) in enumerate(marks):
        body = text[end : marks[i + 1][0] if i + 1 < len(marks) else len(text)].strip()
        canonical = next(h for h in DISCHARGE_HEADERS if h.lower() == name.lower())
        if body and canonical not in out:
            out[canonical] = body
    return out


def careplan_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(ctx, {}, "CarePlan.search")
    try:
        _check_admission(ctx, sid, hadm, window)
    except _NoAdmission as miss:
        return _bundle([], 0, miss.hint)
    params: list[Any] = [sid]
    sql = (
        f"SELECT note_id, hadm_id, {ts('charttime')} AS t, text FROM discharge WHERE subject_id = ?"
    )
    sql += window.sql("charttime", params)
    if hadm is not None:
        sql += " AND hadm_id = ?"
        params.append(hadm)
    notes = rows(ctx, sql + " ORDER BY charttime DESC, note_id LIMIT 3", params)
    out = []
    for n in notes:
        sections = note_sections(str(n["text"] or ""))
        for cat, (display, headers) in CAREPLAN_CATEGORIES.items():
            if args.get("category") and args["category"] != cat:
                continue
            bodies = [f"{h}: {sections[h][:4000]}" for h in headers if h in sections]
            if not bodies:
                continue
            out.append(
                {
                    "resourceType": "CarePlan",
                    "id": fhir.safe_id(f"careplan-{n['note_id']}-{cat}"),
                    "status": "completed",
                    "intent": "plan",
                    "category": [
                        {
                            "coding": [
                                {
                                    "system": fhir.CAREPLAN_CATEGORY
                                    if cat != "followup"
                                    else "https://physassist.dev/fhir/careplan-category",
                                    "code": cat,
                                    "display": display,
                                }
                            ],
                            "text": display,
                        }
                    ],
                    "subject": fhir.patient_ref(sid),
                    "encounter": fhir.encounter_ref(n["hadm_id"]),
                    "created": fhir.fhir_datetime(n["t"]),
                    "note": [{"text": b} for b in bodies],
                }
            )
    return _bundle(out)


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
