"""What the PostgreSQL admin port's parts share: running an operation on the
store's pool, and PostgreSQL's errors as the admin layer's.

Reads are single statements or a READ COMMITTED transaction that only reads;
each write is one transaction at READ COMMITTED whose conditions sit in its
statements (``UPDATE … WHERE``, ``INSERT … ON CONFLICT``) or behind a row lock
(``SELECT … FOR UPDATE``), so concurrent operators and gateways never lose an
update; a serialization failure or deadlock is retried by the store.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any, TypeVar

import asyncpg

from gateway_core.admin.errors import AdminError, Conflict, Invalid, StoreFailure
from gateway_core.store.request_store import StoreUnavailable
from .faults import Attempt
from .store import PostgresStore

T = TypeVar("T")
Step = Callable[[asyncpg.Connection], Awaitable[T]]

_KEY_DETAIL = re.compile(r"Key \(([^)]*)\)=")


class AdminBase:
    """Runs an admin operation on a :class:`PostgresStore`'s pool."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store

    async def _read(self, what: str, step: Step[T]) -> T:
        async def operation(conn: asyncpg.Connection, attempt: Attempt) -> T:
            return await step(conn)

        with translated_errors():
            return await self._store.run(what, operation)

    async def _write(self, what: str, step: Step[T], *, once: bool = False) -> T:
        """``step`` in one transaction. A ``once`` write (money) is one statement,
        hence its own transaction and one round trip; it is not run again after a
        lost connection: it may have committed, and running it twice would move
        money twice."""

        async def operation(conn: asyncpg.Connection, attempt: Attempt) -> T:
            if not once:
                async with conn.transaction():
                    return await step(conn)
            if attempt.after_lost_connection:
                raise StoreFailure(
                    f"{self._store.name}: the connection was lost during {what}; "
                    "it may or may not have been applied: look at the ledger before trying again"
                )
            return await step(conn)

        with translated_errors():
            return await self._store.run(what, operation, write=True)


@contextmanager
def translated_errors() -> Iterator[None]:
    """PostgreSQL's and the shared validators' exceptions as the admin layer's
    errors, said as the SQLite admin port says them."""
    try:
        yield
    except AdminError:
        raise
    except asyncpg.UniqueViolationError as exc:
        raise Conflict(describe_unique(exc)) from exc
    except asyncpg.ForeignKeyViolationError as exc:
        raise Conflict("it refers to a record that does not exist") from exc
    except asyncpg.IntegrityConstraintViolationError as exc:
        raise Conflict(str(exc)) from exc
    except StoreUnavailable as exc:
        raise StoreFailure(str(exc)) from exc
    except (asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise StoreFailure(f"database error: {exc}") from exc
    except ValueError as exc:
        raise Invalid(str(exc)) from exc


def describe_unique(exc: asyncpg.UniqueViolationError) -> str:
    """``Key (name)=(bob) already exists`` on ``users`` → ``a users record with this name already exists``."""
    found = _KEY_DETAIL.match(getattr(exc, "detail", None) or "")
    column = found.group(1).split(",")[0].strip() if found else "key"
    return f"a {getattr(exc, 'table_name', None) or 'record'} record with this {column} already exists"


def changed(status: str) -> int:
    """How many rows a statement's status (``UPDATE 3``, ``INSERT 0 1``) says it changed."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


def plain(value: Any) -> Any:
    """A value as SQLite returns it: PostgreSQL's ``sum`` of bigints is a ``numeric``."""
    return int(value) if isinstance(value, Decimal) else value


def plain_dict(row: asyncpg.Record) -> dict[str, Any]:
    return {name: plain(value) for name, value in row.items()}


def found(record: T | None) -> T:
    if record is None:
        raise AssertionError("a row written in this transaction is missing")
    return record
