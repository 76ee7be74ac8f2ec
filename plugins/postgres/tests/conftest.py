"""Fixtures of the PostgreSQL store's tests.

- ``pg_url``, ``postgres_server``: the plugin's ``relaygate_postgres_url`` (a fresh
  database on ``RELAYGATE_TEST_POSTGRES``, created for one test and dropped after it)
  and ``relaygate_postgres_server``; ``redis_prefix``: the Redis plugin's
  ``relaygate_redis_prefix``.
- ``books``: a started store of either kind (the test runs once per store) and a
  :class:`Seeder` on its database.
- ``proxy``: a loopback TCP proxy in front of the server, to cut it off.

Test data is written with plain SQL by :class:`Seeder`: the two schemas share
table and column names and keep flags as 0/1, so one statement with ``?``
placeholders serves both dialects (PostgreSQL gets ``$1, $2, …``). Money enters
through ledger rows, so the books balance.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import attrs
import orjson
import pytest

from gateway_core.store.request_store import RequestStore
from gateway_core.store import CORE_MIGRATIONS, Store
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.databases import with_database
from relaygate_postgres.migrate import numbered

SQLITE, POSTGRESQL = "sqlite", "postgresql"
CREATED_AT = 1_700_000_000.0  # fixed, so that records read from both stores compare equal


class Seeder:
    """Writes and reads rows on one database (a SQLite file or a PostgreSQL database)."""

    def __init__(self, dialect: str, conn: sqlite3.Connection | asyncpg.Connection) -> None:
        self.dialect = dialect
        self._conn = conn

    @classmethod
    async def open(cls, target: str) -> Seeder:
        """A seeder on ``target``: a ``postgresql://`` URL or a SQLite file path."""
        if target.startswith("postgresql://"):
            return cls(POSTGRESQL, await asyncpg.connect(target))
        return cls(SQLITE, sqlite3.connect(target, isolation_level=None))

    async def close(self) -> None:
        if isinstance(self._conn, sqlite3.Connection):
            self._conn.close()
        else:
            await self._conn.close()

    async def fetch(self, sql: str, *params: Any) -> list[dict[str, Any]]:
        if isinstance(self._conn, sqlite3.Connection):
            cursor = self._conn.execute(sql, params)
            names = [d[0] for d in cursor.description or ()]
            return [dict(zip(names, row)) for row in cursor.fetchall()]
        return [dict(row) for row in await self._conn.fetch(numbered(sql), *params)]

    async def value(self, sql: str, *params: Any) -> Any:
        rows = await self.fetch(sql, *params)
        return next(iter(rows[0].values())) if rows else None

    async def execute(self, sql: str, *params: Any) -> None:
        if isinstance(self._conn, sqlite3.Connection):
            self._conn.execute(sql, params)
        else:
            await self._conn.execute(numbered(sql), *params)

    # --- the world -------------------------------------------------------------------

    async def group(self, name: str, ratio_ppm: int = 1_000_000, *, rpm: int | None = None) -> None:
        await self.execute(
            'INSERT INTO "groups" (name, ratio_ppm, created_at, rpm) VALUES (?, ?, ?, ?)', name, ratio_ppm, CREATED_AT, rpm
        )

    async def user(self, name: str = "alice", *, balance_micros: int = 0, groups: Sequence[str] = ("default",), tpm: int | None = None) -> int:
        user_id = await self.value(
            "INSERT INTO users (name, is_admin, enabled, balance_micros, created_at, tpm) VALUES (?, 0, 1, 0, ?, ?) RETURNING id",
            name, CREATED_AT, tpm,
        )  # fmt: skip
        for group in groups:
            await self.execute("INSERT INTO user_groups (user_id, group_name) VALUES (?, ?)", user_id, group)
        if balance_micros:
            await self.topup(user_id, balance_micros)
        return user_id

    async def topup(self, user_id: int, amount_micros: int) -> None:
        balance = await self.value(
            "UPDATE users SET balance_micros = balance_micros + ? WHERE id = ? RETURNING balance_micros", amount_micros, user_id
        )
        await self.execute(
            "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, note, created_at) VALUES (?, 'topup', ?, ?, 'test', ?)",
            user_id, amount_micros, balance, CREATED_AT,
        )  # fmt: skip

    async def key(
        self, user_id: int, key_hash: str, *, name: str = "test", group: str = "default", quota_micros: int | None = None,
        models: Sequence[str] = (), allow_ips: Sequence[str] = (), rpm: int | None = None, enabled: int = 1,
    ) -> int:  # fmt: skip
        return await self.value(
            "INSERT INTO api_keys (user_id, name, key_hash, prefix, group_name, quota_micros, used_micros, expires_at, "
            "models, allow_ips, enabled, deleted, created_at, rpm) VALUES (?, ?, ?, ?, ?, ?, 0, NULL, ?, ?, ?, 0, ?, ?) RETURNING id",
            user_id, name, key_hash, key_hash[:8], group, quota_micros, _json(list(models)), _json(list(allow_ips)),
            enabled, CREATED_AT, rpm,
        )  # fmt: skip

    async def channel(
        self, name: str, *, type: str, base_url: str, models: Sequence[str], api_keys: Sequence[str] = ("sk-upstream-test",),
        groups: Sequence[str] = ("default",), model_map: dict[str, str] | None = None, priority: int = 0,
        weight: int = 1, concurrency: int = 0, timeout_first_byte: float | None = None,
    ) -> int:  # fmt: skip
        return await self.value(
            'INSERT INTO channels (name, type, base_url, api_keys, models, model_map, "groups", priority, weight, enabled, '
            "endpoints, headers, settings, created_at, concurrency, timeout_first_byte) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, '[]', '{}', '{}', ?, ?, ?) RETURNING id",
            name, type, base_url, _json(list(api_keys)), _json(list(models)), _json(model_map or {}), _json(list(groups)),
            priority, weight, CREATED_AT, concurrency, timeout_first_byte,
        )  # fmt: skip

    async def price(self, model: str, input_micros: int, output_micros: int, *, cached: int | None = None, free: int = 0) -> None:
        await self.execute(
            "INSERT INTO prices (model, input_micros_per_mtok, output_micros_per_mtok, cached_input_micros_per_mtok, "
            "free, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
            model, input_micros, output_micros, cached, free, CREATED_AT,
        )  # fmt: skip

    # --- the books ---------------------------------------------------------------------

    async def balance(self, user_id: int) -> int:
        return await self.value("SELECT balance_micros FROM users WHERE id = ?", user_id)

    async def available(self, user_id: int) -> int:
        """The balance less what the user's requests in flight reserve."""
        return await self.value("SELECT balance_micros - held_micros FROM users WHERE id = ?", user_id)

    async def ledger(self, request_id: str) -> list[tuple[str, int]]:
        rows = await self.fetch("SELECT kind, amount_micros FROM ledger WHERE request_id = ? ORDER BY id", request_id)
        return [(row["kind"], row["amount_micros"]) for row in rows]

    async def problems(self) -> list[str]:
        """The money invariants that do not hold (the same checks on both dialects)."""
        found: list[str] = []
        for label, sql in _INVARIANTS.items():
            found += [f"{label}: {row}" for row in await self.fetch(sql)]
        return found


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


