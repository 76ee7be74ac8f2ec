"""Copying the write-ahead log back into the database file, beside the writer.

In WAL mode SQLite checkpoints from inside a commit: the commit that takes the
log past ``wal_autocheckpoint`` pages (1,000 by default, about every 45 priced
requests at c1) copies the log's pages into the database file and syncs both
files before it returns. That commit, and every request waiting on it, took 5 to
8 ms instead of about 0.2 (about 1.3 % of the writer's batches: the p99 of a
request at c1).

Here a thread of the store's own runs ``PRAGMA wal_checkpoint(PASSIVE)`` on its
own connection every :data:`INTERVAL_S`: a passive checkpoint copies what no
reader still needs and never waits for, or blocks, the writer, which goes on
appending to the log meanwhile. The writer's connection keeps SQLite's own
checkpoint, at :data:`WRITER_AUTOCHECKPOINT_PAGES` only, so the log stays
bounded should this thread fall behind: under a steady load the log is rarely
copied to its end, so it starts over at that bound. After a second with no
commit the log file is cut back to nothing (``TRUNCATE``), waiting at most
:data:`CHECKPOINT_BUSY_TIMEOUT_MS` for readers; from then until the next commit
the thread looks once a second instead of every interval (the first checkpoint
after a quiet spell may come a second late; the log meanwhile stays far below
the writer's own bound). Nothing changes for durability: a
commit is in the log (which a killed process does not lose) before its waiter
is woken, as before; the syncs happen here instead of in a commit, and more often.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from ..base.lazy import LoggerWhenUsed
from .connection import is_busy

log = LoggerWhenUsed("relaygate.store")

INTERVAL_S = 0.1
WRITER_AUTOCHECKPOINT_PAGES = 10_000  # the writer checkpoints itself only past this (about 40 MB of log)
IDLE_INTERVALS_BEFORE_TRUNCATE = 10  # a second with no commit: the log file is cut back to nothing
# how long a truncating checkpoint waits for readers (and holds up the writer meanwhile)
CHECKPOINT_BUSY_TIMEOUT_MS = 10


class Checkpointer:
    """The checkpoint thread of one store: ``start``, then ``stop`` (waits for it).
    It checkpoints only after the writer committed something (an idle gateway
    runs no checkpoint); other processes' writes are their own checkpointers' or
    SQLite's."""

    def __init__(
        self, connect: Callable[[], sqlite3.Connection], commits: Callable[[], int], *, interval_s: float = INTERVAL_S
    ) -> None:
        self._connect = connect
        self._commits = commits  # the writer's committed transactions so far: none new, nothing to copy
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        conn = self._connect()  # raises here, not in the thread, if the file cannot be opened
        self._thread = threading.Thread(target=self._run, args=(conn,), name="relaygate-checkpointer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Blocking: end the thread after its checkpoint in progress, if any."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self, conn: sqlite3.Connection) -> None:
        copied_after = 0
        idle = 0  # intervals since the last commit, while the log file still holds something
        try:
            # nothing in the log: look for commits only once per truncation period (an idle
            # gateway's thread wakes once a second, not ten times), then every interval
            while not self._stopping.wait(self._interval_s if idle else self._interval_s * IDLE_INTERVALS_BEFORE_TRUNCATE):
                commits = self._commits()
                if commits != copied_after:
                    copied_after, idle = commits, 1
                    self.checkpoint(conn, "PASSIVE")
                elif idle:
                    idle += 1
                    if idle > IDLE_INTERVALS_BEFORE_TRUNCATE:
                        idle = 0
                        self.checkpoint(conn, "TRUNCATE")
        finally:
            conn.close()

    def checkpoint(self, conn: sqlite3.Connection, mode: str) -> None:
        """One checkpoint; another process's checkpoint, or its write, in progress is
        not an error (the next one copies what this one could not)."""
        try:
            conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                log.warning("store.checkpoint_failed", mode=mode, error=str(exc))


def writer_connection(connect: Callable[[], sqlite3.Connection]) -> Callable[[], sqlite3.Connection]:
    """``connect`` for the writer's connection, whose commits leave checkpoints to
    the :class:`Checkpointer` (up to :data:`WRITER_AUTOCHECKPOINT_PAGES`)."""

    def connect_writer() -> sqlite3.Connection:
        conn = connect()
        conn.execute(f"PRAGMA wal_autocheckpoint = {WRITER_AUTOCHECKPOINT_PAGES}")
        return conn

    return connect_writer
