"""A subject's rows as the tools read them: loaded once per (subject, table) by the store,
then filtered, joined and ordered here in Python.

Why not SQL per call: DuckDB spends 2-3 ms planning each of the tools' queries (joins,
window functions, casts) whatever the data size, more than reading a subject's CSV with
pandas. A plain per-subject select is loaded once (``EHRStore.subject_rows``) and every
later call for that patient, the common case in a session, is pure Python.

The helpers reproduce the SQL semantics the tools were written against: ``NULLS LAST`` in
both directions, ``CAST(ts AS VARCHAR)`` text, ``TRY_CAST(.. AS TIMESTAMP)``, and
case-insensitive literal substring tests (``strpos(lower(..))`` / escaped ``ILIKE``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .context import ToolContext
from .reads import COLUMNS

Row = dict[str, Any]


#: Tables the strict tools load whole only for a small chart (``EHRStore.small_subject_rows``);
#: of a big one they ask the store for the rows a call returns (``chart.Chart.newest``), so a
#: strict session does not prefetch them (a big ICU chart's hundreds of thousands of rows,
#: loaded beside the calls, only took the GIL from them).
STRICT_QUERIED = frozenset(
    ("labevents", "chartevents", "emar", "emar_detail", "inputevents", "prescriptions", "pharmacy",
     "diagnoses_icd", "microbiologyevents")
)  # fmt: skip


#: The same for the compat tools (``compat_chart.BigChart``: a big chart's rows are typed only
#: when a call returns them).
COMPAT_QUERIED = frozenset(("labevents", "chartevents", "prescriptions", "emar"))


def open_chart(ctx: ToolContext) -> None:
    """Start loading, in the background, every table the tools read whole for this session's
    patient; a session opens the chart before the model's first call and the tool calls
    then find the rows in memory. Returns at once."""
    skip = STRICT_QUERIED if ctx.semantics == "strict" else COMPAT_QUERIED
    ctx.store.prefetch(ctx.subject_id, [(t, c) for t, c in COLUMNS.items() if t not in skip])


def lookup(ctx: ToolContext, table: str, *key: str) -> dict[Any, Row]:
    """A dictionary table keyed by ``key`` (first row wins), built once per store."""
    return ctx.store.dictionary(table, key)


def joined(table: dict[Any, Row], key: Any, column: str) -> Any:
    """``column`` of the dictionary row for ``key``, as a ``LEFT JOIN`` gives it: NULL for an
    unknown key or one with a NULL part."""
    if key is None or (isinstance(key, tuple) and None in key):
        return None
    row = table.get(key)
    return None if row is None else row[column]


def text(value: Any) -> str | None:
    """``CAST(value AS VARCHAR)`` for the store's timestamps and dates."""
    if isinstance(value, dt.datetime):
        out = value.isoformat(" ")  # 4x faster than strftime; DuckDB trims trailing zeros
        return out.rstrip("0") if value.microsecond else out
    if isinstance(value, dt.date):
        return value.isoformat()
    return None if value is None else str(value)


def stamp(value: Any) -> dt.datetime | None:
    """``TRY_CAST(value AS TIMESTAMP)``: dates at midnight, unparseable text as None."""
    if value is None or isinstance(value, dt.datetime):
        return value
    if isinstance(value, dt.date):
        return dt.datetime.combine(value, dt.time.min)
    try:
        return dt.datetime.fromisoformat(str(value).strip())
    except ValueError:
        return None


def by(column: str | Callable[[Row], Any], desc: bool = False) -> tuple[Callable[[Row], Any], bool]:
    """One ``ORDER BY`` term for ``order``: a column name or a function of the row."""
    get = column if callable(column) else (lambda r, c=column: r[c])
    return get, desc


def order(rows: Iterable[Row], *terms: tuple[Callable[[Row], Any], bool]) -> list[Row]:
    """Rows sorted like SQL ``ORDER BY`` with DuckDB's default ``NULLS LAST`` in both
    directions; full ties keep the input (file) order."""
    out = list(rows)
    for get, desc in reversed(terms):
        if desc:
            out.sort(key=lambda r: (get(r) is not None, get(r)), reverse=True)
        else:
            out.sort(key=lambda r: (get(r) is None, get(r)))
    return out


def contains(haystack: Any, needle: str) -> bool:
    """``needle`` found in ``haystack`` literally, ignoring case; a NULL never matches."""
    return haystack is not None and needle.lower() in str(haystack).lower()


def keep(rows: Iterable[Row], **equal: Any) -> list[Row]:
    """Rows whose columns equal the given values; a ``None`` value means no filter."""
    wanted = [(k, v) for k, v in equal.items() if v is not None]
    return [r for r in rows if all(r[k] == v for k, v in wanted)]


def first_non_null(rows: Sequence[Row], column: str) -> Any:
    """``any_value(column)``: the first non-NULL value in file order."""
    return next((r[column] for r in rows if r[column] is not None), None)