_INVARIANTS = {
    "balance is not the ledger's sum": (
        "SELECT u.id, u.balance_micros, coalesce(sum(l.amount_micros), 0) AS total FROM users AS u "
        "LEFT JOIN ledger AS l ON l.user_id = u.id GROUP BY u.id, u.balance_micros "
        "HAVING u.balance_micros <> coalesce(sum(l.amount_micros), 0)"
    ),
    "ledger chain broken": (
        "SELECT id FROM (SELECT id, amount_micros, balance_after_micros, "
        "lag(balance_after_micros, 1, 0) OVER (PARTITION BY user_id ORDER BY id) AS before FROM ledger) AS chained "
        "WHERE before + amount_micros <> balance_after_micros"
    ),
    "key used is not its charges": (
        "SELECT k.id FROM api_keys AS k LEFT JOIN ledger AS l ON l.key_id = k.id AND l.kind IN ('capture', 'refund') "
        "GROUP BY k.id, k.used_micros HAVING k.used_micros <> -coalesce(sum(l.amount_micros), 0)"
    ),
    "key held is not its open holds": (
        "SELECT k.id FROM api_keys AS k LEFT JOIN holds AS h ON h.key_id = k.id "
        "GROUP BY k.id, k.held_micros HAVING k.held_micros <> coalesce(sum(h.amount_micros), 0)"
    ),
    "user held is not its open holds": (
        "SELECT u.id FROM users AS u WHERE coalesce((SELECT sum(amount_micros) FROM holds WHERE user_id = u.id), 0) "
        "<> u.held_micros"
    ),
    "reservations in the ledger": "SELECT id FROM ledger WHERE kind IN ('hold', 'release')",
}


