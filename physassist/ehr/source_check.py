"""Each source table checked against its spec (``tables.py``) while its store is built.

The loader is lenient on purpose (a column a release lacks is loaded as NULL, one it does not
know is dropped), so without this check a wrong file becomes an empty chart: a labevents file
re-saved with ``;`` loads as one unknown column, and the model is then scored against "no
glucose for this patient". Here every table must show, before anything is loaded:

* a header sharing at least half of what the table needs (else: a wrong delimiter or a wrong
  file), then every key column and every column the tools read (``needs``: the spec's
  ``keys``, what the tools' ``@read_tool`` declarations name (``tools.reads``), a
  dictionary's ``lookups``; minus the ``optional`` ones a release may lack);

and, while it is loaded, every value of a typed column must parse and no key may be NULL.
Each failure is one line naming the table, the file, the column and how many rows are bad
(``SourceTableError``), and the build stops before the store is renamed into place.

DuckDB, not pandera: labevents has ~160M rows in MIMIC-IV, and a DataFrame check would need it
in memory (tens of GB) or chunked by hand. The load already parses every value with the spec's
types in its one streaming pass, and fails on the first value that does not parse, so the
checks cost nothing when the source is sound: a header line per file, and one aggregate over
the loaded key columns per table. Only when something fails is the file read again (as text,
``diagnose``) to count the bad rows per column and name the file they are in.

What a source legitimately lacks (a table, a header-only table, an optional column, columns no
tool reads) is not an error: ``gaps`` lists it once at build, with what it costs.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import duckdb

from physassist.ehr.sources import EHRBuildError, EHRSource, EHRSourceError, SourceFile
from physassist.ehr.tables import TABLES, TableSpec

#: header (lower-cased) -> the files of one table that have it, in source order
Groups = dict[tuple[str, ...], list[SourceFile]]

MAX_LINE = 64 * 1024 * 1024  # discharge notes are long; be generous
#: Rows with a broken CSV structure recorded per file when diagnosing: enough to name the
#: problem, bounded when every row of a 160M-row file is broken.
_REJECTS_LIMIT = 10_000
_DELIMITERS = (";", "\t", "|")


class SourceTableError(EHRBuildError, EHRSourceError):
    """A source table fails its check (one line: table, file, column, bad rows). Both a failed
    build and an unusable source, so every command that reports either exits with code 2."""


@dataclass(frozen=True)
class Checked:
    """The headers of a source's tables, checked: what the loader reads them by."""

    groups: dict[str, Groups]  # table -> header -> files

    def missing_columns(self, table: str) -> list[str]:
        """Spec columns some file of ``table`` lacks (loaded as NULL for its rows)."""
        spec = TABLES[table]
        return [c for c in spec.columns if any(c not in h for h in self.groups.get(table, {}))]


