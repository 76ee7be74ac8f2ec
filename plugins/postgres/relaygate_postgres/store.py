"""The PostgreSQL store: the request path's port on a database server that
several gateway replicas share.

Connections come from one asyncpg pool per worker (``min_size``/``max_size``);
every call waits at most ``timeout`` seconds for a connection and for its
answer, then raises :class:`~gateway_core.store.request_store.StoreUnavailable`
naming the store. Transient faults are retried (see :mod:`.faults`).

Isolation, transaction by transaction:

- ``hold``, ``record``, ``release_stale_holds`` and ``report_breaker`` are each
  **one statement**, hence one implicit transaction, at **READ COMMITTED**
  (settlements waiting together are sent several per transaction, see
  :mod:`.batch`). Their
  conditions sit in ``UPDATE … WHERE``: PostgreSQL re-evaluates such a
  condition on the row's latest committed version once it holds the row's lock,
  so "the balance covers the hold" is checked and applied atomically, without
  the aborts SERIALIZABLE would add (and retry) for no extra safety. A
  settlement claims its reservation with ``DELETE … RETURNING`` and the sweeper
  with ``FOR UPDATE SKIP LOCKED``: a reservation is released once.
- ``disable_channel_key`` rewrites a JSON column from its current value:
  READ COMMITTED with the channel's row locked (``SELECT … FOR UPDATE``) first.
- ``price_snapshot`` reads prices and group ratios in one **REPEATABLE READ,
  READ ONLY** transaction: both from one snapshot, and a read-only transaction
  never fails to serialize.
- ``find_key`` and ``list_channels`` are single statements (one snapshot each).

Writes run in their own task, shielded: a caller cancelled while waiting (a
client gone) does not cancel the write, as on SQLite, and :meth:`close` waits
for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import asyncpg
import attrs
import structlog

from gateway_core.records import ChannelRecord, KeyRecord, UsageRow
from gateway_core.store.request_store import BreakerReport, HoldRefused, PriceSnapshot, StoreUnavailable
from gateway_core.sql import Migration
from gateway_core.store.channels import _channel as channel_record, with_key_disabled
from gateway_core.store.keys import _key as key_record
from gateway_core.store.prices import _price as price_record
from gateway_core.store.usage import usage_values
from .holds import OwnedHolds
from . import statements as sql
from .batch import Pending, SettlementBatcher
from .faults import Attempt, Operation, commit_timer, describe, is_duplicate, log_settle_failure, log_write_failure, run_retrying, store_name
from .migrate import SchemaOutdated, apply_migrations, pending
from .schema import CORE_MIGRATIONS

T = TypeVar("T")
log = structlog.get_logger("relaygate.store")

STALE_BATCH = 1000  # reservations one sweep releases at most (as on SQLite)
HOLD_TRIES = 3  # a refusal whose cause is gone by the time it is read is tried again
_STARTUP_ERRORS = (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, asyncio.TimeoutError)


class PostgresStore(OwnedHolds):
    """Implements :class:`gateway_core.store.request_store.RequestStore` on PostgreSQL."""

    def __init__(
        self,
        dsn: str,
        *,
        migrations: Sequence[Migration] = CORE_MIGRATIONS,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 5.0,
        attempts: int = 4,
    ) -> None:
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError(f"pool sizes need 0 <= min_size <= max_size and max_size >= 1, got {min_size}, {max_size}")
        if timeout <= 0:
            raise ValueError("the store's timeout must be more than 0 seconds")
        self.dsn = dsn
        self.name = store_name(dsn)
        self.migrations = list(migrations)
        self.min_size = min_size
        self.max_size = max_size
        self.timeout = timeout
        self.attempts = max(1, attempts)
        self._pool: asyncpg.Pool | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing: asyncio.Future[None] | None = None
        self.batcher = SettlementBatcher(
            pool=self._open_pool, single=self._settle_one, refusal=self._refusal_of, track=self._track,
            store=self.name, timeout=self.timeout, attempts=self.attempts, observe=self._observe_commit,
            flushers=max(1, max_size // 2),
        )  # fmt: skip
        self.on_commit: Callable[[float], None] | None = None  # seconds of each write (metrics)

    # --- schema and lifecycle -------------------------------------------------

    async def migrate(self) -> list[str]:
        """Apply the pending migrations (on a connection of its own); their names."""
        async with self._own_connection() as conn:
            return await apply_migrations(conn, self.migrations)

    async def pending_migrations(self) -> list[str]:
        """The migrations this code has that the database has not applied."""
        async with self._own_connection() as conn:
            return await pending(conn, self.migrations)

    @property
    def running(self) -> bool:
        return self._pool is not None and self._closing is None

    async def start(self) -> None:
        """Open the pool; :class:`SchemaOutdated` when migrations are pending,
        :class:`StoreUnavailable` when the server cannot be reached."""
        if self._closing is not None:
            raise RuntimeError("store is closed")
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=self.min_size,
                max_size=self.max_size,
                timeout=self.timeout,  # to connect
                command_timeout=self.timeout,
                server_settings={"application_name": "relaygate"},
                reset=_keep_session,
            )
        except _STARTUP_ERRORS as exc:
            raise StoreUnavailable(f"{self.name} is unreachable: {describe(exc)}") from exc
        try:
            async with pool.acquire(timeout=self.timeout) as conn:
                todo = await pending(conn, self.migrations)
        except BaseException:
            await pool.close()
            raise
        if todo:
            await pool.close()
            raise SchemaOutdated(self.name, todo)
        self._pool = pool

    async def close(self) -> None:
        """Let every write in flight finish, then close the pool. Safe to call twice."""
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._closing)

    async def _shutdown(self) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=2 * self.timeout)
        pool, self._pool = self._pool, None
        if pool is not None:
            try:
                await asyncio.wait_for(pool.close(), timeout=self.timeout)
            except asyncio.TimeoutError:
                pool.terminate()

    # --- reads ---------------------------------------------------------------------

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        async def find(conn: asyncpg.Connection, attempt: Attempt) -> KeyRecord | None:
            row = await conn.fetchrow(sql.FIND_KEY, key_hash, timeout=attempt.remaining)
            return key_record(row) if row is not None else None

        return await self._run("find_key", find, self._running_pool())

    async def list_channels(self) -> list[ChannelRecord]:
        async def channels(conn: asyncpg.Connection, attempt: Attempt) -> list[ChannelRecord]:
            return [channel_record(row) for row in await conn.fetch(sql.LIST_CHANNELS, timeout=attempt.remaining)]

        return await self._run("list_channels", channels, self._running_pool())

    async def price_snapshot(self) -> PriceSnapshot:
        async def snapshot(conn: asyncpg.Connection, attempt: Attempt) -> PriceSnapshot:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                prices = await conn.fetch(sql.LIST_PRICES, timeout=attempt.remaining)
                ratios = await conn.fetch(sql.GROUP_RATIOS, timeout=attempt.remaining)
            records = [price_record(row) for row in prices]
            return PriceSnapshot({p.model: p for p in records}, {r["name"]: r["ratio_ppm"] for r in ratios})

        return await self._run("price_snapshot", snapshot, self._running_pool())

    # --- money -----------------------------------------------------------------------

    async def hold(self, user_id: int, amount_micros: int, request_id: str, key_id: int | None) -> int:
        if not isinstance(amount_micros, int) or isinstance(amount_micros, bool) or amount_micros < 0:
            raise ValueError("a hold must be a non-negative integer")

        async def reserve(conn: asyncpg.Connection, attempt: Attempt) -> int:
            balance_now = 0
            for _ in range(HOLD_TRIES):
                try:
                    balance = await conn.fetchval(
                        sql.HOLD, user_id, amount_micros, request_id, key_id, time.time(), self._owner, timeout=attempt.remaining
                    )
                except asyncpg.UniqueViolationError as exc:
                    if attempt.after_lost_connection and is_duplicate(exc, "holds_pkey"):
                        mine = await conn.fetchrow("SELECT user_id, amount_micros FROM holds WHERE request_id = $1", request_id)
                        if mine is not None and (mine["user_id"], mine["amount_micros"]) == (user_id, amount_micros):
                            return await conn.fetchval("SELECT balance_micros - held_micros FROM users WHERE id = $1", user_id)
                    raise
                if balance is not None:
                    return balance
                refusal = await self._hold_refusal(conn, attempt, user_id, amount_micros, key_id)
                if isinstance(refusal, Exception):
                    raise refusal
                balance_now = refusal
            raise HoldRefused("balance", needed=amount_micros, limit=balance_now)

        return await self._write("hold", reserve)

    async def _hold_refusal(
        self, conn: asyncpg.Connection, attempt: Attempt, user_id: int, amount: int, key_id: int | None
    ) -> Exception | int:
        """Why the hold was refused (as SQLite says it: the key first), or the
        balance when nothing refuses it any more."""
        row = await conn.fetchrow(sql.HOLD_REFUSAL, user_id, key_id, timeout=attempt.remaining)
        if key_id is not None:
            if not row["key_found"]:
                return ValueError(f"no API key with id {key_id}")
            quota, used, held = row["quota_micros"], row["used_micros"], row["held_micros"]
            if quota is not None and used + held + amount > quota:
                return HoldRefused("key_quota", needed=amount, limit=quota, used=used, held=held)
        balance = row["balance"]
        if balance is None:
            return ValueError(f"no user with id {user_id}")
        if balance < amount:
            return HoldRefused("balance", needed=amount, limit=balance)
        return balance

    async def record(self, row: UsageRow, user_id: int | None) -> None:
        values = usage_values(row)
        if user_id is None:
            params = [*values, row.key_id, row.started_at]
            await self._write("record", self._settle(row, None, sql.RECORD_UNCHARGED, params))
            return
        if not isinstance(row.cost_micros, int) or row.cost_micros < 0:
            raise ValueError("a cost must be a non-negative integer")
        del values[sql.OVERRUN_COLUMN]
        params = [row.request_id, user_id, row.key_id, row.cost_micros, row.started_at, time.time(), None, None, *values]
        self._running_pool()
        settled = self.batcher.settle(row, user_id, params)
        try:
            await asyncio.shield(settled)
        except asyncio.CancelledError:
            settled.add_done_callback(log_settle_failure)  # nobody waits for it any more
            raise

    def _settle(self, row: UsageRow, user_id: int | None, statement: str, params: list[Any]) -> Operation[None]:
        """One request's settlement (or unbilled usage row) alone: one statement."""

        async def settle(conn: asyncpg.Connection, attempt: Attempt) -> None:
            try:
                settled = await conn.fetch(statement, *params, timeout=attempt.remaining)
            except asyncpg.UniqueViolationError as exc:
                if attempt.after_lost_connection and is_duplicate(exc, "idx_usage_logs_request_id"):
                    if await self._recorded_by_me(conn, row):
                        return
                raise
            if user_id is not None and not settled:
                raise await self._settle_refusal(conn, row.request_id, user_id)

        return settle

    async def _settle_one(self, pending: Pending) -> None:
        """A batched settlement sent alone (the batcher's way back to one statement)."""
        settle = self._settle(pending.row, pending.user_id, sql.RECORD_CHARGED, pending.params)
        await self._run("record", settle, self._open_pool())

    async def _refusal_of(self, pending: Pending) -> Exception:
        async def why(conn: asyncpg.Connection, attempt: Attempt) -> Exception:
            return await self._settle_refusal(conn, pending.row.request_id, pending.user_id)

        return await self._run("record", why, self._open_pool())

    async def _recorded_by_me(self, conn: asyncpg.Connection, row: UsageRow) -> bool:
        """Whether the usage row of ``row.request_id`` is this row (written by an
        attempt whose connection was lost after its commit)."""
        found = await conn.fetchrow(
            "SELECT created_at, cost_micros, user_id FROM usage_logs WHERE request_id = $1", row.request_id
        )
        return found is not None and (found["created_at"], found["cost_micros"], found["user_id"]) == (
            row.started_at, row.cost_micros, row.user_id,
        )  # fmt: skip

    async def _settle_refusal(self, conn: asyncpg.Connection, request_id: str, user_id: int) -> ValueError:
        owner = await conn.fetchval("SELECT user_id FROM holds WHERE request_id = $1", request_id)
        if owner is not None and owner != user_id:
            return ValueError(f"the reservation of {request_id} belongs to user {owner}, not {user_id}")
        return ValueError(f"no user with id {user_id}")

    async def release_stale_holds(self, older_than: float) -> int:
        async def sweep(conn: asyncpg.Connection, attempt: Attempt) -> int:
            return await conn.fetchval(sql.RELEASE_STALE, older_than, STALE_BATCH, time.time(), timeout=attempt.remaining)

        return await self._write("release_stale_holds", sweep)

    # --- fire and forget --------------------------------------------------------------------

    def report_breaker(self, report: BreakerReport) -> None:
        values = attrs.astuple(report)

        async def save(conn: asyncpg.Connection, attempt: Attempt) -> None:
            await conn.execute(sql.SAVE_BREAKER, *values, timeout=attempt.remaining)

        self._fire("report_breaker", save)

    def disable_channel_key(self, channel_id: int, fingerprint: str, index: int, reason: str) -> None:
        async def disable(conn: asyncpg.Connection, attempt: Attempt) -> None:
            async with conn.transaction():
                row = await conn.fetchrow(sql.LOCK_CHANNEL_KEYS, channel_id, timeout=attempt.remaining)
                marked = None if row is None else with_key_disabled(row["api_keys"], row["disabled_keys"], fingerprint, index, reason)
                if marked is not None and marked != row["disabled_keys"]:
                    await conn.execute(sql.SET_DISABLED_KEYS, channel_id, marked, timeout=attempt.remaining)

        self._fire("disable_channel_key", disable)

    def _fire(self, what: str, operation: Operation[None]) -> None:
        if not self.running:  # lost only when the store is already closed, as on SQLite
            return
        task = self._track(self._run(what, operation, self._running_pool()))
        task.add_done_callback(lambda done: log_write_failure(what, done))

    # --- running operations -------------------------------------------------------------------

    async def run(self, what: str, operation: Operation[T], *, write: bool = False) -> T:
        """``operation`` on a pooled connection, retried and timed as the request
        path's calls are (the admin port's and plugins' way in); a ``write`` runs
        shielded, as the request path's writes do."""
        if write:
            return await self._write(what, operation)
        return await self._run(what, operation, self._running_pool())

    def _observe_commit(self, seconds: float) -> None:
        if self.on_commit is not None:
            self.on_commit(seconds)

    def write_backlog(self) -> int:
        """Writes running (each waits for a connection or for its commit) and
        settlements queued for the next batch."""
        return len(self._tasks) + self.batcher.queued()

    async def _write(self, what: str, operation: Operation[T]) -> T:
        """Run a write in its own task: cancelling the caller does not cancel it."""
        task = self._track(self._run(what, operation, self._running_pool()))
        if self.on_commit is not None:
            task.add_done_callback(commit_timer(self.on_commit, time.perf_counter()))
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(lambda done: log_write_failure(what, done))  # nobody waits for it any more
            raise

    def _track(self, coro: Awaitable[T]) -> asyncio.Task[T]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _run(self, what: str, operation: Operation[T], pool: asyncpg.Pool) -> T:
        """``operation`` on ``pool`` (taken when the call was made: :meth:`close`
        waits for what was submitted before it), retried within the timeout."""
        return await run_retrying(pool, operation, store=self.name, what=what, timeout=self.timeout, attempts=self.attempts)

    def _open_pool(self) -> asyncpg.Pool:
        """The pool, also while closing: settlements queued before :meth:`close` finish on it."""
        if self._pool is None:
            raise RuntimeError("store is not running")
        return self._pool

    def _running_pool(self) -> asyncpg.Pool:
        if self._closing is not None:
            raise RuntimeError("store is closed")
        if self._pool is None:
            raise RuntimeError("store is not running (call start() first)")
        return self._pool

    @contextlib.asynccontextmanager
    async def _own_connection(self) -> AsyncIterator[asyncpg.Connection]:
        """A connection outside the pool, with no statement timeout (migrations)."""
        try:
            conn = await asyncpg.connect(self.dsn, timeout=self.timeout, command_timeout=None)
        except _STARTUP_ERRORS as exc:
            raise StoreUnavailable(f"{self.name} is unreachable: {describe(exc)}") from exc
        try:
            yield conn
        finally:
            await conn.close()


async def _keep_session(conn: asyncpg.Connection) -> None:
    """The pool's reset of a connection it takes back: none. The store changes no session
    state (no SET, LISTEN, cursor or session lock; an open transaction is still rolled
    back by the pool): asyncpg's default reset would cost a round trip per call."""
