"""strict note-based tools: imaging and microbiology reports, clinical notes, and care plans
split from discharge summaries by their top-level sections (``notes_text``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from . import fhir
from .chart import Chart, Window
from .microbiology import KIND_NAMES, Specimen, describe, specimens
from .notes_text import discharge_sections, impression, radiology_title
from .records import by, contains, keep, order, text
from .registry import read_tool
from .reported import MICRO_DRAWN, ORIGIN_NOTE
from .strict_common import (
    ADMISSIONS_CHECKED,
    STAYS_READ,
    admission_miss,
    bundle,
)
from .strict_observations import MICRO_COLUMNS, micro_observation, micro_where, normalize_micro

#: The columns of a note (``discharge``, ``radiology``) the note tools read.
NOTE_COLUMNS = ("note_id", "hadm_id", "note_type", "charttime", "text")
REPORT_LIMIT = 10
NOTES_PER_TYPE = 5

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


@read_tool(
    reads={
        "admissions": (*ADMISSIONS_CHECKED["admissions"], *STAYS_READ["admissions"]),
        "radiology": NOTE_COLUMNS,
        "microbiologyevents": MICRO_COLUMNS,
    },
)
def diagnostic_report_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "DiagnosticReport.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    wanted = (args.get("report_type") or "").strip().lower()
    modality = _MODALITY_ALIASES.get(wanted, wanted)
    want_micro = not wanted or any(w in wanted for w in _MICRO_WORDS)
    want_rad = not wanted or modality in _MODALITIES or modality == "radiology"
    if wanted and not want_micro and not want_rad:
        want_rad = True  # free text: search it in the exam line of radiology reports
    # (time as text, its resource's maker): only the REPORT_LIMIT newest are made (a big
    # chart has hundreds of radiology reports, each encoded whole)
    reports: list[tuple[str, Callable[[], dict[str, Any]]]] = []
    if want_rad:
        for n in _notes(chart, "radiology", sid, hadm, window):
            body = str(n["text"] or "")
            head = f" {n['note_type'] or ''} {body[:200]}".upper()
            if modality in _MODALITIES and not any(k in head for k in _MODALITIES[modality]):
                continue
            if (
                wanted
                and modality not in _MODALITIES
                and modality != "radiology"
                and wanted.upper() not in head
            ):
                continue
            reports.append((str(text(n["charttime"])), partial(_radiology_report, n, sid)))
    total = len(reports)
    if want_micro:  # of the specimens, only the REPORT_LIMIT newest can be shown
        specimen = normalize_micro(wanted) if wanted else None
        stays = chart.stays(sid)
        where = micro_where(chart, sid, hadm, window, stays, specimen or None)
        n_specimens, shown = chart.newest_groups(
            "microbiologyevents", sid, where, "micro_specimen_id", MICRO_DRAWN, REPORT_LIMIT
        )
        total += n_specimens
        found = chart.rows("microbiologyevents", sid, where.among("micro_specimen_id", shown))
        reported = chart.report_time("microbiologyevents")[1]
        for s in specimens(found, window.cutoff, reported, stays):
            reports.append((str(text(s.drawn)), partial(micro_report, s, sid)))
    reports.sort(key=lambda x: x[0], reverse=True)
    hint = None
    if not total and wanted:
        hint = (
            f"No report of type '{args['report_type']}' for this patient. Types understood: x-ray, "
            "CT, MRI, "
            "ultrasound, echo, radiology, or microbiology (culture, blood, urine, sputum, csf, "
            "wound)."
        )
    return bundle([make() for _, make in reports[:REPORT_LIMIT]], total, hint)


def _radiology_report(n: dict[str, Any], sid: int) -> dict[str, Any]:
    body = str(n["text"] or "")
    return {
        "resourceType": "DiagnosticReport",
        "id": fhir.safe_id(f"dr-{n['note_id']}"),
        "status": "final",
        "category": fhir.category(fhir.LOINC, "LP29684-5", "Radiology"),
        "code": {"text": radiology_title(body)},
        "subject": fhir.patient_ref(sid),
        "encounter": fhir.encounter_ref(n["hadm_id"]),
        "effectiveDateTime": fhir.fhir_datetime(text(n["charttime"])),
        "conclusion": impression(body),
        "presentedForm": [{"contentType": "text/plain", "data": fhir.b64(body)}],
    }


def micro_report(s: Specimen, sid: int) -> dict[str, Any]:
    """One specimen as a report: its tests' results (pending ones named as pending), the
    antibiotics tested on each isolate, the resistances and flags; the tests themselves are
    ``contained`` Observations (as ``Observation.search`` gives them)."""
    tests = [micro_observation(s, t, i, sid) for t in s.tests for i in (t.isolates or (None,))]
    return {
        "resourceType": "DiagnosticReport",
        "id": fhir.safe_id(f"micro-{s.specimen_id}"),
        "contained": tests,
        "status": s.status,
        "category": fhir.category(fhir.LOINC, "LP7820-4", "Microbiology"),
        "code": {"text": f"{s.specimen} microbiology"},
        "subject": fhir.patient_ref(sid),
        "encounter": fhir.encounter_ref(s.hadm_id),
        "effectiveDateTime": fhir.fhir_datetime(text(s.drawn)),
        "result": [{"reference": f"#{o['id']}"} for o in tests],
        "conclusion": micro_conclusion(s),
        "presentedForm": [
            {"contentType": "text/plain", "data": fhir.b64("\n".join(_micro_lines(s)))}
        ],
    }


def micro_conclusion(s: Specimen) -> str:
    """What the specimen's cultures grew (with resistances and flags), then what is pending
    and what the other tests found: ``Organisms: A (MRSA ...); B. Pending: FUNGAL CULTURE.``"""
    grown = [describe(i) for i in s.isolates]
    parts = [("Organisms: " + "; ".join(grown)) if grown else ""]
    if not grown and any(not t.pending for t in s.cultures):
        parts.append("No organism grown")
    pending = [t.name for t in s.tests if t.pending]
    if pending:
        parts.append("Pending: " + ", ".join(pending))
    others = [f"{t.name} ({KIND_NAMES[t.kind]}): {t.result}" for t in s.tests
              if not t.culture and not t.pending]  # fmt: skip
    parts += others
    return ". ".join(p for p in parts if p) or "No result reported"


def _notes(
    chart: Chart, table: str, sid: int, hadm: int | None, window: Window
) -> list[dict[str, Any]]:
    """The subject's notes of one table inside the window, newest first."""
    notes = keep(chart.subject_rows(table, sid), hadm_id=hadm)
    return order(
        (n for n in notes if window.keeps(n["charttime"])),
        by("charttime", desc=True),
        by("note_id"),
    )


