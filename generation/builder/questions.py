"""Physician questions: explicit templates, then implicit rewrites by subtype.

Explicit questions are short and casual and never state a value. The implicit form of a
turn is a rewrite of the same variant:

* PE (predicate ellipsis): the bare fragment ("Creatinine?");
* NA (nominal anaphora): the entity named in an earlier turn becomes a pronoun or is
  dropped ("Is it trending down?"); only possible when the entity really is in an earlier turn;
* AE (abstract/event anaphora): "Given all this, ..." over at least two earlier turns; never
  on Information Lookup.

T0 and Write/Update turns stay explicit. A subtype is recorded only when the rewrite
changed the question (docs/generation.md#subtypes).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from physassist.vocab import LANGUAGES

from .answers import lab_spoken
from .arcs import IL, WU
from .topics import Topic
from .vocab import drug_class_of
from .wording import fill, lookup, variants

#: For NA: which entity each anaphoric form points back to. Topics naming a lab and a drug
#: have none: "what dose of it" after naming the potassium in the same question has two
#: referents.
_NA_FORMS: dict[str, tuple[tuple[str, str], ...]] = {
    "lab_latest": (("na", "lab"),),
    "med_current": (("na", "drug"),),
    "lab_pair": (("na", "lab"),),
    "med_and_admin": (("na", "drug"),),
    "lab_trend": (("na", "lab"),),
    "abx_response": (("na", "drug"),),
    "adherence_check": (("na", "drug"),),
    "admin_reliability": (("na", "drug"),),
}


#: The most question variants a kind has in one form (a variant index wraps around).
MAX_VARIANTS = 12


@dataclass(frozen=True)
class Question:
    explicit_en: str
    explicit_zh: str
    implicit_en: str
    implicit_zh: str
    subtype: str | None  # recorded only when the implicit text differs from the explicit one
    antecedent: str | None = None  # the earlier entity an NA rewrite points to


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def _values(topic: Topic, lang: str, gender: str) -> dict[str, str]:
    pron = lookup(lang, f"pronouns.{'F' if gender.upper().startswith('F') else 'M'}")
    vals = {"subj": pron["subj"], "pos": pron["pos"], "obj": pron["obj"]}
    if topic.lab:
        vals["lab"] = lab_spoken(topic.lab, lang)
        vals["Lab"] = _cap(vals["lab"])
    if topic.lab2:
        vals["lab2"] = lab_spoken(topic.lab2, lang)
    for key, drug in (("drug", topic.name or topic.drug), ("drug2", topic.name2 or topic.drug2)):
        if drug:
            # Chinese text sets a Latin drug name off with spaces ("她的 insulin 医嘱").
            vals[key] = drug if lang == "en" else f" {drug} "
            vals[key.capitalize()] = _cap(drug)
    return vals


def antecedents(previous: Topic | None) -> set[str]:
    """What an NA rewrite may point back to: the previous turn's entity when it named exactly
    one ("Recheck that one" after a turn about lactate and creatinine has no single referent)."""
    entities = set(previous.entities) if previous is not None else set()
    return entities if len(entities) == 1 else set()


def na_form(topic: Topic, prior_entities: set[str]) -> tuple[str, str] | None:
    """The NA template form usable for this topic and the entity it refers back to."""
    for form, attr in _NA_FORMS.get(topic.kind, ()):
        entity = getattr(topic, attr)
        if entity and entity in prior_entities and variants("en", topic.kind, form):
            return form, entity
    return None


def builds_on(previous: Topic | None, topic: Topic) -> bool:
    """Whether ``topic`` builds on the previous turn: it is about one of its entities, or a
    drug and the lab that monitors it ("In light of that" then links something)."""
    if previous is None:
        return False
    if set(previous.entities) & set(topic.entities):
        return True
    labs = {x for t in (previous, topic) for x in (t.lab, t.lab2) if x}
    drugs = [x for t in (previous, topic) for x in (t.drug, t.drug2) if x]
    return any(cls is not None and labs & set(cls.labs) for cls in map(drug_class_of, drugs))


def feasible_subtypes(
    topic: Topic, turn: int, prior_entities: set[str], linked: bool = True
) -> list[str]:
    """Subtypes whose rewrite is possible here, in SUBTYPES order; AE's connector ("Given all
    this, ...") only where the turn builds on the previous one (``linked``)."""
    if turn == 0 or topic.task_type == WU:
        return []
    out: list[str] = []
    if na_form(topic, prior_entities) is not None:
        out.append("NA")
    if variants("en", topic.kind, "pe"):
        out.append("PE")
    if turn >= 2 and linked and topic.task_type != IL and variants("en", topic.kind, "ae"):
        out.append("AE")
    return out


