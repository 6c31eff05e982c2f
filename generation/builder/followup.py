"""Which repeat labs a session may order, and when they fall: the one definition of a
*relevant* recheck and of its interval.

* **Relevant**: a recheck follows a value that still means something for the session's
  problem. It is not relevant when the value is stale (last drawn more than
  :data:`~.vocab.STALE_DAYS` days before the session's reference moment: the team stopped
  measuring it), when it is a drug level of a drug no longer ordered, when it is a kidney
  marker in end-stage renal disease (dialysis sets it), when it is an INR without a reason
  to follow it (no vitamin K antagonist in the admission, no coded liver failure: an INR of
  1.3 on rivaroxaban monitors nothing; :data:`~.vocab.LIVER_FAILURE_ICD_PREFIXES`), or, in a
  medication-safety session, when it is not one of its problem's labs: a signal's lab, or a
  lab that monitors a drug of the session (a treatment-response session's repeat follows its
  course, whatever the lab).
* **When**: after discharge, by why the lab is repeated (:data:`~.vocab.RECHECK_INTERVALS`):
  an INR during a warfarin bridge within days, on warfarin alone within the first week, a
  dialysed solute in end-stage renal disease with the next dialysis, anything else at the
  follow-up visit.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from .kinds import Topic
from .profile import Profile
from .signals import bridge_signals
from .vocab import (
    DIALYSIS_LABS,
    DRUG_LEVELS,
    RECHECK_INTERVALS,
    STALE_DAYS,
    UNSAFE_WHEN,
    RecheckInterval,
    drug_class_of,
)

INR = "INR(PT)"
#: Kidney markers dialysis sets in end-stage renal disease.
KIDNEY_MARKERS = ("Creatinine", "Urea Nitrogen")
#: Kinds whose topics are a session's problem (the signal or response it is built on).
PROBLEM_KINDS = frozenset(
    {
        "drug_lab_safety",
        "duplicate_therapy",
        "duplicate_class",
        "interaction",
        "anticoag_bridge",
        "abx_response",
        "treatment_effect",
    }
)


def problem_labs(signals: Iterable[Topic], drugs: Iterable[str]) -> frozenset[str]:
    """The labs of a session's problem: its signals' labs and the labs that monitor its drugs
    (their class, their level, the labs that make them unsafe)."""
    out: set[str] = set()
    for t in signals:
        out |= {lab for lab in (t.lab, t.lab2) if lab}
    for word in drugs:
        cls = drug_class_of(word)
        out |= set(cls.labs) if cls is not None else set()
        out |= {lv.lab for w, lv in DRUG_LEVELS.items() if w in word}
        out |= {lab for pats, lab, _, _ in UNSAFE_WHEN if any(p in word for p in pats)}
    return frozenset(out)


def relevant(prof: Profile, lab: str, problem: frozenset[str] | None = None) -> bool:
    """Whether a repeat of ``lab`` means something (see the module rules); ``problem`` holds
    the session's problem labs (:func:`problem_labs`), None for a scenario without one."""
    tl = prof.timeline
    series = tl.lab(lab) if tl is not None else None
    if tl is None or series is None:
        return False
    if series.latest.time < tl.ref - dt.timedelta(days=STALE_DAYS):
        return False
    level_of = [w for w, lv in DRUG_LEVELS.items() if lv.lab == lab]
    if level_of and not any(tl.current_orders(w) for w in level_of):
        return False
    if prof.context.esrd and lab in KIDNEY_MARKERS:
        return False
    ctx = prof.context
    if lab == INR and not (ctx.on_warfarin or ctx.off_warfarin or ctx.liver_failure):
        return False
    return problem is None or lab in problem


def reason(prof: Profile, lab: str) -> str:
    """Why ``lab`` is repeated after discharge: a key of :data:`~.vocab.RECHECK_INTERVALS`."""
    if lab == INR and prof.context.on_warfarin:
        return "inr_bridge" if bridge_signals(prof) else "inr_warfarin"
    if prof.context.esrd and lab in DIALYSIS_LABS:
        return "dialysis"
    return "follow_up"


def interval(topic: Topic) -> RecheckInterval:
    """The interval of a recheck topic (its ``when``; the follow-up visit without one)."""
    return RECHECK_INTERVALS[topic.when or "follow_up"]


__all__ = ["KIDNEY_MARKERS", "interval", "problem_labs", "reason", "relevant"]
