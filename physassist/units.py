"""Numbers with units in free text, and conversion between clinically equivalent units.

The rules judge must accept "K 5.1 mEq/L" for a rubric value of 5.1 mmol/L and
"creatinine 124 µmol/L" for 1.4 mg/dL, in English and Chinese answers alike. This module
finds numbers (with an optional unit right after them) and converts a value from one unit
to another, using analyte-specific factors where the conversion depends on the analyte
(mg/dL <-> mmol/L needs a molar mass; mEq/L <-> mmol/L needs a valence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "Quantity",
    "canonical_unit",
    "convert",
    "find_quantities",
    "parse_quantity",
    "values_match",
]

# Spelling variants -> one canonical spelling. Keys are lower-cased with spaces removed.
_UNIT_ALIASES: dict[str, str] = {
    "mg/dl": "mg/dL",
    "mgdl": "mg/dL",
    "毫克/分升": "mg/dL",
    "g/dl": "g/dL",
    "克/分升": "g/dL",
    "g/l": "g/L",
    "克/升": "g/L",
    "mg/l": "mg/L",
    "mmol/l": "mmol/L",
    "毫摩尔/升": "mmol/L",
    "meq/l": "mEq/L",
    "毫当量/升": "mEq/L",
    "µmol/l": "umol/L",
    "μmol/l": "umol/L",
    "umol/l": "umol/L",
    "微摩尔/升": "umol/L",
    "k/ul": "10^9/L",
    "k/µl": "10^9/L",
    "k/μl": "10^9/L",
    "k/mm3": "10^9/L",
    "x10^3/ul": "10^9/L",
    "x10^3/µl": "10^9/L",
    "10^3/ul": "10^9/L",
    "10^3/µl": "10^9/L",
    "x10^9/l": "10^9/L",
    "×10^9/l": "10^9/L",
    "10^9/l": "10^9/L",
    "x10⁹/l": "10^9/L",
    "×10⁹/l": "10^9/L",
    "10⁹/l": "10^9/L",
    "g/l(hb)": "g/L",
    "m/ul": "10^12/L",
    "x10^6/ul": "10^12/L",
    "10^12/l": "10^12/L",
    "x10^12/l": "10^12/L",
    "×10^12/l": "10^12/L",
    "%": "%",
    "mg": "mg",
    "毫克": "mg",
    "g": "g",
    "克": "g",
    "mcg": "mcg",
    "µg": "mcg",
    "μg": "mcg",
    "ug": "mcg",
    "微克": "mcg",
    "units": "units",
    "unit": "units",
    "u": "units",
    "iu": "units",
    "单位": "units",
    "ml": "mL",
    "毫升": "mL",
    "l": "L",
    "mmhg": "mmHg",
    "bpm": "/min",
    "/min": "/min",
    "次/分": "/min",
    "°c": "degC",
    "℃": "degC",
    "°f": "degF",
    "kg": "kg",
    "公斤": "kg",
    "iu/l": "U/L",
    "u/l": "U/L",
    "ng/ml": "ng/mL",
    "ug/ml": "mcg/mL",
    "µg/ml": "mcg/mL",
    "μg/ml": "mcg/mL",
    "mcg/ml": "mcg/mL",
    "微克/毫升": "mcg/mL",
    "pg/ml": "pg/mL",
    "ml/min": "mL/min",
    "ml/min/1.73m2": "mL/min/1.73m2",
    "ml/min/1.73m²": "mL/min/1.73m2",
    "sec": "s",
    "s": "s",
    "seconds": "s",
    "秒": "s",
}

# Unit pattern tried right after a number: longest alternatives first so "mg/dL" wins over "mg".
_UNIT_RE = re.compile(
    "|".join(
        re.escape(alias).replace(r"\ ", r"\s?")
        for alias in sorted(_UNIT_ALIASES, key=len, reverse=True)
    ),
    re.IGNORECASE,
)

# Factor f such that value_in_to = value_in_from * f, independent of the analyte.
_GENERIC: dict[tuple[str, str], float] = {
    ("g/dL", "g/L"): 10.0,
    ("mg/dL", "mg/L"): 10.0,
    ("g", "mg"): 1000.0,
    ("mg", "mcg"): 1000.0,
    ("g", "mcg"): 1e6,
    ("L", "mL"): 1000.0,
    ("mcg/mL", "mg/L"): 1.0,  # drug levels: a vancomycin of 21.5 ug/mL is 21.5 mg/L
}

# Molar masses (g/mol) for mg/dL <-> mmol/L (and umol/L). Keys: lower-case analyte words.
_MOLAR_MASS: dict[str, float] = {
    "creatinine": 113.12,
    "肌酐": 113.12,
    "glucose": 180.16,
    "葡萄糖": 180.16,
    "血糖": 180.16,
    "urea nitrogen": 28.01,  # BUN is reported as nitrogen: 2 x 14.007
    "bun": 28.01,
    "尿素氮": 28.01,
    "bilirubin": 584.66,
    "胆红素": 584.66,
    "calcium": 40.08,
    "钙": 40.08,
    "magnesium": 24.305,
    "镁": 24.305,
    "phosphate": 30.97,
    "phosphorus": 30.97,
    "磷": 30.97,
    "uric acid": 168.11,
    "尿酸": 168.11,
    "lactate": 90.08,
    "乳酸": 90.08,
    "cholesterol": 386.65,
    "胆固醇": 386.65,
    "triglycerides": 885.7,
    "甘油三酯": 885.7,
}

# Valence for mEq/L <-> mmol/L.
_VALENCE: dict[str, int] = {
    "potassium": 1,
    "钾": 1,
    "sodium": 1,
    "钠": 1,
    "chloride": 1,
    "氯": 1,
    "bicarbonate": 1,
    "碳酸氢": 1,
    "co2": 1,
    "calcium": 2,
    "钙": 2,
    "magnesium": 2,
    "镁": 2,
}


@dataclass(frozen=True)
class Quantity:
    """A number found in text, with its canonical unit (None when no unit followed it)."""

    value: float
    unit: str | None
    start: int
    end: int


def canonical_unit(unit: str | None) -> str | None:
    """Canonical spelling of a unit, or the stripped input when it is unknown."""
    if unit is None:
        return None
    key = re.sub(r"\s+", "", unit).lower()
    if key == "":
        return None
    power = _POWER_RE.fullmatch(key)
    if power is not None:
        return _power_unit(power)
    return _UNIT_ALIASES.get(key, unit.strip())


# Count units written as a power of ten: "x10^9/L", "× 10⁹/L", "10*3/uL", "10^3/µL".
_POWER_RE = re.compile(
    r"(?:[x×*]\s?)?10\s?(?:\^|\*\*|\*)?\s?(?P<exp>9|3|12|6|⁹|³|¹²|⁶)\s?/\s?(?P<vol>l|µl|μl|ul|mm3)",
    re.IGNORECASE,
)


def _power_unit(m: re.Match[str]) -> str:
    exp = {"⁹": "9", "³": "3", "¹²": "12", "⁶": "6"}.get(m.group("exp"), m.group("exp"))
    per_ul = m.group("vol").lower() != "l"
    # per microlitre shifts the exponent by 6: 10^3/uL == 10^9/L.
    power = int(exp) + (6 if per_ul else 0)
    return f"10^{power}/L"


# A number: thousands groups ("12,000"), decimals with "." (or a Chinese full stop never).
_NUMBER_RE = re.compile(
    r"(?<![A-Za-z0-9_.])(?P<sign>[-−])?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
)


def find_quantities(text: str) -> list[Quantity]:
    """Every number in `text`, each with the unit written right after it (if any).

    A leading minus counts only when it is not glued to a previous digit, so dates like
    2209-05-22 yield 2209, 5, 22 rather than negative numbers.
    """
    out: list[Quantity] = []
    for m in _NUMBER_RE.finditer(text):
        if out and m.start() < out[-1].end:
            continue  # part of the previous quantity's unit ("x 10^9/L")
        raw = m.group("num").replace(",", "")
        value = float(raw)
        if m.group("sign"):
            before = text[: m.start()]
            if not before or not before[-1].isdigit():
                value = -value
        unit: str | None = None
        end = m.end()
        at = _skip_spaces(text, end)
        pm = _POWER_RE.match(text, at)
        um = pm or _UNIT_RE.match(text, at)
        if um is not None and _unit_boundary(text, um.end()):
            unit = _power_unit(pm) if pm is not None else canonical_unit(um.group(0))
            end = um.end()
        out.append(Quantity(value=value, unit=unit, start=m.start(), end=end))
    return out


def _skip_spaces(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\u00a0":
        pos += 1
    return pos


def _unit_boundary(text: str, pos: int) -> bool:
    """A unit must not run into a following Latin letter ("mg" in "mgs" is not a unit)."""
    return pos >= len(text) or not (text[pos].isascii() and text[pos].isalpha())


def parse_quantity(text: str | int | float) -> Quantity | None:
    """Parse a whole value such as "5 mg", 5, "2.5mg" or "0.5 g"; None if it holds no number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, int | float):
        return Quantity(float(text), None, 0, 0)
    found = find_quantities(str(text))
    return found[0] if found else None


