"""compat note-based tools: radiology reports (synonyms, top 5) plus microbiology reports (up to
10 in all), notes (top 5 per table, 4000 characters, keyword as a regular expression) and
care-plan fragments, each read from the note text as the reference's regular expressions read
it (docs/compat.md#per-tool)."""

from __future__ import annotations

import re
from typing import Any

from . import fhir
from .compat_common import (
    empty,
    encounter,
    hadm_filter,
    nan_text,
    present,
    regex_matcher,
    subject_key,
    text_arg,
)
from .compat_frames import frame, sort_rows
from .context import ToolContext
from .records import contains
from .registry import read_tool

MICRO_REPORT_WORDS = ("micro", "culture", "blood", "urine", "sputum", "csf", "wound")
_XRAY = ("CHEST", "PORTABLE", "AP", "PA", "RADIOGRAPH")
#: The upper-cased ``report_type`` -> the further terms searched; only these exact keys expand
#: (``CHEST`` finds what contains CHEST, ``CHEST X-RAY`` only what contains that).
RADIOLOGY_SYNONYMS: dict[str, tuple[str, ...]] = {
    "X-RAY": _XRAY,
    "CXR": _XRAY,
    "XRAY": ("CHEST", "PORTABLE", "AP", "RADIOGRAPH"),
    "CT": ("CT",),
    "MRI": ("MR ",),
    "ULTRASOUND": ("US ", "SONO"),
    "ECHO": ("ECHO",),
}


def report_title(text: str) -> str:
    """The first non-blank line (stripped) not starting with ``INDICATION`` in capitals,
    at most 120 characters."""
    for line in (text or "").splitlines():
        line = line.strip()
        if line and not line.startswith("INDICATION"):
            return line[:120]
    return "Radiology report"


@read_tool(reads={
        "radiology": ("note_id", "hadm_id", "note_type", "charttime", "text"),
        "microbiologyevents": ("hadm_id", "charttime", "spec_type_desc", "org_name", "ab_name",
                               "interpretation"),
    },
)  # fmt: skip
def diagnostic_report_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "DiagnosticReport.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    report_type = text_arg(tool, args, "report_type")
    if sid is None or not ok:
        return empty("DiagnosticReport", args)
    notes = [n for n in frame(ctx.store, "radiology", sid) if hadm is None or n["hadm_id"] == hadm]
    notes = sort_rows(notes, "charttime", ascending=False)
    if report_type is not None:
        wanted = report_type.upper()
        terms = [wanted, *RADIOLOGY_SYNONYMS.get(wanted, ())]
        notes = [
            n
            for n in notes
            if any(
                t in str(n["note_type"] or "").upper() or t in str(n["text"] or "")[:200].upper()
                for t in terms
            )
        ]
    out: list[dict[str, Any]] = []
    for n in notes[:5]:
        body = str(n["text"] or "")
        out.append(
            present(
                {
                    "resourceType": "DiagnosticReport",
                    "id": f"dr-{n['note_id']}",
                    "status": "final",
                    "category": fhir.category(fhir.LOINC, "LP29684-5", "Radiology"),
                    "code": {"text": report_title(body)},
                    "subject": fhir.patient_ref(sid),
                    "encounter": encounter(n["hadm_id"]),
                    "effectiveDateTime": n["charttime"],
                    "presentedForm": [{"contentType": "text/plain", "data": body[:3000]}],
                },
                "encounter",
                "effectiveDateTime",
            )
        )
    low = (report_type or "").lower()
    if report_type is None or any(w in low for w in MICRO_REPORT_WORDS):
        out.extend(_micro_reports(ctx, sid, hadm, args.get("hadm_id"), report_type, 10 - len(out)))
    if not out:
        return empty("DiagnosticReport", args)
    return fhir.compat_bundle("DiagnosticReport", out)


def micro_summary(r: dict[str, Any]) -> str:
    """``Specimen: .. | Organism: ..`` and, when an antibiotic was tested, ``| Antibiotic: ..``."""
    text = f"Specimen: {nan_text(r['spec_type_desc'])} | Organism: "
    text += "No growth / pending" if r["org_name"] is None else str(r["org_name"])
    if r["ab_name"] is not None:
        text += f" | Antibiotic: {r['ab_name']} ({nan_text(r['interpretation'])})"
    return text


