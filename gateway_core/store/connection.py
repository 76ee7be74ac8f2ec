"""Opening SQLite connections the way every part of the store expects them,
and the transaction helpers domain functions share.

Connections are in driver autocommit mode (``isolation_level=None``): nothing
opens a transaction implicitly, so the writer and :func:`atomic` decide exactly
where each one begins and ends.
"""

from __future__ import annotations

import itertools
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import orjson

BUSY_TIMEOUT_MS = 5000


def _null(value: None) -> None:
    return None


# sqlite3 binds int, float and str directly but sends every other value, None too,
# through its adapters: a None with no adapter registered costs a failed attribute
# lookup (an exception formatted and dropped) before it is bound as NULL, about
# 0.2 µs for each of the usage row's empty columns. Registered, it is a dict hit.
sqlite3.register_adapter(type(None), _null)
_savepoints = itertools.count(1)
JOB_SAVEPOINT = "rg_write"  # the savepoint the group-commit writer opens around each of its jobs
# the writer thread's job in progress: its connection and ``total_changes`` when its savepoint opened
_writer_job = threading.local()


class WriterJob:
    """The writer thread's job in progress: its connection, ``total_changes`` when
    it began, and whether it runs inside ``SAVEPOINT rg_write`` (``guarded``).

    An unguarded job (the writer's first pass over a batch, see
    :mod:`.writer`) has no savepoint to roll back to: when a block of
    :func:`atomic` that began the job's work fails, nothing is undone here and
    the job is marked ``spoiled``; the writer then rolls the whole transaction
    back rather than trust what the job did after it."""

    __slots__ = ("conn", "changes", "guarded", "spoiled")

    def __init__(self, conn: sqlite3.Connection, guarded: bool) -> None:
        self.conn = conn
        self.changes = conn.total_changes
        self.guarded = guarded
        self.spoiled = False


def begin_writer_job(conn: sqlite3.Connection, *, guarded: bool = True) -> WriterJob:
    """Before one job of the group-commit writer (inside its ``SAVEPOINT rg_write``
    when ``guarded``): lets :func:`atomic` use the job's isolation while the job has
    written nothing yet. :func:`end_writer_job` after it."""
    job = WriterJob(conn, guarded)
    _writer_job.state = job
    return job


def end_writer_job() -> None:
    _writer_job.state = None


@contextmanager
def writer_job(conn: sqlite3.Connection, *, guarded: bool = True) -> Iterator[WriterJob]:
    """:func:`begin_writer_job` … :func:`end_writer_job` around a block."""
    job = begin_writer_job(conn, guarded=guarded)
    try:
        yield job
    finally:
        end_writer_job()


def connect(path: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, query_only: bool = False) -> sqlite3.Connection:
    """A new connection: WAL, ``synchronous=NORMAL``, ``busy_timeout``, foreign keys on.

    ``query_only`` connections (the reader pool's) refuse every write.
    """
    conn = sqlite3.connect(
        path,
        timeout=busy_timeout_ms / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            _retry_busy(lambda: conn.execute("PRAGMA journal_mode = WAL"), busy_timeout_ms)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        if query_only:
            conn.execute("PRAGMA query_only = ON")
    except BaseException:
        conn.close()
        raise
    return conn


def begin_immediate(conn: sqlite3.Connection, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """``BEGIN IMMEDIATE``: take the write lock now, waiting for other processes.

    ``busy_timeout`` already waits inside SQLite; when it runs out (a long write
    in another process) this keeps retrying until about twice that long.
    """
    _retry_busy(lambda: conn.execute("BEGIN IMMEDIATE"), busy_timeout_ms)


def commit(conn: sqlite3.Connection, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS) -> None:
    """``COMMIT``, retried while the database is busy (the transaction stays open)."""
    _retry_busy(lambda: conn.execute("COMMIT"), busy_timeout_ms)


@contextmanager
def atomic(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Run a block atomically: a savepoint inside an open transaction (the
    writer's), else its own ``BEGIN IMMEDIATE`` … ``COMMIT`` (the CLI's).

    A block that begins a writer job's work (nothing written since the job
    began) needs no savepoint of its own: rolling back to the job's savepoint
    undoes exactly what the block did, as its own would (two statements saved);
    a job the writer runs without a savepoint is marked spoiled instead, and the
    writer rolls its whole transaction back (see :class:`WriterJob`)."""
    if conn.in_transaction:
        job = getattr(_writer_job, "state", None)
        if job is not None and job.conn is conn and conn.total_changes == job.changes:
            try:
                yield conn
            except BaseException:
                if not job.guarded:
                    job.spoiled = True
                elif conn.in_transaction:
                    conn.execute(f"ROLLBACK TO {JOB_SAVEPOINT}")
                raise
            return
        name = f"rg_atomic_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            if conn.in_transaction:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    begin_immediate(conn)
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    try:
        commit(conn)
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite saying another connection holds the lock."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    message = str(exc)
    return "database is locked" in message or "database is busy" in message


def _retry_busy(action: Any, busy_timeout_ms: int) -> Any:
    deadline = time.monotonic() + 2 * busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


# --- small query helpers the domain modules share ---------------------------


def fetch_all(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql, params).fetchall()


def fetch_one(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
    rows = fetch_all(conn, sql, params)
    return rows[0] if rows else None


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The row id an ``INSERT`` just made."""
    if cursor.lastrowid is None:
        raise RuntimeError("the statement inserted no row")
    return cursor.lastrowid


def to_json(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def from_json(text: str | None, default: Any) -> Any:
    if text is None or text == "":
        return default
    return orjson.loads(text)
