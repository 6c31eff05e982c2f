"""compat's big charts: the rows a call returns, typed as the whole chart types them.

compat prints a subject's values as pandas' per-subject ``read_csv`` typed the reference's
per-subject file (``compat_frames``), so a cell depends on every row of the subject's table (a
dose prints ``500.0`` because another order lacks one; an order's id is its line in the file).
A small chart (``EHRStore.small_subject_rows``) is typed whole (``frame``), as it always was.
Of a big one (an ICU chart: tens to hundreds of thousands of rows) nothing is loaded whole:
``BigChart`` asks the store once for what that typing needs from every row, per column and
block of the subject's file (the distinct texts of a text column, which ``compat_frames``' own
rules then classify; whether a numeric column misses a value) and for the subject's line
numbers with the time its searches sort by. A search then asks for the rows it keeps (its
filters in SQL), sorts those as pandas did (``quicksort_order``: on ``datetime64``, which
numpy sorts with the comparisons, hence the order, of the text column's object sort:
``_same_order``), and fetches and types only the rows it returns. Where a filter cannot be put
exactly in SQL (a text column whose type changes between blocks of the file), the tool takes
the whole-chart path (the methods return None).
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from physassist.ehr.store import EHRStore
from physassist.ehr.tables import ROW_COLUMN, TABLES

from .compat_common import head_error
from .compat_frames import (
    NA_STRINGS,
    block_kind,
    frame,
    merged_kind,
    quicksort_order,
    table_kinds,
    typed_cell,
    written_cell,
)
from .reads import COLUMNS, READS
from .records import Row, text

_MEMO = 64  # big charts kept per store (each holds its line numbers and times: 17 bytes a row)
_NUMERIC = ("DOUBLE", "BIGINT", "INTEGER")
_IN = "list_contains(?::{1}[], {0})"  # a list test: no join, as ``IN (subquery)`` plans
Where = tuple[str, list[Any]]  # an SQL condition and its parameters


class BigChart:
    """One subject's big table: its line numbers and, per column compat reads, how the
    subject's file typed it."""

    def __init__(self, store: EHRStore, table: str, sid: int, time: str | None) -> None:
        self.store, self.table, self.sid = store, table, sid
        spec = TABLES[table].columns
        read = {c for tool in READS["compat"].values() for c in tool.get(table, ())}
        self.columns = tuple(c for c in COLUMNS[table] if c in read)
        self.types = {c: spec[c] for c in self.columns}
        self.split = table_kinds(store, table)
        self.size = self.split.size
        found = store.subject_columns(
            table, sid, (ROW_COLUMN,) if time is None else (ROW_COLUMN, time)
        )
        ids = np.ma.getdata(found[ROW_COLUMN]).astype(np.int64)
        order = np.argsort(ids)
        self.ids = ids[order]  # the subject's file, in order
        if time is not None:  # and the time its searches sort by (``kept``)
            self.times = np.ma.getdata(found[time])[order]
            self.missing = np.ma.getmaskarray(found[time])[order]
        #: ``compat_frames._column`` reads numbers and times without their text when the
        #: subject's file is one block; over more it reads every column's text
        self.csv = len(self.ids) > self.size
        self.ints: dict[str, bool] = {}  # numeric column -> read as int (else float)
        self.kinds: dict[str, tuple[str, dict[int, str]]] = {}  # text column -> merged, blocks
        self._measure()

    def _measure(self) -> None:
        """One aggregate over the subject's rows per (block of its file, block of the table's):
        the distinct texts of each text column the table's file did not read as float
        (classified here: ``DISTINCT`` costs DuckDB less than testing each row for pandas'
        missing-value strings), missing integers."""
        row = f'"{ROW_COLUMN}"'
        bounds = self.ids[self.size :: self.size].tolist()
        block = " + ".join(f"({row} >= {int(b)})::INTEGER" for b in bounds) or "0"
        # where the table's file read a column as float, the subject's reads it as float
        # whatever misses: a number, or a text written back as a float's text (or ``nan``)
        floats = [c for c in self.types if self.split.merged[c] == "float"]
        self.kinds.update((c, ("float", {})) for c in floats if self.types[c] == "VARCHAR")
        measured = [
            c
            for c, t in self.types.items()
            if c not in floats and (t == "VARCHAR" or t in _NUMERIC)
        ]
        split = "0"  # the table's blocks matter only where its kinds differ between them
        if any(self.split.merged[c] == "mixed" for c in measured):
            split = f"(({row} & {(1 << 40) - 1}) - 1) // {self.size}"
        terms: list[str] = []
        for c in measured:
            q = f'"{c}"'
            terms.append(f"count(*) FILTER (WHERE {q} IS NULL)")
            if self.types[c] == "VARCHAR":
                terms.append(f"list(DISTINCT {q}) FILTER (WHERE {q} IS NOT NULL)")
            elif self.types[c] == "DOUBLE" and self.csv:  # NaN: read back as missing
                terms.append(f"count(*) FILTER (WHERE isnan({q}))")
            else:
                terms.append("0")
        groups = self.store.rows(
            f"SELECT b, s{''.join(f', {t} AS k{j}' for j, t in enumerate(terms))} "
            f"FROM (SELECT *, {block} AS b, "
            f'{split} AS s FROM "{self.table}" WHERE subject_id = ?) GROUP BY b, s',
            [self.sid],
        )
        for i, c in enumerate(measured):
            typ = self.types[c]
            parts = [(g["b"], g["s"], g[f"k{2 * i}"], g[f"k{2 * i + 1}"]) for g in groups]
            if typ == "VARCHAR":
                texts: dict[int, set[str | None]] = {}
                for b, s, nulls, values in parts:
                    found = texts.setdefault(b, set())
                    kind = self.split.kind(c, s)
                    written = (written_cell(v, typ, kind) for v in values or ())
                    found.update(None if w in NA_STRINGS else w for w in written)
                    if nulls:
                        found.add(None)
                blocks = {b: block_kind(list(t)) for b, t in texts.items()}
                self.kinds[c] = (merged_kind(list(blocks.values())), blocks)
            else:
                missing = sum(p[2] for p in parts) + (sum(p[3] for p in parts) if self.csv else 0)
                self.ints[c] = not missing
        for c in self.types:
            self.ints.setdefault(c, False)  # read as float (or not a number)

    def value(self, column: str, raw: Any, row_id: int, position: int) -> Any:
        """The cell as the subject's file typed it (None = NaN): ``raw`` from the store, the
        row's ``_row`` and its position in the subject's file."""
        typ = self.types[column]
        if typ in _NUMERIC:
            if raw is None or (self.csv and raw != raw):  # NaN: written as "nan", read as NaN
                return None
            return int(raw) if self.ints[column] else float(raw)
        if typ != "VARCHAR":  # times are text either way
            return text(raw)
        w = written_cell(raw, typ, self.split.kind(column, self.split.block(row_id)))
        merged, blocks = self.kinds[column]
        return typed_cell(
            None if w in NA_STRINGS else w,
            blocks[position // self.size] if merged == "mixed" else merged,
        )

    def positions(self, ids: Sequence[int] | np.ndarray) -> list[int]:
        """The rows' positions in the subject's file (compat's ``rowidx``)."""
        found: list[int] = np.searchsorted(self.ids, np.asarray(ids, dtype=np.int64)).tolist()
        return found

    def _fetched(self, where: Where) -> list[Row]:
        """The typed rows ``where`` keeps, in file order, with ``rowidx``: typed by column
        (``_column``), as ``compat_frames.frame`` builds its rows."""
        sql, params = where
        found = self.store.subject_columns(
            self.table, self.sid, (*self.columns, ROW_COLUMN), sql, params
        )
        ids = np.ma.getdata(found[ROW_COLUMN]).astype(np.int64)
        order = np.argsort(ids)
        ids = ids[order]
        positions = np.searchsorted(self.ids, ids).tolist()
        ids = ids.tolist()
        columns = []
        for c in self.columns:
            raw = found[c][order]
            if self.types[c] == "DATE":  # as ``EHRStore.select`` gives them: dates
                raw = raw.astype("datetime64[D]")
            columns.append(self._column(c, raw.tolist(), ids, positions))
        names = (*self.columns, "rowidx", ROW_COLUMN)
        return [
            dict(zip(names, v, strict=True)) for v in zip(*columns, positions, ids, strict=True)
        ]

    def _column(self, c: str, raw: list[Any], ids: list[int], positions: list[int]) -> list[Any]:
        """``value`` of each cell of column ``c``, without a call per cell where the
        column's typing is the same for every row."""
        typ = self.types[c]
        if typ in _NUMERIC:
            cast = int if self.ints[c] else float
            return [None if v is None or (self.csv and v != v) else cast(v) for v in raw]
        if typ != "VARCHAR":
            return [text(v) for v in raw]
        if self.split.merged[c] == self.kinds[c][0] == "str":  # read back as written
            return [None if v is None or v in NA_STRINGS else v for v in raw]
        return [self.value(c, v, i, p) for v, i, p in zip(raw, ids, positions, strict=True)]

    def rows(self, ids: Sequence[int]) -> list[Row]:
        """The typed rows of these ``_row`` ids, in the order given."""
        if not ids:
            return []
        found = self._fetched((_IN.format(f'"{ROW_COLUMN}"', "BIGINT"), [ids]))
        by_id = {r[ROW_COLUMN]: r for r in found}
        return [by_id[i] for i in ids]

    def matching(self, where: Sequence[Where]) -> list[Row]:
        """The typed rows every condition keeps, in file order."""
        return self._fetched(_joined(where))

    def kept(self, where: Sequence[Where]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ``_row`` ids of the rows every condition keeps, in file order, their time (the
        chart's ``time``, ``datetime64``) and whether it is missing."""
        if not where:
            return self.ids, self.times, self.missing
        sql, params = _joined(where)
        found = self.store.subject_columns(self.table, self.sid, (ROW_COLUMN,), sql, params)
        ids = np.sort(np.ma.getdata(found[ROW_COLUMN]).astype(np.int64))
        at = np.searchsorted(self.ids, ids)
        return ids, self.times[at], self.missing[at]

    def newest(
        self,
        tool: str,
        kept: tuple[np.ndarray, np.ndarray, np.ndarray],
        keep: np.ndarray,
        count: Any,
    ) -> list[Row]:
        """``head(sort_rows(rows, time, ascending=False), count)`` of the rows ``kept`` and
        ``keep`` (a mask over them) hold, fetched and typed."""
        ids, times, missing = kept
        order = newest_order(times, missing, keep)
        if not (count is None or isinstance(count, int)):
            raise head_error(tool, self.positions(ids[order]), count)
        return self.rows(ids[order if count is None else order[: int(count)]].tolist())

    def equal(self, column: str, value: float) -> Where:
        """``typed == value`` for a numeric column (compat's ``hadm_id``, a float): exact, as
        Python compares an int or a float with a float."""
        q = f'"{column}"'
        if value != value or value in (float("inf"), float("-inf")):
            return "false", []
        if self.ints[column]:  # no stored integer equals a fraction or passes 64 bits
            exact = value.is_integer() and abs(value) < 2**63
            return (f"{q} = ?", [int(value)]) if exact else ("false", [])
        return f"CAST({q} AS DOUBLE) = ?", [value]

    def among(self, column: str, values: frozenset[Any]) -> Where:
        """``typed in values`` for a numeric column and int values (dictionary item ids)."""
        q = f'"{column}"'
        wanted = sorted(v for v in values if isinstance(v, int))
        if self.ints[column]:
            return _IN.format(q, "BIGINT"), [wanted]
        # a float equals an int only if the int is a float exactly
        return _IN.format(f"CAST({q} AS DOUBLE)", "DOUBLE"), [
            [float(v) for v in wanted if float(v) == v]
        ]

    def matches(
        self, column: str, where: Sequence[Where], test: Callable[[Any], bool]
    ) -> Where | None:
        """The rows whose typed text ``column`` passes ``test`` (the ``medication`` pattern),
        as a condition on its stored text, decided once per distinct text; None if the
        column's type changes between blocks of the file (then a text's typed value depends
        on its row)."""
        merged, _ = self.kinds[column]
        if merged == "mixed" or self.split.merged[column] == "mixed":
            return None
        sql, params = _joined(where)
        texts = self.store.aggregate(self.table, self.sid, f'DISTINCT "{column}"', sql, params)
        kept = [t for t in texts if t is not None and test(self.value(column, t, 0, 0))]
        return _IN.format(f'"{column}"', "VARCHAR"), [kept]


def _joined(where: Sequence[Where]) -> Where:
    return " AND ".join(w for w, _ in where), [p for _, params in where for p in params]


def within(kept: tuple[np.ndarray, np.ndarray, np.ndarray], op: str, bound: str) -> np.ndarray:
    """Which of the ``kept`` rows have a time whose text is ``>=`` (``op``) or ``<=`` the text
    ``bound``: the text of a time grows with it, so a binary search over the distinct times
    finds the first that passes (``>=``) or fails (``<=``)."""
    _, times, missing = kept
    distinct = np.unique(times[~missing])
    if op == ">=":
        first = bisect.bisect_left(distinct, True, key=lambda t: _text(t) >= bound)
    else:
        first = bisect.bisect_left(distinct, True, key=lambda t: _text(t) > bound)
    passes = times >= distinct[first] if first < len(distinct) else np.zeros(len(times), bool)
    kept_rows: np.ndarray = ~missing & (passes if op == ">=" else ~passes)
    return kept_rows


def _text(t: np.datetime64) -> str:
    out = text(t.astype("datetime64[us]").item())
    assert out is not None  # a time that is present has a text
    return out


def newest_order(times: np.ndarray, missing: np.ndarray, keep: np.ndarray) -> list[int]:
    """``sort_rows(rows, time, ascending=False)``'s order of the kept positions (file order)
    of a text column of times: numpy's quicksort over the times, missing ones last."""
    present = np.flatnonzero(keep & ~missing)
    array = times[present]
    if not _same_order():
        array = array.astype("datetime64[us]").astype(object)  # as the text would compare
    return quicksort_order(array, present, np.flatnonzero(keep & missing).tolist(), False)


_ORDER_CHECK: list[bool] = []


def _same_order() -> bool:
    """Whether numpy's quicksort orders ``datetime64`` ties as its object sort does (the
    sort of a text column): true of numpy 2.4 (no SIMD sort for datetimes), checked once on
    a tie-heavy array rather than assumed of every numpy."""
    if not _ORDER_CHECK:
        rng = np.random.default_rng(0)
        ticks = rng.integers(0, 300, 5_000)
        objects = np.empty(len(ticks), dtype=object)
        objects[:] = ticks.tolist()
        same = np.array_equal(
            ticks.astype("datetime64[us]").argsort(kind="quicksort"),
            objects.argsort(kind="quicksort"),
        )
        _ORDER_CHECK.append(bool(same))
    return _ORDER_CHECK[0]


_CHARTS: weakref.WeakKeyDictionary[EHRStore, OrderedDict[tuple[str, int, Any], BigChart]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()


def chart(
    store: EHRStore, table: str, sid: int, time: str | None = None
) -> tuple[Row, ...] | BigChart:
    """The subject's rows of ``table`` typed whole (``frame``) if the chart is small, else
    its ``BigChart`` (which keeps the ``time`` its searches sort by, if any)."""
    key = (table, sid, time)
    with _LOCK:
        charts = _CHARTS.setdefault(store, OrderedDict())
        big = charts.get(key)
        if big is not None:
            charts.move_to_end(key)
            return big
    if store.small_subject_rows(table, sid, COLUMNS[table]) is not None:
        return frame(store, table, sid)
    big = BigChart(store, table, sid, time)
    with _LOCK:
        charts[key] = big
        if len(charts) > _MEMO:
            charts.popitem(last=False)
    return big
