"""The SQLite store's checkpoint thread: the log reaches the database file
beside the writer, whose own commits no longer checkpoint, nothing is copied
while the writer commits nothing, and an idle log file is cut back to nothing."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
import time

from gateway_core.store import Store
from gateway_core.store.checkpointer import WRITER_AUTOCHECKPOINT_PAGES, Checkpointer
from gateway_core.store.connection import connect
from gateway_core.store.sqlite_sql import sqlite_only


def notes_schema(db) -> None:
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)")


def add_note(conn: sqlite3.Connection, text: str) -> None:
    conn.execute("INSERT INTO notes (text) VALUES (?)", (text,))


def rows_in_database_file(path, tmp_path) -> int:
    """The notes the database file holds by itself, without its log."""
    copy = tmp_path / "copy.db"
    for _ in range(50):  # a checkpoint may be writing the file while it is copied
        copy.unlink(missing_ok=True)
        shutil.copyfile(path, copy)
        try:
            conn = sqlite3.connect(copy)
            try:
                if conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'notes'").fetchone()[0] == 0:
                    return 0  # not even the table reached the file yet
                return conn.execute("SELECT count(*) FROM notes").fetchone()[0]
            finally:
                conn.close()
        except sqlite3.DatabaseError:
            time.sleep(0.01)
    raise AssertionError("no consistent copy of the database file")


async def eventually(check, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "not within the time allowed"
        await asyncio.sleep(0.02)


async def test_the_log_reaches_the_database_file_beside_the_writer(tmp_path):
    path = tmp_path / "g.db"
    store = Store(str(path), [("0001_notes", sqlite_only(notes_schema))])
    before = set(checkpointers())  # an earlier test in this process may have left a store open
    await store.start()
    ours = set(checkpointers()) - before
    try:
        # the writer's commits checkpoint only past a bound far above SQLite's 1,000 pages
        assert await store.write(lambda conn: conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0]) == WRITER_AUTOCHECKPOINT_PAGES
        await asyncio.gather(*(store.write(add_note, f"note {n}") for n in range(200)))
        await eventually(lambda: rows_in_database_file(path, tmp_path) == 200)
        # a second with no commit: the log file is cut back to nothing
        await eventually(lambda: (tmp_path / "g.db-wal").stat().st_size == 0, timeout=5.0)
        assert await store.read(lambda conn: conn.execute("SELECT count(*) FROM notes").fetchone()[0]) == 200
        assert len(ours) == 1 and all(thread.is_alive() for thread in ours)
    finally:
        await store.close()
    assert not any(thread.is_alive() for thread in ours)


def checkpointers() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "relaygate-checkpointer"]


async def test_nothing_is_copied_until_the_writer_commits(tmp_path):
    path = tmp_path / "g.db"
    writer = connect(str(path))
    writer.execute("PRAGMA wal_autocheckpoint = 0")  # only the checkpointer copies the log
    notes_schema(writer)
    commits = 0
    checkpointer = Checkpointer(lambda: connect(str(path)), lambda: commits, interval_s=0.02)
    checkpointer.start()
    try:
        for n in range(20):
            add_note(writer, f"note {n}")
        await asyncio.sleep(0.3)  # fifteen intervals with no commit reported
        assert rows_in_database_file(path, tmp_path) == 0
        commits = 20
        await eventually(lambda: rows_in_database_file(path, tmp_path) == 20)
    finally:
        checkpointer.stop()
        writer.close()


async def test_an_idle_checkpointer_looks_for_commits_ten_times_less_often(tmp_path):
    path = tmp_path / "g.db"
    writer = connect(str(path))
    notes_schema(writer)
    looks = 0
    commits = 0

    def count() -> int:
        nonlocal looks
        looks += 1
        return commits

    checkpointer = Checkpointer(lambda: connect(str(path)), count, interval_s=0.01)
    checkpointer.start()
    try:
        await asyncio.sleep(0.5)  # nothing committed: one look per 0.1 s, not per 0.01 s
        assert 2 <= looks <= 8, looks
        add_note(writer, "a note")
        commits = 1
        await eventually(lambda: rows_in_database_file(path, tmp_path) == 1)  # noticed at the next look, copied
    finally:
        checkpointer.stop()
        writer.close()