# --- a store of either kind ----------------------------------------------------------------


@attrs.define
class Books:
    """A started store and a seeder on its database."""

    dialect: str
    store: RequestStore
    seed: Seeder
    target: str  # the SQLite file or the PostgreSQL URL


@pytest.fixture(scope="session")
def postgres_server(relaygate_postgres_server: str) -> str:
    return relaygate_postgres_server


@pytest.fixture
def pg_url(relaygate_postgres_url: str) -> str:
    return relaygate_postgres_url


@pytest.fixture
def redis_prefix(relaygate_redis_prefix: str) -> str:
    return relaygate_redis_prefix


@pytest.fixture(params=[SQLITE, POSTGRESQL])
def store_target(request: pytest.FixtureRequest, tmp_path: Any) -> tuple[str, str]:
    if request.param == POSTGRESQL:
        return POSTGRESQL, request.getfixturevalue("pg_url")
    return SQLITE, str(tmp_path / "relaygate.db")


async def open_books(dialect: str, target: str, **options: Any) -> Books:
    store: Store | PostgresStore
    if dialect == POSTGRESQL:
        store = PostgresStore(target, **options)
        await store.migrate()
    else:
        store = Store(target, CORE_MIGRATIONS)
    await store.start()
    return Books(dialect, store, await Seeder.open(target), target)


@pytest.fixture
async def books(store_target: tuple[str, str]) -> AsyncIterator[Books]:
    opened = await open_books(*store_target, max_size=20)
    yield opened
    await opened.store.close()
    await opened.seed.close()


# --- cutting the server off ------------------------------------------------------------------


class TcpProxy:
    """Forwards a loopback port to the PostgreSQL server. :meth:`cut` drops every
    connection and refuses new ones, :meth:`drop` only drops; while ``silent``,
    connections are accepted and never answered (a server that hangs); while
    ``swallow``, the server's replies are lost on the way back."""

    def __init__(self, upstream: str) -> None:
        parts = urlsplit(upstream)
        self.host, self.upstream_port = parts.hostname or "127.0.0.1", parts.port or 5432
        self.port = 0
        self.silent = False
        self.swallow = False
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    def url(self, database_url: str) -> str:
        """``database_url``'s database, reached through this proxy."""
        return with_database(database_url, urlsplit(database_url).path.lstrip("/"), port=self.port)

    async def start(self) -> TcpProxy:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        await self.drop()

    async def drop(self) -> None:
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        if self.silent:
            await reader.read()  # until the client gives up
            writer.transport.abort()
            return
        up_reader, up_writer = await asyncio.open_connection(self.host, self.upstream_port)
        self._writers.add(up_writer)
        await asyncio.gather(self._pipe(reader, up_writer, False), self._pipe(up_reader, writer, True), return_exceptions=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, replies: bool) -> None:
        try:
            while data := await reader.read(65536):
                if replies and self.swallow:
                    continue
                writer.write(data)
                await writer.drain()
        finally:
            writer.transport.abort()


@pytest.fixture
async def proxy(postgres_server: str) -> AsyncIterator[TcpProxy]:
    started = await TcpProxy(postgres_server).start()
    yield started
    await started.cut()
