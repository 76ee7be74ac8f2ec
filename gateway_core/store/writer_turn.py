"""Taking turns at writing among the gateway processes that share one SQLite file.

SQLite lets one connection write at a time. A connection that finds the write
lock taken sleeps in SQLite's busy handler (1, 2, 5, 10, 15 … ms) and tries
again. Between the workers of ``relaygate serve --workers N`` on one file, each
committing a batch every few hundred microseconds under load, those sleeps
left a worker's writer idle for milliseconds while another committed again and
again: two workers on two CPUs answered about 1.1 times what one did.

So the writers of the gateway's processes first take their turn on an OS lock,
``flock`` on the file ``<database>-writer`` beside the database, and only then
``BEGIN IMMEDIATE``; a waiting writer tries the turn again every 0.1 ms at most,
so it starts within that of the other's ``COMMIT``. SQLite's own lock still guards the
data (a CLI command or a backup takes only that one, and is waited for as
before): the turn only orders the gateway's writers among themselves.

A turn is waited for up to the writer's busy timeout, in short sleeps (a
process that holds it and stopped must not stop the others for good); then
the writer goes on to ``BEGIN IMMEDIATE`` without it, where SQLite's busy
timeout decides as it did before.
"""

from __future__ import annotations

import fcntl
import os
import time

FIRST_PAUSE_S, MAX_PAUSE_S = 0.00002, 0.0001  # the waits between two tries: 20 µs, doubling, up to 0.1 ms
SUFFIX = "-writer"


class WriterTurn:
    """The turn of one writer thread (not thread-safe: one per writer)."""

    __slots__ = ("_fd", "_timeout_s", "_held")

    def __init__(self, database: str, *, timeout_ms: int) -> None:
        self._fd = os.open(database + SUFFIX, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._timeout_s = timeout_ms / 1000
        self._held = False

    def take(self) -> bool:
        """Wait for the turn (up to the timeout); whether it was taken."""
        fd = self._fd
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            deadline = time.monotonic() + self._timeout_s
            pause = FIRST_PAUSE_S
            while True:
                time.sleep(pause)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        return False
                    pause = min(MAX_PAUSE_S, pause * 2)
        self._held = True
        return True

    def give(self) -> None:
        """End the turn (nothing if it was not taken)."""
        if self._held:
            self._held = False
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        self.give()
        os.close(self._fd)


def turn_for(database: str, *, timeout_ms: int) -> WriterTurn | None:
    """The turn of a writer to ``database``; ``None`` for a database with no file of
    its own (``:memory:``, a ``file:`` URI), which no other process shares."""
    if database == ":memory:" or database.startswith("file:"):
        return None
    return WriterTurn(database, timeout_ms=timeout_ms)
