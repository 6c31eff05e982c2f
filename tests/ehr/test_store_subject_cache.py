"""The store's in-memory subject cache: LRU by subject, bounded by a budget of rows."""

from __future__ import annotations

import pytest

from physassist.ehr.subject_cache import SubjectCache

LABS = ("labevents", ("itemid",))
ADM = ("admissions", ("hadm_id",))


def _rows(n: int) -> tuple[dict, ...]:
    return tuple({"i": i} for i in range(n))


def test_least_recently_used_subjects_go_first_when_over_the_row_budget() -> None:
    cache = SubjectCache(max_rows=10)
    cache.put(1, LABS, _rows(4))
    cache.put(2, LABS, _rows(4))
    assert cache.get(1, LABS) is not None  # 1 is now the most recent
    cache.put(3, LABS, _rows(4))  # 12 rows > 10: evicts 2, the least recent
    assert cache.subjects() == [1, 3]
    assert cache.get(2, LABS) is None
    assert len(cache) == 8


def test_the_current_subject_stays_even_when_alone_over_budget() -> None:
    cache = SubjectCache(max_rows=5)
    cache.put(1, LABS, _rows(3))
    cache.put(2, LABS, _rows(50))
    assert cache.subjects() == [2] and len(cache) == 50


def test_missing_lists_the_keys_not_cached_for_a_subject() -> None:
    cache = SubjectCache(max_rows=100)
    cache.put(1, LABS, _rows(1))
    assert cache.missing(1, [LABS, ADM]) == [ADM]
    assert cache.missing(2, [LABS, ADM]) == [LABS, ADM]


def test_replacing_a_key_counts_its_rows_once() -> None:
    cache = SubjectCache(max_rows=100)
    cache.put(1, LABS, _rows(5))
    cache.put(1, LABS, _rows(7))
    assert len(cache) == 7


def test_the_budget_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHYSASSIST_SUBJECT_CACHE_ROWS", "1234")
    assert SubjectCache().max_rows == 1234
