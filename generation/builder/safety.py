"""Medication-safety turns built from a chart's signals (:mod:`.signals`): their digest from the
gold observations, their answer and their rubric.

* ``drug_lab_safety``: hold (unsafe as ordered, a level above range), adjust (a renally cleared
  drug with impaired kidney function), raise (a level or an INR on warfarin below target) or
  continue;
* ``duplicate_therapy`` / ``duplicate_class``: two current orders of one drug or class;
* ``interaction``: two current drugs of a known interaction;
* ``anticoag_bridge``: warfarin bridged by a parenteral anticoagulant, judged by the INR.
"""

from __future__ import annotations

from typing import Any

from . import facts as F
from .answers import (
    Digest,
    MedFact,
    _lab_fact,
    _med_vars,
    fmt,
    lab_name,
    lab_spoken,
    next_check,
    order_fact,
)
from .profile import Profile
from .rubrics import Item, _item, _lab_items, concept, dose_item, forbidden, literal, value
from .signals import kidney_impaired, warfarin_order
from .vocab import (
    DRUG_LEVELS,
    DUPLICATE_CLASSES,
    INTERACTIONS,
    RENAL_DRUGS,
    WARFARIN,
    unsafe,
)
from .wording import say

#: Safety verdicts, most urgent first.
VERDICTS = ("hold", "adjust", "raise", "ok")


def verdict(d: Digest, prof: Profile) -> str:
    """What a drug's latest lab calls for (see the module rules)."""
    word, lab = d.topic.drug or "", d.labs[0]
    level = next((lv for w, lv in DRUG_LEVELS.items() if w in word and lv.lab == lab.label), None)
    if unsafe(word, lab.label, lab.value) or (level is not None and lab.value > level.high):
        return "hold"
    if lab.label == "Creatinine" and any(r in word for r in RENAL_DRUGS) and kidney_impaired(prof):
        return "adjust"
    if (level is not None and lab.value < level.low) or lab.said == "subtherapeutic":
        return "raise"
    return "ok"


def target(d: Digest) -> str:
    """The range a drug's lab aims at, for the answer ("10-20", "2-3")."""
    word, lab = d.topic.drug or "", d.labs[0]
    level = next((lv for w, lv in DRUG_LEVELS.items() if w in word and lv.lab == lab.label), None)
    if level is not None:
        return f"{fmt(level.low)}-{fmt(level.high)}"
    return "2-3" if WARFARIN in word else ""


def _current_facts(obs: Any, word: str, prof: Profile) -> list[MedFact]:
    """The current scheduled orders of ``word`` (the timeline's) as the tool shows them."""
    orders = (
        [o for o in prof.timeline.current_orders(word) if o.scheduled and o.word == word]
        if prof.timeline
        else []
    )
    facts = [order_fact(obs, o, word) for o in orders]
    return [f for f in facts if f is not None] if all(facts) else []


def _warfarin_fact(obs: Any, prof: Profile) -> list[MedFact]:
    """The warfarin a patient goes home on (signals.warfarin_order) as the tool shows it."""
    order = warfarin_order(prof.timeline) if prof.timeline is not None else None
    fact = order_fact(obs, order, WARFARIN) if order is not None else None
    return [fact] if fact is not None else []


def digest_signal(d: Digest, obs: list[Any], prof: Profile) -> bool:
    """Fill the digest of a duplicate, interaction or bridge turn; False when the tools do not
    show the orders the timeline calls current."""
    k, t = d.topic.kind, d.topic
    if k == "duplicate_therapy":
        d.meds = _current_facts(obs[0], t.drug or "", prof)
        return len(d.meds) >= 2
    first = (
        _warfarin_fact(obs[0], prof)
        if k == "anticoag_bridge"
        else _current_facts(obs[0], t.drug or "", prof)
    )
    second = _current_facts(obs[1], t.drug2 or "", prof)
    if len(first) != 1 or len(second) != 1:
        return False
    d.meds = first + second
    if k == "duplicate_class":
        d.rule = next(
            (
                c
                for c in DUPLICATE_CLASSES
                if any(w in (t.drug or "") for w in c.words)
                and any(w in (t.drug2 or "") for w in c.words)
            ),
            None,
        )
    elif k == "interaction":
        d.rule = next(
            (
                r
                for r in INTERACTIONS
                if any(x in (t.drug or "") for x in r.first)
                and any(x in (t.drug2 or "") for x in r.second)
            ),
            None,
        )
    else:  # anticoag_bridge
        return _bridge_inr(d, obs[2], prof)
    return d.rule is not None


def _bridge_inr(d: Digest, obs: Any, prof: Profile) -> bool:
    series = prof.timeline.lab(d.topic.lab or "") if prof.timeline is not None else None
    pts = F.lab_points(obs, d.topic.lab or "", series.itemids) if series is not None else []
    if not pts:
        return False
    d.labs = [_lab_fact(pts[-1], prof.context)]
    d.verdict = "continue" if d.labs[0].value < 2.0 else "stop"
    return True


def _order_line(m: MedFact, lang: str) -> str:
    return say(lang, "answers.med_bullet", **_med_vars(m))


