"""Deterministic patient answers from a patient health model (PHM).

`PHMResponder(phm, literacy, language).respond(tool, arguments)` answers the five patient
interview tools with our own templates, in English or Chinese and in three literacy registers
(low: plain words, no jargon or scores; medium: plain words with numbers; high: precise, with
medical terms, doses and frequencies). The same facts are behind every register.

Withheld information: with ``info_completeness == "critical_withheld"`` the patient hides a
critical non-adherence (a medication flagged ``withheld``) in general answers, and discloses it
only when `patient.get_medication_adherence` is asked about that drug by name. Once disclosed it
stays disclosed for this responder's lifetime. With ``partial`` the patient leaves out
secondary details (associated symptoms, other complaints, how often doses are missed) unless
asked specifically.
"""

from __future__ import annotations

import re
from typing import Any

from physassist.vocab import LANGUAGES, LITERACY_LEVELS, PATIENT_TOOLS

FREQ_WORDS = {
    "DAILY": ("once a day", "每天一次"), "Q24H": ("once a day", "每天一次"), "BID": ("twice a day", "每天两次"),
    "Q12H": ("twice a day", "每天两次"), "TID": ("three times a day", "每天三次"), "Q8H": ("three times a day", "每天三次"),
    "QHS": ("at bedtime", "每晚睡前"), "QPM": ("in the evening", "每天晚上"), "QACHS": ("with meals and at bedtime", "三餐和睡前"),
}
PAIN_WORDS = ("pain", "hurt", "ache", "sore", "痛", "疼")


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _sev_words(n: int, lang: str) -> str:
    if lang == "zh":
        return "很厉害" if n >= 7 else "挺难受的" if n >= 4 else "不算太重"
    return "really bad" if n >= 7 else "pretty bad" if n >= 4 else "not too bad"


def _times(n: int) -> str:
    return {1: "once", 2: "twice"}.get(n, f"{n} times")


def canonical_tool(name: str) -> str:
    """Accept dotted, API (``patient__x``) and bare (``get_x``) spellings of a patient tool."""
    n = str(name).strip().replace("__", ".")
    if not n.startswith("patient."):
        n = "patient." + n
    if n not in PATIENT_TOOLS:
        raise ValueError(f"unknown patient tool {name!r}; expected one of {', '.join(PATIENT_TOOLS)}")
    return n


