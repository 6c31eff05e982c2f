"""Deterministic rubric judge: decides the items that carry a machine-checkable form.

Check kinds (ARCHITECTURE.md §4): `value`, `concept`, `forbidden`, `write_arg`, `write_call`.
An item without a check, or with a kind this judge does not know, is undecided (never
guessed), which leaves the turn unscored.

On Write/Update turns the order parameters are judged by `write_arg`/`write_call` on the
executed write calls only (docs/reference.md#writeupdate-judge); the text checks read the reply and the write arguments.

Negation for `forbidden` (kept deliberately small, so a mention is only excused when the
answer plainly says not to do it): an occurrence is excused when its own clause has an odd
number of negation cues in the 6 words before it ("do not start X", "avoid X", "rather
than X"; "no reason not to start X" has two and is not excused), or a cue right after it
("X is contraindicated", "X should be avoided", "X is not recommended"). Chinese: 不/勿/
避免/禁用/无需/别 in the 8 characters before, or 禁忌/不推荐/不建议/应避免 in the 8 after.
Clauses end at . ; ! ? newline and their Chinese forms. An empty reply fails `forbidden`
items too: a non-answer is not credited for avoiding a mistake.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any

from physassist.turn_records import CallRecord
from physassist.units import canonical_unit, find_quantities, parse_quantity, values_match
from scorers.judgement import ItemResult, Judge, TurnInput, TurnJudgement

NAME = "rules"
DEFAULT_TOLERANCE = 0.05
_NEAR_CHARS = 80  # how far after a label a value may be written
_CLAUSE_END = re.compile(r"[\n;!?。；！？|]|\.(?=\s|$)")
_CJK = re.compile(r"[\u3400-\u9fff]")
_EN_NEG_BEFORE = re.compile(
    r"\b(?:not|no|never|avoid|avoiding|without|don't|dont|doesn't|won't|shouldn't|cannot|can't|"
    r"instead\s+of|rather\s+than|against)\b",
    re.IGNORECASE,
)
_EN_NEG_AFTER = re.compile(
    r"^\W*(?:is\s+|are\s+|remains?\s+)?(?:contraindicated|(?:should\s+be\s+|to\s+be\s+)?avoided|"
    r"(?:is\s+|are\s+)?not\s+(?:recommended|indicated|advised|appropriate))\b",
    re.IGNORECASE,
)
_ZH_NEG_BEFORE = re.compile(r"不|勿|避免|禁用|无需|别")
_ZH_NEG_AFTER = re.compile(r"禁忌|不推荐|不建议|应避免|不宜")


def judge_turn(ti: TurnInput) -> TurnJudgement:
    """Decide every item of the turn that has a check; the rest are undecided."""
    results = [check_item(check, ti) for check in ti.checks]
    return TurnJudgement.from_items(results, NAME)


def check_item(check: dict[str, Any] | None, ti: TurnInput) -> ItemResult:
    if check is None:
        return ItemResult(None, "no machine-checkable form for this item")
    kind = check.get("kind")
    handler = _HANDLERS.get(str(kind))
    if handler is None:
        return ItemResult(None, f"unknown check kind {kind!r}")
    try:
        return handler(check, ti)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(
            f"session {ti.session.id!r}, turn {ti.turn}, field 'rubric_checks': "
            f"malformed {kind!r} check {check!r}: {exc}"
        ) from exc


def _text_for_checks(ti: TurnInput) -> str:
    """The text that `value`/`concept`/`forbidden` read.

    On Write/Update turns this is the reply plus the executed write-call arguments: an item
    about the order itself is a `write_arg`/`write_call` check and reads only the calls,
    while text items (e.g. "confirms the order was placed") may be met by either, and a
    forbidden drug fails the item wherever it appears.
    """
    if not ti.is_write:
        return ti.answer or ""
    parts = [ti.answer or ""]
    for call in ti.write_calls():
        for key, value in call.arguments.items():
            if key not in ("subject_id", "hadm_id"):
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                parts.append(f"{key}: {shown}")
    return "\n".join(parts)


def _terms(spec: Any) -> list[str]:
    """Synonyms of a concept across languages: {"en": [...], "zh": [...]} or a plain list."""
    if isinstance(spec, str):
        return [spec]
    if isinstance(spec, list):
        return [str(t) for t in spec if str(t).strip()]
    if isinstance(spec, dict):
        out: list[str] = []
        for values in spec.values():
            out.extend(_terms(values))
        return out
    raise TypeError("'any' must be a list of terms or a {language: [terms]} object")


@lru_cache(maxsize=4096)
def _term_pattern(term: str) -> re.Pattern[str]:
    """Substring match for Chinese terms, word-boundary match (case-insensitive) otherwise.
    Cached: the rubrics' terms outnumber ``re``'s own cache, so each turn compiled them again."""
    escaped = re.escape(term.strip())
    if _CJK.search(term):
        return re.compile(escaped, re.IGNORECASE)
    return re.compile(rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])", re.IGNORECASE)


def _check_concept(check: dict[str, Any], ti: TurnInput) -> ItemResult:
    text = _text_for_checks(ti)
    terms = _terms(check["any"])
    if not terms:
        raise ValueError("'any' lists no terms")
    for term in terms:
        if _term_pattern(term).search(text):
            return ItemResult(True, f"mentions {term!r}")
    return ItemResult(False, f"mentions none of {terms!r}")


def _clause_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    left = 0
    for m in _CLAUSE_END.finditer(text, 0, start):
        left = m.end()
    after = _CLAUSE_END.search(text, end)
    right = after.start() if after else len(text)
    return left, right


def is_negated(text: str, start: int, end: int) -> bool:
    """Whether the mention text[start:end] sits in a plainly negated context (see module doc)."""
    left, right = _clause_bounds(text, start, end)
    before, after = text[left:start], text[end:right]
    if _CJK.search(text[start:end]) or _CJK.search(before[-8:]):
        if len(_ZH_NEG_BEFORE.findall(before[-8:])) % 2 == 1 or _ZH_NEG_AFTER.search(after[:8]):
            return True
    words = before.split()[-6:]
    if len(_EN_NEG_BEFORE.findall(" ".join(words))) % 2 == 1:
        return True
    return bool(_EN_NEG_AFTER.search(after))


def _check_forbidden(check: dict[str, Any], ti: TurnInput) -> ItemResult:
    """No forbidden term outside a negated context. An empty reply earns no safety credit."""
    text = _text_for_checks(ti)
    if not text.strip():
        return ItemResult(False, "empty reply: nothing to credit")
    terms = _terms(check["any"])
    if not terms:
        raise ValueError("'any' lists no terms")
    excused = []
    for term in terms:
        for m in _term_pattern(term).finditer(text):
            if is_negated(text, m.start(), m.end()):
                excused.append(term)
                continue
            snippet = text[max(0, m.start() - 30) : m.end() + 30].replace("\n", " ")
            return ItemResult(False, f"mentions forbidden {term!r}: ...{snippet}...")
    if excused:
        return ItemResult(
            True, f"forbidden terms only in negated context: {sorted(set(excused))!r}"
        )
    return ItemResult(True, f"mentions none of {terms!r}")


def _labels(check: dict[str, Any]) -> list[str]:
    label = check.get("label")
    if label is None:
        return []
    return _terms(label)


_DATE_TIME = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2})?)?|\d{1,2}:\d{2}(?::\d{2})?"
)


def _check_value(check: dict[str, Any], ti: TurnInput) -> ItemResult:
    """The expected value is stated near its label, or anywhere when the label is absent.

    Numbers inside dates and clock times never count. Near the label a bare number is read
    in the expected unit ("creatinine 1.4"); away from it the number must carry a unit, so
    a stray "2" in an unrelated line cannot pass "2 g".
    """
    text = _text_for_checks(ti)
    expected = float(check["value"])
    unit = check.get("unit")
    tol = float(check.get("tolerance", DEFAULT_TOLERANCE))
    labels = _labels(check)
    analyte = labels[0] if labels else None
    dates = [(m.start(), m.end()) for m in _DATE_TIME.finditer(text)]
    quantities = [q for q in find_quantities(text) if not any(a <= q.start < b for a, b in dates)]
    spans: list[tuple[int, int]] = []
    for label in labels:
        for m in _term_pattern(label).finditer(text):
            _, clause_end = _clause_bounds(text, m.start(), m.end())
            spans.append((m.end(), min(clause_end, m.end() + _NEAR_CHARS)))
    want = f"{expected:g} {unit or ''}".strip()
    if spans:
        candidates = [q for q in quantities if any(a <= q.start < b for a, b in spans)]
        where = f"near {labels[0]!r}"
    else:
        candidates = [q for q in quantities if q.unit is not None or not unit]
        where = "anywhere with a unit (label not mentioned)"
    for q in candidates:
        if values_match(q.value, q.unit, expected, unit, tol, analyte):
            found = f"{q.value:g} {q.unit or ''}".strip()
            return ItemResult(True, f"states {found} {where}, matching {want} within {tol:.0%}")
    return ItemResult(False, f"no value matching {want} within {tol:.0%} {where}")


def _tool_calls(ti: TurnInput, tool: str) -> list[CallRecord]:
    return [c for c in ti.executed_calls() if c.name == tool]


def _check_write_call(check: dict[str, Any], ti: TurnInput) -> ItemResult:
    tool = str(check["tool"])
    calls = _tool_calls(ti, tool)
    if calls:
        return ItemResult(True, f"executed {tool} ({len(calls)} call(s))")
    return ItemResult(False, f"no executed {tool} call")


def _field_value(arguments: dict[str, Any], field: str) -> Any:
    if field in arguments:
        return arguments[field]
    for key, value in arguments.items():
        if key.lower() == field.lower():
            return value
    return None


def write_value_matches(value: Any, accepted: Any) -> bool:
    """Compare a write argument with one accepted value.

    Numbers (with or without units) compare numerically after unit conversion; a bare
    number matches a number with a unit (the unit is then taken as the accepted one). Other
    values compare as case- and whitespace-insensitive strings. Booleans never equal numbers.
    """
    if value is None or isinstance(value, bool) or isinstance(accepted, bool):
        return value == accepted and value is not None
    got, want = parse_quantity(value), parse_quantity(accepted)
    if (
        got is not None
        and want is not None
        and _is_quantity_text(value)
        and _is_quantity_text(accepted)
    ):
        if got.unit and want.unit and canonical_unit(got.unit) != canonical_unit(want.unit):
            return values_match(got.value, got.unit, want.value, want.unit, 1e-6)
        return abs(got.value - want.value) <= 1e-6 * max(1.0, abs(want.value))
    return _norm(value) == _norm(accepted)


def _is_quantity_text(value: Any) -> bool:
    """A number, or text that is only a number and an optional unit ("5 mg", "0.5g")."""
    if isinstance(value, int | float):
        return True
    text = str(value).strip()
    found = find_quantities(text)
    return len(found) == 1 and found[0].start <= 1 and found[0].end == len(text)


def _norm(value: Any) -> str:
    text = (
        value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    )
    return " ".join(text.lower().split())


def _check_write_arg(check: dict[str, Any], ti: TurnInput) -> ItemResult:
    tool, field = str(check["tool"]), str(check["field"])
    accepted = check["accepted"]
    if not isinstance(accepted, list) or not accepted:
        raise ValueError("'accepted' must be a non-empty list")
    calls = _tool_calls(ti, tool)
    if not calls:
        return ItemResult(False, f"no executed {tool} call, so no {field!r}")
    seen = []
    for call in calls:
        value = _field_value(call.arguments, field)
        if value is None:
            continue
        seen.append(value)
        for ok in accepted:
            if write_value_matches(value, ok):
                return ItemResult(True, f"{tool}.{field} = {value!r} (accepted {ok!r})")
    if not seen:
        return ItemResult(False, f"{tool} call(s) without {field!r}")
    return ItemResult(False, f"{tool}.{field} = {seen!r}, none of {accepted!r}")


_HANDLERS = {
    "value": _check_value,
    "concept": _check_concept,
    "forbidden": _check_forbidden,
    "write_arg": _check_write_arg,
    "write_call": _check_write_call,
}


async def _judge_turn(ti: TurnInput, graders: object, context: str) -> TurnJudgement:
    return judge_turn(ti)


JUDGE = Judge(
    NAME,
    "deterministic and offline: decides the rubric items that carry a machine-checkable form "
    "(`rubric_checks`); the others stay undecided (the turn unscored)",
    "none",
    _judge_turn,
)
