"""Suite order: each ``pytest -n`` worker starts with its share of the long tests, longest first.

xdist's load scheduling hands tests out in collection order, first a contiguous batch of a
quarter of each worker's share, then smaller ones. The long tests (subprocess sweeps, real
``mlflow server`` runs, minutes each on a loaded 2-core machine) sat in late files, so they
started last and ran on alone after the fast tests were done. Here the long tests (marked
``slow``, or measured at ``LONG`` seconds or more) are dealt, longest first, each to the worker
with the fewest seconds dealt so far, to the front of each worker's first batch; the fast tests
fill the rest. Batches stay contiguous, so a module's fixtures are still set up on one worker.

Seconds come from the last run (pytest's cache), else from ``durations.json`` beside this file
(a reference run's slow and long tests, so a fresh clone deals them by measure too, not round-robin:
two of the longest on one worker cost minutes); ``pytest -n 2 --save-durations`` rewrites it.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from shipped_conf import use_shipped_conf

#: The tests check conf/ as shipped; a user's own group files are not theirs to judge (issue 44).
SHIPPED_CONF = use_shipped_conf()
DURATIONS = "physassist/durations"  # pytest cache key: seconds per test id, from the last run
REFERENCE = Path(__file__).with_name("durations.json")  # seconds of the long tests, a reference run
LONG = 5.0  # seconds from which an unmarked test is dealt like a slow one
UNMEASURED = 60.0  # seconds assumed for a slow test never measured
_measured: dict[str, float] = {}
_slow: set[str] = set()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--save-durations",
        action="store_true",
        help=f"write the long tests' seconds to {REFERENCE.name}",
    )


def _seconds(config: pytest.Config) -> dict[str, float]:
    cache = getattr(config, "cache", None)
    reference = json.loads(REFERENCE.read_text()) if REFERENCE.is_file() else {}
    return {**reference, **(cache.get(DURATIONS, {}) if cache is not None else {})}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    last = _seconds(config)

    def seconds(item: pytest.Item) -> float:
        return last.get(item.nodeid, UNMEASURED if item.get_closest_marker("slow") else 0.0)

    long = sorted(
        (item for item in items if item.get_closest_marker("slow") or seconds(item) >= LONG),
        key=lambda item: -seconds(item),
    )
    dealt_first = set(long)
    fast = iter([item for item in items if item not in dealt_first])
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    first_batch = max(
        2, len(items) // workers // 4
    )  # xdist --dist load: the first batch per worker
    shares: list[list[pytest.Item]] = [[] for _ in range(workers)]
    dealt = [0.0] * workers
    for item in long:
        w = dealt.index(min(dealt))
        shares[w].append(item)
        dealt[w] += seconds(item)
    ordered: list[pytest.Item] = []
    for share in shares:
        ordered += share + list(itertools.islice(fast, max(0, first_batch - len(share))))
    items[:] = ordered + list(fast)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration
    if "slow" in report.keywords:
        _slow.add(report.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if hasattr(session.config, "workerinput") or not _measured:
        return
    cache = getattr(session.config, "cache", None)
    if cache is not None:
        cache.set(
            DURATIONS,
            {**cache.get(DURATIONS, {}), **{k: round(v, 2) for k, v in _measured.items()}},
        )
    if session.config.getoption("save_durations"):
        long = {
            k: round(v, 1)
            for k, v in sorted(_measured.items(), key=lambda kv: -kv[1])
            if v >= LONG or k in _slow
        }
        REFERENCE.write_text(json.dumps(long, indent=0) + "\n")
