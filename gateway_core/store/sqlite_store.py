"""The SQLite store: a reader thread pool and a group-commit writer over one file."""

from __future__ import annotations

import asyncio
import functools
import os
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from ..base.lazy import LoggerWhenUsed
from ..records import ChannelRecord, KeyRecord, UsageRow
from .request_store import BreakerReport, HoldOwner, PriceSnapshot, StoreLocked, StoreUnavailable
from ..sql import Migration
from . import budgets as budget_counts
from . import channel_health, channels, hold_owners, keys, requests, wallet
from .checkpointer import CHECKPOINT_BUSY_TIMEOUT_MS, Checkpointer, writer_connection
from .connection import BUSY_TIMEOUT_MS, connect, is_busy
from .writer_turn import turn_for
from .migrations import apply_migrations
from .writer import GroupCommitWriter, WriteJob

T = TypeVar("T")
log = LoggerWhenUsed("relaygate.store")


class Store:
    """The embedded store: implements :class:`gateway_core.store.request_store.RequestStore`.

    Domain functions are plain ``fn(conn, *args)``: :meth:`read` runs one on a
    reader thread (never on the event loop), :meth:`write` queues one for the
    writer thread and resolves once its transaction is committed. The request
    path's methods below are such reads and writes.
    """

    def __init__(
        self,
        path: str,
        migrations: Sequence[Migration],
        *,
        readers: int = 2,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
    ) -> None:
        self.path = str(path)
        self.migrations = list(migrations)
        self.readers = max(1, readers)
        self.busy_timeout_ms = busy_timeout_ms
        self._pool: ThreadPoolExecutor | None = None
        self._writer: GroupCommitWriter | None = None
        self._checkpointer: Checkpointer | None = None
        self._local = threading.local()
        self._reader_conns: list[sqlite3.Connection] = []
        self._reader_lock = threading.Lock()
        self._closing: asyncio.Future | None = None
        self._closed = False
        self.on_commit: Callable[[float], None] | None = None  # seconds of each group commit (metrics)
        self._owner: str | None = None

    # --- connections and schema --------------------------------------------

    def connect(self, *, query_only: bool = False) -> sqlite3.Connection:
        """A new connection (WAL, ``synchronous=NORMAL``, busy timeout, foreign keys)."""
        return connect(self.path, busy_timeout_ms=self.busy_timeout_ms, query_only=query_only)

    def migrate(self) -> list[str]:
        """Create the parent directory and apply pending migrations; return their names.

        A new database file is created readable by its owner only (it holds the
        upstream keys); SQLite gives its ``-wal`` and ``-shm`` files the same mode.
        """
        if self.path != ":memory:" and not self.path.startswith("file:"):
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            _create_private(self.path)
        conn = self.connect()
        try:
            applied = apply_migrations(conn, self.migrations)
        finally:
            conn.close()
        return applied

    # --- lifecycle -----------------------------------------------------------

    @property
    def running(self) -> bool:
        return self._writer is not None and not self._closed

    async def start(self) -> None:
        """Bring the schema up to date, then start the reader pool, the writer
        thread and the checkpoint thread (:mod:`.checkpointer`)."""
        if self._closed:
            raise RuntimeError("store is closed")
        if self._writer is not None:
            return
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, self.migrate)
        turn = turn_for(self.path, timeout_ms=self.busy_timeout_ms)
        writer = GroupCommitWriter(writer_connection(self.connect), busy_timeout_ms=self.busy_timeout_ms, turn=turn)
        writer.on_commit = self.on_commit
        await loop.run_in_executor(None, writer.start)
        checkpointer = Checkpointer(
            functools.partial(connect, self.path, busy_timeout_ms=CHECKPOINT_BUSY_TIMEOUT_MS), lambda: writer.stats.transactions
        )
        await loop.run_in_executor(None, checkpointer.start)
        self._checkpointer = checkpointer
        self._pool = ThreadPoolExecutor(max_workers=self.readers, thread_name_prefix="relaygate-reader")
        self._writer = writer

    async def close(self) -> None:
        """Flush every pending write, then stop the threads. Safe to call twice."""
        if self._closing is None:
            self._closed = True
            self._closing = asyncio.ensure_future(self._shutdown())
        await asyncio.shield(self._closing)

    async def _shutdown(self) -> None:
        loop = asyncio.get_running_loop()
        if self._writer is not None:
            await loop.run_in_executor(None, self._writer.stop)
        if self._checkpointer is not None:
            await loop.run_in_executor(None, self._checkpointer.stop)
        if self._pool is not None:
            await loop.run_in_executor(None, functools.partial(self._pool.shutdown, wait=True))
        with self._reader_lock:
            conns, self._reader_conns = self._reader_conns, []
        for conn in conns:
            conn.close()

    def write_backlog(self) -> int:
        """Writes queued for the writer thread or being committed."""
        return self._writer.backlog() if self._writer is not None else 0

    @property
    def writer_stats(self):
        """Counters of the writer (transactions committed, writes run, failures)."""
        return self._writer.stats if self._writer is not None else None

    # --- reads and writes ----------------------------------------------------

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on a reader thread with its own read-only connection."""
        if self._pool is None or self._closed:
            raise RuntimeError("store is not running (call start() first)" if not self._closed else "store is closed")
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._pool, self._call_reader, fn, args)
        except sqlite3.OperationalError as exc:
            if is_busy(exc):
                raise self._unavailable(exc) from exc
            raise

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        """Queue ``fn(conn, *args)``; resolve with its result once committed.

        ``fn``'s exception is raised here (only here). If the caller is
        cancelled while waiting, the write still happens. ``fn`` runs inside the
        writer's transaction: it must not ``COMMIT`` or ``ROLLBACK`` itself (use
        :func:`gateway_core.store.atomic` for a block that must be all or nothing).
        """
        writer = self._running_writer()
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        writer.submit(WriteJob(fn, args, future, loop))
        try:
            return await future
        except sqlite3.OperationalError as exc:
            if is_busy(exc):  # BEGIN IMMEDIATE was retried for twice the busy timeout: nothing was written
                raise self._unavailable(exc) from exc
            raise

    def _unavailable(self, exc: sqlite3.OperationalError) -> StoreUnavailable:
        """A 503 for a lock another process held past the busy timeout (logged with its cause)."""
        log.warning("store.locked", db=self.path, busy_timeout_ms=self.busy_timeout_ms, error=str(exc))
        return StoreLocked("The gateway's database is locked by another process; try again shortly.")

    def write_nowait(self, fn: Callable[..., Any], *args: Any) -> None:
        """Queue ``fn(conn, *args)`` without waiting; its errors are logged."""
        writer = self._running_writer()
        writer.submit(WriteJob(fn, args))

    # --- the request path's port (RequestStore) ---------------------------------

    async def find_key(self, key_hash: str) -> KeyRecord | None:
        return await self.read(keys.find_key, key_hash)

    async def list_channels(self) -> list[ChannelRecord]:
        return await self.read(channels.list_channels)

    async def price_snapshot(self) -> PriceSnapshot:
        return await self.read(requests.read_price_snapshot)

    async def hold(self, user_id: int, amount_micros: int, request_id: str, key_id: int | None) -> int:
        return await self.write(wallet.hold, user_id, amount_micros, request_id, key_id, self._owner)

    async def hold_within_budgets(
        self, user_id: int, amount_micros: int, request_id: str, key_id: int | None, budgets: Sequence[Any]
    ) -> int:
        return await self.write(budget_counts.hold_within_budgets, user_id, amount_micros, request_id, key_id, self._owner, budgets)

    async def record(self, row: UsageRow, user_id: int | None) -> None:
        await self.write(requests.record_request, row, user_id)

    async def release_stale_holds(self, older_than: float) -> int:
        return await self.write(wallet.release_stale_holds, older_than)

    def own_holds(self, owner: str) -> None:
        self._owner = owner

    async def renew_hold_owner(self, owner: HoldOwner, gone: Sequence[str] = ()) -> list[HoldOwner]:
        return await self.write(hold_owners.renew_hold_owner, owner, tuple(gone))

    def report_breaker(self, report: BreakerReport) -> None:
        if self.running:  # lost only when the store is already closed
            self.write_nowait(channel_health.save_breaker, report)

    def disable_channel_key(self, channel_id: int, fingerprint: str, index: int, reason: str) -> None:
        if self.running:
            self.write_nowait(channels.disable_channel_key, channel_id, fingerprint, index, reason)

    def _running_writer(self) -> GroupCommitWriter:
        if self._closed:
            raise RuntimeError("store is closed")
        if self._writer is None:
            raise RuntimeError("store is not running (call start() first)")
        return self._writer

    def _call_reader(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect(query_only=True)
            self._local.conn = conn
            with self._reader_lock:
                self._reader_conns.append(conn)
        return fn(conn, *args)


def _create_private(path: str) -> None:
    """Create an empty file at ``path`` with mode 0600, unless it exists."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
