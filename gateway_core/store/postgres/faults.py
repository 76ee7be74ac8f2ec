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
connections becomes :class:`~gateway_core.request_store.StoreUnavailable`
(a 503 naming the store); any other error (a constraint, a bug) is raised as
it is.
"""

from __future__ import annotations

import asyncio
import enum
import random
from urllib.parse import unquote, urlsplit

import asyncpg


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
