"""A turn's gold for every topic kind: its digest, answers and rubric.

The common kinds are read in :mod:`.answers` and :mod:`.rubrics`; the safety-signal kinds (and
the drug-lab verdict) in :mod:`.safety`, the treatment-response kinds in :mod:`.response`. Those
two build on the first two, so the kinds are dispatched here, above all four.
"""

from __future__ import annotations

from typing import Any

from . import answers, response, rubrics, safety
from .answers import RESPONSE_KINDS, SIGNAL_KINDS, Digest
from .kinds import Topic
from .profile import Profile
from .rubrics import Item


def digest(
    topic: Topic,
    observations: list[Any],
    prof: Profile,
    arguments: list[dict[str, Any]] | None = None,
) -> Digest | None:
    """Read the gold observations of one topic; None when they cannot support an answer."""
    k = topic.kind
    if k in SIGNAL_KINDS or k in RESPONSE_KINDS:
        new = answers.new_digest(topic, prof)
        read = safety.digest_signal if k in SIGNAL_KINDS else response.digest_response
        return new if read(new, observations, prof) else None
    d = answers.digest(topic, observations, prof, arguments)
    if d is not None and k == "drug_lab_safety":
        d.verdict = safety.verdict(d, prof)
    return d


def answer(d: Digest, lang: str) -> str:
    """The gold answer text of a digested topic in one language."""
    k = d.topic.kind
    if k == "drug_lab_safety":
        return safety.answer_safety(d, lang)
    if k in SIGNAL_KINDS:
        return safety.answer_signal(d, lang)
    if k in RESPONSE_KINDS:
        return response.answer_response(d, lang)
    return answers.answer(d, lang)


def rubric(d: Digest) -> list[Item]:
    """The rubric of a digested topic (sizes per task type as in the paper)."""
    k = d.topic.kind
    if k == "drug_lab_safety":
        return safety.safety_items(d)
    if k in SIGNAL_KINDS:
        return safety.signal_items(d)
    if k in RESPONSE_KINDS:
        return response.response_items(d)
    return rubrics.rubric(d)
