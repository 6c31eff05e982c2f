"""frozen_heap: what is alive is frozen and the young generation larger during an eval, and
both are undone afterwards (also when the eval raises)."""

import gc

import pytest

from physassist.gc_freeze import YOUNG_THRESHOLD, frozen_heap


def test_freezes_during_and_restores_after() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    kept = [object() for _ in range(10)]  # noqa: F841  alive when the eval starts
    with frozen_heap():
        assert gc.get_freeze_count() > frozen_before
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_restores_when_the_body_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("eval failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
