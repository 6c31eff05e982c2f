"""A subject's rows typed as the reference's pandas saw them (compat only).

The reference never read the MIMIC-IV tables directly. Its split script read each whole table
with ``pandas.read_csv`` and wrote every subject's rows to their own CSV; each tool call then
read that subject's CSV with ``read_csv`` again. Both reads infer column types, and the values
the tools print carry those types:

* split read: a column holding a missing value anywhere in the table is float, so its numbers
  were written back as ``24982426.0`` (every lab's ``Encounter/encounter-...0``);
* subject read: text columns whose values all look numeric *for this subject* become numbers
  (an ICD-9 code ``0388`` prints as ``388``, a dose ``500`` with one missing dose as ``500.0``);
* missing values are NaN, which the reference's output then drops.

pandas' C parser infers types per block of rows (``2**20 // n_columns`` rounded down to a power
of two) and merges the blocks: int with float gives float, text with numbers gives an object
column whose values keep their block's type. Both reads are reproduced with those rules from
the store's rows: the split read's per-block kinds come from one aggregate query per table
(measured once per store and kept beside it: ``compat_kinds_file``), the subject read runs in
Python on the subject's rows. Results are cached per (table, subject). A big chart's
searches type only the rows they return, from the same rules (``compat_chart``).
"""

from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np

from physassist.ehr.store import EHRStore
from physassist.ehr.tables import ROW_COLUMN, TABLES

from . import compat_kinds_file as kinds_file
from .reads import COLUMNS
from .records import Row, text

#: pandas' default missing-value strings (``pandas._libs.parsers.STR_NA_VALUES``).
NA_STRINGS = frozenset(
    ("", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN",
     "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null")
)  # fmt: skip
_INT = re.compile(r"\s*[+-]?\d+\s*")
_FLOAT = re.compile(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|inf|Inf|INF)\s*")
_MEMO = 512  # (table, subject) frames kept per store


def block_rows(width: int) -> int:
    """Rows per type-inference block of pandas' C parser for a file of ``width`` columns."""
    heuristic, rows = 2**20 // max(width, 1), 1
    while rows * 2 < heuristic:
        rows *= 2
    return rows


def block_kind(texts: Sequence[str | None]) -> str:
    """One block's pandas type: int, float (all missing included) or str."""
    present = [t for t in texts if t is not None]
    if not present:
        return "float"
    if len(present) == len(texts) and all(_INT.fullmatch(t) for t in present):
        return "int"
    if all(_INT.fullmatch(t) or _FLOAT.fullmatch(t) for t in present):
        return "float"
    return "str"


def merged_kind(kinds: Sequence[str]) -> str:
    found = set(kinds)
    if found <= {"int"}:
        return "int"
    if found <= {"int", "float"}:
        return "float"
    if found == {"str"}:
        return "str"
    return "mixed"


def typed_cell(t: str | None, kind: str) -> Any:
    """A parsed cell of a block of ``kind`` (None = NaN)."""
    if t is None:
        return None
    if kind == "int":
        return int(t)
    if kind == "float":
        return float(t)
    return t


def read_csv(texts: Sequence[str | None], width: int) -> list[Any]:
    """Values of one column as ``pandas.read_csv`` types them (missing cells as None)."""
    texts = [None if t is None or t in NA_STRINGS else t for t in texts]
    size = block_rows(width)
    blocks = [texts[i : i + size] for i in range(0, len(texts), size)] or [texts]
    kinds = [block_kind(b) for b in blocks]
    merged = merged_kind(kinds)
    out: list[Any] = []
    for block, kind in zip(blocks, kinds, strict=True):
        kind = kind if merged == "mixed" else merged
        out.extend(typed_cell(t, kind) for t in block)
    return out


def written(value: Any) -> str | None:
    """A value as ``DataFrame.to_csv`` writes it (None = empty cell)."""
    if value is None:
        return None
    if isinstance(value, float):
        return repr(value)
    return str(value)


