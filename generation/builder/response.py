"""Treatment-response turns (``abx_response``, ``treatment_effect``): a treatment's marker
before its first dose against the latest value, judged by the trend table in the direction the
treatment should move it (:data:`~.vocab.TREATMENTS`; antibiotics: the white count falls).

The first dose is the earliest dose the administration tool shows (eMAR or ICU); the baseline
is the last value drawn before it (at most :data:`~.signals.BASELINE_WITHIN` before), the
response the latest value drawn at least :data:`~.signals.EFFECT_AFTER` after it; suspect
values (artifacts) are left out. No dose count is stated: the compat tools do not show ICU
doses, so the answer says only when the treatment started.

A treatment that no longer runs at the session is asked as a finished course
(:mod:`.running`): given from its first to its last dose, nothing to continue. A latest value
drawn more than :data:`~.vocab.CURRENT_VALUE_HOURS` before the session's reference moment is
cited with its date, not as "now". A course whose last days move against its direction since
the first dose (:func:`.trends.recent_turn`: WBC 15.0 -> 11.3 -> 12.7 on vancomycin) is no
clear response, unless the marker was back in its reference range by then (neutrophils 82 %
before azithromycin, 63.3 then 68.7 %, all in range: a physician reads a wobble inside the
normal range as noise and the course as a response; :func:`.trends.normalised`). An antibiotic
is reviewed "against the culture results" only where a culture
was sent in the stay (not a C. difficile test, a PCR or a serology alone).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from physassist.timeline import ICU_KIND, dose_event

from . import facts as F
from .answers import (
    Digest,
    _lab_fact,
    _truncated,
    fmt,
    lab_name,
    lab_spoken,
    next_check,
    trend_points,
    trend_word,
)
from .profile import Profile
from .rubrics import Item, _item, concept, literal, trend_terms, value
from .signals import BASELINE_WITHIN, EFFECT_AFTER, treatment_of
from .trends import change, normalised, recent_turn
from .vocab import CURRENT_VALUE_HOURS, TRENDS, TrendRule
from .wording import say

#: ICU administration statuses that gave a dose (the strict tool's, as the timeline counts them).
_ICU_GIVEN = frozenset(status for status, kind in ICU_KIND.items() if kind == "given")


def _at(time: str) -> dt.datetime:
    return dt.datetime.fromisoformat(time[:19])


def _given(observation: Any) -> list[str]:
    """The times of the administrations the tool shows as given (eMAR dose event, ICU row)."""
    return [
        e.time
        for e in F.admin_events(observation)
        if e.time
        and (
            dose_event(e.event) == "given" or (e.event.startswith("ICU") and e.status in _ICU_GIVEN)
        )
    ]


def first_dose(observation: Any) -> str | None:
    """The earliest administration the tool shows as given."""
    times = _given(observation)
    return min(times, key=_at) if times else None


def last_dose(observation: Any) -> str | None:
    """The latest administration the tool shows as given (the end of a finished course)."""
    times = _given(observation)
    return max(times, key=_at) if times else None


def digest_response(d: Digest, obs: list[Any], prof: Profile) -> bool:
    """Fill a response digest (see the module rules); False when the chart did not measure
    one: no dose, no baseline before it, no value after it."""
    label = d.topic.lab or ""
    if _truncated(obs[0]):  # the tool's page holds only the newest doses: not the first one
        return False
    first, rule, treatment = first_dose(obs[0]), TRENDS.get(label), treatment_of(d.topic.drug or "")
    series = prof.timeline.lab(label) if prof.timeline is not None else None
    pts = F.lab_points(obs[1], label, series.itemids) if series is not None else []
    pts, _ = trend_points(pts, prof)
    if first is None or rule is None or treatment is None or not pts:
        return False
    found = baseline_and_last(pts, _at(first))
    if found is None:
        return False
    base, last = found
    d.trend_size = change(base.value, last.value, rule, last.low, last.high)
    d.trend = (
        "stable" if d.trend_size == "none" else "rising" if last.value > base.value else "falling"
    )
    expected = d.trend == treatment.expect
    if turned(pts, base, last, d.trend, expected, rule):
        d.trend_size, d.shape = "slight", "turned"
    tl = prof.timeline
    d.admin_last = F.minute(last_dose(obs[0]) or first)
    if tl is not None:
        d.dated = d.topic.done or _at(last.time) < tl.ref - dt.timedelta(hours=CURRENT_VALUE_HOURS)
        d.cultured = bool(tl.cultures)
    d.series = [_lab_fact(base, prof.context), _lab_fact(last, prof.context)]
    d.labs, d.anchor, d.admin_first = [d.series[1]], "baseline", F.minute(first)
    d.verdict = (
        "unclear" if d.trend_size != "clear" else "responding" if expected else "not_responding"
    )
    if d.topic.kind == "abx_response" and d.trend == "falling" and last.status == "low":
        d.verdict = "unclear"
    return True


def turned(
    points: list[Any], base: Any, last: Any, direction: str, expected: bool, rule: TrendRule
) -> bool:
    """Whether the course's last days move against its direction since ``base`` (no clear
    response), unless it moved the expected way back into the marker's reference range
    (:func:`.trends.normalised`): a wobble of normal values is no turn."""
    if expected and normalised(base, last):
        return False
    return recent_turn([p for p in points if p.time >= base.time], direction, rule)


def baseline_and_last(points: list[Any], first: dt.datetime) -> tuple[Any, Any] | None:
    """The value before the first dose and the latest value after it (module rules); the
    points (a tool's or the timeline's) are oldest first and carry datetime-like times."""

    def at(p: Any) -> dt.datetime:
        return p.time if isinstance(p.time, dt.datetime) else _at(p.time)

    before = [p for p in points if first - BASELINE_WITHIN <= at(p) <= first]
    if not before or not points or at(points[-1]) < first + EFFECT_AFTER:
        return None
    return before[-1], points[-1]


def answer_response(d: Digest, lang: str) -> str:
    base, last = d.series
    kind = "response" if d.topic.kind == "abx_response" else "effect"
    name = d.topic.name or d.topic.drug or ""
    values = {
        "drug_word": name,
        "Drug_word": name[:1].upper() + name[1:],
        "since": d.admin_first,
        "until": d.admin_last,
        "label": lab_name(last.label, lang),
        "first": fmt(base.value),
        "last": fmt(last.value),
        "last_time": last.time,
        "unit": last.unit,
        "trend_word": trend_word(d, lang),
        "next_check": next_check(d, lang),
        "lab": lab_spoken(last.label, lang),
    }
    opening = "done" if d.topic.done else "dated" if d.dated else "first"
    first = say(lang, f"answers.response.{opening}", **values)
    verdict = d.verdict
    if kind == "response" and verdict == "responding" and not d.cultured:
        verdict = "responding_uncultured"
    if d.topic.done:
        kind, verdict = f"{kind}_done", d.verdict
    second = say(lang, f"answers.{kind}.{verdict}", **values)
    return f"{first} {second}" if lang == "en" else f"{first}{second}"


def response_items(d: Digest) -> list[Item]:
    base, last = d.series
    lab, word = last.label, d.topic.drug or ""

    def vals(f: Any, lang: str) -> dict[str, Any]:
        return {"label": lab_name(lab, lang), "value": fmt(f.value), "unit": f.unit}

    tw = {lang: trend_word(d, lang) for lang in ("en", "zh")}
    items = [
        _item(
            "resp_drug_done" if d.topic.done else "resp_drug",
            literal(word, d.topic.name or word),
            {"drug_word": word},
        ),
        _item(
            "trend_baseline", value(lab, base.value, base.unit), vals(base, "en"), vals(base, "zh")
        ),
        _item("trend_last", value(lab, last.value, last.unit), vals(last, "en"), vals(last, "zh")),
        _item(
            "trend_dir",
            {"kind": "concept", "any": trend_terms(d)},
            {"label": lab, "trend_word": tw["en"]},
            {"label": lab_name(lab, "zh"), "trend_word": tw["zh"]},
        ),
    ]
    verdict_key = {
        "responding": "resp_verdict_yes",
        "not_responding": "resp_verdict_no",
        "unclear": "resp_verdict_unclear",
    }[d.verdict]
    items.append(_item(verdict_key, concept(d.verdict), {}))
    if d.topic.kind == "abx_response" and not d.topic.done:  # nothing to continue after it
        plan = "escalate" if d.verdict == "not_responding" else "continue"
        items.append(_item(f"resp_plan_{plan}", concept(plan), {}))
    return items
