"""The group-commit writer: one thread, one connection, one transaction per batch.

Callers on any event loop queue ``fn(conn, *args)``. The writer thread takes
everything pending, runs it in one ``BEGIN IMMEDIATE`` transaction, commits,
and only then wakes each waiter. Many concurrent writes thus cost one
fsync-bearing commit instead of one each.

A failing function rolls back only its own work. The writer first runs a batch
with no savepoints (most writes succeed, and two statements per write are
saved); if one of several functions fails, the whole transaction is rolled back
and the batch runs again with each function inside its own savepoint, as do the
next :data:`GUARDED_AFTER_FAILURE` batches.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

from ..base.lazy import LoggerWhenUsed

from .connection import BUSY_TIMEOUT_MS, JOB_SAVEPOINT, begin_immediate, begin_writer_job, commit, end_writer_job, writer_job
from .writer_turn import WriterTurn

log = LoggerWhenUsed("relaygate.store")

MAX_BATCH = 512
GUARDED_AFTER_FAILURE = 16  # batches run guarded (a savepoint per job) after an unguarded pass failed


@attrs.define(eq=False)
class WriteJob:
    """One queued write; ``future`` is ``None`` for fire-and-forget writes."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    future: asyncio.Future | None = None
    loop: asyncio.AbstractEventLoop | None = None


_Ran = tuple[list[tuple[WriteJob, bool, Any]], tuple[WriteJob, bool, Any] | None]  # done, and the one that ended the transaction
_STOP = object()
_SAVEPOINT, _ROLLBACK_TO, _RELEASE = (f"SAVEPOINT {JOB_SAVEPOINT}", f"ROLLBACK TO {JOB_SAVEPOINT}", f"RELEASE {JOB_SAVEPOINT}")


@attrs.define
class WriterStats:
    transactions: int = 0  # committed batches
    writes: int = 0  # functions run (succeeded or failed)
    failed: int = 0


