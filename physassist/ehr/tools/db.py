"""Thin, parameterized access to the store: every value travels as a bound parameter."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from .context import ToolContext


def rows(
    ctx: ToolContext, sql: str, params: list[Any] | tuple[Any, ...] = ()
) -> list[dict[str, Any]]:
    """Run one read-only query and return the rows as dicts.

    Uses the store's memoised ``rows`` when every parameter is hashable (lists are not), so a
    session re-asking the same question costs a dictionary lookup; otherwise a fresh cursor.
    """
    memo = getattr(ctx.store, "rows", None)
    if memo is not None and not any(isinstance(p, list | dict | set) for p in params):
        return memo(sql, list(params))
    cur = ctx.store.cursor()
    try:
        result = cur.execute(sql, list(params))
        names = [d[0] for d in result.description]
        return [dict(zip(names, r, strict=True)) for r in result.fetchall()]
    finally:
        close = getattr(cur, "close", None)
        if close is not None:
            close()


def rows_and_total(
    ctx: ToolContext, sql: str, params: list[Any]
) -> tuple[list[dict[str, Any]], int]:
    """The rows of a query that also selects ``count(*) OVER () AS n_total``, and that count of
    matches before its ``LIMIT`` (0 when nothing matched): a searchset's true ``total``."""
    found = rows(ctx, sql, params)
    return found, (found[0]["n_total"] if found else 0)


def ts(column: str) -> str:
    """SQL text of a time column as ``YYYY-MM-DD HH:MM:SS`` whether stored as TIMESTAMP or text."""
    return f"CAST({column} AS VARCHAR)"


def like_escape(text: str) -> str:
    """Escape ``%``, ``_`` and ``\\`` so user text is matched literally by ``ILIKE ... ESCAPE '\\'``."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def placeholders(values: Collection[Any]) -> str:
    """``?, ?, ?`` for an IN list: scalar parameters keep a query memoisable by the store."""
    return ", ".join("?" for _ in values)


def and_equal(column: str, value: Any, params: list[Any]) -> str:
    """`` AND column = ?`` with ``value`` bound, or nothing when ``value`` is None."""
    if value is None:
        return ""
    params.append(value)
    return f" AND {column} = ?"


def and_contains(column: str, text: str | None, params: list[Any]) -> str:
    """The compat substring filter: ``text`` found in ``column``, literally and ignoring case
    (pandas ``str.contains(case=False)`` over a literal); nothing when ``text`` is None."""
    if text is None:
        return ""
    params.append(text)
    return f" AND strpos(lower({column}), lower(?)) > 0"


def and_ilike(column: str, text: str | None, params: list[Any]) -> str:
    """The strict substring filter: escaped ``ILIKE``, so user wildcards match literally;
    nothing when ``text`` is None or empty."""
    if not text:
        return ""
    params.append(f"%{like_escape(text)}%")
    return f" AND {column} ILIKE ? ESCAPE '\\'"