# Abbreviations matched only as the whole analyte name ("K", not the k in "ketone").
_ABBREVIATIONS: dict[str, str] = {
    "k": "potassium",
    "k+": "potassium",
    "na": "sodium",
    "na+": "sodium",
    "cl": "chloride",
    "hco3": "bicarbonate",
    "ca": "calcium",
    "mg": "magnesium",
    "cr": "creatinine",
    "scr": "creatinine",
    "glu": "glucose",
    "tbili": "bilirubin",
}


def _analyte_factor(table: dict[str, float] | dict[str, int], analyte: str | None) -> float | None:
    """The table entry for an analyte name: whole abbreviations, else the longest contained key."""
    if not analyte:
        return None
    low = analyte.strip().lower()
    low = _ABBREVIATIONS.get(low, low)
    for key in sorted(table, key=len, reverse=True):
        if key in low:
            return float(table[key])
    return None


def convert(
    value: float, from_unit: str | None, to_unit: str | None, analyte: str | None = None
) -> float | None:
    """`value` expressed in `to_unit`, or None when the two units are not convertible.

    A missing unit on either side means "as stated": the value is returned unchanged, since
    clinicians routinely drop the unit after naming the analyte ("K 5.1").
    """
    src, dst = canonical_unit(from_unit), canonical_unit(to_unit)
    if src is None or dst is None or src == dst:
        return value
    if (src, dst) in _GENERIC:
        return value * _GENERIC[(src, dst)]
    if (dst, src) in _GENERIC:
        return value / _GENERIC[(dst, src)]
    # Molar: mg/dL -> mmol/L = value * 10 / M; umol/L = mmol/L * 1000.
    to_mmol = {"mmol/L": 1.0, "umol/L": 1e-3}
    mass = _analyte_factor(_MOLAR_MASS, analyte)
    valence = _analyte_factor(_VALENCE, analyte)
    mmol = _to_mmol_per_l(value, src, mass, valence, to_mmol)
    if mmol is None:
        return None
    return _from_mmol_per_l(mmol, dst, mass, valence, to_mmol)


