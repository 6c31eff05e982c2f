"""Suite order: each ``pytest -n`` worker starts with its share of the slow end-to-end tests.

xdist's load scheduling hands tests out in collection order, first a contiguous batch of a
quarter of each worker's share, then smaller ones. The slow tests (subprocess sweeps, real
``mlflow server`` runs, minutes each on a loaded 2-core machine) sat in late files, so they
started last and ran on alone after the fast tests were done. Here the slow tests are dealt,
longest first (as the last run measured them: pytest's cache), each to the worker with the fewest
seconds dealt so far, to the front of each worker's first batch; the fast tests fill the rest.
Batches stay contiguous, so a module's fixtures are still set up on one worker.
"""

from __future__ import annotations

import itertools
import os

import pytest

DURATIONS = "physassist/durations"  # pytest cache key: seconds per test id, from the last run
UNMEASURED = 60.0  # seconds assumed for a slow test the cache has not seen (a fresh clone: round-robin)
_measured: dict[str, float] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    cache = getattr(config, "cache", None)
    last = cache.get(DURATIONS, {}) if cache is not None else {}
    slow = sorted(
        (item for item in items if item.get_closest_marker("slow")), key=lambda item: -last.get(item.nodeid, 0.0)
    )
    fast = iter([item for item in items if not item.get_closest_marker("slow")])
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    first_batch = max(2, len(items) // workers // 4)  # xdist --dist load: the first batch per worker
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    dealt = [0.0] * workers
    for item in slow:
        w = dealt.index(min(dealt))
        shares[w].append(item)
        dealt[w] += last.get(item.nodeid, UNMEASURED)
    ordered: list[pytest.Item] = []
    for share in shares:
        ordered += share + list(itertools.islice(fast, max(0, first_batch - len(share))))
    items[:] = ordered + list(fast)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    cache = getattr(session.config, "cache", None)
    if cache is not None and _measured and not hasattr(session.config, "workerinput"):
        cache.set(DURATIONS, {**cache.get(DURATIONS, {}), **{k: round(v, 2) for k, v in _measured.items()}})
