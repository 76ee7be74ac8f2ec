"""Settlements sent to PostgreSQL several per round trip.

A settlement (release, capture, the key's amounts and the usage row: one
statement, :data:`~.statements.RECORD_CHARGED`) waits in a queue; a flusher
task takes everything queued (at most :attr:`SettlementBatcher.max_batch`) and
sends it with asyncpg's ``fetchmany``: every statement of the batch in one
pipeline ending in one ``Sync``, hence **one round trip and one implicit
transaction** (one commit, one WAL flush) for the lot. A settlement that finds
the queue empty starts a flusher of its own unless ``flushers`` are already
sending; otherwise it waits for the next batch. So a lone settlement goes
alone with no wait added, a few run side by side on several connections as
before, and under load the batches grow, as SQLite's group commit does.

Each waiter is woken once the batch has committed: a settlement is durable
before its response's last byte, as before. Isolation is READ COMMITTED: the
first statement of a batch locks every key of the batch, then every user, each
in id order (keys before users is the order every statement of the store takes
them in), so batches and single statements never wait on each other in a
cycle. Should a deadlock or a serialization failure happen anyway (the sweeper
takes a reservation's row first), PostgreSQL rolls the batch back whole and it
is sent again, as a lost connection is (after checking whether the lost batch
had committed: all or none of its usage rows are there). A batch refused for
any other reason (one request recorded twice) is rolled back whole, and its
settlements are then run one by one, so that only the faulty one fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import attrs

from gateway_core.records import UsageRow
from . import statements as sql
from .faults import Attempt, run_retrying

MAX_BATCH = 256
LOCKED_KEYS, LOCKED_USERS = 6, 7  # RECORD_CHARGED's $7 and $8: what the batch locks first


@attrs.define(eq=False)
class Pending:
    """One settlement waiting: ``params`` are RECORD_CHARGED's (``$7``/``$8`` unset)."""

    row: UsageRow
    user_id: int
    params: list[Any]
    future: asyncio.Future[None]
    deadline: float  # loop time by which it must be done


@attrs.define
class BatchStats:
    batches: int = 0  # sent as one pipeline of two or more
    settlements: int = 0  # settled in those batches
    singles: int = 0  # sent alone (a batch of one, or one by one after a refused batch)


class SettlementBatcher:
    """Gathers settlements and sends them several per round trip (see the module)."""

    def __init__(
        self,
        *,
        pool: Callable[[], asyncpg.Pool],
        single: Callable[[Pending], Awaitable[None]],
        refusal: Callable[[Pending], Awaitable[Exception]],
        track: Callable[[Awaitable[None]], asyncio.Task[None]],
        store: str,
        timeout: float,
        attempts: int,
        observe: Callable[[float], None] = lambda seconds: None,
        max_batch: int = MAX_BATCH,
        flushers: int = 1,
    ) -> None:
        self._pool = pool
        self._single = single
        self._refusal = refusal
        self._track = track
        self._store = store
        self._timeout = timeout
        self._attempts = attempts
        self._observe = observe  # seconds of each batch's commit (metrics)
        self.max_batch = max(1, max_batch)
        self.flushers = max(1, flushers)
        self._queue: list[Pending] = []
        self._sending = 0  # flushers at work
        self.stats = BatchStats()

    def queued(self) -> int:
        """Settlements waiting for the next batch."""
        return len(self._queue)

    def settle(self, row: UsageRow, user_id: int, params: list[Any]) -> asyncio.Future[None]:
        """Queue one settlement; the future resolves once it has committed (or
        with its error). Cancelling the caller does not take it off the queue."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._queue.append(Pending(row, user_id, params, future, loop.time() + self._timeout))
        if len(self._queue) == 1 and self._sending < self.flushers:
            self._sending += 1
            self._track(self._flush_all())
        return future

    async def _flush_all(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue[: self.max_batch], self._queue[self.max_batch :]
                await self._flush(batch)
        finally:
            self._sending -= 1

    async def _flush(self, batch: list[Pending]) -> None:
        if len(batch) == 1:
            await self._one_by_one(batch)
            return
        started = time.perf_counter()
        try:
            settled = await self._send(batch)
        except asyncpg.PostgresError:  # refused whole (no transient fault): find the faulty one
            await self._one_by_one(batch)
            return
        except BaseException as exc:  # unavailable, timed out, cancelled: every waiter hears it
            for pending in batch:
                _fail(pending.future, exc)
            if not isinstance(exc, Exception):
                raise
            return
        self._observe(time.perf_counter() - started)
        self.stats.batches += 1
        self.stats.settlements += len(batch)
        for pending in batch:
            if pending.row.request_id in settled:
                _succeed(pending.future)
            else:
                await self._refuse(pending)

    async def _send(self, batch: list[Pending]) -> set[str]:
        """The batch as one pipeline (one implicit transaction); the request ids settled."""
        batch = sorted(batch, key=lambda p: (p.row.key_id or 0, p.user_id))
        first = list(batch[0].params)
        first[LOCKED_KEYS] = sorted({p.row.key_id for p in batch if p.row.key_id is not None})
        first[LOCKED_USERS] = sorted({p.user_id for p in batch})
        args = [first, *(p.params for p in batch[1:])]
        ids = [p.row.request_id for p in batch]

        async def send(conn: asyncpg.Connection, attempt: Attempt) -> set[str]:
            if attempt.after_lost_connection:  # the batch is all or nothing: did it commit?
                found = await conn.fetch(sql.RECORDED_AMONG, ids, timeout=attempt.remaining)
                if found:
                    return {row["request_id"] for row in found}
            rows = await conn.fetchmany(sql.RECORD_CHARGED, args, timeout=attempt.remaining)
            return {row["request_id"] for row in rows}

        loop = asyncio.get_running_loop()
        timeout = max(0.001, min(p.deadline for p in batch) - loop.time())
        return await run_retrying(self._pool(), send, store=self._store, what="record", timeout=timeout, attempts=self._attempts)

    async def _one_by_one(self, batch: list[Pending]) -> None:
        self.stats.singles += len(batch)
        results: list[BaseException | None]
        if len(batch) == 1:
            try:
                await self._single(batch[0])
                results = [None]
            except Exception as exc:
                results = [exc]
        else:
            results = await asyncio.gather(*(self._single(p) for p in batch), return_exceptions=True)
        for pending, result in zip(batch, results):
            if isinstance(result, BaseException):
                _fail(pending.future, result)
            else:
                _succeed(pending.future)

    async def _refuse(self, pending: Pending) -> None:
        try:
            error = await self._refusal(pending)
        except Exception as exc:
            error = exc
        _fail(pending.future, error)


def _succeed(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _fail(future: asyncio.Future[None], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
