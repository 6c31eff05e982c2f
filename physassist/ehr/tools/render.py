"""What a model sees of a tool result.

* ``compat``: the reference's compact text (docs/compat.md#text-shown-to-the-model-renderresult-compat): a bundle header,
  at most 15 entry lines then ``... (M more)``, reference ranges / MAR event text / care-plan
  bodies dropped, 4000-character cap.
* ``full``: complete but concise: every returned entry, reference ranges and H/L flags, MAR
  event text and dose, care-plan bodies, discharge disposition, report text (capped per entry).
* ``json``: the raw FHIR JSON.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from physassist.options import Render

COMPAT_CAP = 4000
COMPAT_LINES = 15
FULL_CAP = 16000
FULL_REPORT_CHARS = 2000
FULL_NOTE_CHARS = 3000


#: Nesting shown of a result too deep to print (only malformed results get there: FHIR
#: resources nest a handful of levels).
MAX_RENDER_DEPTH = 50


def render(result: dict[str, Any], mode: Render = "full") -> str:
    """Render a ``call_tool`` result; ``mode`` is ``compat``, ``full`` or ``json``. Any value
    renders: one nested too deep to print (RecursionError) is shown ``MAX_RENDER_DEPTH``
    levels deep."""
    try:
        return _render(result, mode)
    except RecursionError:
        return _render(_pruned(result, MAX_RENDER_DEPTH), mode)


def _pruned(value: Any, depth: int) -> Any:
    """``value`` with containers below ``depth`` levels replaced by ``"..."``."""
    if not isinstance(value, dict | list | tuple):
        return value
    if depth <= 0:
        return "..."
    if isinstance(value, dict):
        return {str(k): _pruned(v, depth - 1) for k, v in value.items()}
    return [_pruned(v, depth - 1) for v in value]


def _render(result: dict[str, Any], mode: Render) -> str:
    if mode == "json":
        return json.dumps(result, ensure_ascii=False, default=str)
    if mode == "compat":
        return _compat(result)
    if mode == "full":
        text = _full(result)
        return text if len(text) <= FULL_CAP else text[:FULL_CAP] + "\n... (output truncated)"
    raise ValueError(f"render mode must be 'compat', 'full' or 'json', got {mode!r}")


# ----------------------------------------------------------------------------- helpers


def _compact_json(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=str)


def _date(value: Any, n: int = 10) -> str:
    return str(value or "")[:n].replace("T", " ")


def _text_of(concept: Any) -> str:
    if not isinstance(concept, dict):
        return ""
    if concept.get("text"):
        return str(concept["text"])
    for coding in concept.get("coding") or []:
        if coding.get("display") or coding.get("code"):
            return str(coding.get("display") or coding.get("code"))
    return ""


def attachment_text(att: dict[str, Any]) -> str:
    """Attachment data: strict stores base64 (FHIR), compat plain text; notes always hold spaces."""
    data = str(att.get("data") or "")
    if data and " " not in data and "\n" not in data and len(data) % 4 == 0:
        try:
            return base64.b64decode(data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return data
    return data


def _qty(q: dict[str, Any] | None) -> str:
    if not q:
        return ""
    value = q.get("value")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(x) for x in (value, q.get("unit")) if x not in (None, ""))


def _value(r: dict[str, Any]) -> str:
    if "valueQuantity" in r:
        return _qty(r["valueQuantity"])
    if "valueString" in r:
        return str(r["valueString"] or "")
    if "valueCodeableConcept" in r:
        return _text_of(r["valueCodeableConcept"])
    return ""


def _interp_codes(r: dict[str, Any]) -> list[str]:
    return [c.get("code", "") for i in r.get("interpretation") or [] for c in i.get("coding") or []]


def _is_write(r: dict[str, Any]) -> bool:
    tags = (r.get("meta") or {}).get("tag") or []
    return bool(r.get("_simulated")) or any(t.get("code") == "simulated" for t in tags)


def _outcome_text(r: dict[str, Any]) -> str:
    parts = []
    for issue in r.get("issue") or []:
        label = "Note" if issue.get("severity") == "information" else "Error"
        parts.append(f"{label}: {issue.get('diagnostics') or issue.get('code')}")
    return "\n".join(parts)


# ----------------------------------------------------------------------------- compat


def _compat(result: dict[str, Any]) -> str:
    """The reference's text, cut at 4000 characters with its marker naming the full length."""
    text = _compat_text(result)
    if len(text) <= COMPAT_CAP:
        return text
    return f"{text[:COMPAT_CAP]}\n... [truncated: {len(text)} chars total]"


def _compat_text(result: dict[str, Any]) -> str:
    if not isinstance(result, dict):
        return str(result)
    if "patient_response" in result:
        return str(result["patient_response"])[:1500]
    if result.get("resourceType") == "Bundle":
        entries = [e.get("resource", {}) for e in result.get("entry") or []]
        lines = [f"({len(entries)} results)"]
        lines += [f"  - {_compat_line(r)}" for r in entries[:COMPAT_LINES]]
        if len(entries) > COMPAT_LINES:
            lines.append(f"  ... ({len(entries) - COMPAT_LINES} more)")
        return "\n".join(lines)
    if _is_write(result):
        return (
            f"{result.get('resourceType')} created: id={result.get('id')}"
            f" status={result.get('status')}"
        )
    return json.dumps(result, ensure_ascii=False, default=str)


