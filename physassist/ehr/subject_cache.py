"""Rows of recently used subjects, kept in memory within a budget of rows.

A session asks about one patient many times; the store keeps what it loaded for that
patient (per table and column set) and drops the least recently used subjects once the
budget is exceeded. Counting rows rather than subjects keeps memory bounded on MIMIC-IV,
where one ICU patient can have a hundred thousand chart events and another ten labs.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any

Key = tuple[str, tuple[str, ...]]  # (table, columns)
Rows = tuple[dict[str, Any], ...]

DEFAULT_MAX_ROWS = 500_000  # ~0.3-0.5 GB of row dicts


def default_max_rows() -> int:
    """``$PHYSASSIST_SUBJECT_CACHE_ROWS`` or ``DEFAULT_MAX_ROWS``."""
    return int(os.environ.get("PHYSASSIST_SUBJECT_CACHE_ROWS", DEFAULT_MAX_ROWS))


class SubjectCache:
    """Thread-safe LRU of subjects -> {(table, columns): rows}, bounded by total rows.

    The most recently used subject is never evicted, however many rows it has.
    """

    def __init__(self, max_rows: int | None = None) -> None:
        self.max_rows = default_max_rows() if max_rows is None else max_rows
        self._subjects: OrderedDict[int, dict[Key, Rows]] = OrderedDict()
        self._rows = 0
        self._lock = threading.Lock()

    def get(self, subject_id: int, key: Key) -> Rows | None:
        """The cached rows, marking the subject as most recently used."""
        with self._lock:
            tables = self._subjects.get(subject_id)
            if tables is None:
                return None
            self._subjects.move_to_end(subject_id)
            return tables.get(key)

    def put(self, subject_id: int, key: Key, rows: Rows) -> None:
        """Keep ``rows`` and mark the subject as most recently used."""
        with self._lock:
            tables = self._subjects.setdefault(subject_id, {})
            old = tables.get(key)
            self._rows += len(rows) - (len(old) if old is not None else 0)
            tables[key] = rows
            self._subjects.move_to_end(subject_id)
            self._evict()

    def missing(self, subject_id: int, keys: list[Key]) -> list[Key]:
        """Which of ``keys`` are not cached for this subject."""
        with self._lock:
            tables = self._subjects.get(subject_id, {})
            return [k for k in keys if k not in tables]

    def subjects(self) -> list[int]:
        """Cached subjects, least recently used first."""
        with self._lock:
            return list(self._subjects)

    def __len__(self) -> int:
        """Rows held."""
        return self._rows

    def _evict(self) -> None:
        while self._rows > self.max_rows and len(self._subjects) > 1:
            _, tables = self._subjects.popitem(last=False)
            self._rows -= sum(len(r) for r in tables.values())