def _micro_reports(
    ctx: ToolContext,
    sid: int,
    hadm: float | None,
    hadm_given: Any,
    report_type: str | None,
    room: int,
) -> list[dict[str, Any]]:
    """One report per (specimen, time), newest first: the first row pandas' sort leaves for
    each; a ``report_type`` must then appear in the specimen or the organism."""
    if room <= 0:
        return []
    found = [
        r
        for r in frame(ctx.store, "microbiologyevents", sid)
        if hadm is None or r["hadm_id"] == hadm
    ]
    if report_type is not None:
        found = [
            r
            for r in found
            if contains(r["spec_type_desc"], report_type) or contains(r["org_name"], report_type)
        ]
    seen: set[tuple[Any, Any]] = set()
    out: list[dict[str, Any]] = []
    for r in sort_rows(found, "charttime", ascending=False):
        key = (r["spec_type_desc"], r["charttime"])
        if key in seen:
            continue
        seen.add(key)
        if len(out) >= room:
            break
        t = r["charttime"]
        report: dict[str, Any] = {
            "resourceType": "DiagnosticReport",
            "id": f"micro-{sid}-{len(out) if t is None else t}",
            "status": "final",
            "category": fhir.category(fhir.LOINC, "LP7820-4", "Microbiology"),
            "code": {"text": r["spec_type_desc"] or "Microbiology"},
            "subject": fhir.patient_ref(sid),
            "effectiveDateTime": t,
            "presentedForm": [{"contentType": "text/plain", "data": micro_summary(r)}],
        }
        if hadm_given is not None:
            report["encounter"] = {"reference": f"Encounter/encounter-{hadm_given}"}
        out.append(present(report, "effectiveDateTime"))
    return out


DOC_TYPES = (
    ("discharge-summary", "discharge", "Discharge Summary"),
    ("radiology", "radiology", "Radiology Report"),
)


@read_tool(
    reads={
        "discharge": ("note_id", "hadm_id", "charttime", "text"),
        "radiology": ("note_id", "hadm_id", "charttime", "text"),
    },
)
def document_reference_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    tool = "DocumentReference.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    type_code = text_arg(tool, args, "type_code")
    keyword = args.get("keyword")  # any type: the reference only compiled it over a subject's notes
    if sid is None or not ok:
        return empty("DocumentReference", args)
    out: list[dict[str, Any]] = []
    matches = None
    for code, table, display in DOC_TYPES:
        if type_code is not None and not (type_code.lower() in code or code in type_code.lower()):
            continue
        notes = frame(ctx.store, table, sid)
        found = [n for n in notes if hadm is None or n["hadm_id"] == hadm]
        if keyword is not None and notes:
            matches = matches or regex_matcher(tool, keyword)
            found = [n for n in found if matches(n["text"])]
        for n in sort_rows(found, "charttime", ascending=False)[:5]:
            enc = encounter(n["hadm_id"])
            out.append(
                {
                    "resourceType": "DocumentReference",
                    "id": f"docref-{n['note_id']}",
                    "status": "current",
                    "type": fhir.named_concept(fhir.LOINC, code, display),
                    "subject": fhir.patient_ref(sid),
                    "date": n["charttime"],
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


#: Care-plan sections in the order they are looked for: (display, category, where the section
#: starts). A start is the first case-insensitive occurrence anywhere in the note (a mention in
#: the hospital course wins), then an optional ``:`` or ``-`` (required after "plan") with any
#: whitespace, newlines included, on either side: ``Plan\n- Apixaban`` is a plan, ``Apixaban``.
CAREPLAN_SECTIONS: tuple[tuple[str, str, str], ...] = (
    ("Discharge Instructions", "discharge-planning", r"discharge instructions?\s*[:\-]?"),
    ("Discharge Condition", "discharge-planning", r"discharge condition\s*[:\-]?"),
    ("Followup Instructions", "followup", r"follow[- ]?up instructions?\s*[:\-]?"),
    ("Treatment Plan", "treatment", r"\bplan\s*[:\-]"),
)
#: A section ends at the first newline followed by two letters (a line that looks like the next
#: header), so a body is often only its first line: the reference's fragments.
_SECTION = {
    display: re.compile(start + r"\s*(.*?)(?=\n[A-Za-z]{2}|\Z)", re.S | re.I)
    for display, _, start in CAREPLAN_SECTIONS
}


@read_tool(reads={"discharge": ("note_id", "hadm_id", "charttime", "text")})
def careplan_search(ctx: ToolContext, args: dict[str, Any]) -> dict[str, Any]:
    """Sections pulled from the first 3 discharge notes in file order. Always a Bundle."""
    tool = "CarePlan.search"
    sid = subject_key(tool, args)
    ok, hadm = hadm_filter(tool, args.get("hadm_id"))
    category = text_arg(tool, args, "category")
    if sid is None or not ok:
        return fhir.compat_bundle("CarePlan", [])
    notes = [n for n in frame(ctx.store, "discharge", sid) if hadm is None or n["hadm_id"] == hadm][
        :3
    ]
    out: list[dict[str, Any]] = []
    for n in notes:
        for display, cat, _ in CAREPLAN_SECTIONS:
            if category is not None and category != cat:
                continue
            m = _SECTION[display].search(str(n["text"] or ""))
            body = m.group(1).strip() if m else ""
            if not body:
                continue
            out.append(
                {
                    "resourceType": "CarePlan",
                    "id": f"careplan-{n['note_id']}-{cat}",
                    "status": "completed",
                    "intent": "plan",
                    "category": fhir.category(fhir.CAREPLAN_CATEGORY, cat, display, display),
                    "subject": fhir.patient_ref(sid),
                    "note": [{"text": body[:1000]}],
                    "encounter": encounter(n["hadm_id"]),
                    "period": present({"end": n["charttime"]}, "end"),
                }
            )
    return fhir.compat_bundle("CarePlan", out)