def _compat_value(r: dict[str, Any]) -> str:
    """``: value unit`` as Python prints them (``16.0 %``; an empty unit leaves a trailing
    space); nothing at all when the observation has no value."""
    if "valueQuantity" in r:
        q = r["valueQuantity"] or {}
        return f": {q.get('value', '')} {q.get('unit', '')}"
    if "valueString" in r:
        return f": {r['valueString']}"
    return ""


def _compat_line(r: dict[str, Any]) -> str:
    rt = r.get("resourceType")
    if rt == "Observation":
        flag = " (Abnormal)" if "A" in _interp_codes(r) else ""
        # strict's pending result (compat never has one): said so, not a line without a value
        value = ": pending" if r.get("status") == "registered" else _compat_value(r)
        return f"{_text_of(r.get('code'))}{value}{flag} @ {_date(r.get('effectiveDateTime'))}"
    if rt == "MedicationRequest":
        dosage = (r.get("dosageInstruction") or [{}])[0]
        return (
            f"{_text_of(r.get('medicationCodeableConcept'))} [{r.get('status')}]:"
            f" {dosage.get('text', '')} @ {_date(r.get('authoredOn'))}"
        )
    if rt == "MedicationAdministration":
        dose = _qty((r.get("dosage") or {}).get("dose"))
        when = r.get("effectiveDateTime") or (r.get("effectivePeriod") or {}).get("start")
        return f"{_text_of(r.get('medicationCodeableConcept'))}: {dose}  @ {_date(when, 16)}"
    if rt == "Condition":
        status = _text_of(r.get("clinicalStatus"))
        return f"{_text_of(r.get('code'))} [{status}] @ {_date(r.get('onsetDateTime'))}"
    if rt == "Encounter":
        period = r.get("period") or {}
        cls = r.get("class") or {}
        return (
            f"{cls.get('code', '')} {_text_of((r.get('type') or [{}])[0])}"
            f" {_date(period.get('start'))}–{_date(period.get('end'))} "
        )
    if rt == "DiagnosticReport":
        text = "".join(attachment_text(f) for f in r.get("presentedForm") or [])
        return f"{_text_of(r.get('code'))} @ {_date(r.get('effectiveDateTime'))}: {text[:600]}"
    if rt == "DocumentReference":
        text = "".join(attachment_text(c.get("attachment") or {}) for c in r.get("content") or [])
        return f"{_text_of(r.get('type'))} @ {_date(r.get('date'))}: {text[:800]}"
    if rt == "CarePlan":
        return f"{_text_of((r.get('category') or [{}])[0])} [{r.get('status')}]"
    return _compact_json(r)[:300]


# ----------------------------------------------------------------------------- full


def _full(result: dict[str, Any]) -> str:
    if not isinstance(result, dict):
        return str(result)
    if "patient_response" in result:
        return f"Patient: {result['patient_response']}"
    rt = result.get("resourceType")
    if rt == "OperationOutcome":
        return _outcome_text(result)
    if rt == "Bundle":
        entries = [e.get("resource", {}) for e in result.get("entry") or []]
        found = [r for r in entries if r.get("resourceType") != "OperationOutcome"]
        notes = [_outcome_text(r) for r in entries if r.get("resourceType") == "OperationOutcome"]
        total = result.get("total", len(found))
        head = f"{total} result(s)" + (
            f", showing the newest {len(found)}" if total > len(found) else ""
        )
        return "\n".join([head, *(_full_line(r) for r in found), *notes])
    if _is_write(result):
        return _write_text(result)
    if rt == "Patient":
        return _patient_text(result)
    if "status" in result and "answer_type" in result:
        return f"Ready to answer ({result['answer_type']})."
    return _compact_json(result)


def _patient_text(r: dict[str, Any]) -> str:
    age = r.get("_anchor_age")
    for ext in r.get("extension") or []:
        if str(ext.get("url", "")).endswith("anchor-age"):
            age = ext.get("valueInteger")
    parts = [f"Patient {r.get('id')}: {r.get('gender', 'unknown')}"]
    if age is not None:
        parts.append(f"age {age}")
    if r.get("deceasedDateTime"):
        parts.append(f"died {_date(r['deceasedDateTime'])}")
    return ", ".join(parts)


def _write_text(r: dict[str, Any]) -> str:
    rt = r.get("resourceType")
    if rt == "MedicationRequest":
        dosage = (r.get("dosageInstruction") or [{}])[0]
        reason = "; ".join(_text_of(c) for c in r.get("reasonCode") or [])
        what = f"{_text_of(r.get('medicationCodeableConcept'))} {dosage.get('text', '')}"
        detail = what + (f" for {reason}" if reason else "")
    elif rt == "ServiceRequest":
        detail = f"{_text_of(r.get('code'))} (priority {r.get('priority')})"
        if r.get("occurrenceDateTime"):
            detail += f" by {r['occurrenceDateTime']}"
    else:
        cats = ", ".join(_text_of(c) for c in r.get("category") or [])
        detail = f"[{cats}] {_text_of(r.get('code'))}"
    return f"{rt} created (simulated): id={r.get('id')} status={r.get('status')}: {detail.strip()}"


