"""Organisms: a genus written out, with its species ("Streptococcus pneumoniae", "KLEBSIELLA
PNEUMONIAE"), abbreviated ("S. aureus", "E. coli") or by a common name ("MRSA", "C. diff",
"肺炎链球菌"; ``names.ORGANISM_ALIASES``).

Grounded when a text received names the same organism (the same genus, or its initial, and the
same species when both give one); contradicted when the assistant retrieved culture results
(microbiology) and none of them names it; else unsupported.
"""

from __future__ import annotations

import re

from physassist.grounding.facts import Evidence, Fact, FactType, Reading, Verdict
from physassist.grounding.names import GENERA, ORGANISM_ALIASES
from physassist.grounding.text import trie_pattern

NAME = "organism"

_GENUS = trie_pattern({*GENERA, *(g[:-2] + "i" for g in GENERA if g.endswith("us"))})
#: A species epithet: a Latin word ("pneumoniae", "aureus", "coli", "difficile") that is no
#: disease ("bacteremia", "sepsis", "colitis") nor a word of the culture report.
_SPECIES = r"[a-z]{3,}(?:ae|us|is|ii|i|a|um|es|ens|ans|le|ca|ci)"
_NOT_SPECIES = re.compile(
    r"(?:itis|emia|aemia|osis|sepsis)$|^(?:this|thus|plus|also|area|data|media|bacteria|species|"
    r"group|complex|isolates|was|has|his|its|is|as|grows|grew|positive|negative|sensitive|"
    r"resistant|pneumonia|infection|urine|sputum|blood|culture|cultures|colonies|screen|swab|"
    r"and|or|in|on|of|the|a|an|sp|spp)$",
    re.IGNORECASE,
)
# Read from the lower-cased text (``Reading.lower``) but the abbreviations ("S. aureus").
_WRITTEN = re.compile(rf"\b(?P<g>{_GENUS})(?:[ \t]+(?P<s>{_SPECIES}))?\b")
_SHORT = re.compile(rf"\b(?P<g>[A-Z])\.\s?(?P<s>{_SPECIES})\b")
_ALIASES = sorted(ORGANISM_ALIASES, key=len, reverse=True)
_ALIAS = re.compile(
    "|".join(
        re.escape(a).replace(r"\ ", r"[.\s]+")
        if not re.search(r"[\u3400-\u9fff]", a)
        else re.escape(a)
        for a in _ALIASES
    )
)
_NOT_ORGANISM_AFTER = re.compile(r"\s*(?:screen|swab)")
_CULTURES = re.compile(r"microbiology|organisms?:|no organism|no growth|culture", re.IGNORECASE)


def _genus(word: str) -> str:
    word = word.lower()
    return word[:-1] + "us" if word.endswith("cci") else word


def extract(reading: Reading) -> list[Fact]:
    text, lower = reading.text, reading.lower
    out: list[Fact] = []

    def add(start: int, end: int, value: str) -> None:
        if not any(f.start < end and start < f.end for f in out):
            out.append(Fact(NAME, text[start:end], start, end, value))

    for m in _ALIAS.finditer(lower):
        if re.fullmatch(r"[A-Za-z.\s]+", m.group(0)) and (
            (m.start() > 0 and text[m.start() - 1].isalnum())
            or (m.end() < len(text) and text[m.end()].isalnum())
        ):
            continue  # inside a word
        if _NOT_ORGANISM_AFTER.match(lower, m.end()) and m.group(0) in ("mrsa", "staph aureus"):
            continue  # "MRSA SCREEN", "Staph aureus swab": a specimen, not a finding
        key = re.sub(r"[.\s]+", " ", m.group(0)).strip()
        add(m.start(), m.end(), ORGANISM_ALIASES.get(key, key))
    for m in _WRITTEN.finditer(lower):
        species = m.group("s")
        if species and _NOT_SPECIES.search(species):
            add(m.start(), m.end("g"), _genus(m.group("g")))
        else:
            add(
                m.start(),
                m.end(),
                " ".join(filter(None, (_genus(m.group("g")), (species or "").lower()))),
            )
    for m in _SHORT.finditer(text):
        if not _NOT_SPECIES.search(m.group("s")):
            add(m.start(), m.end(), f"{m.group('g').lower()}. {m.group('s').lower()}")
    return sorted(out, key=lambda f: f.start)


def same_organism(a: str, b: str) -> bool:
    """One organism: the same genus (or a genus and its initial, "s. aureus") and the same
    species when both name one."""
    genus_a, _, species_a = a.partition(" ")
    genus_b, _, species_b = b.partition(" ")
    if genus_a.endswith(".") or genus_b.endswith("."):
        same_genus = genus_a[0] == genus_b[0]
    else:
        same_genus = genus_a == genus_b
    return same_genus and (not species_a or not species_b or species_a == species_b)


def match(fact: Fact, evidence: Evidence) -> Verdict:
    record = evidence.facts(NAME)
    for other in record:
        if same_organism(str(fact.value), str(other.value)):
            return Verdict(fact, "grounded", other)
    cultures = evidence.memo(
        NAME,
        lambda: [
            line
            for line in evidence.lines
            if line.source.kind == "tool" and _CULTURES.search(line.text)
        ],
    )
    if cultures:
        seen = tuple(
            dict.fromkeys(str(o.value) for o in record if o.line and o.line.source.kind == "tool")
        )
        holder = next((o for o in record if o.line and o.line.source.kind == "tool"), None)
        if holder is None:
            holder = Fact(NAME, "", 0, 0, "no organism", line=cultures[0])
        return Verdict(fact, "contradicted", holder, seen[:8] or ("no organism",))
    return Verdict(fact, "unsupported")


FACT_TYPE = FactType(
    NAME,
    40,
    "an organism, written out (`Streptococcus pneumoniae`), abbreviated (`S. aureus`, `E. coli`) "
    "or "
    "by a common name (`MRSA`, `肺炎链球菌`); grounded by the same organism in a text received, "
    "contradicted when the cultures retrieved name only others",
    extract,
    match,
)