def choose_subtype(
    feasible: list[str], used: dict[str, int], rng: random.Random, turn: int | None = None
) -> str | None:
    """The least-used feasible subtype so far, counted at this turn position when ``turn`` is
    given (so NA is not crowded out at T1 by the PE-only turns), then overall; remaining
    ties are broken by the seeded generator."""
    if not feasible:
        return None

    def uses(s: str) -> tuple[int, int]:
        return (used.get(f"{s}@{turn}", 0) if turn is not None else 0, used.get(s, 0))

    low = min(uses(s) for s in feasible)
    return rng.choice([s for s in feasible if uses(s) == low])


def count_subtype(used: dict[str, int], subtype: str, turn: int) -> None:
    """Record one use of ``subtype`` at ``turn`` (overall and per position)."""
    for key in (subtype, f"{subtype}@{turn}"):
        used[key] = used.get(key, 0) + 1


def make_question(
    topic: Topic,
    subtype: str | None,
    variant: int,
    gender: str,
    prior_entities: set[str],
    at_discharge: bool = False,
) -> Question:
    """The explicit and implicit question of a turn in both languages; at the discharge date
    a kind's ``explicit_discharge`` variants, where it has them, speak of discharge (a repeat
    lab with its own reason, ``topic.when``, its ``explicit_<when>`` ones)."""
    texts: dict[tuple[str, str], str] = {}
    antecedent = None
    form = {"PE": "pe", "AE": "ae", None: "explicit"}.get(subtype, "explicit")
    if subtype == "NA":
        found = na_form(topic, prior_entities)
        if found is None:
            raise ValueError(f"NA rewrite of {topic.label()} needs an earlier-turn entity")
        form, antecedent = found
    # a finished treatment course is asked as one ("did the WBC respond to the course?")
    kind = f"{topic.kind}_done" if topic.done else topic.kind
    timed = next(
        (
            form_
            for form_ in (f"explicit_{topic.when}", "explicit_discharge")
            if at_discharge and variants("en", kind, form_)
        ),
        "explicit",
    )
    for lang in LANGUAGES:
        vals = _values(topic, lang, gender)
        explicit = variants(lang, kind, timed)
        implicit = explicit if form == "explicit" else variants(lang, kind, form)
        if not explicit or not implicit:
            raise ValueError(f"templates/{lang}.yaml: questions.{kind}.{form} is empty")
        texts[(lang, "explicit")] = fill(
            explicit[variant % len(explicit)], f"{lang}:questions.{kind}.explicit", **vals
        )
        texts[(lang, "implicit")] = fill(
            implicit[variant % len(implicit)], f"{lang}:questions.{kind}.{form}", **vals
        )
    changed = texts[("en", "implicit")] != texts[("en", "explicit")]
    return Question(
        texts[("en", "explicit")],
        texts[("zh", "explicit")],
        texts[("en", "implicit")],
        texts[("zh", "implicit")],
        subtype if (subtype and changed) else None,
        antecedent if (subtype == "NA" and changed) else None,
    )


def new_question(
    topic: Topic,
    turn: int,
    prior_entities: set[str],
    linked: bool,
    gender: str,
    used: dict[str, int],
    rng: random.Random,
    asked: set[str],
    at_discharge: bool = False,
) -> Question | None:
    """A question for the turn that was not asked before in the build (``asked`` holds the
    physician's English texts): the least-used feasible subtype first, then the others, then
    the explicit form; each from a seeded variant on. None when every one was asked."""
    feasible = feasible_subtypes(topic, turn, prior_entities, linked)
    first = choose_subtype(feasible, used, rng, turn)
    start = rng.randrange(MAX_VARIANTS)
    for subtype in dict.fromkeys([first, *feasible, None]):
        for offset in range(MAX_VARIANTS):
            q = make_question(topic, subtype, start + offset, gender, prior_entities, at_discharge)
            if q.implicit_en not in asked:
                return q
    return None