class GroupCommitWriter:
    """Owns the writer thread. Thread-safe ``submit``; ``stop`` drains the queue first."""

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection],
        *,
        max_batch: int = MAX_BATCH,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        turn: WriterTurn | None = None,
    ) -> None:
        self._connect = connect
        self._turn = turn  # taken around each transaction: the gateway's writers to one file take turns (writer_turn.py)
        self._busy_timeout_ms = busy_timeout_ms  # how long a lock another process holds is waited for
        self._max_batch = max_batch
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        self._in_batch = 0
        self._guarded_batches = 0  # batches still to run guarded, after an unguarded pass failed
        self.stats = WriterStats()
        self.on_commit: Callable[[float], None] | None = None  # seconds of each committed batch (metrics)

    def backlog(self) -> int:
        """Writes queued or in the batch being written."""
        return self._queue.qsize() + self._in_batch

    def start(self) -> None:
        """Start the thread and open its connection (raises if that fails)."""
        self._thread = threading.Thread(target=self._run, name="relaygate-writer", daemon=True)
        self._thread.start()
        self._started.wait()
        if self._start_error is not None:
            raise self._start_error

    def submit(self, job: WriteJob) -> None:
        self._queue.put(job)

    def stop(self) -> None:
        """Blocking: let the thread finish everything queued, then join it."""
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join()
        self._thread = None

    # --- the thread ---------------------------------------------------------

    def _run(self) -> None:
        try:
            conn = self._connect()
        except BaseException as exc:
            self._start_error = exc
            self._started.set()
            return
        self._started.set()
        try:
            stopping = False
            while not stopping:
                batch: list[WriteJob] = []
                item = self._queue.get()
                while True:
                    if item is _STOP:
                        stopping = True  # still drain what was queued with it
                    else:
                        batch.append(item)
                    if len(batch) >= self._max_batch:
                        break
                    try:
                        item = self._queue.get_nowait()
                    except queue.Empty:
                        break
                if batch:
                    self._in_batch = len(batch)
                    self._run_batch_safely(conn, batch)
                    self._in_batch = 0
        finally:
            conn.close()
            if self._turn is not None:
                self._turn.close()

    def _run_batch_safely(self, conn: sqlite3.Connection, batch: list[WriteJob]) -> None:
        turn = self._turn
        if turn is not None:
            turn.take()  # not taken in time: SQLite's busy timeout decides, as without turns
        try:
            outcomes = self._run_batch(conn, batch)
        except Exception as exc:  # the connection itself failed: fail the batch, keep serving
            log.error("store.writer_batch_failed", error=repr(exc))
            try:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            outcomes = [(job, False, exc) for job in batch]
        finally:
            if turn is not None:
                turn.give()  # before waking the waiters: the next writer need not wait for that
        self._wake(outcomes)

    def _run_batch(self, conn: sqlite3.Connection, batch: list[WriteJob]) -> list[tuple[WriteJob, bool, Any]]:
        """Run the batch to its end (committed, or failed); what each job gave."""
        outcomes: list[tuple[WriteJob, bool, Any]] = []
        while batch:
            started = time.perf_counter()
            try:
                begin_immediate(conn, busy_timeout_ms=self._busy_timeout_ms)
            except Exception as exc:
                outcomes.extend((job, False, exc) for job in batch)
                break
            if self._guarded_batches:
                self._guarded_batches -= 1
                done, retry = self._run_guarded(conn, batch)
            else:
                unguarded = self._run_unguarded(conn, batch)
                if unguarded is None:  # rolled back: the same batch again, each job in its savepoint
                    self._guarded_batches = GUARDED_AFTER_FAILURE
                    continue
                done, retry = unguarded
            if retry is not None:
                # A function ended the whole transaction (an error SQLite answers
                # with a full rollback): it fails alone, the others run again.
                outcomes.append(retry)
                batch = [job for job, _, _ in done] + batch[len(done) + 1 :]
                continue
            try:
                commit(conn, busy_timeout_ms=self._busy_timeout_ms)
            except Exception as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                outcomes.extend((job, False, exc) for job, _, _ in done)
            else:
                self.stats.transactions += 1
                if self.on_commit is not None:
                    self.on_commit(time.perf_counter() - started)
                outcomes.extend(done)
            break
        return outcomes

    def _run_unguarded(self, conn: sqlite3.Connection, batch: list[WriteJob]) -> _Ran | None:
        """The first pass over a batch: every job straight in the transaction, no
        savepoints. When all succeed (the usual case) that is the batch's result.
        A batch of one job that fails fails alone (rolling the transaction back
        undoes exactly its work, as its savepoint would). Otherwise, when a job of
        several fails, or a job goes on after a failed :func:`atomic` block that
        had nothing to roll back to (``spoiled``), everything is rolled back and
        ``None`` returned: the writer runs the batch again, guarded."""
        done: list[tuple[WriteJob, bool, Any]] = []
        stats = self.stats
        for job in batch:
            state = begin_writer_job(conn, guarded=False)
            try:
                result = job.fn(conn, *job.args)
            except Exception as exc:
                if not conn.in_transaction:  # a full rollback: it fails alone, the others run again
                    stats.writes += len(done) + 1
                    stats.failed += 1
                    return done, (job, False, exc)
                conn.execute("ROLLBACK")
                if len(batch) > 1:
                    return None
                stats.writes += 1
                stats.failed += 1
                return done, (job, False, exc)
            finally:
                end_writer_job()
            if not conn.in_transaction:
                stats.writes += len(done) + 1
                stats.failed += 1
                return done, (job, False, RuntimeError(f"write function {_name(job.fn)} ended the writer's transaction"))
            if state.spoiled:
                conn.execute("ROLLBACK")
                return None
            done.append((job, True, result))
        stats.writes += len(done)
        return done, None

    def _run_guarded(self, conn: sqlite3.Connection, batch: list[WriteJob]) -> _Ran:
        if len(batch) == 1:  # alone in its transaction: the transaction isolates it, no savepoint
            return self._run_alone(conn, batch[0])
        done: list[tuple[WriteJob, bool, Any]] = []
        for job in batch:
            self.stats.writes += 1
            conn.execute(_SAVEPOINT)
            try:
                with writer_job(conn):
                    result = job.fn(conn, *job.args)
            except Exception as exc:
                self.stats.failed += 1
                if not conn.in_transaction:
                    return done, (job, False, exc)
                conn.execute(_ROLLBACK_TO)
                conn.execute(_RELEASE)
                done.append((job, False, exc))
                continue
            if not conn.in_transaction:
                error = RuntimeError(f"write function {_name(job.fn)} ended the writer's transaction")
                self.stats.failed += 1
                return done, (job, False, error)
            conn.execute(_RELEASE)
            done.append((job, True, result))
        return done, None

    def _run_alone(self, conn: sqlite3.Connection, job: WriteJob) -> _Ran:
        """A batch of one job: its failure rolls the whole transaction back (the
        batch then ends with nothing to commit), as its savepoint would have."""
        self.stats.writes += 1
        try:
            result = job.fn(conn, *job.args)
        except Exception as exc:
            self.stats.failed += 1
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            return [], (job, False, exc)
        if not conn.in_transaction:
            self.stats.failed += 1
            return [], (job, False, RuntimeError(f"write function {_name(job.fn)} ended the writer's transaction"))
        return [(job, True, result)], None

    def _wake(self, outcomes: list[tuple[WriteJob, bool, Any]]) -> None:
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[asyncio.Future, bool, Any]]] = {}
        for job, ok, value in outcomes:
            if job.future is None:
                if not ok:
                    log.error("store.write_failed", fn=_name(job.fn), error=repr(value))
                continue
            if job.future.cancelled() or job.loop is None:
                continue
            by_loop.setdefault(job.loop, []).append((job.future, ok, value))
        for loop, items in by_loop.items():
            try:
                loop.call_soon_threadsafe(_resolve, items)
            except RuntimeError:  # the loop is closed: nobody is waiting any more
                pass


def _resolve(items: list[tuple[asyncio.Future, bool, Any]]) -> None:
    """On the waiter's loop: hand each future its result or exception."""
    for future, ok, value in items:
        if future.done():  # cancelled by its caller; the write happened anyway
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
