"""Deterministic patient interview replayed from the gold trajectory (``patient=replay``).

Every patient-tool reply of the session's gold trajectory (all turns;
``Session.gold_patient_answers``, from ``answer_list_zh`` for ZH) is indexed by ``(tool,
normalised drug/query argument)``. A call is answered with the recorded reply whose key
matches:

1. the same tool and the same normalised argument, else
2. the same tool and an argument that contains the other's words (``"apixaban"`` vs
   ``"apixaban 5 mg"``), or for ``query`` shares a content word, else
3. when the call has no ``drug``/``query`` argument (a general question), or the gold calls
   of that tool had none (social history, functional status, pain): the tool's first
   recorded reply.

Otherwise it is a **miss**, answered by the miss policy:

* ``unknown`` (default): a fixed "I don't know / can't say" reply in the session language;
  the patient never volunteers anything the trajectory does not record.
* ``same_tool``: the first recorded reply of the same tool regardless of the argument
  (close to the reference's replay, which ignores arguments); ``unknown`` if the tool was
  never used in the gold trajectory.

The literacy variant is ``patient_responses_all_literacy[literacy]`` when recorded, else
``patient_response``. No LLM, no side effects: answering never changes later answers.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from physassist.options import check

from .texts import miss_answer

ARGUMENT_KEYS = ("drug", "query")
_STOPWORDS = frozenset(
    (
        "a an and any are about do does for have how in is it of on or the to what when with "
        "your you"
    ).split()
)


def normalise(value: Any) -> str:
    """Lower-case, NFKC, punctuation to spaces, collapsed whitespace."""
    if value is None:
        return ""
    text = unicodedata.normalize("NFKC", str(value)).lower()
    text = re.sub(r"[^\w\u4e00-\u9fff]+", " ", text)
    return " ".join(text.split())


def _argument(arguments: dict[str, Any]) -> tuple[str | None, str]:
    for key in ARGUMENT_KEYS:
        if arguments.get(key) not in (None, ""):
            return key, normalise(arguments[key])
    return None, ""


def _words(text: str) -> set[str]:
    if re.search(r"[\u4e00-\u9fff]", text):  # Chinese: compare characters bigrams
        chars = text.replace(" ", "")
        return {chars[i : i + 2] for i in range(len(chars) - 1)} or {chars}
    return {w for w in text.split() if w not in _STOPWORDS and len(w) > 2}


class ReplayPatient:
    """``PatientResponder`` replaying the gold patient replies of one session."""

    def __init__(
        self,
        replies: list[dict[str, Any]],
        *,
        language: str = "en",
        literacy: str = "high",
        miss: str = "unknown",
    ) -> None:
        """``replies``: ``Session.gold_patient_answers(language)`` items
        (``tool``, ``arguments``, ``patient_response``, ``variants``)."""
        self.language = language
        self.literacy = check("literacy", literacy)
        self.miss = check("patient_miss", miss)
        # tool -> list of (argument key, normalised argument, reply), in trajectory order
        self._replies: dict[str, list[tuple[str | None, str, str]]] = {}
        for item in replies:
            key, value = _argument(item.get("arguments") or {})
            reply = self._variant(item)
            self._replies.setdefault(str(item["tool"]), []).append((key, value, reply))

    def _variant(self, item: dict[str, Any]) -> str:
        variants = item.get("variants") or {}
        text = variants.get(self.literacy) if isinstance(variants, dict) else None
        return str(text if text else item.get("patient_response") or "")

    def lookup(self, tool: str, arguments: dict[str, Any]) -> tuple[str | None, str]:
        """``(reply or None, how)`` where ``how`` is exact|overlap|tool|miss."""
        recorded = self._replies.get(tool, [])
        key, value = _argument(arguments)
        for _, gold_value, reply in recorded:
            if gold_value == value:
                return reply, "exact"
        if value:
            mine = _words(value)
            for gold_key, gold_value, reply in recorded:
                theirs = _words(gold_value)
                if not theirs:
                    continue
                contained = theirs <= mine or mine <= theirs
                shared = bool(mine & theirs) and (gold_key or key) == "query"
                if contained or shared:
                    return reply, "overlap"
        if recorded and (key is None or all(gk is None for gk, _, _ in recorded)):
            return recorded[0][2], "tool"
        return None, "miss"

    def respond(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        reply, how = self.lookup(tool, arguments)
        if reply is None and self.miss == "same_tool" and self._replies.get(tool):
            reply, how = self._replies[tool][0][2], "same_tool"
        if reply is None:
            reply = miss_answer(self.language)
        return {"patient_response": reply, "_replay": how}
