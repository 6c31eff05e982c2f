"""Structured facts read back from gold tool observations (FHIR R4 resources).

Gold answers and rubric values are rendered from what the tools actually returned, never
from the builder's own queries, so a session's gold answer is always supported by its gold
observations. Readers accept both the strict (valid FHIR) and compat resource shapes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from physassist.ehr.tools.fhir import as_number
from physassist.ehr.tools.microbiology import CULTURE_KINDS

#: Non-culture test kinds whose positive result a microbiology answer lists.
POSITIVE_KINDS = frozenset({"antigen", "molecular", "serology"})


def resources(observation: Any, resource_type: str | None = None) -> list[dict[str, Any]]:
    """The resources of a searchset Bundle (or a bare resource), optionally of one type.

    OperationOutcome entries (strict hints) and error payloads are never returned.
    """
    if not isinstance(observation, dict):
        return []
    if observation.get("resourceType") == "Bundle":
        found = [e.get("resource") for e in observation.get("entry") or [] if isinstance(e, dict)]
    else:
        found = [observation]
    out = [
        r
        for r in found
        if isinstance(r, dict) and r.get("resourceType") not in (None, "OperationOutcome", "Bundle")
    ]
    if resource_type is not None:
        out = [r for r in out if r.get("resourceType") == resource_type]
    return out


def is_empty(observation: Any) -> bool:
    """True when a tool returned nothing usable (no resource, an error, an outcome)."""
    if isinstance(observation, dict) and "patient_response" in observation:
        return not str(observation.get("patient_response") or "").strip()
    return not resources(observation)


def _num(x: Any) -> float | None:
    """A finite number or None; unlike `as_number`, a JSON boolean is not a number."""
    return None if isinstance(x, bool) else as_number(x)


def _text(concept: Any) -> str:
    if not isinstance(concept, dict):
        return ""
    if concept.get("text"):
        return str(concept["text"])
    for c in concept.get("coding") or []:
        if isinstance(c, dict) and c.get("display"):
            return str(c["display"])
    return ""


def _codes(concept: Any) -> list[str]:
    if not isinstance(concept, dict):
        return []
    return [
        str(c.get("code"))
        for c in concept.get("coding") or []
        if isinstance(c, dict) and c.get("code")
    ]


def day(ts: str | None) -> str:
    """``YYYY-MM-DD`` part of a FHIR dateTime ('' when absent)."""
    return (ts or "")[:10]


def minute(ts: str | None) -> str:
    """``YYYY-MM-DD HH:MM`` of a FHIR dateTime."""
    t = (ts or "").replace("T", " ")
    return t[:16]


@dataclass(frozen=True)
class LabPoint:
    label: str
    value: float
    unit: str
    time: str  # FHIR dateTime
    low: float | None
    high: float | None
    flagged: bool  # interpretation says abnormal (used when no range is given)
    code: str

    @property
    def status(self) -> str:
        """'high', 'low', 'normal' from the reference range, else 'abnormal'/'normal' from the flag."""
        if self.high is not None and self.value > self.high:
            return "high"
        if self.low is not None and self.value < self.low:
            return "low"
        if self.low is not None or self.high is not None:
            return "normal"
        return "abnormal" if self.flagged else "normal"


def lab_points(
    observation: Any, label: str, itemids: tuple[int, ...] | None = None
) -> list[LabPoint]:
    """Numeric lab values for exactly `label`, oldest first, one value per chart time.

    ``itemids`` is the lab concept's items (``physassist.timeline``: blood gas items left
    out where the label has others); without it, name searches that return sibling items
    keep only the item code with the most values. Values charted at one time are merged,
    keeping the most-charted item's.
    """
    points: list[LabPoint] = []
    for r in resources(observation, "Observation"):
        name = _text(r.get("code"))
        if name.lower() != label.lower():
            continue
        q = r.get("valueQuantity") or {}
        value = _num(q.get("value"))
        if value is None:
            continue
        low = high = None
        for rr in r.get("referenceRange") or []:
            low = _num((rr.get("low") or {}).get("value"))
            high = _num((rr.get("high") or {}).get("value"))
            break
        flagged = False
        for interp in r.get("interpretation") or []:
            for c in interp.get("coding") or []:
                if str(c.get("code", "")).upper() in {"A", "H", "L", "HH", "LL", "AA"}:
                    flagged = True
        codes = _codes(r.get("code"))
        points.append(
            LabPoint(
                name,
                value,
                str(q.get("unit") or ""),
                str(r.get("effectiveDateTime") or ""),
                low,
                high,
                flagged,
                codes[0] if codes else "",
            )
        )
    if itemids is not None:
        wanted = {str(i) for i in itemids}
        points = [p for p in points if p.code in wanted]
    if not points:
        return []
    counts: dict[str, int] = {}
    for p in points:
        counts[p.code] = counts.get(p.code, 0) + 1
    if itemids is None:
        best = max(sorted(counts), key=lambda c: counts[c])
        points = [p for p in points if p.code == best]
    rank = {c: (-n, c) for c, n in counts.items()}
    by_time: dict[str, LabPoint] = {}
    for p in points:
        kept = by_time.get(p.time)
        if kept is None or rank[p.code] < rank[kept.code]:
            by_time[p.time] = p
    return [by_time[t] for t in sorted(by_time)]


def _naming(
    observation: Any, resource_type: str, word: str | None
) -> Iterator[tuple[dict[str, Any], str]]:
    """(resource, drug text) of the medication resources whose drug names `word` (all when None)."""
    for r in resources(observation, resource_type):
        drug = _text(r.get("medicationCodeableConcept"))
        if not word or word.lower() in drug.lower():
            yield r, drug


@dataclass(frozen=True)
class MedOrder:
    drug: str
    dose: float | None
    unit: str
    route: str
    start: str
    status: str
    text: str


def med_orders(observation: Any, word: str | None = None) -> list[MedOrder]:
    """MedicationRequests (newest start first), optionally only those naming `word`."""
    out: list[MedOrder] = []
    for r, drug in _naming(observation, "MedicationRequest", word):
        dose = None
        unit = route = text = start = ""
        for di in r.get("dosageInstruction") or []:
            text = str(di.get("text") or "")
            route = _text(di.get("route"))
            for dr in di.get("doseAndRate") or []:
                dq = dr.get("doseQuantity") or {}
                dose = _num(dq.get("value"))
                unit = str(dq.get("unit") or "")
            bounds = ((di.get("timing") or {}).get("repeat") or {}).get("boundsPeriod") or {}
            start = str(bounds.get("start") or "")
            break
        start = start or str(r.get("authoredOn") or "")
        out.append(MedOrder(drug, dose, unit, route, start, str(r.get("status") or ""), text))
    return sorted(out, key=lambda m: m.start, reverse=True)


@dataclass(frozen=True)
class AdminEvent:
    drug: str
    time: str
    status: str
    event: str


def admin_events(observation: Any, word: str | None = None) -> list[AdminEvent]:
    """MedicationAdministrations (oldest first), optionally only those naming `word`."""
    out: list[AdminEvent] = []
    for r, drug in _naming(observation, "MedicationAdministration", word):
        time = str(
            r.get("effectiveDateTime") or (r.get("effectivePeriod") or {}).get("start") or ""
        )
        event = str(r.get("_event_txt") or "")
        if not event:
            for note in r.get("note") or []:
                event = str(note.get("text") or "")
                break
        if not event:
            event = _text(r.get("statusReason", [{}])[0]) if r.get("statusReason") else ""
        out.append(AdminEvent(drug, time, str(r.get("status") or ""), event))
    return sorted(out, key=lambda a: a.time)


@dataclass(frozen=True)
class Diagnosis:
    code: str
    title: str
    seq: int


def diagnoses(observation: Any) -> list[Diagnosis]:
    """Conditions in coded order (sequence number when present, else as returned)."""
    out: list[Diagnosis] = []
    for i, r in enumerate(resources(observation, "Condition")):
        codes = _codes(r.get("code"))
        seq = r.get("_seq_num")
        for ext in r.get("extension") or []:
            if "seq" in str(ext.get("url", "")).lower():
                seq = ext.get("valueInteger", seq)
        out.append(
            Diagnosis(
                codes[0] if codes else "",
                _text(r.get("code")),
                int(seq) if _num(seq) is not None else i + 1,
            )
        )
    return sorted(out, key=lambda d: d.seq)


@dataclass(frozen=True)
class Stay:
    start: str
    end: str
    admission_type: str
    discharge_location: str


def stays(observation: Any) -> list[Stay]:
    """Encounters, newest first."""
    out: list[Stay] = []
    for r in resources(observation, "Encounter"):
        period = r.get("period") or {}
        adm_type = _text((r.get("type") or [{}])[0]) if r.get("type") else ""
        hosp = r.get("hospitalization") or {}
        dest = _text(hosp.get("dischargeDisposition"))
        mimic = r.get("_mimic") or {}
        adm_type = adm_type or str(mimic.get("admission_type") or "")
        dest = dest or str(mimic.get("discharge_location") or "")
        out.append(
            Stay(str(period.get("start") or ""), str(period.get("end") or ""), adm_type, dest)
        )
    return sorted(out, key=lambda s: s.start, reverse=True)


def write_result(observation: Any) -> dict[str, Any] | None:
    """The simulated resource a write tool returned (None when the write was refused)."""
    found = resources(observation)
    return found[0] if found else None


@dataclass(frozen=True)
class MicroResult:
    """One test (for one isolate) of a microbiology report: a contained Observation of the
    strict report (``physassist.ehr.tools.microbiology``: its kind, flags and resistances are
    extensions)."""

    test: str
    kind: str  # culture | screen | stain | antigen | molecular | serology | other
    status: str  # final | registered (pending) | cancelled
    organism: str  # the isolate's organism ("" for a test without one)
    value: str  # the organism, or the test's result text
    flags: tuple[str, ...]  # commensal | contaminant | result
    resistance: tuple[str, ...]  # MRSA | VRE | CRE | carbapenem-resistant | ESBL | 3GC-R
    susceptibilities: tuple[tuple[str, str], ...]  # (antibiotic, S/I/R)

    @property
    def pending(self) -> bool:
        return self.status == "registered"

    @property
    def culture(self) -> bool:
        return self.kind in CULTURE_KINDS

    @property
    def grown(self) -> bool:
        """An organism a reported culture grew (not a result written as one)."""
        return (
            self.culture and not self.pending and bool(self.organism) and "result" not in self.flags
        )

    @property
    def significant(self) -> bool:
        """A grown organism of clinical weight: no commensal, no possible contaminant."""
        return self.grown and not self.flags

    @property
    def positive(self) -> bool:
        """A reported non-culture test (PCR, antigen, toxin, serology) that found its target: it
        names an organism (a C. difficile PCR reports CLOSTRIDIUM DIFFICILE) or reads positive.
        Such a result can be the diagnosis of the stay, so a microbiology answer lists it, named
        as the test it is, never as a culture that grew something."""
        if self.culture or self.pending or self.kind not in POSITIVE_KINDS:
            return False
        said = self.value.strip().upper()
        return bool(self.organism) or said.startswith(("POSITIVE", "DETECTED", "REACTIVE"))


def _extensions(resource: dict[str, Any], name: str) -> list[Any]:
    return [
        next((v for k, v in e.items() if k.startswith("value")), None)
        for e in resource.get("extension") or []
        if isinstance(e, dict) and str(e.get("url", "")).endswith("/" + name)
    ]


def micro_results(report: dict[str, Any], specimen: str) -> tuple[MicroResult, ...]:
    """The tests of a strict microbiology report of ``specimen``, in report order."""
    out = []
    for o in report.get("contained") or []:
        if not isinstance(o, dict) or o.get("resourceType") != "Observation":
            continue
        test = _text(o.get("code")).removesuffix(f" ({specimen})")
        kind = next(iter(_extensions(o, "microbiology-test-kind")), "") or ""
        organism = next(iter(_extensions(o, "microbiology-organism")), "") or ""
        panel = tuple(
            (str((c.get("code") or {}).get("text") or ""), code)
            for c in o.get("component") or []
            if isinstance(c, dict)
            for code in (_codes((c.get("interpretation") or [{}])[0]) or [""])[:1]
        )
        out.append(
            MicroResult(
                test,
                str(kind),
                str(o.get("status") or ""),
                str(organism),
                str(o.get("valueString") or ""),
                tuple(str(f) for f in _extensions(o, "microbiology-flag")),
                tuple(str(r) for r in _extensions(o, "microbiology-resistance")),
                panel,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Report:
    title: str  # exam line (radiology) or specimen (microbiology)
    conclusion: str
    time: str
    micro: bool
    status: str = "final"  # final | partial | registered (microbiology: tests pending)
    results: tuple[MicroResult, ...] = ()  # microbiology: its tests
    origin: str = ""  # microbiology without hadm_id: where it came from ("emergency department")

    @property
    def cultured(self) -> bool:
        """A culture was sent from the specimen (not only stains, antigen tests, PCR, serology)."""
        return any(r.culture for r in self.results)

    @property
    def grown(self) -> tuple[MicroResult, ...]:
        return tuple(r for r in self.results if r.grown)

    @property
    def significant(self) -> tuple[MicroResult, ...]:
        return tuple(r for r in self.results if r.significant)

    @property
    def positive(self) -> tuple[MicroResult, ...]:
        """Its positive non-culture tests (:attr:`MicroResult.positive`)."""
        return tuple(r for r in self.results if r.positive)

    @property
    def pending(self) -> tuple[MicroResult, ...]:
        """Its cultures not reported yet."""
        return tuple(r for r in self.results if r.culture and r.pending)


def reports(observation: Any) -> list[Report]:
    """DiagnosticReports (newest first) with their conclusion (impression or organisms)."""
    out: list[Report] = []
    for r in resources(observation, "DiagnosticReport"):
        cats = " ".join(
            c.get("display", "") for cat in r.get("category") or [] for c in cat.get("coding") or []
        )
        title = _text(r.get("code")).replace("EXAMINATION:", "").strip()
        micro = "micro" in cats.lower()
        if micro:
            title = title.replace(" microbiology", "").strip()
        results = micro_results(r, title) if micro else ()
        origins = {
            str(v)
            for o in r.get("contained") or []
            if isinstance(o, dict)
            for v in _extensions(o, "specimen-origin")
        }
        out.append(
            Report(
                " ".join(title.split()),
                str(r.get("conclusion") or "").strip(),
                str(r.get("effectiveDateTime") or ""),
                micro,
                str(r.get("status") or "final"),
                results,
                next(iter(origins), ""),
            )
        )
    return sorted(out, key=lambda x: x.time, reverse=True)
