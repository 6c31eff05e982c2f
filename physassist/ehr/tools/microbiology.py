"""What a specimen's microbiology rows mean at the cutoff, as a physician reads them: strict's
microbiology answers and the clinical timeline (``physassist.timeline``) both read them here.

One specimen (``micro_specimen_id``) holds tests (``test_seq``); a test reported by the cutoff
(``reported.reported_at``) shows its isolates (organism rows, each with the antibiotics
tested on it) or its result text (``comments``); a test reported later is pending, and nothing
of its result is shown. The rules, each a place where the raw rows mislead:

* **Test kind** from the test name (:data:`TEST_KINDS`): only a culture (``culture``, or a
  surveillance ``screen`` such as an MRSA screen) grows organisms; a stain, an antigen test, a
  PCR / nucleic acid test or a serology is named as what it is, so an RPR serology is never
  "what the cultures grew".
* **Not an organism**: ``org_name`` ``CANCELLED`` is a cancelled test (MIMIC-IV puts it where
  the organism goes), ``POSITIVE`` / ``POSITIVE FOR ...`` is a test's result.
* **Rejected specimen**: a cancelled test or a result text saying it was not performed (a
  sputum with upper-airway contamination is not cultured).
* **Commensals**: mixed / commensal flora anywhere; in a respiratory specimen, yeast, Candida,
  viridans streptococci, coagulase-negative staphylococci, diphtheroids, Neisseria other than
  *N. meningitidis* (colonising upper-airway flora, not pneumonia: IDSA/ATS 2019 CAP guideline);
  in blood, the common skin commensals of the CDC NHSN list (coagulase-negative staphylococci,
  diphtheroids, *Micrococcus*, *Bacillus* other than *B. anthracis*, *Cutibacterium*,
  viridans streptococci, *Aerococcus*, *Rhodococcus*): a possible contaminant, significant only
  when grown in two or more blood culture sets (NHSN Patient Safety Component Manual, ch. 4).
* **Resistance a physician acts on**, from the isolate's own panel (CLSI M100; CDC CRE
  definition): MRSA (*S. aureus* resistant to oxacillin, or a screen's "positive for
  methicillin resistant"), VRE (*Enterococcus* resistant to vancomycin), carbapenem
  resistance (any carbapenem R; CRE in an Enterobacterales), ESBL (a lab comment saying so, or
  *E. coli*, *Klebsiella* or *P. mirabilis*, the CLSI ESBL-screening species, resistant to a
  third-generation cephalosporin) and third-generation cephalosporin resistance in the other
  Enterobacterales (chromosomal AmpC: *Enterobacter*, *Citrobacter*, *Serratia* ...).
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .reported import MICRO_DRAWN, Row, Stay, known, owner

#: Test kind -> the words of a test name that make it one, tried in this order (an "Antigen
#: Screen" is an antigen test, a "FECAL CULTURE - R/O YERSINIA" a culture).
TEST_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern, re.IGNORECASE))
    for kind, pattern in (
        ("antigen", r"\bANTIGEN\b|\(DFA\)|\bDFA\b|\bTOXIN\b|VIRUS IDENTIFICATION"),
        ("molecular", r"\bPCR\b|NUCLEIC ACID|\bDNA\b|VIRAL LOAD|AMPLIFICATION"),
        ("serology", r"ANTIBODY|\bIG[GMA]\b|SEROLOGY|REAGIN|\bLYME\b|\bAB\b"),
        ("stain", r"\bSTAIN\b|\bSMEAR\b|PREPARATION|OVA \+ PARASITES|IMMUNOFLUORESCENT"),
        ("culture", r"CULTURE|^TISSUE$"),
        ("screen", r"\bSCREEN\b|\bR/O\b"),
    )
)
#: How each kind is named to a reader.
KIND_NAMES = {
    "culture": "culture",
    "screen": "screening culture",
    "stain": "stain",
    "antigen": "antigen test",
    "molecular": "PCR / nucleic acid test",
    "serology": "serology",
    "other": "test",
}
#: Kinds that grow organisms: what "the cultures" are.
CULTURE_KINDS = frozenset({"culture", "screen"})


def test_kind(name: Any) -> str:
    """The kind of a microbiology test by its name (:data:`TEST_KINDS`), else ``other``."""
    text = str(name or "").strip()
    return next((kind for kind, words in TEST_KINDS if words.search(text)), "other")


_RESPIRATORY = re.compile(r"SPUTUM|BRONCH|LAVAGE|\bBAL\b|TRACHEAL|ASPIRATE", re.IGNORECASE)
_BLOOD = re.compile(r"BLOOD", re.IGNORECASE)
_FLORA = re.compile(
    r"MIXED BACTERIAL FLORA|COMMENSAL|NORMAL FLORA|SKIN FLORA|CONTAMINATION", re.IGNORECASE
)
_RESPIRATORY_FLORA = re.compile(
    r"YEAST|CANDIDA|VIRIDANS|COAGULASE NEGATIVE|CORYNEBACTERIUM|DIPHTHEROID|MICROCOCCUS"
    r"|NEISSERIA(?! MENINGITIDIS)", re.IGNORECASE)  # fmt: skip
_SKIN_COMMENSALS = re.compile(
    r"COAGULASE NEGATIVE|CORYNEBACTERIUM|DIPHTHEROID|MICROCOCCUS|BACILLUS(?! ANTHRACIS)"
    r"|PROPIONIBACTERIUM|CUTIBACTERIUM|VIRIDANS|AEROCOCCUS|RHODOCOCCUS", re.IGNORECASE)  # fmt: skip
_REJECTED = re.compile(
    r"CANCELL?ED|NOT PERFORMED|REJECTED|NOT PROCESSED|UNACCEPTABLE", re.IGNORECASE
)

#: Flags of a finding, and how each is said.
COMMENSAL, CONTAMINANT, RESULT = "commensal", "contaminant", "result"
FLAG_NOTES = {
    COMMENSAL: "commensal / colonising flora",
    CONTAMINANT: "possible skin contaminant (significant only in 2 or more blood culture sets)",
}


def finding_flags(specimen: Any, organism: Any) -> tuple[str, ...]:
    """``result`` for an ``org_name`` that is a test's result rather than an organism, else
    ``commensal`` / ``contaminant`` for flora of no clinical weight in that specimen."""
    org = str(organism or "").upper()
    spec = str(specimen or "")
    if org == "POSITIVE" or org.startswith("POSITIVE FOR") or org == "CANCELLED":
        return (RESULT,)
    if _FLORA.search(org) or (_RESPIRATORY.search(spec) and _RESPIRATORY_FLORA.search(org)):
        return (COMMENSAL,)
    if _BLOOD.search(spec) and _SKIN_COMMENSALS.search(org):
        return (CONTAMINANT,)
    return ()


CARBAPENEMS = frozenset({"MEROPENEM", "IMIPENEM", "ERTAPENEM", "DORIPENEM"})
THIRD_GENERATION = frozenset({"CEFTRIAXONE", "CEFTAZIDIME", "CEFOTAXIME", "CEFPODOXIME"})
_S_AUREUS = re.compile(r"STAPH(YLOCOCCUS)? AUREUS", re.IGNORECASE)
_ESBL_SPECIES = re.compile(r"ESCHERICHIA COLI|KLEBSIELLA|PROTEUS MIRABILIS", re.IGNORECASE)
_ENTEROBACTERALES = re.compile(
    r"ESCHERICHIA|KLEBSIELLA|PROTEUS|ENTEROBACTER|CITROBACTER|SERRATIA|MORGANELLA|PROVIDENCIA"
    r"|SALMONELLA|SHIGELLA|HAFNIA|RAOULTELLA|KLUYVERA", re.IGNORECASE)  # fmt: skip
_ESBL_COMMENT = re.compile(r"\bESBL\b|EXTENDED[- ]SPECTRUM BETA[- ]LACTAMASE", re.IGNORECASE)

#: Resistance -> how it is said (the name a physician acts on first).
RESISTANCE_NAMES = {
    "MRSA": "MRSA (oxacillin-resistant S. aureus)",
    "VRE": "VRE (vancomycin-resistant Enterococcus)",
    "CRE": "CRE (carbapenem-resistant Enterobacterales)",
    "carbapenem-resistant": "carbapenem-resistant",
    "ESBL": "ESBL (resistant to third-generation cephalosporins)",
    "3GC-R": "resistant to third-generation cephalosporins (AmpC)",
}


def resistance(
    organism: Any, panel: Iterable[Susceptibility], comment: Any = ""
) -> tuple[str, ...]:
    """The resistances a physician acts on, named from the isolate and its panel (see the
    module rules), in the order of :data:`RESISTANCE_NAMES`."""
    org = str(organism or "")
    resistant = {s.antibiotic.upper() for s in panel if s.interpretation == "R"}
    found = set()
    if "METHICILLIN RESISTANT" in org.upper() or (
        _S_AUREUS.search(org) and "OXACILLIN" in resistant
    ):
        found.add("MRSA")
    if "ENTEROCOCCUS" in org.upper() and "VANCOMYCIN" in resistant:
        found.add("VRE")
    enterobacterales = bool(_ENTEROBACTERALES.search(org))
    if resistant & CARBAPENEMS:
        found.add("CRE" if enterobacterales else "carbapenem-resistant")
    if _ESBL_COMMENT.search(str(comment or "")) or (
        _ESBL_SPECIES.search(org) and resistant & THIRD_GENERATION
    ):
        found.add("ESBL")
    elif enterobacterales and resistant & THIRD_GENERATION:
        found.add("3GC-R")
    return tuple(r for r in RESISTANCE_NAMES if r in found)


@dataclass(frozen=True)
class Susceptibility:
    antibiotic: str
    interpretation: str  # S, I, R, or "" when the lab gave none
    dilution: str

    @property
    def text(self) -> str:
        """``R =>4``: the interpretation and the dilution, as a report prints them."""
        return " ".join(x for x in (self.interpretation, self.dilution) if x) or "reported"


@dataclass(frozen=True)
class Isolate:
    """One organism a test grew, with the antibiotics tested on it."""

    organism: str
    number: int | None
    susceptibilities: tuple[Susceptibility, ...]
    flags: tuple[str, ...]
    resistance: tuple[str, ...]

    @property
    def organism_named(self) -> bool:
        """An organism name, not a test's result written where the organism goes."""
        return RESULT not in self.flags

    @property
    def significant(self) -> bool:
        """An organism of clinical weight: named, neither commensal nor a possible contaminant."""
        return not self.flags


