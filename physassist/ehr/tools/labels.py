"""Strict label matching: exact label -> curated synonyms -> conservative fuzzy -> nothing.

Only labels the patient actually has are candidates, so a match always means data exists and a
miss can list the closest labels the patient does have. The fuzzy step is deliberately tight
(ratio >= 0.85) so that "K" never becomes "Alkaline Phosphatase" and "WBC" never silently
becomes urine WBC.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from dataclasses import dataclass

FUZZY_THRESHOLD = 0.85

# normalized query -> canonical labels (MIMIC-IV d_labitems / d_items / omr spellings)
_LAB_SYNONYMS: dict[tuple[str, ...], tuple[str, ...]] = {
    (
        "wbc",
        "white count",
        "white blood cell",
        "white blood cells",
        "white blood cell count",
        "leukocytes",
        "leukocyte count",
        "wbc count",
    ): ("White Blood Cells", "WBC Count"),
    ("k", "k+", "potassium", "serum potassium"): ("Potassium", "Potassium, Whole Blood"),
    ("cr", "creat", "scr", "serum creatinine", "creatinine"): ("Creatinine",),
    ("hgb", "hb", "haemoglobin", "hemoglobin"): ("Hemoglobin",),
    ("hct", "haematocrit", "hematocrit"): ("Hematocrit",),
    ("plt", "plts", "platelet", "platelets", "platelet count"): ("Platelet Count",),
    ("na", "na+", "sodium", "serum sodium"): ("Sodium", "Sodium, Whole Blood"),
    ("cl", "chloride"): ("Chloride", "Chloride, Whole Blood"),
    ("bun", "urea", "blood urea nitrogen", "urea nitrogen"): ("Urea Nitrogen",),
    ("inr", "pt inr", "inr pt"): ("INR(PT)",),
    ("pt", "prothrombin time"): ("PT",),
    ("ptt", "aptt", "partial thromboplastin time"): ("PTT",),
    ("lactate", "lactic acid", "lac"): ("Lactate",),
    ("troponin", "trop", "tnt", "troponin t", "ctnt"): ("Troponin T", "Troponin I"),
    ("troponin i", "tni", "ctni"): ("Troponin I",),
    ("bnp", "ntprobnp", "nt probnp", "nt pro bnp", "pro bnp", "probnp"): ("NTproBNP", "BNP"),
    ("glucose", "blood sugar", "blood glucose", "bg", "glu"): ("Glucose", "Glucose, Whole Blood"),
    ("hba1c", "a1c", "hemoglobin a1c", "haemoglobin a1c", "glycated hemoglobin"): (
        "% Hemoglobin A1c",
        "Hemoglobin A1c",
    ),
    ("bili", "tbili", "t bili", "total bilirubin", "bilirubin", "bilirubin total"): (
        "Bilirubin, Total",
    ),
    ("dbili", "direct bilirubin", "bilirubin direct"): ("Bilirubin, Direct",),
    ("alt", "sgpt", "alanine aminotransferase"): ("Alanine Aminotransferase (ALT)",),
    ("ast", "sgot", "aspartate aminotransferase"): ("Asparate Aminotransferase (AST)",),
    ("alp", "alk phos", "alkphos", "alkaline phosphatase"): ("Alkaline Phosphatase",),
    ("alb", "albumin", "serum albumin"): ("Albumin",),
    ("mg", "mag", "magnesium"): ("Magnesium",),
    ("phos", "phosphorus", "phosphate", "po4"): ("Phosphate",),
    ("ca", "calcium", "total calcium"): ("Calcium, Total",),
    ("ionized calcium", "ica", "free calcium"): ("Free Calcium",),
    ("co2", "bicarb", "hco3", "bicarbonate", "total co2", "tco2"): (
        "Bicarbonate",
        "Calculated Total CO2",
    ),
    ("anion gap", "ag"): ("Anion Gap",),
    ("crp", "c reactive protein"): ("C-Reactive Protein",),
    ("esr", "sed rate"): ("Sedimentation Rate",),
    ("tsh",): ("Thyroid Stimulating Hormone",),
    ("nh3", "ammonia"): ("Ammonia",),
    ("ldl", "ldl cholesterol"): ("Cholesterol, LDL, Calculated", "Cholesterol, LDL, Measured"),
    ("hdl", "hdl cholesterol"): ("Cholesterol, HDL",),
    ("egfr", "gfr"): ("Estimated GFR (MDRD equation)", "eGFR"),
    ("anc", "absolute neutrophil count"): ("Absolute Neutrophil Count",),
    ("ph",): ("pH",),
    ("pco2",): ("pCO2",),
    ("po2",): ("pO2",),
    ("procal", "pct", "procalcitonin"): ("Procalcitonin",),
    ("dig", "digoxin level"): ("Digoxin",),
}
_VITAL_SYNONYMS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("hr", "heart rate", "pulse", "pulse rate"): ("Heart Rate", "Pulse"),
    ("bp", "blood pressure", "nibp", "abp"): (
        "Non Invasive Blood Pressure systolic",
        "Non Invasive Blood Pressure diastolic",
        "Non Invasive Blood Pressure mean",
        "Arterial Blood Pressure systolic",
        "Arterial Blood Pressure diastolic",
        "Arterial Blood Pressure mean",
        "Blood Pressure",
        "Blood Pressure Sitting",
        "Blood Pressure Standing",
        "Blood Pressure Lying",
    ),
    ("sbp", "systolic", "systolic bp", "systolic blood pressure"): (
        "Non Invasive Blood Pressure systolic",
        "Arterial Blood Pressure systolic",
    ),
    ("dbp", "diastolic", "diastolic bp", "diastolic blood pressure"): (
        "Non Invasive Blood Pressure diastolic",
        "Arterial Blood Pressure diastolic",
    ),
    ("map", "mean arterial pressure", "mean bp"): (
        "Non Invasive Blood Pressure mean",
        "Arterial Blood Pressure mean",
    ),
    ("spo2", "sao2", "o2 sat", "o2 saturation", "oxygen saturation", "sat", "sats", "pulse ox"): (
        "O2 saturation pulseoxymetry",
    ),
    ("rr", "resp rate", "respiratory rate", "breathing rate"): ("Respiratory Rate",),
    ("temp", "temperature", "t"): ("Temperature Fahrenheit", "Temperature Celsius", "Temperature"),
    ("wt", "weight", "body weight"): (
        "Daily Weight",
        "Admission Weight (Kg)",
        "Weight (Lbs)",
        "Weight",
    ),
    ("ht", "height"): ("Height (cm)", "Height (Inches)", "Height"),
    ("bmi", "body mass index"): ("BMI (kg/m2)", "BMI"),
    ("egfr",): ("eGFR",),
}


def normalize(text: str) -> str:
    """Lower-case, punctuation to spaces, collapsed: 'INR(PT)' -> 'inr pt'."""
    return " ".join(re.sub(r"[^0-9a-z%+]+", " ", text.lower()).split())


def _index(table: dict[tuple[str, ...], tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for keys, labels in table.items():
        for key in keys:
            out[normalize(key)] = out.get(normalize(key), ()) + labels
    return out


SYNONYMS: dict[str, tuple[str, ...]] = _index({**_LAB_SYNONYMS})
for _k, _v in _index(_VITAL_SYNONYMS).items():
    SYNONYMS[_k] = SYNONYMS.get(_k, ()) + _v


@dataclass(frozen=True)
class LabelMatch:
    """Which of the patient's labels a query means, and how it was decided."""

    labels: tuple[str, ...]
    how: str  # "exact" | "synonym" | "fuzzy" | "none"
    closest: tuple[str, ...] = ()

    @property
    def matched(self) -> bool:
        return bool(self.labels)