def _micro_lines(s: Specimen) -> list[str]:
    lines = [f"Specimen: {s.specimen}, drawn {text(s.drawn)}"]
    if s.origin:
        lines.append(f"  ({ORIGIN_NOTE[s.origin]})")
    for t in s.tests:
        kind = "" if t.kind == "culture" else f" [{KIND_NAMES[t.kind]}]"
        if t.pending:
            lines.append(f"{t.name}{kind}: pending (not reported yet)")
            continue
        reported = f" (reported {text(t.reported)})"
        if not t.isolates:
            rejected = " [test cancelled / specimen rejected]" if t.rejected else ""
            lines.append(
                f"{t.name}{kind}: {t.comment or 'no organism reported'}{rejected}{reported}"
            )
        for i in t.isolates:
            lines.append(f"{t.name}{kind}: {describe(i)}{reported}")
            lines += [f"  {x.antibiotic}: {x.text}" for x in i.susceptibilities]
    return lines


_DOC_TYPES = (
    ("discharge-summary", "discharge", "18842-5", "Discharge summary"),
    ("radiology", "radiology", "18748-4", "Diagnostic imaging study"),
)


@read_tool(
    reads={**ADMISSIONS_CHECKED, "discharge": NOTE_COLUMNS, "radiology": NOTE_COLUMNS},
)
def document_reference_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "DocumentReference.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    out: list[dict[str, Any]] = []
    total = 0
    for code, table, loinc, display in _DOC_TYPES:
        if args.get("type_code") and args["type_code"] != code:
            continue
        keyword = args.get("keyword")
        matched = [
            n
            for n in _notes(chart, table, sid, hadm, window)
            if not keyword or contains(n["text"], keyword)
        ]
        total += len(matched)
        for n in matched[:NOTES_PER_TYPE]:
            out.append(
                {
                    "resourceType": "DocumentReference",
                    "id": fhir.safe_id(f"docref-{n['note_id']}"),
                    "status": "current",
                    "type": fhir.concept(fhir.LOINC, loinc, display, code),
                    "subject": fhir.patient_ref(sid),
                    "date": fhir.fhir_datetime(text(n["charttime"])),
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
    return bundle(out, total, hint)


CAREPLAN_CATEGORIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "discharge-planning": (
        "Discharge planning",
        ("Discharge Disposition", "Discharge Condition", "Discharge Instructions"),
    ),
    "followup": ("Follow-up", ("Followup Instructions",)),
    "treatment": ("Treatment plan", ("Discharge Medications", "Assessment and Plan", "Plan")),
}


@read_tool(reads={**ADMISSIONS_CHECKED, "discharge": NOTE_COLUMNS})
def careplan_search(chart: Chart, args: dict[str, Any]) -> dict[str, Any]:
    sid, hadm = args["subject_id"], args.get("hadm_id")
    window = Window(chart.cutoff, {}, "CarePlan.search")
    if (miss := admission_miss(chart, sid, hadm, window)) is not None:
        return miss
    out = []
    for n in _notes(chart, "discharge", sid, hadm, window)[:3]:
        sections = discharge_sections(str(n["text"] or ""))
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
                    "category": fhir.category(
                        fhir.CAREPLAN_CATEGORY
                        if cat != "followup"
                        else "https://physassist.dev/fhir/careplan-category",
                        cat,
                        display,
                        display,
                    ),
                    "subject": fhir.patient_ref(sid),
                    "encounter": fhir.encounter_ref(n["hadm_id"]),
                    "created": fhir.fhir_datetime(text(n["charttime"])),
                    "note": [{"text": b} for b in bodies],
                }
            )
    return bundle(out)