@dataclass(frozen=True)
class MicroTest:
    """One test of a specimen at the cutoff: pending (``reported`` None), or its result."""

    seq: int | None
    itemid: int | None
    name: str
    kind: str
    reported: dt.datetime | None
    isolates: tuple[Isolate, ...]
    comment: str  # the result text when nothing grew ("" while pending)
    rejected: bool

    @property
    def pending(self) -> bool:
        return self.reported is None

    @property
    def culture(self) -> bool:
        return self.kind in CULTURE_KINDS

    @property
    def result(self) -> str:
        """The test's result in a few words: its isolates, else its result text."""
        if self.pending:
            return "pending"
        if self.isolates:
            return "; ".join(describe(i) for i in self.isolates)
        return self.comment or "no organism reported"


def describe(isolate: Isolate) -> str:
    """``STAPH AUREUS COAG + (MRSA (oxacillin-resistant S. aureus))``: the organism with its
    resistances and flags."""
    said = [RESISTANCE_NAMES[r] for r in isolate.resistance]
    said += [FLAG_NOTES[f] for f in isolate.flags if f in FLAG_NOTES]
    return isolate.organism + (f" ({'; '.join(said)})" if said else "")


@dataclass(frozen=True)
class Specimen:
    """One specimen at the cutoff: what was drawn, when, for which stay, and its tests."""

    specimen_id: int
    specimen: str
    drawn: dt.datetime
    day_only: bool  # only the date is known (``chartdate``)
    hadm_id: int | None  # the stay it belongs to (its own, or by its window)
    origin: str | None  # a specimen without hadm_id: reported.EMERGENCY / UNLINKED
    tests: tuple[MicroTest, ...]

    @property
    def status(self) -> str:
        """FHIR DiagnosticReport status: ``registered`` (nothing reported), ``partial`` (some
        tests pending) or ``final``."""
        pending = sum(t.pending for t in self.tests)
        return "final" if not pending else "registered" if pending == len(self.tests) else "partial"

    @property
    def cultures(self) -> tuple[MicroTest, ...]:
        return tuple(t for t in self.tests if t.culture)

    @property
    def isolates(self) -> tuple[Isolate, ...]:
        """The organisms its reported cultures grew (not results written as organisms)."""
        return tuple(i for t in self.cultures for i in t.isolates if i.organism_named)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def _comment(rows: Sequence[Row]) -> str:
    text = next((str(r["comments"]).strip() for r in rows if r["comments"]), "")
    return "" if text == "___" else " ".join(text.split())