def answer_signal(d: Digest, lang: str) -> str:
    """The gold answer of a duplicate, interaction or bridge turn."""
    k = d.topic.kind
    orders = "\n".join(_order_line(m, lang) for m in d.meds)
    drug = d.topic.name or d.topic.drug or ""
    words = {
        "drug": drug,
        "Drug": drug[:1].upper() + drug[1:],
        "drug2": d.topic.name2 or d.topic.drug2,
    }
    if k == "duplicate_therapy":
        tail = say(lang, "answers.duplicate.same", **words)
    elif k == "duplicate_class":
        tail = say(lang, "answers.duplicate.cls", cls=getattr(d.rule, lang), **words)
    elif k == "interaction":
        r = d.rule
        tail = say(
            lang,
            "answers.interaction",
            effect=r.en if lang == "en" else r.zh,
            action=r.action_en if lang == "en" else r.action_zh,
            **words,
        )
    else:
        lab = d.labs[0]
        tail = say(
            lang,
            f"answers.bridge.{d.verdict}",
            label=lab_name(lab.label, lang),
            value=fmt(lab.value),
            time=lab.time,
            status=say(lang, f"answers.status.{lab.said}"),
            **words,
        )
    return f"{orders}\n{tail}"


def signal_items(d: Digest) -> list[Item]:
    """The rubric of a duplicate, interaction or bridge turn."""
    k = d.topic.kind
    drug, drug2 = d.topic.drug or "", d.topic.drug2 or ""
    items = [dose_item(m) for m in d.meds[:2]]
    if k in ("duplicate_therapy", "duplicate_class"):
        vals = {"drug_word": drug, "drug2": drug2 or drug}
        items += [
            _item("dup_named", concept("duplicate"), vals),
            _item("dup_plan", concept("stop_one"), vals),
            _item("dup_not_ok", forbidden("no_duplicate"), vals),
        ]
        if k == "duplicate_therapy":
            items += [
                _item("med_start", literal(m.start), {"drug": m.word, "day": m.start})
                for m in d.meds[:2]
                if m.start
            ][:1]
        return items
    if k == "interaction":
        r = d.rule
        vals_en = {"drug_word": drug, "drug2": drug2, "effect": r.en}
        vals_zh = {"drug_word": drug, "drug2": drug2, "effect": r.zh}
        effect = {"kind": "concept", "any": {"en": list(r.en_syn), "zh": list(r.zh_syn)}}
        action = {"kind": "concept", "any": {"en": list(r.act_en), "zh": list(r.act_zh)}}
        return items + [
            _item("inter_effect", effect, vals_en, vals_zh),
            _item("inter_action", action, vals_en, vals_zh),
            _item("inter_not_safe", forbidden("no_interaction"), vals_en, vals_zh),
        ]
    vals = {"drug_word": drug, "drug2": drug2}
    items += _lab_items(d.labs[0], with_time=False)[:2]
    plan = "bridge_continue" if d.verdict == "continue" else "bridge_stop"
    return items + [_item(plan, concept(plan), vals)]


def answer_safety(d: Digest, lang: str) -> str:
    """The gold answer of a drug_lab_safety turn: the drug and its lab, then what to do."""
    values = safety_values(d, lang)
    first = say(lang, f"answers.safety.{d.verdict}", **values)
    rec = say(lang, f"answers.safety.{d.verdict}_rec", **values)
    return f"{first} {rec}" if lang == "en" else f"{first}{rec}"


def safety_values(d: Digest, lang: str) -> dict[str, Any]:
    """The template values of a drug_lab_safety answer."""
    assert d.med is not None
    lab = d.labs[0]
    return {
        **_med_vars(d.med),
        "label": lab_name(lab.label, lang),
        "value": fmt(lab.value),
        "lab_unit": lab.unit,
        "status": say(lang, f"answers.status.{lab.said}"),
        "lab": lab_spoken(lab.label, lang),
        "next_check": next_check(d, lang),
        "target": target(d),
    }


def safety_items(d: Digest) -> list[Item]:
    """The rubric of a drug_lab_safety turn by its verdict."""
    m, lab = d.med, d.labs[0]
    assert m is not None
    vals = {"drug_word": m.word, "dose": fmt(m.dose), "unit": m.unit}
    items = [_item("safety_drug", value(m.word, m.dose, m.unit), vals)]
    items += _lab_items(lab, with_time=False)
    recheck = _item(
        "rec_recheck",
        concept("recheck"),
        {"label": lab.label},
        {"label": lab_name(lab.label, "zh")},
    )
    if d.verdict == "hold":
        return items + [
            _item("safety_verdict_hold", concept("hold"), vals),
            _item("safety_not_ok", forbidden("unsafe_continue"), vals),
            recheck,
        ]
    if d.verdict in ("adjust", "raise"):
        return items + [_item(f"safety_verdict_{d.verdict}", concept(d.verdict), vals), recheck]
    return items + [
        _item("safety_verdict_ok", concept("continue"), vals),
        _item("safety_not_hold", forbidden("stop_words"), vals),
    ]


__all__ = [
    "VERDICTS",
    "answer_signal",
    "digest_signal",
    "safety_items",
    "answer_safety",
    "safety_values",
    "signal_items",
    "verdict",
]
