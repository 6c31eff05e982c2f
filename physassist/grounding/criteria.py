"""Criteria: numbers an answer states as what a value is judged against, not as what the record
holds: a target, goal, threshold, limit or guideline band ("below the 2-3 target", "6.5% or
more", "goal < 7%", "the labelled limit (20 mg with amiodarone, 10 mg with diltiazem)"), and a
condition still to be met ("until the INR has been 2 or more for 24 hours"); in Chinese alike
("低于 2-3 的目标范围", "6.5% 及以上", "直到 INR 连续 24 小时 ≥ 2"). A drug label's maximum ("the
labelled maximum is 1400 mg a day", "说明书每日上限为 1400 mg") is such a limit. So, not judged
alike, is an estimated creatinine clearance ("a creatinine clearance of about 50 mL/min
(Cockcroft-Gault)", "CrCl 50", "肌酐清除率约 50 mL/min"): an estimate the answer computes to pick
a label's band, not a value the record holds; its inputs are judged where stated (the creatinine),
but the weight it needs is often not among what the assistant received and the formula's
choices (actual or ideal weight, which creatinine, rounding) differ between correct answers,
so recomputing it would fail right answers or endorse one convention. The window a trend is
told over ("rising over the last 2 days", "近2天回升") is the span a change is judged over, not
a count of the record. No fact of an answer is judged
inside one (``physassist.grounding.answer_facts``); the record value the same sentence states
("The latest INR is 1.7 (below the 2-3 target)") still is. A reference range the tools print
("[ref 0.9 - 1.1]") is not a criterion here: it is in the record and judged as such.
"""

from __future__ import annotations

import re

__all__ = ["criteria", "outside"]

#: A number or a range of two, with the unit or word written right after it ("2-3", "6.5%",
#: "20 mg", "24 小时").
_NUM = (
    r"\d+(?:\.\d+)?(?:\s*(?:-|–|to|至|到)\s*\d+(?:\.\d+)?)?"
    r"(?:\s*(?:%|[a-zA-Zµμ]+(?:/[a-zA-Z0-9]+)?|小时|天|分))?"
)
_PAREN = r"(?:\([^()]*\)|（[^（）]*）)"
#: The rest of a clause, a bracket and a decimal point inside it included.
_CLAUSE_REST = r"(?:[^,.;()（）\n，。；]|\.(?=\d)|" + _PAREN + r")*"
_NOUN_EN = r"(?:targets?|goals?|thresholds?|cut-?offs?|limits?|range)"
_NOUN_ZH = r"(?:目标范围|治疗范围|目标|阈值|界值|限量|上限|下限|范围|最大日?剂量)"
#: A label's dose limit: "labelled maximum", "maximum daily dose", "dose limit".
_MAXIMUM_EN = (
    r"(?:label(?:l)?ed\s+(?:daily\s+)?(?:maximum|max|limit)|max(?:imum)?\s+(?:daily\s+)?dose|"
    r"dose\s+limit)"
)
#: An estimated creatinine clearance and the words it is written with.
_CLEARANCE = (
    r"\b(?:(?:estimated|calculated|a)\s+)?(?:creatinine\s+clearance|CrCl|eCrCl)"
    r"(?:\s*\((?:CrCl|Cockcroft-Gault)\))?(?:\s+(?:of|is|was|at|by\s+Cockcroft-Gault))*"
    r"[\s,:=]*(?:about|approximately|approx\.?|around|roughly|~|≈)?\s*"
)
_CLEARANCE_ZH = (
    r"(?:估算的?|计算的?)?肌酐清除率(?:（Cockcroft-Gault）)?[\s：:]*(?:约|大约|为|是)*\s*"
)
_PATTERNS = (
    # "below the 2-3 target", "at least 5 days", "< 7%", "≥ 2"
    r"\b(?:below|above|under|less than|more than|greater than|fewer than|at least|at most|"
    r"no more than|no less than|exceeds?|exceeding)\s+(?:the\s+|a\s+)?" + _NUM,
    r"(?:(?<![-=])[<>]=?|[≤≥]|低于|高于|超过|大于|小于|不足|不低于|不高于|至少)\s*" + _NUM,
    # "6.5% or more", "2 or above", "6.5% 及以上"
    _NUM + r"\s*(?:or|and)\s+(?:more|above|higher|greater|over|less|below|lower|under)\b"
    r"(?:\s+for\s+" + _NUM + r")?",
    _NUM + r"\s*(?:及以上|及以下|或以上|或以下|以上|以下|或更高|或更低)",
    # "the 2-3 target", "2-3 的目标范围"; "target 2-3", "range, 5.7-6.4%", "范围（5.7-6.4%"
    _NUM + r"\s+" + _NOUN_EN + r"\b",
    _NUM + r"\s*的?\s*" + _NOUN_ZH,
    r"\b(?:therapeutic\s+|target\s+)?" + _NOUN_EN + r"(?:\s+(?:of|is|at))?[\s,:=]*" + _NUM,
    _NOUN_ZH + r"[\s：:为是（(]*" + _NUM,
    # a label's maximum ("the labelled maximum is 1400 mg"); an estimated clearance
    r"\b" + _MAXIMUM_EN + r"(?:\s+(?:of|is|at))?[\s,:=]*" + _NUM,
    _CLEARANCE + _NUM,
    _CLEARANCE_ZH + _NUM,
    # the window a trend is told over: "over the last 2 days", "近2天"
    r"\bover\s+the\s+(?:last|past)\s+" + _NUM,
    r"(?:近|最近|过去)\s*\d+\s*(?:天|日|小时)",
    # a criterion's own list: "the labelled limit (20 mg with amiodarone, 10 mg with ...)"
    r"\b" + _NOUN_EN + r"\s*" + _PAREN,
    _NOUN_ZH + r"\s*" + _PAREN,
    # a condition still to be met, to the end of its clause (a bracket inside it included)
    r"\b(?:until|once the)\b" + _CLAUSE_REST,
    r"(?:直到|(?<!等)待)" + _CLAUSE_REST,
)
_CRITERION = re.compile("|".join(f"(?:{p})" for p in _PATTERNS), re.IGNORECASE)


def criteria(text: str) -> list[tuple[int, int]]:
    """The spans of ``text`` that state criteria (see the module docstring)."""
    return [(m.start(), m.end()) for m in _CRITERION.finditer(text) if m.end() > m.start()]


def outside(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """``text[start:end]`` overlaps none of ``spans``."""
    return not any(start < b and a < end for a, b in spans)