def specimens(
    rows: Iterable[Row],
    cutoff: dt.datetime | None,
    reported: Callable[[Row], dt.datetime | None],
    found: Sequence[Stay] = (),
) -> list[Specimen]:
    """The specimens of microbiology ``rows`` as known at ``cutoff`` (inclusive; None: no
    cutoff) with each row's report time ``reported`` (``reported.reported_at``), newest drawn
    first (then by specimen id); a specimen's stay is its ``hadm_id``, else the stay of
    ``found`` whose window holds it (``reported.owner``)."""
    by_specimen: dict[Any, list[Row]] = {}
    for r in rows:
        by_specimen.setdefault(r["micro_specimen_id"], []).append(r)
    out = []
    for spec_id, items in by_specimen.items():
        first = items[0]
        drawn = MICRO_DRAWN[1](first)
        if drawn is None:
            continue
        day_only = first["charttime"] is None
        hadm, origin = owner(found, first["hadm_id"], drawn, day_only)
        tests: dict[Any, list[Row]] = {}
        for r in items:
            tests.setdefault((r["test_seq"], r["test_itemid"]), []).append(r)
        made = [_test(test, first["spec_type_desc"], cutoff, reported) for test in tests.values()]
        made.sort(key=lambda t: (t.seq is None, t.seq or 0, t.name))
        out.append(
            Specimen(
                int(spec_id),
                str(first["spec_type_desc"] or "specimen"),
                drawn,
                day_only,
                hadm,
                origin,
                tuple(made),
            )
        )
    return sorted(out, key=lambda s: (s.drawn, -s.specimen_id), reverse=True)


