"""What can go wrong between the gateway and PostgreSQL, and what the store does about it.

- A **conflict** (serialization failure, deadlock): the transaction was rolled
  back whole; running it again is safe. Retried.
- A **lost connection** (the server restarted, ``pg_terminate_backend``, the
  network): a write in flight may or may not have committed. Retried on a new
  connection; each write knows how to recognise its own earlier success (its
  request id is already there).
- A **timeout** (no connection free, or no answer within the store's timeout):
  not retried, the deadline has passed.

A failure that outlasts the retries, a timeout, or a server that refuses
connections becomes :class:`~gateway_core.store.request_store.StoreUnavailable`
(a 503 naming the store); any other error (a constraint, a bug) is raised as
it is.
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import asyncpg
import attrs
import structlog

from gateway_core.store.request_store import StoreUnavailable

T = TypeVar("T")
log = structlog.get_logger("relaygate.store")


class Fault(enum.Enum):
    CONFLICT = "conflict"
    CONNECTION = "connection"
    TIMEOUT = "timeout"


def classify(exc: BaseException) -> Fault | None:
    """The kind of transient fault ``exc`` is, or ``None`` for any other error."""
    if isinstance(exc, asyncpg.TransactionRollbackError):  # 40001 serialization, 40P01 deadlock
        return Fault.CONFLICT
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError, asyncpg.QueryCanceledError)):
        return Fault.TIMEOUT
    if isinstance(
        exc,
        (
            asyncpg.PostgresConnectionError,  # 08xxx
            asyncpg.AdminShutdownError,  # 57P01: terminated by an administrator
            asyncpg.CrashShutdownError,
            asyncpg.CannotConnectNowError,  # 57P03: starting up or shutting down
            asyncpg.TooManyConnectionsError,
            ConnectionError,
            OSError,
        ),
    ):
        return Fault.CONNECTION
    if isinstance(exc, asyncpg.InterfaceError) and "connection" in str(exc).lower() and "closed" in str(exc).lower():
        return Fault.CONNECTION
    if isinstance(exc, asyncpg.InternalClientError) and "cannot switch to state" in str(exc):
        # a pooled connection whose server process was terminated while it was
        # idle: its last message was the server's FATAL, and nothing was sent
        return Fault.CONNECTION
    return None


def is_duplicate(exc: BaseException, constraint: str) -> bool:
    """Whether ``exc`` is a unique violation of the index or key ``constraint``."""
    return isinstance(exc, asyncpg.UniqueViolationError) and getattr(exc, "constraint_name", None) == constraint


def backoff(attempt: int, *, base: float = 0.01, cap: float = 0.25) -> float:
    """Seconds to wait before attempt ``attempt + 1``: exponential, full jitter."""
    return random.uniform(0, min(cap, base * 2**attempt))


def store_name(dsn: str) -> str:
    """How messages name the store: ``PostgreSQL at host:port/db`` (never a password)."""
    parts = urlsplit(dsn)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or "localhost"
    database = unquote(parts.path.lstrip("/")) or (unquote(parts.username) if parts.username else "postgres")
    return f"PostgreSQL at {host}:{port or 5432}/{database}"


def describe(exc: BaseException) -> str:
    """One line about ``exc`` for a message: its type and text."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@attrs.frozen
class Attempt:
    """One try of an operation: how long it may still take, and whether an
    earlier try lost its connection (its write may have committed)."""

    remaining: float
    after_lost_connection: bool


Operation = Callable[[asyncpg.Connection, Attempt], Awaitable[T]]


async def run_retrying(pool: asyncpg.Pool, operation: Operation[T], *, store: str, what: str, timeout: float, attempts: int) -> T:
    """``operation`` on a connection of ``pool``, tried again after a conflict or
    a lost connection (up to ``attempts`` tries), all within ``timeout`` seconds;
    :class:`StoreUnavailable` (naming ``store``) when that is not enough."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    lost = False
    tries = 0
    while True:
        try:
            conn = await _acquire(pool, deadline - loop.time())
            try:
                return await operation(conn, Attempt(max(0.001, deadline - loop.time()), lost))
            except Exception as exc:
                if classify(exc) is Fault.CONNECTION and not conn.is_closed():
                    conn.terminate()  # never handed out again: the pool opens a new one
                raise
            finally:
                await pool.release(conn)
        except Exception as exc:
            fault = classify(exc)
            if fault is None:
                raise
            tries += 1
            if fault is Fault.TIMEOUT:
                raise StoreUnavailable(f"{store} did not answer within {timeout:g} s ({what})") from exc
            if tries >= attempts or loop.time() >= deadline:
                raise StoreUnavailable(f"{store} is unavailable ({what}): {describe(exc)}") from exc
            lost = lost or fault is Fault.CONNECTION
            log.warning("store.retry", store=store, operation=what, fault=fault.value, error=describe(exc))
            await asyncio.sleep(min(backoff(tries), max(0.0, deadline - loop.time())))


async def _acquire(pool: asyncpg.Pool, remaining: float) -> asyncpg.Connection:
    """A pooled connection; any failure to connect is a lost connection (the
    server is down, starting, or refusing this database)."""
    if remaining <= 0:
        raise asyncio.TimeoutError()
    try:
        return await pool.acquire(timeout=remaining)
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        if classify(exc) is not None:
            raise
        raise ConnectionError(f"cannot connect: {describe(exc)}") from exc


def log_settle_failure(settled: asyncio.Future[None]) -> None:
    """Log a settlement that failed after its caller stopped waiting."""
    error = None if settled.cancelled() else settled.exception()
    if error is not None:
        log.error("store.write_failed", operation="record", error=describe(error))


def commit_timer(observe: Callable[[float], None], started: float) -> Callable[[asyncio.Task[Any]], None]:
    """A done-callback reporting the seconds a write took, when it succeeded."""
    def done(task: asyncio.Task[Any]) -> None:
        if not task.cancelled() and task.exception() is None:
            observe(time.perf_counter() - started)

    return done


def log_write_failure(what: str, task: asyncio.Task[Any]) -> None:
    """A done-callback logging a write task's error."""
    if task.cancelled():
        return
    error = task.exception()
    if error is not None:
        log.error("store.write_failed", operation=what, error=describe(error))