def _ref_range(r: dict[str, Any]) -> str:
    rr = (r.get("referenceRange") or [None])[0]
    if not rr:
        return ""
    low, high = _qty(rr.get("low")), _qty(rr.get("high"))
    if rr.get("text") and not (low or high):
        return f" [ref {rr['text']}]"
    return f" [ref {low or '?'} - {high or '?'}]"


def _full_line(r: dict[str, Any]) -> str:
    rt = r.get("resourceType")
    when = _date(r.get("effectiveDateTime") or (r.get("effectivePeriod") or {}).get("start"), 16)
    if rt == "Observation":
        flags = [c for c in _interp_codes(r) if c]
        flag = f" {'/'.join(flags)}" if flags else ""
        value = "pending" if r.get("status") == "registered" else _value(r)
        line = f"- {when} {_text_of(r.get('code'))}: {value}{flag}{_ref_range(r)}"
        comps = [
            f"{_text_of(c.get('code'))} {(_value(c))}".strip() for c in r.get("component") or []
        ]
        if comps:
            line += "; susceptibility: " + ", ".join(comps)
        if r.get("note"):
            line += " (" + "; ".join(n.get("text", "") for n in r["note"]) + ")"
        return line
    if rt == "MedicationRequest":
        dosage = (r.get("dosageInstruction") or [{}])[0]
        bounds = ((dosage.get("timing") or {}).get("repeat") or {}).get("boundsPeriod") or {}
        period = (
            f" {_date(bounds.get('start'), 16)} to {_date(bounds.get('end'), 16) or 'open'}"
            if bounds
            else ""
        )
        return (
            f"- {_text_of(r.get('medicationCodeableConcept'))} {dosage.get('text', '')}"
            f" [{r.get('status')}]{period}"
        )
    if rt == "MedicationAdministration":
        dosage = r.get("dosage") or {}
        dose = _qty(dosage.get("dose"))
        route = _text_of(dosage.get("route"))
        event = (
            r.get("_event_txt")
            or "; ".join(n.get("text", "") for n in r.get("note") or [])
            or "; ".join(_text_of(s) for s in r.get("statusReason") or [])
        )
        line = (
            f"- {when} {_text_of(r.get('medicationCodeableConcept'))}:"
            f" {event or r.get('status')} [{r.get('status')}]"
        )
        if dose or route:
            line += f", dose {dose} {route}".rstrip()
        return line
    if rt == "Condition":
        coding = ((r.get("code") or {}).get("coding") or [{}])[0]
        enc = ((r.get("encounter") or {}).get("reference") or "").split("-")[-1]
        return (
            f"- {coding.get('code', '')} {_text_of(r.get('code'))}"
            f" [{_text_of(r.get('clinicalStatus'))}] (admission {enc})"
        )
    if rt == "Encounter":
        stay = r.get("period") or {}
        mimic = r.get("_mimic") or {}
        hosp = r.get("hospitalization") or {}
        dispo = (
            _text_of(hosp.get("dischargeDisposition"))
            or mimic.get("discharge_location")
            or "unknown"
        )
        source = _text_of(hosp.get("admitSource")) or mimic.get("admission_location") or ""
        kind = _text_of((r.get("type") or [{}])[0]) or mimic.get("admission_type") or ""
        hid = (r.get("identifier") or [{}])[0].get("value", r.get("id"))
        return (
            f"- admission {hid}: {_date(stay.get('start'), 16)}"
            f" to {_date(stay.get('end'), 16) or 'ongoing'}"
            f" [{r.get('status')}] {kind} from {source or 'unknown'}; discharged to {dispo}"
        )
    if rt == "DiagnosticReport":
        text = "".join(attachment_text(f) for f in r.get("presentedForm") or []).strip()
        if len(text) > FULL_REPORT_CHARS:
            text = text[:FULL_REPORT_CHARS] + " ..."
        conclusion = f"\n  Conclusion: {r['conclusion']}" if r.get("conclusion") else ""
        return f"- {when} {_text_of(r.get('code'))}:{conclusion}\n  {text}"
    if rt == "DocumentReference":
        text = "".join(
            attachment_text(c.get("attachment") or {}) for c in r.get("content") or []
        ).strip()
        if len(text) > FULL_NOTE_CHARS:
            text = text[:FULL_NOTE_CHARS] + " ..."
        return f"- {_date(r.get('date'), 16)} {_text_of(r.get('type'))}:\n  {text}"
    if rt == "CarePlan":
        cat = _text_of((r.get("category") or [{}])[0])
        body = "\n  ".join(n.get("text", "") for n in r.get("note") or [])
        desc = r.get("description")
        return f"- {cat} [{r.get('status')}]:\n  {body or desc or ''}"
    return f"- {_compact_json(r)[:500]}"