def csv_header(path: Path) -> tuple[str, ...]:
    """The CSV header (lower-cased), read without decompressing more than the first line: what
    the build loads by, and the width of the file pandas read (recorded as ``widths``)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as raw:
            first = raw.readline().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise EHRBuildError(f"cannot read the header of {path}: {exc}") from exc
    row = next(csv.reader(io.StringIO(first)), [])
    if not row:
        raise SourceTableError(f"{path} is empty: no CSV header line")
    return tuple(c.strip().lower() for c in row)


def check_headers(src: EHRSource) -> Checked:
    """Read every file's header and hold it to its table's ``needs``; raises
    ``SourceTableError`` on the first table that fails."""
    groups: dict[str, Groups] = {}
    for name, files in src.files.items():
        spec = TABLES[name]
        wanted = needs(spec)
        by_header: Groups = {}
        for f in files:
            try:
                header = csv_header(f.path)
            except SourceTableError as exc:
                raise SourceTableError(f"{name}: {exc}") from None
            by_header.setdefault(header, []).append(f)
        for header, group in by_header.items():
            _check_header(spec, header, group[0].path, wanted)
        groups[name] = by_header
    return Checked(groups)


def needs(spec: TableSpec) -> dict[str, str]:
    """The columns ``spec``'s files must have, each with why: its keys, then what the tools
    read from it (a dictionary: its ``lookups``), except its ``optional`` columns."""
    why = {c: "a key" for c in spec.keys}
    readers = _readers()
    if spec.is_dictionary:
        read = {c: _tools(readers, *spec.names) for c in spec.lookups}
    else:
        read = {c: sorted(ts) for c, ts in readers.get(spec.name, {}).items()}
    for column, tools in read.items():
        if column not in spec.optional:
            why.setdefault(column, f"read by {', '.join(tools)}")
    return why


def _readers() -> dict[str, dict[str, set[str]]]:
    """table -> column -> the read tools that declared it. Imported here, not at the top: the
    tools package (which declares them as it is imported) imports the store, which imports us."""
    from physassist.ehr.tools.reads import read_by

    return read_by()


def _tools(readers: Mapping[str, Mapping[str, set[str]]], *tables: str) -> list[str]:
    """The read tools that read any column of any of ``tables``."""
    return sorted({t for table in tables for ts in readers.get(table, {}).values() for t in ts})


def _check_header(
    spec: TableSpec, header: tuple[str, ...], path: Path, wanted: Mapping[str, str]
) -> None:
    missing = [c for c in wanted if c not in header]
    if 2 * (len(wanted) - len(missing)) < len(wanted):
        raise SourceTableError(
            f"{spec.name}: {path}: its header has {len(wanted) - len(missing)} of the "
            f"{len(wanted)} columns {spec.name} needs{_shape(header)}; a wrong delimiter, or not "
            f"a {spec.name} table"
        )
    if missing:
        raise SourceTableError(
            f"{spec.name}: {path}: no column "
            + "; no column ".join(f"{c} ({wanted[c]})" for c in missing)
        )


def _shape(header: tuple[str, ...]) -> str:
    """What the header looks like, when one column hides several (a wrong delimiter)."""
    if len(header) != 1:
        return ""
    text = header[0] if len(header[0]) <= 60 else header[0][:57] + "..."
    delimiter = next((d for d in _DELIMITERS if d in header[0]), None)
    guess = f"; delimiter {delimiter!r}? MIMIC-IV tables are comma-separated" if delimiter else ""
    return f" (it reads as one column, {text!r}{guess})"


# --------------------------------------------------------------------------- while loading


def check_keys(con: duckdb.DuckDBPyConnection, spec: TableSpec, groups: Groups) -> None:
    """After ``spec``'s rows are loaded: no key may be NULL (one aggregate over the loaded
    columns); if one is, read the files again to say which file and how many rows."""
    if not spec.keys:
        return
    counts = ", ".join(f'count(*) FILTER (WHERE "{k}" IS NULL)' for k in spec.keys)
    nulls = con.execute(f'SELECT {counts} FROM "{spec.name}"').fetchone() or ()
    empty = [(k, n) for k, n in zip(spec.keys, nulls, strict=True) if n]
    if empty:
        key, n = empty[0]
        raise diagnose(spec, groups) or SourceTableError(
            f"{spec.name}: key column {key} is empty on {n:,} rows"
        )


def diagnose(spec: TableSpec, groups: Groups) -> SourceTableError | None:
    """Read ``spec``'s files again as text and name the first bad file, the column and its bad
    rows: broken CSV rows, values that do not parse as the column's type, empty keys. None if
    nothing is found (the caller then reports DuckDB's own error: e.g. a truncated gzip)."""
    con = duckdb.connect()
    try:
        for header, files in groups.items():
            problem = _first_problem(con, spec, header, files)
            if problem is not None:
                return problem
    except duckdb.Error:
        return None
    finally:
        con.close()
    return None


def _first_problem(
    con: duckdb.DuckDBPyConnection,
    spec: TableSpec,
    header: tuple[str, ...],
    files: list[SourceFile],
) -> SourceTableError | None:
    typed = [(c, spec.columns[c]) for c in header if spec.columns.get(c, "VARCHAR") != "VARCHAR"]
    keys = [k for k in spec.keys if k in header]
    bad = {c: f'"{c}" IS NOT NULL AND TRY_CAST("{c}" AS {t}) IS NULL' for c, t in typed}
    parts = ["count(*)"]
    parts += [
        f'count(*) FILTER (WHERE {b}), any_value("{c}") FILTER (WHERE {b})' for c, b in bad.items()
    ]
    parts += [f'count(*) FILTER (WHERE "{k}" IS NULL)' for k in keys]
    columns = ", ".join(f"'{c}': 'VARCHAR'" for c in header)
    rows = con.execute(
        f"SELECT filename, {', '.join(parts)} FROM read_csv(?, header = true, auto_detect = false, "
        f"delim = ',', quote = '\"', escape = '\"', max_line_size = {MAX_LINE}, "
        f"columns = {{{columns}}}, filename = true, store_rejects = true, "
        f"rejects_limit = {_REJECTS_LIMIT}) GROUP BY filename",
        [[str(f.path) for f in files]],
    ).fetchall()
    found = {Path(r[0]): r[1:] for r in rows}
    broken = _broken_rows(con)
    for f in files:
        if f.path in broken:
            n, capped, line, message = broken[f.path]
            at_least = "at least " if capped else ""
            return SourceTableError(
                f"{spec.name}: {f.path}: {at_least}{n:,} rows do not have its header's "
                f"{len(header)} columns (line {line}: {message})"
            )
        counts = found.get(f.path)
        if counts is None:
            continue
        total, rest = counts[0], counts[1:]
        for i, (column, typ) in enumerate(typed):
            n, example = rest[2 * i], rest[2 * i + 1]
            if n:
                return SourceTableError(
                    f"{spec.name}: {f.path}: column {column}: {n:,} of {total:,} rows do not "
                    f"parse as {typ} (e.g. {example!r})"
                )
        for k, n in zip(keys, rest[2 * len(typed) :], strict=True):
            if n:
                return SourceTableError(
                    f"{spec.name}: {f.path}: key column {k} is empty on {n:,} of {total:,} rows"
                )
    return None


def _broken_rows(con: duckdb.DuckDBPyConnection) -> dict[Path, tuple[int, bool, int, str]]:
    """file -> (rows DuckDB's reader rejected, whether it stopped recording them, the first
    one's line, its error), from the rejects tables ``read_csv(store_rejects = true)`` wrote
    (a row lacking 14 columns is 14 rejects of one line)."""
    rows = con.execute(
        "SELECT s.file_path, count(DISTINCT e.line), count(*) >= ?, min(e.line), "
        "arg_min(e.error_message, e.line) "
        "FROM reject_errors e JOIN reject_scans s USING (scan_id, file_id) GROUP BY s.file_path",
        [_REJECTS_LIMIT],
    ).fetchall()
    return {
        Path(p): (int(n), bool(capped), int(line), str(msg)) for p, n, capped, line, msg in rows
    }


# --------------------------------------------------------------------------- what is lacking


def gaps(src: EHRSource, checked: Checked, rows: Mapping[str, int]) -> list[str]:
    """One line per thing ``src`` legitimately lacks, with what it costs: absent tables, tables
    without rows, optional columns; then one line for the columns no tool reads."""
    readers = _readers()
    lines: list[str] = []
    for name, spec in TABLES.items():
        where = f"{spec.module}/{name}"
        if name not in src.files:
            lines.append(f"no {where}: {_cost(spec, readers)}")
        elif rows.get(name, 0) == 0:
            lines.append(f"{where} has no rows: {_cost(spec, readers)}")
    unread: list[str] = []
    for name in checked.groups:
        spec = TABLES[name]
        missing = checked.missing_columns(name)
        optional = [c for c in missing if c in spec.optional]
        if optional:
            tools = sorted({t for c in optional for t in readers.get(name, {}).get(c, ())})
            lines.append(
                f"{name} lacks {', '.join(optional)}: shown as unknown by {', '.join(tools)}"
            )
        if len(missing) > len(optional):
            unread.append(f"{name} {len(missing) - len(optional)}")
    if unread:
        lines.append(f"columns no tool reads, absent (loaded as NULL): {', '.join(unread)}")
    return lines


def _cost(spec: TableSpec, readers: Mapping[str, Mapping[str, set[str]]]) -> str:
    tools = ", ".join(_tools(readers, *(spec.names if spec.is_dictionary else (spec.name,))))
    if not tools:
        cost = "no tool reads it"
    elif spec.is_dictionary:
        cost = f"{' and '.join(spec.names)} codes go without names in {tools}"
    else:
        cost = f"nothing of it in {tools} answers"
    if spec.scenarios:
        cost += f"; {', '.join(spec.scenarios)} sessions cannot be built"
    return cost