class _TableKinds:
    """The split read of one table: its width and, per column, the merged kind and, for a
    column whose blocks differ (``mixed``), each block's kind."""

    def __init__(self, width: int, merged: dict[str, str], blocks: dict[str, dict[int, str]]):
        self.width = width
        self.size = block_rows(width)
        self.merged = merged
        self.kinds = blocks

    @classmethod
    def of(cls, store: EHRStore, table: str, columns: Sequence[str]) -> _TableKinds:
        """Read from beside the store if measured there for these columns, else measured (one
        aggregate query over the whole table) and kept there."""
        width = store.widths[table]
        key = {
            "columns": list(columns),
            "width": width,
            "rows": store.row_counts()[table],
        }
        entry = kinds_file.load(store.path, store.fingerprint, table, key)
        if entry is not None:
            try:
                kinds = cls(
                    width,
                    dict(entry["merged"]),
                    kinds_file.blocks_from_json(entry["blocks"]),
                )
            except (KeyError, TypeError, ValueError):
                kinds = None
            if kinds is not None and kinds.complete(columns):
                return kinds
        kinds = cls.measure(store, table, columns)
        entry = {**key, "merged": kinds.merged, "blocks": kinds_file.blocks_to_json(kinds.kinds)}
        kinds_file.save(store.path, store.fingerprint, table, entry)
        return kinds

    def complete(self, columns: Sequence[str]) -> bool:
        """Every column has a known kind, and every mixed one its blocks'."""
        blocks = {"int", "float", "str"}
        return set(self.merged) == set(columns) and all(
            k in blocks
            or (k == "mixed" and bool(self.kinds.get(c)) and set(self.kinds[c].values()) <= blocks)
            for c, k in self.merged.items()
        )

    @classmethod
    def measure(cls, store: EHRStore, table: str, columns: Sequence[str]) -> _TableKinds:
        """Per block of the table's rows, each column's kind: one aggregate query."""
        spec = TABLES[table]
        width = store.widths[table]
        size = block_rows(width)
        terms = []
        for c in columns:
            q, typ = f'"{c}"', spec.columns[c]
            if typ == "VARCHAR":
                na = f"({q} IS NULL OR {q} IN ({', '.join(sql_str(s) for s in NA_STRINGS)}))"
                number = f"TRY_CAST({q} AS DOUBLE) IS NOT NULL"  # a cast, not a regex: scales
                # a number without a point, an exponent or letters (inf) is an integer's text
                digits = " AND ".join(f"NOT contains({q}, '{c}')" for c in ".eEnN")
                terms += [
                    f"count(*) FILTER (WHERE {na})",
                    f"count(*) FILTER (WHERE NOT {na} AND NOT ({number} AND {digits}))",
                    f"count(*) FILTER (WHERE NOT {na} AND NOT {number})",
                ]
            elif typ == "DOUBLE":
                terms += [
                    f"count(*) FILTER (WHERE {q} IS NULL)",
                    f"count(*) FILTER (WHERE {q} <> floor({q}))",
                    "0",
                ]
            elif typ in ("BIGINT", "INTEGER"):
                terms += [f"count(*) FILTER (WHERE {q} IS NULL)", "0", "0"]
            else:  # timestamps and dates are text to pandas
                terms += [f"count(*) FILTER (WHERE {q} IS NULL)", "count(*)", "count(*)"]
        block = f'(("{ROW_COLUMN}" & {(1 << 40) - 1}) - 1) // {size}'
        rows = store.rows(
            f"SELECT {block} AS b, count(*) AS n, "
            + ", ".join(f"{t} AS k{i}" for i, t in enumerate(terms))
            + f' FROM "{table}" GROUP BY b ORDER BY b'
        )
        kinds: dict[str, dict[int, str]] = {c: {} for c in columns}
        for r in rows:
            values = list(r.values())
            b, n = values[0], values[1]
            for i, c in enumerate(columns):
                na, not_int, not_float = values[2 + 3 * i : 5 + 3 * i]
                if na == n:
                    kind = "float"
                elif not_float:
                    kind = "str"
                elif not_int or na:
                    kind = "float"
                else:
                    kind = "int"
                kinds[c][b] = kind
        merged = {c: merged_kind(list(k.values())) for c, k in kinds.items()}
        return cls(width, merged, {c: k for c, k in kinds.items() if merged[c] == "mixed"})

    def block(self, row_id: int) -> int:
        """The split read's block of a row (``_row``: its line in the table's file)."""
        return ((row_id & ((1 << 40) - 1)) - 1) // self.size

    def kind(self, column: str, block: int) -> str:
        """The split read's kind of ``column`` in ``block``."""
        kind = self.merged[column]
        return self.kinds[column][block] if kind == "mixed" else kind

    def cell(self, column: str, typ: str, row: Row) -> str | None:
        """The text the split script wrote for this cell."""
        value = row[column]
        if value is None or (typ == "VARCHAR" and value in NA_STRINGS):
            return None
        return written_cell(value, typ, self.kind(column, self.block(row[ROW_COLUMN])))


def written_cell(value: Any, typ: str, kind: str) -> str | None:
    """The text the split script wrote for a store value of ``typ`` read as ``kind``."""
    if value is None or (typ == "VARCHAR" and value in NA_STRINGS):
        return None
    if typ == "VARCHAR":
        return written(typed_cell(value, kind))
    if typ in ("DOUBLE", "BIGINT", "INTEGER"):
        return written(int(value) if kind == "int" else float(value))
    return text(value)


