"""What a strict read tool reads through: the time window and row conditions of one call, and
``Chart``, the session's store access a tool is handed (``call_tool`` makes it from the
``ToolContext``), so a tool and its helpers reach the store only through what they are given.

A chart's rows come two ways: a small chart's whole tables, loaded once per subject and
filtered in Python (``Where.keeps``), or a big chart's rows selected by the store with the same
conditions as SQL (``EHRStore.select``), each query asked once per session.
"""

from __future__ import annotations

import datetime as dt
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from physassist.ehr.tables import ROW_COLUMN

from .errors import ToolError
from .reads import COLUMNS
from .records import Row, by, order, stamp
from .reported import Expression, Stay, recorded_sql, reported_at, stays

if TYPE_CHECKING:  # the store module is built separately; a chart only calls its methods
    from physassist.ehr.store import EHRStore

    from .context import ToolContext


class Window:
    """The time filter of one call: ``[date_from, min(date_to end-of-day, cutoff)]``."""

    def __init__(self, cutoff: dt.datetime | None, args: dict[str, Any], tool: str):
        self.cutoff = cutoff
        self.start = parse_day(tool, "date_from", args.get("date_from"), end=False)
        upper = parse_day(tool, "date_to", args.get("date_to"), end=True)
        self.end = min((t for t in (upper, self.cutoff) if t is not None), default=None)

    def keeps(self, value: Any, use_start: bool = True) -> bool:
        """Whether a time (TIMESTAMP, DATE or text) is inside the window; unparseable or
        missing times are outside whenever the window has a bound."""
        if (use_start and self.start is not None) or self.end is not None:
            when = stamp(value)
            if when is None:
                return False
            if use_start and self.start is not None and when < self.start:
                return False
            if self.end is not None and when > self.end:
                return False
        return True

    def visible(self, value: Any) -> bool:
        """Whether a time (TIMESTAMP, DATE or text) is known and at or before the cutoff."""
        when = stamp(value)
        return when is not None and (self.cutoff is None or when <= self.cutoff)


class Where:
    """Conditions on one subject's rows, twice: as SQL with its parameters (``EHRStore.select``)
    for a big chart, whose search keeps a few dozen of its hundreds of thousands of rows, and
    as a Python test for a small chart's rows, kept in memory (``EHRStore.small_subject_rows``):
    a query per call costs more than filtering a few hundred rows (``rows``)."""

    IN = "{} IN (SELECT unnest(?::{}[]))"

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.params: list[Any] = []
        self.tests: list[Callable[[Row], bool]] = []

    def add(self, term: str, test: Callable[[Row], bool], *params: Any) -> Where:
        """The SQL ``term`` (its ``?`` bound to ``params``) and the same condition in Python."""
        self.terms.append(term)
        self.tests.append(test)
        self.params += params
        return self

    def within(self, window: Window, time: str | Expression, use_start: bool = True) -> Where:
        """What ``window.keeps(row[time], use_start)`` keeps (``time`` a column or an
        ``Expression``): a row without a time is outside any bound."""
        if (use_start and window.start is not None) or window.end is not None:
            sql, get = (f'"{time}"', lambda r: r[time]) if isinstance(time, str) else time
            start = window.start if use_start else None
            bounds = [(">=", start), ("<=", window.end)]
            term = " AND ".join(f"{sql} {op} ?" for op, t in bounds if t is not None)
            params = [t for _, t in bounds if t is not None]
            self.add(term, lambda r: window.keeps(get(r), use_start), *params)
        return self

    def among(self, column: str, values: list[Any] | None, typ: str = "BIGINT") -> Where:
        """``column`` is one of ``values`` (``None``: no condition; NULL is never one)."""
        if values is None:
            return self
        wanted = set(values) - {None}
        return self.add(self.IN.format(f'"{column}"', typ), lambda r: r[column] in wanted, values)

    def stay(self, hadm: int | None, found: Stay | None, drawn: Expression, timed: str) -> Where:
        """The rows of admission ``hadm``: its own, and those without ``hadm_id`` drawn in its
        window (``reported.Stay``; a row whose ``timed`` column is NULL by the days of its
        ``drawn`` date). ``hadm`` None: no condition; ``found`` None (no such admission):
        its own rows."""
        if hadm is None or found is None:
            return self.equal("hadm_id", hadm)
        sql, get = drawn
        term = (
            f'("hadm_id" = ? OR ("hadm_id" IS NULL AND (("{timed}" IS NOT NULL AND {sql} BETWEEN ? '
            f'AND ?) OR ("{timed}" IS NULL AND CAST({sql} AS DATE) BETWEEN ? AND ?))))'
        )
        window = (found.start, found.end, found.start.date(), found.end.date())
        return self.add(
            term,
            lambda r: (
                r["hadm_id"] == hadm
                or (r["hadm_id"] is None and found.holds(get(r), r[timed] is None))
            ),
            hadm,
            *window,
        )

    def equal(self, column: str, value: Any) -> Where:
        """``column = value`` (``records.keep``; ``None``: no condition)."""
        if value is None:
            return self
        return self.add(f'"{column}" = ?', lambda r: r[column] == value, value)

    def __and__(self, other: Where) -> Where:
        """A new ``Where`` keeping what both keep (neither is changed)."""
        both = Where()
        both.terms, both.tests = self.terms + other.terms, self.tests + other.tests
        both.params = self.params + other.params
        return both

    @property
    def sql(self) -> str:
        return " AND ".join(self.terms)

    def keeps(self, row: Row) -> bool:
        return all(test(row) for test in self.tests)


