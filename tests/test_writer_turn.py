"""The gateway's writers to one SQLite file take turns on an OS lock before
``BEGIN IMMEDIATE`` (``gateway_core/store/writer_turn.py``): a waiting writer
starts as soon as the other ends its transaction, one held too long is waited
for no longer than the busy timeout, and the lock is released before the
writer wakes its waiters."""

import asyncio
import functools
import os
import stat
import threading
import time

import pytest

from gateway_core.store import Store
from gateway_core.store.connection import connect
from gateway_core.store.writer import GroupCommitWriter, WriteJob
from gateway_core.store.writer_turn import SUFFIX, WriterTurn, turn_for


def _schema(schema):
    schema.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, value TEXT, at REAL)")


def test_a_turn_is_one_writers_at_a_time(tmp_path):
    database = str(tmp_path / "t.db")
    first, second = WriterTurn(database, timeout_ms=5000), WriterTurn(database, timeout_ms=60)
    try:
        assert first.take()
        began = time.monotonic()
        assert not second.take()  # held by the other: given up after the timeout
        assert time.monotonic() - began >= 0.06
        first.give()
        assert second.take()  # free: taken at once
        second.give()
        second.give()  # nothing held: nothing to do
    finally:
        first.close()
        second.close()


def test_a_waiting_writer_takes_the_turn_soon_after_it_is_given(tmp_path):
    database = str(tmp_path / "t.db")
    holder, waiter = WriterTurn(database, timeout_ms=5000), WriterTurn(database, timeout_ms=5000)
    taken_at: list[float] = []
    try:
        assert holder.take()
        thread = threading.Thread(target=lambda: taken_at.append(time.monotonic()) if waiter.take() else None)
        thread.start()
        time.sleep(0.2)
        assert not taken_at  # still waiting
        given_at = time.monotonic()
        holder.give()
        thread.join(5)
        assert taken_at and taken_at[0] - given_at < 0.05  # woken within the polling's cap, not SQLite's sleeps
        waiter.give()
    finally:
        holder.close()
        waiter.close()


def test_the_turn_file_is_private_and_only_for_files(tmp_path):
    database = str(tmp_path / "t.db")
    turn = turn_for(database, timeout_ms=100)
    assert turn is not None
    turn.close()
    assert stat.S_IMODE(os.stat(database + SUFFIX).st_mode) == 0o600
    assert turn_for(":memory:", timeout_ms=100) is None
    assert turn_for("file:shared?mode=memory&cache=shared", timeout_ms=100) is None


async def test_two_stores_on_one_file_commit_every_write_taking_turns(tmp_path):
    path = str(tmp_path / "w.db")
    stores = [Store(path, [("0001_items", _schema)]) for _ in range(2)]
    stores[0].migrate()
    for store in stores:
        await store.start()
    try:

        def insert(conn, value):
            conn.execute("INSERT INTO items (value, at) VALUES (?, ?)", (value, time.monotonic()))
            time.sleep(0.001)  # a transaction that takes a while: the other store's writer waits for its turn

        await asyncio.gather(*(stores[n % 2].write(insert, f"v{n}") for n in range(200)))
        conn = stores[0].connect()
        try:
            assert conn.execute("SELECT count(*), count(DISTINCT value) FROM items").fetchone() == (200, 200)
        finally:
            conn.close()
        assert all(store._writer.stats.transactions >= 1 for store in stores)  # both wrote
    finally:
        for store in stores:
            await store.close()


async def test_a_turn_held_elsewhere_too_long_leaves_the_decision_to_sqlite(tmp_path):
    """A process that holds the turn and stopped must not stop the others' writes for good."""
    path = str(tmp_path / "w.db")
    store = Store(path, [("0001_items", _schema)], busy_timeout_ms=100)
    store.migrate()
    stuck = WriterTurn(path, timeout_ms=100)
    assert stuck.take()
    await store.start()
    try:
        began = time.monotonic()
        await store.write(lambda conn: conn.execute("INSERT INTO items (value) VALUES ('late')"))
        assert 0.1 <= time.monotonic() - began < 2  # waited for the turn, then wrote (SQLite's lock was free)
    finally:
        stuck.close()
        await store.close()


class RecordingTurn(WriterTurn):
    def __init__(self, database, events):
        super().__init__(database, timeout_ms=1000)
        self.events = events

    def give(self):
        self.events.append("give")
        super().give()


@pytest.mark.parametrize("jobs", [1, 5])
async def test_the_turn_is_given_before_the_waiters_are_woken(tmp_path, jobs):
    path = str(tmp_path / "w.db")
    Store(path, [("0001_items", _schema)]).migrate()
    events: list[str] = []
    writer = GroupCommitWriter(functools.partial(connect, path), turn=RecordingTurn(path, events))
    wake = writer._wake
    writer._wake = lambda outcomes: (events.append("wake"), wake(outcomes))  # type: ignore[method-assign]
    writer.start()
    probe = WriterTurn(path, timeout_ms=0)
    try:
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in range(jobs)]
        for n, future in enumerate(futures):
            writer.submit(WriteJob(lambda conn, n: conn.execute("INSERT INTO items (value) VALUES (?)", (str(n),)).rowcount, (n,), future, loop))
        assert await asyncio.gather(*futures) == [1] * jobs
        assert events[:2] == ["give", "wake"]  # the next writer need not wait for the waking
        assert probe.take()  # nothing held between two batches
        probe.give()
    finally:
        probe.close()
        await asyncio.to_thread(writer.stop)