def _to_mmol_per_l(
    value: float, unit: str, mass: float | None, valence: float | None, to_mmol: dict[str, float]
) -> float | None:
    if unit in to_mmol:
        return value * to_mmol[unit]
    if unit == "mEq/L" and valence:
        return value / valence
    if unit in ("mg/dL", "mg/L") and mass:
        per_l = value * (10.0 if unit == "mg/dL" else 1.0)  # mg/L
        return per_l / mass
    return None


def _from_mmol_per_l(
    mmol: float, unit: str, mass: float | None, valence: float | None, to_mmol: dict[str, float]
) -> float | None:
    if unit in to_mmol:
        return mmol / to_mmol[unit]
    if unit == "mEq/L" and valence:
        return mmol * valence
    if unit in ("mg/dL", "mg/L") and mass:
        per_l = mmol * mass
        return per_l / (10.0 if unit == "mg/dL" else 1.0)
    return None


def values_match(
    found: float,
    found_unit: str | None,
    expected: float,
    expected_unit: str | None,
    tolerance: float,
    analyte: str | None = None,
) -> bool:
    """True when `found` (in `found_unit`) equals `expected` within relative `tolerance`.

    When `expected` is 0 the tolerance is absolute.
    """
    converted = convert(found, found_unit, expected_unit, analyte)
    if converted is None:
        return False
    scale = abs(expected) if expected != 0 else 1.0
    return abs(converted - expected) <= tolerance * scale + 1e-12