class PHMResponder:
    """Answers `patient.*` tool calls from one subject's PHM (implements `PatientResponder`)."""

    def __init__(self, phm: dict[str, Any], literacy: str = "high", language: str = "en") -> None:
        if not isinstance(phm, dict) or not isinstance(phm.get("persona"), dict):
            raise ValueError("phm must be a patient health model dict with a 'persona' (see physassist.synth.phm)")
        if literacy not in LITERACY_LEVELS:
            raise ValueError(f"literacy must be one of {LITERACY_LEVELS}, got {literacy!r}")
        if language not in LANGUAGES:
            raise ValueError(f"language must be one of {LANGUAGES}, got {language!r}")
        self.phm = phm
        self.literacy = literacy
        self.language = language
        self.persona = phm["persona"]
        self.withholding = self.persona.get("info_completeness") == "critical_withheld"
        self.partial = self.persona.get("info_completeness") == "partial"
        self.revealed: set[str] = set()

    # -- public -------------------------------------------------------------------------
    def respond(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        name = canonical_tool(tool)
        args = arguments if isinstance(arguments, dict) else {}
        if name == "patient.get_medication_adherence":
            self._reveal(args.get("drug"))
        render = {
            "patient.get_symptom_history": lambda lit: self._symptoms(args.get("query"), lit),
            "patient.get_medication_adherence": lambda lit: self._adherence(args.get("drug"), lit),
            "patient.get_social_history": self._social,
            "patient.get_functional_status": self._functional,
            "patient.get_pain_assessment": self._pain,
        }[name]
        variants = {lit: render(lit) for lit in LITERACY_LEVELS}
        return {"patient_response": variants[self.literacy], "patient_responses_all_literacy": variants}

    # -- helpers ------------------------------------------------------------------------
    def _tx(self, d: dict[str, Any] | None) -> str:
        if not isinstance(d, dict):
            return ""
        return str(d.get(self.language) or d.get("en") or "")

    def _zh(self) -> bool:
        return self.language == "zh"

    def _worry(self, lit: str) -> str:
        level = self.persona.get("anxiety_level")
        if level == "high":
            return "我真的很担心是不是很严重。" if self._zh() else " I'm really scared this is something serious."
        if level == "medium" and lit != "low":
            return "我有点担心。" if self._zh() else " It worries me a bit."
        return ""

    def _find_med(self, drug: Any) -> dict[str, Any] | None:
        if not isinstance(drug, str) or not drug.strip():
            return None
        q = drug.strip().lower()
        q_words = set(re.findall(r"[a-z]+|[\u4e00-\u9fff]+", q))
        medications: list[dict[str, Any]] = self.phm.get("medications") or []
        for med in medications:
            names = [str(n).lower() for n in med.get("names") or []] + [str(med.get("drug", "")).lower()]
            names += [str((med.get("patient_term") or {}).get("zh", ""))]
            for n in names:
                if not n:
                    continue
                n_words = set(re.findall(r"[a-z]+|[\u4e00-\u9fff]+", n))
                if q == n or q in n or n in q or (q_words & n_words and len(q) >= 4):
                    return med
        return None

    def _reveal(self, drug: Any) -> None:
        med = self._find_med(drug)
        if med is not None and med.get("withheld"):
            self.revealed.add(str(med.get("code") or med.get("drug")))

    def _hidden(self, med: dict[str, Any]) -> bool:
        return bool(self.withholding and med.get("withheld") and str(med.get("code") or med.get("drug")) not in self.revealed)

    # -- symptom history ----------------------------------------------------------------
    def _match_symptoms(self, query: Any) -> list[dict[str, Any]]:
        symptoms = self.phm.get("symptoms") or []
        if not isinstance(query, str) or not query.strip():
            return []
        q = query.lower()
        return [s for s in symptoms if any(k.lower() in q for k in s.get("keywords") or [])]

    def _symptom_text(self, s: dict[str, Any], lit: str, detail: bool) -> str:
        zh = self._zh()
        term, plain = self._tx(s.get("term")), self._tx(s.get("plain"))
        onset, prov, qual = self._tx(s.get("onset")), self._tx(s.get("provocation")), self._tx(s.get("quality"))
        region, timing, assoc = self._tx(s.get("region")), self._tx(s.get("timing")), self._tx(s.get("associated"))
        sev = int(s.get("severity") or 0)
        if zh:
            if lit == "low":
                out = f"我{plain}，{onset}开始的，{_sev_words(sev, 'zh')}。{prov}。"
            elif lit == "medium":
                out = f"我{plain}，是{onset}开始的。{prov}。感觉{qual}，{region}。要打分的话大概{sev}分。{timing}。"
            else:
                out = (f"主要是{term}：{onset}开始的。{prov}。性质是{qual}，部位{region}。"
                       f"严重程度{sev}/10分。{timing}。")
            if detail:
                out += f"{assoc}。"
            return out
        if lit == "low":
            out = f"My problem is {plain}. It started {onset}. It's {_sev_words(sev, 'en')}. It's {prov}."
        elif lit == "medium":
            out = (f"I've been dealing with {plain}. It started {onset}. It's {prov}. How it feels: {qual}, {region}. "
                   f"I'd give it about a {sev} out of 10. {_cap(timing)}.")
        else:
            out = (f"My main problem is {term}. Onset was {onset}. It's {prov}. Character: {qual}; location: {region}. "
                   f"Severity about {sev}/10. {_cap(timing)}.")
        if detail:
            out += f" {_cap(assoc)}."
        return out

    def _symptoms(self, query: Any, lit: str) -> str:
        zh = self._zh()
        symptoms = self.phm.get("symptoms") or []
        if not symptoms:
            return "我没什么特别不舒服的。" if zh else "I don't really have any symptoms to report."
        asked = isinstance(query, str) and query.strip()
        matched = self._match_symptoms(query)
        if asked and not matched:
            pain = self.phm.get("pain") or {}
            if any(w in query.lower() for w in PAIN_WORDS) and pain.get("present"):
                return self._pain(lit)
            if zh:
                return {"low": "没有，我没觉得有这个。", "medium": "没有，我不觉得有这种情况。",
                        "high": f"没有，这个我没有注意到。我主要是{self._tx(symptoms[0].get('term'))}。"}[lit]
            return {"low": "No, I don't think I've had that.", "medium": "No, I haven't noticed anything like that.",
                    "high": f"No, I haven't noticed that. My main problem has been {self._tx(symptoms[0].get('term'))}."}[lit]
        if matched:  # a specific question gets every detail, partial or not
            return " ".join(self._symptom_text(s, lit, detail=True) for s in matched) + self._worry(lit)
        primary = next((s for s in symptoms if s.get("primary")), symptoms[0])
        text = self._symptom_text(primary, lit, detail=not self.partial)
        others = [s for s in symptoms if s is not primary]
        if others and not self.partial:
            names = [self._tx(s.get("term" if lit == "high" else "plain")) for s in others]
            text += (f"另外还有{'、'.join(names)}。" if zh else f" I've also been dealing with {' and '.join(names)}.")
        return text + self._worry(lit)

    # -- medication adherence -----------------------------------------------------------
    def _freq(self, med: dict[str, Any]) -> str:
        en, zh = FREQ_WORDS.get(str(med.get("frequency")), ("as prescribed", "按医嘱"))
        return zh if self._zh() else en

    def _one_med(self, med: dict[str, Any], lit: str, asked: bool) -> str:
        zh = self._zh()
        name = self._tx(med.get("patient_term")) if lit != "high" else str(med.get("drug"))
        dose = str(med.get("dose") or "")
        adherence = med.get("adherence", "good")
        reason = self._tx(med.get("reason"))
        if self._hidden(med) or adherence == "good":
            if zh:
                return {"low": f"{name}我每天都按时吃。", "medium": f"{name}我{self._freq(med)}，按时吃，没漏过。",
                        "high": f"{name} {dose}，{self._freq(med)}，我一直按医嘱服用，没有漏服。"}[lit]
            return {"low": f"I take my {name} every day like they told me.",
                    "medium": f"I take the {name} {self._freq(med)} and I don't miss it.",
                    "high": f"I take {name} {dose} {self._freq(med)} as prescribed and haven't missed doses."}[lit]
        confess = asked and med.get("withheld")
        if adherence == "sometimes_forgets":
            n = int(med.get("missed_per_week") or 0)
            if self.partial and not asked:
                return f"{name}我偶尔会忘。" if zh else f"I might miss the {name} now and then."
            if zh:
                return {"low": f"{name}我有时候会忘，{reason}。",
                        "medium": f"{name}我一周大概会漏{n}次，{reason}。",
                        "high": f"{name} {dose} {self._freq(med)}，每周大约漏服{n}次，{reason}。"}[lit]
            return {"low": f"Sometimes I forget the {name}; {reason}.",
                    "medium": f"I miss the {name} about {_times(n)} a week; {reason}.",
                    "high": f"With {name} {dose} {self._freq(med)}, I miss about {n} dose{'s' if n != 1 else ''} a week; {reason}."}[lit]
        if self.partial and not asked:
            return f"{name}我最近吃得不太规律。" if zh else f"I haven't been very regular with the {name} lately."
        if zh:
            lead = "说实话，之前没跟你说，" if confess else "老实说，"
            return {"low": f"{lead}{name}我没在吃，{reason}。",
                    "medium": f"{lead}{name}我没按时吃：{reason}。",
                    "high": f"{lead}{name} {dose}（应{self._freq(med)}）我没有在服用：{reason}。"}[lit]
        lead = "To be honest, I didn't mention it before, but " if confess else "Honestly, "
        return {"low": f"{lead}I haven't been taking the {name}: {reason}.",
                "medium": f"{lead}I haven't been taking the {name} like I should: {reason}.",
                "high": f"{lead}I haven't been taking {name} {dose} ({self._freq(med)} as prescribed): {reason}."}[lit]

    def _adherence(self, drug: Any, lit: str) -> str:
        zh = self._zh()
        meds = self.phm.get("medications") or []
        asked = isinstance(drug, str) and drug.strip()
        if asked:
            med = self._find_med(drug)
            if med is None:
                d = drug.strip()
                if zh:
                    return {"low": "这个药我好像没吃。", "medium": f"我没有在吃{d}，我的药里没有这个。",
                            "high": f"我没有在服用{d}，它不在我的用药清单上。"}[lit]
                return {"low": "I don't think I take that one.", "medium": f"I'm not taking {d}, as far as I know.",
                        "high": f"I'm not on {d}; it isn't one of my medications."}[lit]
            return self._one_med(med, lit, asked=True)
        if not meds:
            return "我平时不吃药。" if zh else "I don't take any regular medicines."
        shown = [m for m in meds if m.get("adherence") != "good" and not self._hidden(m)]
        names = [self._tx(m.get("patient_term")) if lit != "high" else str(m.get("drug")) for m in meds]
        if zh:
            head = {"low": f"我每天要吃好几种药，有{'、'.join(names[:3])}这些。",
                    "medium": f"我在吃{len(meds)}种药：{'、'.join(names)}。",
                    "high": f"我目前服用{len(meds)}种药：{'、'.join(names)}。"}[lit]
            tail = "大部分都按时吃。" if shown else "我都按时吃的。"
        else:
            head = {"low": f"I take a bunch of pills every day, like my {', '.join(names[:3])}.",
                    "medium": f"I take {len(meds)} medicines: {', '.join(names)}.",
                    "high": f"I'm on {len(meds)} medications: {', '.join(names)}."}[lit]
            tail = "I take most of them as I should." if shown else "I take them all as prescribed."
        out = f"{head}{'' if zh else ' '}{tail}"
        for m in shown:
            out += ("" if zh else " ") + self._one_med(m, lit, asked=False)
        return out

    # -- social history / function / pain ----------------------------------------------
    def _social(self, lit: str) -> str:
        s = self.phm.get("social_history") or {}
        zh = self._zh()
        parts = [self._tx(s.get("living")), self._tx(s.get("smoking")), self._tx(s.get("alcohol"))]
        if lit != "low":
            parts += [self._tx(s.get("drugs")), self._tx(s.get("support"))]
        if lit == "high":
            occ = self._tx(s.get("occupation"))
            parts.insert(1, f"职业是{occ}" if zh else f"I'm a {occ}" if not occ.startswith("retired") else f"I'm {occ}")
        parts = [p for p in parts if p]
        if zh:
            return "。".join(parts) + "。"
        return " ".join(_cap(p) + "." for p in parts)

    def _functional(self, lit: str) -> str:
        f = self.phm.get("functional_status") or {}
        zh = self._zh()
        parts = [self._tx(f.get("adl")), self._tx(f.get("mobility"))]
        if lit == "low":
            parts.append(self._tx(f.get("falls")))
        else:
            parts += [self._tx(f.get("iadl")), self._tx(f.get("exercise_tolerance")), self._tx(f.get("falls"))]
        parts = [p for p in parts if p]
        if zh:
            return "。".join(parts) + "。"
        if lit != "low" and f.get("exercise_tolerance"):
            tol = self._tx(f.get("exercise_tolerance"))
            parts = [p if p != tol else f"I can walk {tol}" for p in parts]
        return " ".join(_cap(p) + "." for p in parts)

    def _pain(self, lit: str) -> str:
        p = self.phm.get("pain") or {}
        zh = self._zh()
        if not p.get("present"):
            return {"low": "我不痛。", "medium": "我现在没有哪里痛。", "high": "目前没有疼痛，疼痛评分0分。"}[lit] if zh else \
                {"low": "No, nothing hurts.", "medium": "I don't have any pain right now.",
                 "high": "I have no pain at the moment, zero out of ten."}[lit]
        loc, qual, rad = self._tx(p.get("location")), self._tx(p.get("quality")), self._tx(p.get("radiation"))
        timing, relief, score = self._tx(p.get("timing")), self._tx(p.get("relief")), int(p.get("score") or 0)
        if zh:
            return {"low": f"疼的地方在{loc}，{_sev_words(score, 'zh')}。{timing}。",
                    "medium": f"疼的地方在{loc}，是{qual}，大概{score}分。{timing}，会{rad}。{relief}。",
                    "high": f"疼痛部位在{loc}，性质为{qual}，评分{score}/10，{rad}。{timing}。缓解方式：{relief}。"}[lit]
        return {"low": f"It hurts in the {loc}. It's {_sev_words(score, 'en')}. It's there {timing}.",
                "medium": f"The pain is in the {loc}. It's {qual}, about a {score} out of 10, and it goes {rad}. "
                          f"It's there {timing}. What helps: {relief}.",
                "high": f"Pain in the {loc}: {qual}, {score}/10, radiating {rad}. It's present {timing}. "
                        f"Relieving factors: {relief}."}[lit] + self._worry(lit)
