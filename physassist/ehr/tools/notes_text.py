"""Sections of MIMIC-IV-Note text, as ``strict`` reads them (``compat`` keeps the reference's
own regular expressions, ``compat_notes.py``).

A discharge summary is a run of top-level sections whose headers stand at the start of a line:
``Chief Complaint:``, ``CHIEF COMPLAINT:``, ``Discharge Condition`` alone on its line,
``Follow-up Instructions:``, ``PLAN -`` ... A section runs to the next such header, so a body is
whole (its blank or one-space separator lines, sub-headings such as ``ADMISSION LABS:`` and
lists included), never cut at its first line. Words in prose ("discharge condition discussed
with family", "the plan was ...") start nothing. Radiology reports are read the same way with
their own headers (EXAMINATION, INDICATION / HISTORY, TECHNIQUE, COMPARISON, FINDINGS,
IMPRESSION). ``docs/notes.md`` describes the layouts this is tested on.
"""

from __future__ import annotations

import re

#: canonical header -> the spellings a note may use (regular expressions, matched ignoring case).
DISCHARGE_HEADERS: dict[str, str] = {
    "Name": r"name",
    "Admission Date": r"admission date",
    "Discharge Date": r"discharge date",
    "Date of Birth": r"date of birth",
    "Sex": r"sex",
    "Service": r"service",
    "Allergies": r"allergies",
    "Attending": r"attending",
    "Chief Complaint": r"chief complaint",
    "Major Surgical or Invasive Procedure": r"major surgical or invasive procedures?",
    "History of Present Illness": r"history of (?:the )?present illness|hpi",
    "Past Medical History": r"past medical history|pmh",
    "Social History": r"social history",
    "Family History": r"family history",
    "Physical Exam": r"physical exam(?:ination)?",
    "Pertinent Results": r"pertinent results",
    "Brief Hospital Course": r"(?:brief )?hospital course",
    "Medications on Admission": r"medications on admission|admission medications",
    "Discharge Medications": r"discharge medications",
    "Discharge Disposition": r"discharge disposition",
    "Facility": r"facility",
    "Discharge Diagnosis": r"discharge diagnos[ie]s",
    "Discharge Condition": r"discharge condition",
    "Discharge Instructions": r"discharge instructions?",
    "Followup Instructions": r"follow[- ]?up instructions?",
    "Assessment and Plan": r"assessment (?:and|&) plan|assessment ?/ ?plan|a ?/ ?p",
    "Plan": r"(?:treatment )?plan",
}
RADIOLOGY_HEADERS: dict[str, str] = {
    "Examination": r"examination|exam",
    "Indication": r"indications?|history|clinical history|reason for exam",
    "Technique": r"technique",
    "Comparison": r"comparisons?",
    "Findings": r"findings",
    "Impression": r"impression|conclusion",
    "Dose": r"dose",
    "Recommendation": r"recommendations?(?:\(s\))?",
    "Notification": r"notification",
}


def _header_pattern(headers: dict[str, str]) -> re.Pattern[str]:
    """A header: at a line start (spaces allowed), then ``:``, `` - `` or the end of the line."""
    names = "|".join(f"(?P<h{i}>{spelling})" for i, spelling in enumerate(headers.values()))
    return re.compile(rf"^[ \t]*(?:{names})[ \t]*(?::|-(?=\s)|$)", re.M | re.I)


_DISCHARGE = (_header_pattern(DISCHARGE_HEADERS), tuple(DISCHARGE_HEADERS))
_RADIOLOGY = (_header_pattern(RADIOLOGY_HEADERS), tuple(RADIOLOGY_HEADERS))


def _sections(text: str, pattern: re.Pattern[str], names: tuple[str, ...]) -> dict[str, str]:
    """Header -> whole body (stripped; CRLF read as LF); the first non-empty one of a header."""
    text = (text or "").replace("\r\n", "\n")
    marks = list(pattern.finditer(text))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[m.end() : end].strip()
        name = names[int(next(k for k, v in m.groupdict().items() if v is not None)[1:])]
        if body and name not in out:
            out[name] = body
    return out


def discharge_sections(text: str) -> dict[str, str]:
    """The top-level sections of a discharge summary (header -> body)."""
    return _sections(text, *_DISCHARGE)


def radiology_sections(text: str) -> dict[str, str]:
    """The sections of a radiology report (Examination, Indication, ... -> body)."""
    return _sections(text, *_RADIOLOGY)


def radiology_title(text: str) -> str:
    """The exam a report is about: its EXAMINATION line, else its first line before any section
    header (a bare exam title; an old ``FINAL REPORT`` banner skipped), else "Radiology
    report"; at most 120 characters."""
    exam = radiology_sections(text).get("Examination")
    if exam:
        return " ".join(exam.splitlines()[0].split())[:120]
    for line in (text or "").splitlines():
        line = line.strip()
        if _RADIOLOGY[0].match(line):
            break
        if line and line.upper() != "FINAL REPORT":
            return line[:120]
    return "Radiology report"


def impression(text: str) -> str | None:
    """A radiology report's IMPRESSION on one line (at most 1,000 characters), or None."""
    found = radiology_sections(text).get("Impression")
    return " ".join(found.split())[:1000] if found else None


#: note_grounding key -> the discharge-summary section it is read from (the released
#: discharge-planning sessions' ``note_grounding``, docs/data.md#keys-of-a-session).
GROUNDING_SECTIONS = {
    "chief_complaint": "Chief Complaint",
    "medications_on_admission": "Medications on Admission",
    "social_history": "Social History",
    "discharge_condition": "Discharge Condition",
    "follow_up_instructions": "Followup Instructions",
    "discharge_medications": "Discharge Medications",
}
_ACTIVITY = re.compile(r"activity status:[ \t]*(.+)", re.I)


def note_grounding(text: str) -> dict[str, str | None]:
    """The facts a discharge-planning session is grounded in, from a discharge summary: the
    sections of :data:`GROUNDING_SECTIONS` whole, and ``functional_status`` as the Discharge
    Condition's ``Activity Status:`` (None where the note has no such part)."""
    sections = discharge_sections(text)
    out: dict[str, str | None] = {k: sections.get(h) for k, h in GROUNDING_SECTIONS.items()}
    activity = _ACTIVITY.search(out["discharge_condition"] or "")
    out["functional_status"] = activity.group(1).strip() if activity else None
    return out