def similarity(a: str, b: str) -> float:
    """Max of difflib ratio and token-set equality on normalized strings."""
    na, nb = normalize(a), normalize(b)
    if not na or not nb:
        return 0.0
    if set(na.split()) == set(nb.split()):
        return 1.0
    return difflib.SequenceMatcher(None, na, nb).ratio()


def match_label(query: str, available: Iterable[str]) -> LabelMatch:
    """Match ``query`` against the labels the patient has (case-insensitive)."""
    labels = sorted({a for a in available if a})
    by_norm: dict[str, list[str]] = {}
    for label in labels:
        by_norm.setdefault(normalize(label), []).append(label)
    q = normalize(query)
    if q in by_norm:
        return LabelMatch(tuple(by_norm[q]), "exact")
    wanted = {normalize(s) for s in SYNONYMS.get(q, ())}
    hits = [lab for lab in labels if normalize(lab) in wanted]
    if hits:
        return LabelMatch(tuple(hits), "synonym")
    scored = sorted(((similarity(query, lab), lab) for lab in labels), key=lambda x: (-x[0], x[1]))
    fuzzy = [lab for score, lab in scored if score >= FUZZY_THRESHOLD]
    if fuzzy and len(q) >= 3:
        return LabelMatch(tuple(fuzzy), "fuzzy")
    contains = [lab for lab in labels if q and q in normalize(lab)]
    closest = list(dict.fromkeys(contains[:3] + [lab for _, lab in scored[:5]]))[:5]
    return LabelMatch((), "none", tuple(closest))