def _test(
    rows: list[Row],
    specimen: Any,
    cutoff: dt.datetime | None,
    reported_at: Callable[[Row], dt.datetime | None],
) -> MicroTest:
    first = rows[0]
    name = str(first["test_name"] or "test").strip()
    reported = reported_at(first)
    head = (_int(first["test_seq"]), _int(first["test_itemid"]), name, test_kind(name))
    if not known(reported, cutoff):
        return MicroTest(*head, None, (), "", False)
    by_isolate: dict[Any, list[Row]] = {}
    for r in rows:
        if r["org_name"]:
            by_isolate.setdefault((r["isolate_num"], r["org_name"]), []).append(r)
    isolates = []
    for (number, organism), found in sorted(
        by_isolate.items(), key=lambda kv: (kv[0][0] is None, kv[0][0] or 0, kv[0][1])
    ):
        panel = tuple(
            Susceptibility(str(r["ab_name"]), str(r["interpretation"] or "").strip(),
                           str(r["dilution_text"] or "").strip())
            for r in found if r["ab_name"]
        )  # fmt: skip
        isolates.append(
            Isolate(
                str(organism),
                _int(number),
                panel,
                finding_flags(specimen, organism),
                resistance(organism, panel, _comment(found)),
            )
        )
    comment = _comment([r for r in rows if not r["org_name"]])
    rejected = any(str(r["org_name"] or "").upper() == "CANCELLED" for r in rows) or bool(
        _REJECTED.search(comment)
    )
    return MicroTest(*head, reported, tuple(isolates), comment, rejected)
