"""Where MLflow runs go, and how to write to a SQLite store from many processes safely.

MLflow 3.17 refuses the old ``./mlruns`` file store, so the default store is a SQLite database
inside ``mlruns/`` with the artifacts beside it. SQLite takes one writer at a time: parallel sweep
jobs serialise their writes through an advisory file lock next to the database, the database runs
in WAL mode (readers never block the writer), and every call is retried with backoff on
"database is locked" and on transient server errors.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from mlflow import MlflowClient

DEFAULT_URI = "sqlite:///mlruns/mlflow.db"

T = TypeVar("T")

_TRANSIENT = (
    "database is locked",
    "database table is locked",
    "unable to open database",
    "disk i/o error",
    "temporarily unavailable",
    "connection reset",
    "too many requests",
    "503",
    "502",
)


class TrackingError(RuntimeError):
    """The tracking store could not be written; the Inspect log is unaffected."""


_DB_ERROR = re.compile(r"\((?:[\w.]+\.)?\w*(?:Error|Exception)\) ([^\n]+)")


def error_line(exc: BaseException) -> str:
    """One line saying what went wrong in the store: the database's own message when there is
    one (``attempt to write a readonly database``), not SQLAlchemy's first line (an autoflush
    hint) or MLflow's wrapping."""
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        orig = getattr(cur, "orig", None)  # SQLAlchemy's DBAPIError wraps sqlite3's error
        if isinstance(orig, BaseException) and str(orig).strip():
            return str(orig).strip().splitlines()[0]
        cur = cur.__cause__ or cur.__context__
    for e in seen:
        found = _DB_ERROR.search(str(e))
        if found:
            return found.group(1).strip()
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else repr(exc)


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI, or None for any other store."""
    if not uri.startswith("sqlite:///"):
        return None
    raw = uri[len("sqlite:///") :].split("?", 1)[0]
    return Path(raw)


def resolve_tracking_uri(uri: str | None, base: Path | None = None) -> str:
    """Make a relative SQLite URI absolute (jobs may run in another working directory).

    ``sqlite:///mlruns/mlflow.db`` is relative to ``base`` (default: the current directory);
    ``sqlite:////abs/path.db`` and non-SQLite URIs (http, databricks, postgresql) are kept.
    """
    uri = uri or DEFAULT_URI
    path = sqlite_path(uri)
    if path is None:
        return uri
    if not path.is_absolute():
        path = (base or Path.cwd()) / path
    return f"sqlite:///{path.resolve()}"


def resolve_artifact_root(tracking_uri: str, artifact_root: str | None) -> str | None:
    """Artifact location (a file URI) for experiments created in a local SQLite store.

    Default: ``artifacts/`` beside the database, so ``mlruns/`` holds everything. A relative
    ``artifact_root`` is relative to the current directory. Servers choose their own (None).
    """
    db = sqlite_path(tracking_uri)
    if artifact_root:
        return Path(artifact_root).resolve().as_uri()
    if db is None:
        return None
    return (db.parent / "artifacts").resolve().as_uri()


def is_transient(exc: BaseException) -> bool:
    """Errors worth retrying: SQLite lock contention and overloaded or restarting servers."""
    text = f"{type(exc).__name__}: {exc}".lower()
    return any(marker in text for marker in _TRANSIENT)


def with_retries(
    fn: Callable[[], T], *, retries: int = 8, base_delay: float = 0.1, max_delay: float = 5.0
) -> T:
    """Call ``fn``; on a transient error wait (exponential backoff) and try again."""
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below
            if attempt >= retries or not is_transient(exc):
                raise
            time.sleep(min(max_delay, base_delay * (2**attempt)))
            attempt += 1


@contextlib.contextmanager
def store_lock(tracking_uri: str) -> Iterator[None]:
    """Hold an exclusive advisory lock on a SQLite store (no-op for other stores).

    The lock file sits beside the database, so every process of a sweep (joblib workers, Ray
    tasks or SLURM jobs on a shared file system) agrees on it.
    """
    db = sqlite_path(tracking_uri)
    if db is None:
        yield
        return
    db.parent.mkdir(parents=True, exist_ok=True)
    with open(db.with_name(db.name + ".lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _enable_wal(db: Path) -> None:
    """Switch the database to WAL (persistent in the file): readers stop blocking writers."""
    con = sqlite3.connect(db, timeout=30)
    try:
        con.execute("PRAGMA journal_mode=WAL")
    finally:
        con.close()


def _checkpoint(db: Path) -> None:
    """Move the WAL's pages into the database file (the file alone then holds every run). At
    exit MLflow's connections are left open (the heap is frozen: ``physassist.gc_freeze``), so
    the checkpoint SQLite makes when the last one closes does not happen by itself."""
    with contextlib.suppress(sqlite3.Error):  # busy (another process writes): it checkpoints later
        con = sqlite3.connect(db, timeout=5)
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            con.close()


def _cache_dir() -> Path:
    root = os.environ.get("PHYSASSIST_CACHE") or Path.home() / ".cache" / "physassist"
    return Path(root)


def schema_template() -> Path:
    """An empty MLflow SQLite database of the installed MLflow version, made once and cached.

    MLflow creates a new database by running its ~50 schema migrations, each committed to disk
    (over 10 s on a slow disk). They run once per MLflow version, on a RAM disk when there is one;
    new stores are a copy of the result.
    """
    import mlflow
    from mlflow import MlflowClient

    target = _cache_dir() / f"mlflow-{mlflow.__version__}-empty.db"
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_suffix(".lock"), "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            if target.is_file():
                return target
            scratch_root = "/dev/shm" if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK) else None
            with tempfile.TemporaryDirectory(dir=scratch_root) as scratch:
                db = Path(scratch) / "mlflow.db"
                MlflowClient(tracking_uri=f"sqlite:///{db}").search_experiments(max_results=1)
                partial = target.with_suffix(".partial")
                shutil.copyfile(db, partial)
                partial.replace(target)
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return target


def _create_database(db: Path) -> None:
    """A new store from the schema template; its Default experiment points beside it."""
    template = schema_template()
    partial = db.with_name(db.name + ".partial")
    shutil.copyfile(template, partial)
    con = sqlite3.connect(partial)
    try:
        con.execute(
            "UPDATE experiments SET artifact_location = ? WHERE experiment_id = 0",
            ((db.parent / "artifacts" / "0").resolve().as_uri(),),
        )
        con.commit()
    finally:
        con.close()
    partial.replace(db)


def open_client(tracking_uri: str, *, retries: int = 8) -> MlflowClient:
    """An MlflowClient on an initialised store.

    A new SQLite database is created under the store lock (MLflow's migrations are not safe to
    run concurrently), from the cached schema template, and switched to WAL mode.
    """
    from mlflow import MlflowClient

    db = sqlite_path(tracking_uri)
    if db is None:
        return MlflowClient(tracking_uri=tracking_uri)
    with store_lock(tracking_uri):
        if not db.exists():
            try:
                _create_database(db)
            except (OSError, sqlite3.Error):
                pass  # MLflow creates it itself below (slower, same result)
        client = MlflowClient(tracking_uri=tracking_uri)
        with_retries(lambda: client.search_experiments(max_results=1), retries=retries)
        with_retries(lambda: _enable_wal(db), retries=retries)
    atexit.register(_checkpoint, db)
    return client


def get_or_create_experiment(
    client: MlflowClient, name: str, artifact_location: str | None, *, retries: int = 8
) -> str:
    """The id of experiment ``name``, created (race-safely) with the given artifact location."""
    from mlflow.exceptions import MlflowException

    def find() -> str | None:
        exp = client.get_experiment_by_name(name)
        if exp is None:
            return None
        if exp.lifecycle_stage == "deleted":
            client.restore_experiment(exp.experiment_id)
        return exp.experiment_id

    found = with_retries(find, retries=retries)
    if found is not None:
        return found
    with store_lock(client.tracking_uri):
        found = with_retries(find, retries=retries)
        if found is not None:
            return found
        try:
            return with_retries(
                lambda: client.create_experiment(name, artifact_location=artifact_location),
                retries=retries,
            )
        except MlflowException:
            found = with_retries(find, retries=retries)
            if found is None:
                raise
            return found


def http_quiet() -> None:
    """Bound MLflow's HTTP retries so a tracking server that is down fails in seconds, not minutes.

    Only sets the variables when the user has not chosen values. MLflow's own dump of a store
    error (SQL, parameters, SQLAlchemy's autoflush hint) is silenced: the caller reports the
    error in one line (``error_line``).
    """
    logging.getLogger("mlflow.store.db.utils").setLevel(logging.CRITICAL)
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
