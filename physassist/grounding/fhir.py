"""What the grounding check reads from a tool's raw FHIR result: its resources, the names they
carry, and the dose counts of a medication-administration search."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from physassist.timeline import counts_toward, dose_event

__all__ = ["DRUG_TYPES", "NAMED_TYPES", "administrations", "concept_text", "named", "resources"]

DRUG_TYPES = (
    "MedicationRequest",
    "MedicationAdministration",
    "MedicationStatement",
    "MedicationDispense",
)
#: The field that names each kind of resource, as the renderings print it.
_NAMED = {
    "Observation": "code",
    "DiagnosticReport": "code",
    **{t: "medicationCodeableConcept" for t in DRUG_TYPES},
}
#: The kinds of resources whose names the grounding check learns.
NAMED_TYPES = tuple(_NAMED)
_GIVEN_STATUS = {
    "completed": "given",
    "in-progress": "given",
    "not-done": "not_given",
    "on-hold": "not_given",
}


def resources(raw: Any) -> Iterator[dict[str, Any]]:
    """The FHIR resources of a raw result: a Bundle's entries, or the resource itself."""
    if not isinstance(raw, dict):
        return
    if raw.get("resourceType") == "Bundle":
        for entry in raw.get("entry") or []:
            resource = entry.get("resource") if isinstance(entry, dict) else None
            if isinstance(resource, dict):
                yield resource
    elif "resourceType" in raw:
        yield raw


def concept_text(concept: Any) -> str:
    """A CodeableConcept's text, else its first coding's display."""
    if not isinstance(concept, dict):
        return ""
    if concept.get("text"):
        return str(concept["text"])
    for coding in concept.get("coding") or []:
        if isinstance(coding, dict) and coding.get("display"):
            return str(coding["display"])
    return ""


def named(raw: Any) -> Iterator[tuple[str, bool]]:
    """(name, is a drug) of every lab, report and medication a raw result holds."""
    for resource in resources(raw):
        kind = str(resource.get("resourceType"))
        field = _NAMED.get(kind)
        name = concept_text(resource.get(field)) if field else ""
        if name:
            yield name, kind in DRUG_TYPES


def _event(resource: dict[str, Any]) -> str:
    notes = "; ".join(
        str(n.get("text", "")) for n in resource.get("note") or [] if isinstance(n, dict)
    )
    return str(resource.get("_event_txt") or notes or "")


def _charted(resource: dict[str, Any]) -> dt.datetime | None:
    period = resource.get("effectivePeriod")
    start = period.get("start") if isinstance(period, dict) else None
    time = resource.get("effectiveDateTime") or start
    return dt.datetime.fromisoformat(str(time)[:19]) if time else None


def administrations(raw: Any, since: str | None = None) -> tuple[int, int, int] | None:
    """(charted, given, not given) of a medication-administration result; None for any other.
    An event is read as the session builder reads it (``physassist.timeline.dose_event``), a
    resource without event text by its status. With ``since`` (an order's start,
    ``YYYY-MM-DD[ HH:MM]``), only the events that count toward that order as the builder
    counts them (``physassist.timeline.counts_toward``)."""
    found = [r for r in resources(raw) if r.get("resourceType") == "MedicationAdministration"]
    if not found:
        return None
    if since is not None:
        start = dt.datetime.fromisoformat(since)
        found = [r for r in found if (t := _charted(r)) is not None and counts_toward(t, start)]
    kinds = [
        (dose_event(_event(r)) or "unknown")
        if _event(r)
        else _GIVEN_STATUS.get(str(r.get("status")), "unknown")
        for r in found
    ]
    whole = since is None and isinstance(raw, dict) and raw.get("resourceType") == "Bundle"
    total = raw.get("total") if whole else None  # a window counts only the entries listed
    charted = int(total) if isinstance(total, int) and total >= len(found) else len(found)
    return charted, kinds.count("given"), kinds.count("not_given")