def parse_day(tool: str, key: str, value: Any, end: bool) -> dt.datetime | None:
    if value is None:
        return None
    text = str(value).strip()
    try:
        if len(text) > 10:
            return dt.datetime.fromisoformat(text.replace("Z", "")[:19])
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise ToolError(
            f"{tool}: '{key}' must be a date like 2180-05-06 (YYYY-MM-DD); got {value!r}."
        ) from None
    return dt.datetime.combine(day, dt.time.max if end else dt.time.min)


#: Per store, whether each table with report times records any (``reported.reported_at``).
_RECORDED: weakref.WeakKeyDictionary[Any, dict[str, bool]] = weakref.WeakKeyDictionary()


class Chart:
    """The store access of one strict call: the session's store, its cutoff (inclusive; None:
    none) and its admission, with the reads the tools make of one subject's rows (``COLUMNS``:
    the columns the tools declared)."""

    def __init__(
        self, store: EHRStore, cutoff: dt.datetime | None, hadm_id: int | None = None
    ) -> None:
        self.store = store
        self.cutoff = cutoff
        self.hadm_id = hadm_id

    @classmethod
    def of(cls, ctx: ToolContext) -> Chart:
        """The chart of a session's tool call."""
        return cls(ctx.store, ctx.effective_cutoff(), ctx.hadm_id)

    def subject_rows(self, table: str, sid: int) -> tuple[Row, ...]:
        """Every row of ``sid`` in ``table`` in source-file order (read-only, shared), with the
        columns the tools read from it."""
        return self.store.subject_rows(table, sid, COLUMNS[table])

    def lookup(self, table: str, *key: str) -> dict[Any, Row]:
        """A dictionary table keyed by ``key`` (first row wins), built once per store."""
        return self.store.dictionary(table, key)

    def rows(self, table: str, sid: int, where: Where) -> tuple[Row, ...]:
        """The subject's rows of ``table`` that ``where`` keeps, in file order."""
        small = self.store.small_subject_rows(table, sid, COLUMNS[table])
        if small is not None:
            return tuple(r for r in small if where.keeps(r))
        return self._select(table, sid, COLUMNS[table], where)

    def distinct(self, table: str, sid: int, column: str, where: Where) -> set[Any]:
        """The distinct values of ``column`` in the subject's rows that ``where`` keeps."""
        small = self.store.small_subject_rows(table, sid, COLUMNS[table])
        if small is not None:
            return {r[column] for r in small if where.keeps(r)}
        return set(self._aggregate(table, sid, f'DISTINCT "{column}"', where))

    def newest(
        self,
        table: str,
        sid: int,
        where: Where,
        time: str,
        then: tuple[str | Expression, ...],
        count: int | None,
    ) -> tuple[int, tuple[Row, ...]]:
        """How many of the subject's rows ``where`` keeps, and the ``count`` newest of them (all
        if ``None``), as ``order(rows, by(time, desc=True), *(by(c) for c in then))`` sorts them
        (NULLs last, ties in file order), with the tools' columns of the table. A ``then`` term
        is a column or an ``Expression``."""
        terms = [(f'"{t}"', t) if isinstance(t, str) else t for t in then]
        small = self.store.small_subject_rows(table, sid, COLUMNS[table])
        if small is not None:
            kept = order(
                (r for r in small if where.keeps(r)),
                by(time, desc=True),
                *(by(k) for _, k in terms),
            )
            return len(kept), tuple(kept if count is None else kept[:count])
        order_by = ", ".join(
            (
                f'"{time}" DESC NULLS LAST',
                *(f"{sql} ASC NULLS LAST" for sql, _ in terms),
                f'"{ROW_COLUMN}"',
            )
        )
        found = self._select(table, sid, COLUMNS[table], where, order_by, count)
        if count is None:
            return len(found), found
        (total,) = self._aggregate(table, sid, "count(*)", where)
        return total, found

    def newest_groups(
        self, table: str, sid: int, where: Where, key: str, time: Expression, count: int
    ) -> tuple[int, list[Any]]:
        """How many values of ``key`` (a non-NULL column) the rows ``where`` keeps have, and the
        ``count`` of them first met in the rows ordered newest first (``time``, NULLs last), then
        by ``key``: the groups a search lists, when only a few of them are shown."""
        small = self.store.small_subject_rows(table, sid, COLUMNS[table])
        if small is not None:
            kept: Sequence[Row] = order(
                (r for r in small if where.keeps(r)), by(time[1], desc=True), by(key)
            )
        else:
            order_by = f'{time[0]} DESC NULLS LAST, "{key}" ASC NULLS LAST, "{ROW_COLUMN}"'
            kept = self._select(table, sid, (key,), where, order_by)
        groups = list(dict.fromkeys(r[key] for r in kept))
        return len(groups), groups[:count]

    def _select(
        self,
        table: str,
        sid: int,
        columns: Sequence[str],
        where: Where,
        order_by: str = f'"{ROW_COLUMN}"',
        count: int | None = None,
    ) -> tuple[Row, ...]:
        """``EHRStore.select`` of a big chart, asked once per session (``EHRStore.remembered``)."""
        key = (table, *columns, where.sql, repr(where.params), order_by, str(count))
        return self.store.remembered(  # type: ignore[return-value]  # what select gave: rows
            sid,
            key,
            lambda: self.store.select(
                table, sid, columns, where.sql, where.params, order_by, count
            ),
        )

    def _aggregate(self, table: str, sid: int, expression: str, where: Where) -> Sequence[Any]:
        """``EHRStore.aggregate`` of a big chart, asked once per session
        (``EHRStore.remembered``)."""
        key = (table, expression, where.sql, repr(where.params))
        return self.store.remembered(
            sid, key, lambda: self.store.aggregate(table, sid, expression, where.sql, where.params)
        )

    def report_time(self, table: str) -> Expression:
        """When a row of ``table`` (labevents, microbiologyevents) was reported in this store
        (``reported.reported_at``; whether the source records report times is asked once)."""
        known_tables = _RECORDED.setdefault(self.store, {})
        if table not in known_tables:
            known_tables[table] = bool(self.store.rows(recorded_sql(table))[0]["recorded"])
        return reported_at(table, known_tables[table])

    def stays(self, sid: int) -> list[Stay]:
        """The windows of the subject's admissions (``reported.stays``): a tool calling it reads
        ``strict_common.STAYS_READ``."""
        return stays(self.subject_rows("admissions", sid))