def _column(kinds: _TableKinds, column: str, typ: str, rows: Sequence[Row]) -> list[Any]:
    """One column of the subject's frame: both reads, with shortcuts where their outcome is
    known without looking at the text (the subject's file fits one block)."""
    merged = kinds.merged[column]
    values = [r[column] for r in rows]
    if len(rows) <= kinds.size and typ != "VARCHAR":
        if typ in ("TIMESTAMP", "DATE"):  # text, never numeric
            return [None if v is None else text(v) for v in values]
        if merged == "int" and None not in values:
            return [int(v) for v in values]
        return [None if v is None else float(v) for v in values]  # written as floats
    if merged == "str" and typ == "VARCHAR":  # written back as read
        return read_csv(values, kinds.width)
    return read_csv([kinds.cell(column, typ, r) for r in rows], kinds.width)


def sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"


class _StoreFrames:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[str, _TableKinds] = {}
        self.measuring: dict[str, threading.Lock] = {}  # one measurement per table, not per caller
        self.frames: OrderedDict[tuple[str, int], tuple[Row, ...]] = OrderedDict()


_FRAMES: weakref.WeakKeyDictionary[EHRStore, _StoreFrames] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def frame(store: EHRStore, table: str, sid: int) -> tuple[Row, ...]:
    """The subject's rows of ``table`` as the reference's per-subject ``read_csv`` typed them,
    in file order, each with ``rowidx`` (its index in the subject's file). Read-only, shared."""
    with _LOCK:
        state = _FRAMES.setdefault(store, _StoreFrames())
    key = (table, sid)
    with state.lock:
        cached = state.frames.get(key)
        if cached is not None:
            state.frames.move_to_end(key)
            return cached
    columns = COLUMNS[table]
    rows = store.subject_rows(table, sid, columns)
    kinds = _table_kinds(store, state, table, columns)
    spec = TABLES[table]
    typed = {c: _column(kinds, c, spec.columns[c], rows) for c in columns}
    names = (*columns, "rowidx", ROW_COLUMN)  # rows built by zip: ~2x a dict display per row
    values = (*typed.values(), range(len(rows)), [r[ROW_COLUMN] for r in rows])
    out = tuple(dict(zip(names, v, strict=True)) for v in zip(*values, strict=True))
    with state.lock:
        state.frames[key] = out
        if len(state.frames) > _MEMO:
            state.frames.popitem(last=False)
    return out


def table_kinds(store: EHRStore, table: str) -> _TableKinds:
    """The split read of ``table`` (the columns the tools read), found or measured once."""
    with _LOCK:
        state = _FRAMES.setdefault(store, _StoreFrames())
    return _table_kinds(store, state, table, COLUMNS[table])


def _table_kinds(
    store: EHRStore, state: _StoreFrames, table: str, columns: Sequence[str]
) -> _TableKinds:
    """The table's kinds, found or measured once: concurrent first calls wait for one."""
    with state.lock:
        kinds = state.tables.get(table)
        measuring = state.measuring.setdefault(table, threading.Lock())
    if kinds is not None:
        return kinds
    with measuring:
        with state.lock:
            kinds = state.tables.get(table)
        if kinds is None:
            kinds = _TableKinds.of(store, table, columns)
            with state.lock:
                state.tables[table] = kinds
    return kinds


def sort_rows(rows: Sequence[Row], column: str, ascending: bool = True) -> list[Row]:
    """``DataFrame.sort_values(column)`` with pandas' defaults: numpy's unstable quicksort over
    the non-missing values (a text column as an object array, like pandas' python-backed
    ``str`` dtype), missing values last in their original order. Ties come out exactly as
    pandas puts them, which is neither file order nor its reverse."""
    values = [r[column] for r in rows]
    present = [i for i, v in enumerate(values) if v is not None]
    missing = [i for i, v in enumerate(values) if v is None]
    keys = [values[i] for i in present]
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in keys):
        array = np.array(keys, dtype=float if any(isinstance(v, float) for v in keys) else np.int64)
    else:
        array = np.empty(len(keys), dtype=object)
        array[:] = keys
    return [rows[i] for i in quicksort_order(array, present, missing, ascending)]


def quicksort_order(
    array: np.ndarray, present: Sequence[int] | np.ndarray, missing: Sequence[int], ascending: bool
) -> list[int]:
    """``sort_values``' order of positions: ``present`` (ascending positions of the values
    ``array`` holds) by numpy's quicksort over ``array``, then ``missing``."""
    order = np.asarray(present, dtype=np.intp)
    if not ascending:
        array, order = array[::-1], order[::-1]
    indexer = order[array.argsort(kind="quicksort")]
    if not ascending:
        indexer = indexer[::-1]
    return [*indexer.tolist(), *missing]
