"""compat note-based tools: radiology reports (synonyms, top 5) plus microbiology reports (up to
10 in all), notes (top 5 per table, 4000 characters) and care-plan fragments."""

from __future__ import annotations

import re
from typing import Any

from . import fhir
from .compat_common import empty, hadm_filter, nullable_hadm, regex_arg, subject_key, text_arg
from .context import ToolContext
from .records import by, contains, keep, order, subject_rows, text

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
        return empty("DiagnosticReport", args)
    notes = keep(subject_rows(ctx, "radiology", sid), hadm_id=hadm)
    notes = order(notes, by("charttime", desc=True))
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
        body = str(n["text"] or "")
        out.append(
            {
                "resourceType": "DiagnosticReport",
                "id": f"dr-{n['note_id']}",
                "status": "final",
                "category": fhir.category(fhir.LOINC, "LP29684-5", "Radiology"),
                "code": {"text": report_title(body)},
                "subject": fhir.patient_ref(sid),
                "encounter": fhir.encounter_ref(n["hadm_id"], as_float=as_float),
                "effectiveDateTime": text(n["charttime"]),
                "presentedForm": [{"contentType": "text/plain", "data": body[:3000]}],
            }
        )
    low = (report_type or "").lower()
    if report_type is None or any(w in low for w in MICRO_REPORT_WORDS):
        keywords = [w for w in MICRO_REPORT_WORDS[2:] if w in low]
        out.extend(_micro_reports(ctx, sid, hadm, args.get("hadm_id"), keywords, 10 - len(out)))
    if not out:
        return empty("DiagnosticReport", args)
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
    found = keep(subject_rows(ctx, "microbiologyevents", sid), hadm_id=hadm)
    found = order(found, by("charttime", desc=True))
    if keywords:
        found = [
            r
            for r in found
            if any(contains(r["spec_type_desc"], k) or contains(r["org_name"], k) for k in keywords)
        ]
    seen: set[tuple[Any, Any]] = set()
    out: list[dict[str, Any]] = []
    for r in found:
        t = text(r["charttime"])
        key = (r["spec_type_desc"], t)
        if key in seen:
            continue
        seen.add(key)
        if len(out) >= room:
            break
        report: dict[str, Any] = {
            "resourceType": "DiagnosticReport",
            "id": f"micro-{sid}-{t}",
            "status": "final",
            "category": fhir.category(fhir.LOINC, "LP7820-4", "Microbiology"),
            "code": {"text": r["spec_type_desc"] or "Microbiology"},
            "subject": fhir.patient_ref(sid),
            "effectiveDateTime": t,
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
        return empty("DocumentReference", args)
    out: list[dict[str, Any]] = []
    for code, table, display in DOC_TYPES:
        if type_code is not None and not (type_code.lower() in code or code in type_code.lower()):
            continue
        found = keep(subject_rows(ctx, table, sid), hadm_id=hadm)
        if keyword is not None:
            found = [n for n in found if contains(n["text"], keyword)]
        found = order(found, by("charttime", desc=True))[:5]
        as_float = table == "radiology" and nullable_hadm(ctx, table, sid)
        for n in found:
            enc = fhir.encounter_ref(n["hadm_id"], as_float=as_float)
            out.append(
                {
                    "resourceType": "DocumentReference",
                    "id": f"docref-{n['note_id']}",
                    "status": "current",
                    "type": fhir.named_concept(fhir.LOINC, code, display),
                    "subject": fhir.patient_ref(sid),
                    "date": text(n["charttime"]),
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
        return empty("DocumentReference", args)
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
    notes = keep(subject_rows(ctx, "discharge", sid), hadm_id=hadm)[:3]
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
                    "category": fhir.category(fhir.CAREPLAN_CATEGORY, cat, display, header),
                    "note": [{"text": m.group(1).strip()[:1000]}],
                    "encounter": fhir.encounter_ref(n["hadm_id"]),
                    "period": {"end": text(n["charttime"])},
                }
            )
    return fhir.compat_bundle("CarePlan", out)
