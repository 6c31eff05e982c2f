"""The EHR store: one DuckDB file per source, built once, then opened read-only and shared.

``build_store`` loads every canonical table (``tables.py``) with DuckDB's own streaming CSV
reader (explicit column types, no pandas, no type sniffing), sorts per-subject tables by
``(subject_id, time)`` so a subject's rows sit in one or two row groups that zone maps find
without scanning the rest, and writes into a temporary file that is renamed into place
only when complete: an interrupted or failed build leaves no store behind. Stores are
cached as ``<cache_dir>/<fingerprint>.duckdb`` (see ``EHRSource.fingerprint``), so the same
source is loaded once and a changed source gets a fresh store.

``open_store`` returns an ``EHRStore``: a read-only connection that hands out one cursor per
call or thread, and keeps the rows the tools read (a subject's rows per table, the
dictionary tables) in memory once loaded. DuckDB allows any number of read-only processes
on the same file, so parallel sweeps can share one store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

import duckdb

from physassist.ehr.manifest import damage, read_manifest, write_manifest
from physassist.ehr.source_check import (
    MAX_LINE,
    Checked,
    Groups,
    SourceTableError,
    check_headers,
    check_keys,
    csv_header,
    diagnose,
    gaps,
)
from physassist.ehr.sources import (
    STORE_SCHEMA_VERSION,
    EHRBuildError,
    EHRSource,
    EHRSourceError,
    detect_source,
)
from physassist.ehr.subject_cache import Key, Rows, SubjectCache
from physassist.ehr.tables import ROW_COLUMN, TABLES, TableSpec, create_table_sql

__all__ = [
    "EHRBuildError",
    "EHRSourceError",
    "EHRStore",
    "SourceTableError",
    "build_store",
    "csv_header",
    "default_cache_dir",
    "open_store",
    "prune_stores",
]

log = logging.getLogger(__name__)

META_TABLE = "_physassist_meta"
COUNTS_TABLE = "_physassist_tables"
_TEMP_MARK = ".building"
#: A subject's rows of one table up to which ``small_subject_rows`` keeps them in memory.
SMALL_CHART_ROWS = 2_000
_BIG_MEMO = 65_536  # (subject, table) pairs remembered as bigger
#: Columns cleaned on load. ICD codes are keys joined against their dictionary; some exports
#: pad them with blanks, and a join on ``trim(...)`` cannot use zone maps or join filters.
_NORMALISE = {"icd_code": "trim({})"}


def default_cache_dir() -> Path:
    """``$PHYSASSIST_CACHE`` if set, else ``~/.cache/physassist/stores``."""
    env = os.environ.get("PHYSASSIST_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "physassist" / "stores"


def build_store(
    source: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
    force: bool = False,
) -> Path:
    """Build (or reuse) the store for ``source`` and return the path of its ``.duckdb`` file.

    A cached store is reused only if it matches its integrity manifest (``manifest.py``); a
    damaged one (truncated, overwritten) is rebuilt with a warning naming what was wrong.
    A new store is built only from a source whose tables pass ``source_check`` (else
    ``SourceTableError``, and no store); what the source lacks is logged once, as a warning."""
    src = detect_source(source)
    fingerprint = src.fingerprint()
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    final = cache / f"{fingerprint}.duckdb"
    if not force and _intact(final, warn=False):
        return final
    _require_writable(cache)
    checked = check_headers(src)  # a wrong file fails here, before anything is written
    with _exclusive(cache / ".build.lock"):
        if not force and _intact(final, warn=True):  # another process built it while we waited
            return final
        _remove_abandoned_temps(cache)
        tmp = cache / f".{fingerprint}.{os.getpid()}.{uuid.uuid4().hex[:8]}{_TEMP_MARK}"
        spill = Path(f"{tmp}.spill")
        try:
            with _told_when_slow(src.root, cache, final.name):
                lacking = _load(src, checked, fingerprint, tmp, spill)
            os.replace(tmp, final)
        finally:
            for leftover in (tmp, Path(f"{tmp}.wal")):
                leftover.unlink(missing_ok=True)
            shutil.rmtree(spill, ignore_errors=True)
        info = {"fingerprint": fingerprint, "source": str(src.root), "layout": src.layout}
        write_manifest(final, info)
        _remove_superseded(cache, src.root, keep=final)
    if lacking:
        log.warning("EHR source %s lacks, at a cost:\n  %s", src.root, "\n  ".join(lacking))
    return final


#: A build still running after this many seconds says so (INFO, which a command shows), and then
#: how long it took: the full MIMIC-IV takes minutes. A quicker one (the sample ~1 s, the
#: MIMIC-IV demo ~2 s) is not news on a command's console: DEBUG.
ANNOUNCE_S = 5.0


@contextlib.contextmanager
def _told_when_slow(source: Path, cache: Path, name: str) -> Iterator[None]:
    """Log the build the block runs: at INFO when it lasts ``ANNOUNCE_S`` (that it is building,
    while it runs, then how long it took), else only its time at DEBUG."""
    told = threading.Event()

    def tell() -> None:
        told.set()
        log.info("building the EHR store of %s in %s (once per source) ...", source, cache)

    timer = threading.Timer(ANNOUNCE_S, tell)
    timer.daemon = True
    started = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()  # a line being told is out before the last one
    level = logging.INFO if told.is_set() else logging.DEBUG
    log.log(level, "built %s from %s in %.1fs", name, source, time.perf_counter() - started)


def find_store(
    source_or_db: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None
) -> Path | None:
    """The built store of a ``.duckdb`` file or a source, if it exists; never builds one
    (a run's tracking asks after the eval, which may never have opened the store)."""
    path = Path(source_or_db).expanduser() if str(source_or_db) != "sample" else None
    if path is not None and path.is_file() and path.suffix == ".duckdb":
        return path
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    built = cache / f"{detect_source(source_or_db).fingerprint()}.duckdb"
    return built if built.exists() else None


def open_store(
    source_or_db: str | os.PathLike[str],
    *,
    cache_dir: str | os.PathLike[str] | None = None,
) -> EHRStore:
    """Open a store read-only: a ``.duckdb`` file as is, or a source (built first if needed).

    A ``.duckdb`` file with a manifest beside it (every store ``build_store`` made) is checked
    against it first and refused with one line if damaged; one without is opened as given."""
    path = Path(source_or_db).expanduser() if str(source_or_db) != "sample" else None
    if path is not None and path.is_file() and path.suffix == ".duckdb":
        info = read_manifest(path)
        if info is not None:
            problem = damage(path)
            if problem is not None:
                raise EHRSourceError(
                    f"EHR store {path} is damaged ({problem}); rebuild it with: physassist-ehr "
                    f"build {info.get('source', '<source>')} --force"
                )
        return EHRStore(path)
    return EHRStore(build_store(source_or_db, cache_dir=cache_dir))


class EHRStore:
    """A built store opened read-only; ``cursor()`` gives each call or thread its own handle."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        cache_rows: int | None = None,
        prefetch: bool = True,
    ) -> None:
        self.path = Path(path).resolve()
        try:
            self._con = duckdb.connect(str(self.path), read_only=True, config=_reader_config())
        except duckdb.Error as exc:
            raise EHRSourceError(f"cannot open EHR store {self.path}: {exc}") from exc
        try:
            meta = dict(self._con.execute(f"SELECT key, value FROM {META_TABLE}").fetchall())
            if int(meta["schema_version"]) != STORE_SCHEMA_VERSION:
                self._con.close()
                raise EHRSourceError(
                    f"EHR store {self.path} has schema {meta['schema_version']}, this PhysAssist "
                    f"reads {STORE_SCHEMA_VERSION}; rebuild it with: physassist-ehr build "
                    f"{meta.get('source', '<source>')} --force"
                )
            counts = self._con.execute(f"SELECT name, n_rows, width FROM {COUNTS_TABLE}").fetchall()
        except duckdb.CatalogException as exc:
            self._con.close()
            raise EHRSourceError(f"{self.path} is not a PhysAssist EHR store") from exc
        except duckdb.Error as exc:  # e.g. a truncated file: its catalog points past the end
            self._con.close()
            raise EHRSourceError(f"cannot read EHR store {self.path}: {exc}") from exc
        self.fingerprint: str = meta["fingerprint"]
        self.source = Path(meta["source"])
        self.layout: str = meta["layout"]
        self.schema_version = int(meta["schema_version"])
        #: What the source lacks and what it costs, as listed when the store was built.
        self.gaps: tuple[str, ...] = tuple(json.loads(meta.get("gaps", "[]")))
        self._rows: dict[str, int] = {name: int(n) for name, n, _ in counts}
        #: Columns of each table's (first) source file, recorded at build time: the width pandas
        #: read (``tools.compat_frames``), known without the source files.
        self.widths: dict[str, int] = {name: int(w) for name, _, w in counts}
        self._lock = threading.Lock()
        self._subjects = SubjectCache(cache_rows)
        self._prefetch = prefetch
        self._filler: ThreadPoolExecutor | None = None
        self._filling: set[int] = set()
        self._closed = False
        self._dictionaries: dict[tuple[str, tuple[str, ...]], dict[Any, dict[str, Any]]] = {}
        self._loading: dict[Hashable, threading.Lock] = {}
        self._big: OrderedDict[tuple[int, str], None] = OrderedDict()  # small_subject_rows

    def cursor(self) -> duckdb.DuckDBPyConnection:
        """A new read-only cursor on the shared database; use one per call or thread."""
        with self._lock:
            return self._con.cursor()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        """Run one read-only query on a fresh cursor and return its rows as dicts."""
        cur = self.cursor()
        try:
            result = cur.execute(sql, list(params))
            names = [d[0] for d in result.description]
            return [dict(zip(names, r, strict=True)) for r in result.fetchall()]
        finally:
            cur.close()

    def subject_rows(self, table: str, subject_id: int, columns: Sequence[str]) -> Rows:
        """``columns`` of every row of one subject in ``table``, in source-file order.

        Sessions ask about one patient many times. One plain query per (subject, table) costs
        ~0.5-1 ms, against 2-3 ms of DuckDB planning for the tools' former SQL, so the tools
        filter, join and sort these rows in Python instead. The store never changes once
        built, so rows are kept (``SubjectCache``; see also ``prefetch``). Shared between
        calls and threads: callers must not modify the rows.
        """
        key = (table, tuple(columns))
        cached = self._subjects.get(subject_id, key)
        if cached is not None:
            return cached
        if not TABLES[table].per_subject:
            raise KeyError(f"{table!r} is not a per-subject table")
        with self._once((subject_id, key)):
            cached = self._subjects.get(subject_id, key)  # loaded by the thread we waited for
            if cached is None:
                cached = self._load(key, subject_id)
                self._subjects.put(subject_id, key, cached)
            return cached

    def small_subject_rows(
        self, table: str, subject_id: int, columns: Sequence[str], limit: int | None = None
    ) -> Rows | None:
        """``subject_rows`` if the subject has at most ``limit`` rows in ``table``, else None:
        then the caller asks the store for what it keeps (``select``, ``aggregate``). Filtering
        a few hundred rows kept in memory costs less than a query per call; loading a big
        chart's hundreds of thousands costs far more. One query either way (``LIMIT limit + 1``);
        a big chart is remembered as such. ``limit`` defaults to ``SMALL_CHART_ROWS``."""
        limit = SMALL_CHART_ROWS if limit is None else limit
        key = (table, tuple(columns))
        cached = self._subjects.get(subject_id, key)
        if cached is not None or (subject_id, table) in self._big:
            return cached
        with self._once((subject_id, key)):
            cached = self._subjects.get(subject_id, key)
            if cached is not None:
                return cached
            names = (*columns, ROW_COLUMN)  # unordered: a big chart's probe sorts nothing
            probe = self._fetch(table, subject_id, names, order_by=None, limit=limit + 1)
            if len(probe[ROW_COLUMN]) <= limit:  # all of them: in file order, as dicts
                found = _as_rows(table, names, probe, probe[ROW_COLUMN].argsort(kind="stable"))
                self._subjects.put(subject_id, key, found)
                return found
            with self._lock:
                self._big[(subject_id, table)] = None
                if len(self._big) > _BIG_MEMO:
                    self._big.popitem(last=False)
            return None

    @contextlib.contextmanager
    def _once(self, what: Hashable) -> Iterator[None]:
        """Hold the lock of loading ``what``: concurrent first calls (the eval runs tools in
        threads; ``prefetch`` loads beside them) wait for one load instead of each making
        their own, which on a big chart or the 112k-row ICD dictionary cost a second each."""
        with self._lock:
            lock = self._loading.setdefault(what, threading.Lock())
        with lock:
            yield
        with self._lock:
            if not lock.locked():
                self._loading.pop(what, None)

    def prefetch(self, subject_id: int, keys: Iterable[tuple[str, Sequence[str]]]) -> None:
        """Start loading, in a background thread, the (table, columns) of ``keys`` that this
        subject's cache lacks, so later calls find them in memory. Returns at once; meant
        for when a session opens a patient's chart, not inside a call it would slow down."""
        if not self._prefetch or self._closed or subject_id in self._filling:
            return
        wanted = self._subjects.missing(subject_id, [(t, tuple(c)) for t, c in keys])
        if not wanted:
            return
        self._filling.add(subject_id)
        if self._filler is None:
            self._filler = ThreadPoolExecutor(1, thread_name_prefix="physassist-prefetch")
        self._filler.submit(self._fill, subject_id, wanted)

    def _load(self, key: Key, subject_id: int) -> Rows:
        table, columns = key
        return self.select(table, subject_id, columns)

    def select(
        self,
        table: str,
        subject_id: int,
        columns: Sequence[str],
        where: str = "",
        params: Sequence[Any] = (),
        order_by: str = f'"{ROW_COLUMN}"',
        limit: int | None = None,
    ) -> Rows:
        """``columns`` (and ``_row``) of one subject's rows in ``table`` that match the SQL
        ``where`` (its ``?`` bound to ``params``), in source-file order unless ``order_by``;
        not cached. For a big chart a call that keeps a few rows of hundreds of thousands
        asks DuckDB for those (~1-3 ms) instead of loading all of them into Python (~3 us
        a row). Rows are fetched by column (numpy, ~30% faster than row tuples: ``_as_rows``)."""
        names = (*columns, ROW_COLUMN)
        return _as_rows(
            table, names, self._fetch(table, subject_id, names, order_by=order_by, limit=limit, where=where, params=params)
        )

    def subject_columns(
        self,
        table: str,
        subject_id: int,
        names: Sequence[str],
        where: str = "",
        params: Sequence[Any] = (),
    ) -> dict[str, Any]:
        """The columns ``names`` of one subject's rows in ``table`` that match ``where``, in no
        order, as numpy arrays (NULLs masked): for a caller that computes over a big chart's
        column (compat's sort keys) rather than its rows."""
        return self._fetch(
            table, subject_id, names, order_by=None, limit=None, where=where, params=params
        )

    def _fetch(
        self,
        table: str,
        subject_id: int,
        names: Sequence[str],
        *,
        order_by: str | None,
        limit: int | None,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> dict[str, Any]:
        """The columns ``names`` of one subject's rows in ``table``, as numpy arrays (unordered
        when ``order_by`` is None: ``small_subject_rows``' probe); the defaults are ``select``'s."""
        if not TABLES[table].per_subject:
            raise KeyError(f"{table!r} is not a per-subject table")
        select = ", ".join(f'"{c}"' for c in names)
        sql = f'SELECT {select} FROM "{table}" WHERE subject_id = ?'
        sql += f" AND ({where})" if where else ""
        sql += f" ORDER BY {order_by}" if order_by else ""
        sql += f" LIMIT {int(limit)}" if limit is not None else ""
        cur = self.cursor()
        try:
            return cur.execute(sql, [subject_id, *params]).fetchnumpy()
        finally:
            cur.close()

    def aggregate(
        self,
        table: str,
        subject_id: int,
        expression: str,
        where: str = "",
        params: Sequence[Any] = (),
    ) -> list[Any]:
        """One SQL ``expression`` over one subject's rows of ``table`` matching ``where``, one
        value per result row (e.g. ``DISTINCT itemid`` or ``count(*)``)."""
        sql = f'SELECT {expression} FROM "{table}" WHERE subject_id = ?'
        sql += f" AND ({where})" if where else ""
        cur = self.cursor()
        try:
            return [r[0] for r in cur.execute(sql, [subject_id, *params]).fetchall()]
        finally:
            cur.close()

    def remembered(
        self, subject_id: int, key: tuple[str, ...], load: Callable[[], Sequence[Any]]
    ) -> Sequence[Any]:
        """What ``load()`` gives (a query's rows or values for one subject), kept with the
        subject's rows under ``key`` (in ``SubjectCache``'s row budget): a session asks a big
        chart the same questions turn after turn (distinct items, a code's newest rows), and
        the store never changes. ``key`` must name everything the result depends on (table,
        SQL, parameters, order, limit)."""
        cache_key = ("?", key)
        cached = self._subjects.get(subject_id, cache_key)
        if cached is None:
            cached = tuple(load())
            self._subjects.put(subject_id, cache_key, cached)
        return cached

    def _fill(self, subject_id: int, keys: list[Key]) -> None:
        try:
            for key in keys:
                if self._closed:
                    return
                if self._subjects.get(subject_id, key) is None:
                    self.subject_rows(key[0], subject_id, key[1])
        except Exception:  # runs in a pool nobody waits on: say so; calls load on demand anyway
            if not self._closed:  # a load cut short by close() is expected
                log.warning("prefetch for subject %s failed", subject_id, exc_info=True)
        finally:
            self._filling.discard(subject_id)

    def dictionary(self, table: str, key: Sequence[str]) -> dict[Any, dict[str, Any]]:
        """A dictionary table (``d_labitems``, ``d_items``, ``d_icd_diagnoses``) keyed by the
        ``key`` columns (one column: its value; several: a tuple), first row in file order
        winning. Loaded once per open store; the full ICD dictionary (~110k rows) takes
        ~0.1-0.2 s, which every later lookup saves a query for."""
        cache_key = (table, tuple(key))
        cached = self._dictionaries.get(cache_key)
        if cached is not None:
            return cached
        if not TABLES[table].is_dictionary:
            raise KeyError(f"{table!r} is not a dictionary table")
        with self._once(cache_key):
            cached = self._dictionaries.get(cache_key)
            if cached is not None:
                return cached
            records = self.rows(f'SELECT * FROM "{table}" ORDER BY "{ROW_COLUMN}"')
            single = len(key) == 1
            loaded: dict[Any, dict[str, Any]] = {}
            for r in records:
                loaded.setdefault(r[key[0]] if single else tuple(r[k] for k in key), r)
            self._dictionaries[cache_key] = loaded
            return loaded

    def has_rows(self, table: str) -> bool:
        """Whether ``table`` (a canonical name) holds any row in this store."""
        if table not in self._rows:
            raise KeyError(f"unknown EHR table {table!r}; known: {', '.join(self._rows)}")
        return self._rows[table] > 0

    def row_counts(self) -> dict[str, int]:
        """Rows per canonical table, recorded at build time."""
        return dict(self._rows)

    def close(self) -> None:
        self._closed = True
        if self._filler is not None:
            self._filler.shutdown(wait=True, cancel_futures=True)
        self._con.close()

    def __enter__(self) -> EHRStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"EHRStore({self.path.name}, layout={self.layout}, source={self.source})"


def _as_rows(table: str, names: Sequence[str], found: dict[str, Any], order: Any = None) -> Rows:
    """Rows as dicts from ``fetchnumpy`` columns (in ``order``, an index array, if given), with
    ``fetchall``'s Python values: ``tolist`` gives int, float, str, datetime and None for NULL;
    DATE columns come as datetime64 and are converted to ``date``."""
    types = TABLES[table].columns
    values = []
    for c in names:
        column = found[c] if order is None else found[c][order]
        values.append(
            (column.astype("datetime64[D]") if types.get(c) == "DATE" else column).tolist()
        )
    return tuple(dict(zip(names, r, strict=True)) for r in zip(*values, strict=True))


def _reader_config() -> dict[str, Any]:
    """DuckDB settings for serving many small per-subject queries.

    * ``threads = 1``: a subject's rows sit in one or two row groups, so a query has nothing
      to parallelise; waking worker threads only adds latency (measured ~2x at the median on
      a loaded 2-core machine). Concurrency comes from callers' own threads, each running its
      cursor's query itself. ``$PHYSASSIST_DUCKDB_THREADS`` overrides (e.g. for analytics).
    * ``compressed_materialization`` off: it compresses sort payloads, which pays off for
      millions of rows and costs ~0.5 ms on the tens of rows a per-subject query sorts.
    * ``memory_limit`` 2GB (``$PHYSASSIST_DUCKDB_READER_MEMORY``): DuckDB's default, 80% of
      RAM, lets its block cache grow with every patient read (1.2 GB after 2,000 random
      patients of the 100k cohort), in each process of a parallel sweep.
    """
    return {
        "threads": int(os.environ.get("PHYSASSIST_DUCKDB_THREADS", "1")),
        "disabled_optimizers": "compressed_materialization",
        "memory_limit": os.environ.get("PHYSASSIST_DUCKDB_READER_MEMORY", "2GB"),
    }


# --------------------------------------------------------------------------- loading


def _load(
    src: EHRSource, checked: Checked, fingerprint: str, target: Path, spill: Path
) -> list[str]:
    """Load every table into ``target``; returns what the source lacks (``source_check.gaps``)."""
    con = duckdb.connect(str(target))
    try:
        con.execute("SET preserve_insertion_order = true")
        con.execute("SET temp_directory = ?", [str(spill)])
        con.execute("SET memory_limit = ?", [_memory_limit()])
        counts: dict[str, tuple[int, int, int]] = {}
        for name, spec in TABLES.items():
            con.execute(create_table_sql(spec))
            groups = checked.groups.get(name, {})
            if groups:
                _load_table(con, spec, groups)
            n_rows = con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]
            width = len(next(iter(groups))) if groups else len(spec.columns)
            counts[name] = (n_rows, len(src.files.get(name, ())), width)
        lacking = gaps(src, checked, {name: c[0] for name, c in counts.items()})
        con.execute(f"CREATE TABLE {META_TABLE} (key VARCHAR, value VARCHAR)")
        meta = {
            "fingerprint": fingerprint,
            "schema_version": str(STORE_SCHEMA_VERSION),
            "layout": src.layout,
            "source": str(src.root),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "duckdb_version": duckdb.__version__,
            "gaps": json.dumps(lacking),
        }
        con.executemany(f"INSERT INTO {META_TABLE} VALUES (?, ?)", list(meta.items()))
        con.execute(
            f"CREATE TABLE {COUNTS_TABLE} (name VARCHAR, n_rows BIGINT, n_files INTEGER, width INTEGER)"
        )
        con.executemany(
            f"INSERT INTO {COUNTS_TABLE} VALUES (?, ?, ?, ?)",
            [(n, *c) for n, c in counts.items()],
        )
        con.execute("CHECKPOINT")
    finally:
        con.close()
    return lacking


def _load_table(con: duckdb.DuckDBPyConnection, spec: TableSpec, groups: Groups) -> None:
    """Insert all files of one table (grouped by header), sorted by its sort key then source
    order; a value that does not parse or an empty key stops the build (``source_check``)."""
    parts, params = [], []
    for g, (header, group) in enumerate(groups.items()):
        types = ", ".join(f"'{c}': '{spec.columns.get(c, 'VARCHAR')}'" for c in header)
        select = ", ".join(_select_expr(c, t, header) for c, t in spec.columns.items())
        parts.append(
            f"SELECT {select}, row_number() OVER () + {g << 40} AS {ROW_COLUMN} "
            f"FROM read_csv(?, header = true, auto_detect = false, delim = ',', quote = '\"', "
            f"escape = '\"', max_line_size = {MAX_LINE}, columns = {{{types}}})"
        )
        params.append([str(f.path) for f in group])
    order = ", ".join(f'"{c}"' for c in (*spec.sort_key, ROW_COLUMN))
    sql = f'INSERT INTO "{spec.name}" SELECT * FROM ({" UNION ALL ".join(parts)}) ORDER BY {order}'
    try:
        con.execute(sql, params)
    except duckdb.Error as exc:
        files = [f for group in groups.values() for f in group]
        where = (
            files[0].path if len(files) == 1 else f"{len(files)} files under {files[0].path.parent}"
        )
        found = diagnose(spec, groups)
        raise found or EHRBuildError(
            f"cannot load table {spec.name!r} from {where}: {exc}"
        ) from exc
    check_keys(con, spec, groups)


def _select_expr(column: str, typ: str, header: tuple[str, ...]) -> str:
    """The canonical column from a file: as read, cleaned (``_NORMALISE``), or NULL if absent."""
    quoted = f'"{column}"'
    if column not in header:
        return f"CAST(NULL AS {typ}) AS {quoted}"
    if column in _NORMALISE:
        return f"{_NORMALISE[column].format(quoted)} AS {quoted}"
    return quoted


def _memory_limit() -> str:
    """``$PHYSASSIST_DUCKDB_MEMORY`` or 40% of RAM (60% on a small machine, up to 1.5 GiB: the
    CSV reader's buffers need ~1 GiB). The build's peak RSS follows the largest sort
    (chartevents) up to this limit, then DuckDB spills: 9.9 GiB at 10% of MIMIC-IV's volume, so
    a full build sits at the limit; 60% of a 24 GB machine is 14 GiB, 40% keeps it near 10
    (``benchmarks/README.md``, full MIMIC-IV scale)."""
    env = os.environ.get("PHYSASSIST_DUCKDB_MEMORY")
    if env:
        return env
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return "4GB"
    limit = max(total * 0.4, min(total * 0.6, 1.5 * 2**30))
    return f"{max(1, int(limit) // 2**20)}MB"


# --------------------------------------------------------------------------- cache housekeeping


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Serialise builds in one cache dir across processes (joblib sweeps open stores at once)."""
    try:
        import fcntl
    except ImportError:  # Windows: no cross-process lock; temp-file + rename still keeps it safe
        yield
        return
    with open(lock_path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _remove_abandoned_temps(cache: Path) -> None:
    """Delete temp files of builds whose process died (e.g. killed by SIGKILL)."""
    for tmp in cache.glob(f".*{_TEMP_MARK}*"):
        parts = tmp.name.split(".")
        pid = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
        if pid is not None and pid != os.getpid() and _alive(pid):
            continue
        if tmp.is_dir():
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            tmp.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_superseded(cache: Path, root: Path, *, keep: Path) -> None:
    """Drop older stores of the same source directory (its files changed since)."""
    for store, info in _cached(cache):
        if store != keep and info.get("source") == str(root):
            _remove(cache, store)


def prune_stores(cache_dir: str | os.PathLike[str] | None = None) -> tuple[dict[Path, int], int]:
    """Remove the cached stores nothing can reuse: their source is gone, or has changed since
    (its fingerprint is no longer the store's name). A source that exists but cannot be read
    now keeps its store. Returns the stores removed with their sizes, and how many there were.
    A process that has one open keeps reading it (the file goes when it closes it)."""
    cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
    if not cache.is_dir():
        return {}, 0
    removed: dict[Path, int] = {}
    with _exclusive(cache / ".build.lock"):  # not while a build adds one
        stores = _cached(cache)
        for store, info in stores:
            try:
                current = detect_source(info["source"]).fingerprint()
            except (EHRSourceError, KeyError):
                current = None
            except OSError as exc:
                log.warning(
                    "keeping %s: cannot read its source %s (%s)", store, info.get("source"), exc
                )
                continue
            if current != store.stem:
                removed[store] = store.stat().st_size if store.exists() else 0
                _remove(cache, store)
    return removed, len(stores)


def _cached(cache: Path) -> list[tuple[Path, dict[str, Any]]]:
    """The stores in a cache directory with their manifests."""
    stores = (sidecar.with_suffix(".duckdb") for sidecar in sorted(cache.glob("*.json")))
    found = ((store, read_manifest(store)) for store in stores)
    return [(store, info) for store, info in found if info is not None]


def _remove(cache: Path, store: Path) -> None:
    store.unlink(missing_ok=True)
    for beside in cache.glob(f"{store.stem}.*"):  # its manifest and caches of what it holds
        beside.unlink(missing_ok=True)


def _intact(store: Path, *, warn: bool) -> bool:
    """Whether a cached store exists and matches its manifest; with ``warn``, say why not."""
    if not store.exists():
        return False
    problem = damage(store)
    if problem is not None and warn:
        log.warning("EHR store %s cannot be used (%s): rebuilding it", store, problem)
    return problem is None


def _require_writable(cache: Path) -> None:
    """Before building: one line naming a cache directory we cannot write, and the way out."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache):
            pass
    except OSError as exc:
        raise EHRBuildError(
            f"cannot write the EHR store cache {cache} ({exc.strerror or exc}); set "
            "$PHYSASSIST_CACHE (or --cache-dir) to a writable directory"
        ) from None
