"""The grounding check's sanity anchors, over the sessions the builder makes (not fixed numbers):
gold answers replayed through the gold tool calls are grounded, all of them, on the sample (EN,
ZH; full and JSON renderings) and on sessions built from the MIMIC-IV demo;
an agent that changes the numbers of those answers (``physassist/perturbed``) scores low with
its contradictions listed."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import fixtures_grounding as fg
import fixtures_store as fx
import pytest

from generation.builder import build_sessions
from physassist.agents.perturbed import perturb
from physassist.data import Session, load_sessions
from physassist.ehr.store import EHRStore, open_store
from physassist.grounding import Grounding, Verdict
from physassist.grounding.session import Turn

store_cache = fx.store_cache
demo_store = fx.demo_store


@pytest.fixture(scope="module")
def sample_store(store_cache) -> EHRStore:
    return open_store("sample", cache_dir=store_cache)


def misses(
    results: list[tuple[Session, Turn, Grounding]],
    excused: Callable[[Turn, Verdict], bool] = lambda turn, verdict: False,
) -> tuple[int, list[str], list[str]]:
    """Facts stated, the misses ``excused`` explains and the others (each with where): a gold
    answer has none to excuse in the full and JSON renderings (the criteria it states, targets
    and guideline bands, are not judged: ``physassist.grounding.criteria``)."""
    facts, explained, other = 0, [], []
    for session, turn, g in results:
        facts += g.facts
        for v in g.verdicts:
            if v.status != "grounded":
                (explained if excused(turn, v) else other).append(
                    f"{session.id} T{turn.turn}: {v.reason()}"
                )
    return facts, explained, other


@pytest.mark.parametrize("language", ["en", "zh"])
@pytest.mark.parametrize("mode", ["full", "json"])
def test_gold_answers_on_the_sample_are_grounded(sample_store, language, mode) -> None:
    sessions = load_sessions("sample", language=language).sessions
    facts, explained, other = misses(fg.grounded(sessions, sample_store, language, mode=mode))
    assert facts >= 300
    assert other == [] and explained == [], "\n".join(other)


def test_gold_answers_rendered_compat_miss_only_the_times_compat_does_not_print(
    sample_store,
) -> None:
    """``ehr.render=compat`` prints days, not minutes, a simulated order without its content
    (its date, its dose) and 15 entries of a listing: an answer's "2157-07-02 05:36" or the
    "81 mg" of the order it wrote is then unsupported, never contradicted (a listing cut short
    contradicts nothing: what it hides may hold the value); everything else is grounded as in
    full."""

    def compat_hides(turn: Turn, v: Verdict) -> bool:
        writes = any(c.name.endswith(".create") for c in turn.calls)
        minute = v.fact.kind == "date" and " " in str(v.fact.value)
        return v.status == "unsupported" and (minute or writes)

    sessions = load_sessions("sample").sessions
    facts, explained, other = misses(
        fg.grounded(sessions, sample_store, "en", mode="compat"), compat_hides
    )
    assert other == [], "\n".join(other)
    assert len(explained) > 10  # the sample's answers do give minutes


def test_the_perturbing_agent_scores_low_with_its_contradictions_listed(sample_store) -> None:
    sessions = load_sessions("sample").sessions
    results = fg.grounded(
        sessions, sample_store, "en", answer=lambda s, t, lang: perturb(s.gold_answer(t, lang))
    )
    counts = Counter(v.status for _, _, g in results for v in g.verdicts)
    facts = sum(counts.values())
    assert counts["grounded"] / facts < 0.25, counts
    assert counts["contradicted"] / facts > 0.5, counts
    contradicted = [v for _, _, g in results for v in g.verdicts if v.status == "contradicted"]
    assert all(
        v.seen and v.evidence is not None and v.evidence.line is not None for v in contradicted
    )
    kinds = Counter(v.fact.kind for v in contradicted)
    assert kinds["value"] and kinds["count"] and kinds["date"], kinds


@pytest.mark.slow
def test_gold_answers_on_demo_built_sessions_are_grounded(demo_store, tmp_path) -> None:
    build_sessions(demo_store, tmp_path, sessions_per_slot=3, seed=1)
    for language in ("en", "zh"):
        sessions = load_sessions(str(tmp_path), language=language).sessions
        assert len(sessions) >= 20
        facts, explained, other = misses(fg.grounded(sessions, demo_store, language))
        assert facts >= 200
        assert other == [] and explained == [], "\n".join(other)
