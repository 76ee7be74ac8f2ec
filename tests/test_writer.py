"""The Store's reader pool and group-commit writer, driven from asyncio.

The writer's first pass runs a batch with no savepoints; a failure among several
writes rolls it back and runs it again, each write in its own savepoint. What each
write leaves is the same either way (the tests at the end)."""

import asyncio
import sqlite3
import threading

import pytest
from structlog.testing import capture_logs

from gateway_core.store import Store, atomic
from gateway_core.store.writer import GUARDED_AFTER_FAILURE


def _schema(schema):
    schema.execute("CREATE TABLE items (id INTEGER PRIMARY KEY, value TEXT)")
    schema.execute("CREATE UNIQUE INDEX idx_items_value ON items (value)")


@pytest.fixture
async def store(tmp_path):
    store = Store(str(tmp_path / "w.db"), [("0001_items", _schema)])
    store.migrate()
    await store.start()
    yield store
    await store.close()


def insert(conn, value):
    return conn.execute("INSERT INTO items (value) VALUES (?)", (value,)).lastrowid


def values(store):
    conn = store.connect()
    try:
        return sorted(row[0] for row in conn.execute("SELECT value FROM items"))
    finally:
        conn.close()


class Gate:
    """A write that holds the writer thread until released, so others pile up."""

    def __init__(self):
        self.entered = threading.Event()
        self.release = threading.Event()

    def __call__(self, conn):
        self.entered.set()
        assert self.release.wait(5)


async def hold_writer(store) -> Gate:
    gate = Gate()
    store.write_nowait(gate)
    await asyncio.to_thread(gate.entered.wait, 5)
    return gate


async def test_write_returns_the_result_once_committed(store):
    row_id = await store.write(insert, "a")
    assert row_id == 1
    other = sqlite3.connect(store.path)  # another connection sees it: it is committed
    assert other.execute("SELECT value FROM items WHERE id = ?", (row_id,)).fetchone() == ("a",)
    other.close()


async def test_concurrent_writes_share_transactions(store):
    gate = await hold_writer(store)
    before = store.writer_stats.transactions
    tasks = [asyncio.create_task(store.write(insert, f"v{i:03}")) for i in range(200)]
    await asyncio.sleep(0)  # every task has queued its write
    gate.release.set()
    results = await asyncio.gather(*tasks)
    assert sorted(results) == list(range(1, 201))
    assert values(store) == [f"v{i:03}" for i in range(200)]
    # the gate's own batch, then all 200 writes in one transaction
    assert store.writer_stats.transactions - before == 2


async def test_a_failing_function_rolls_back_only_its_own_work(store):
    def half_then_fail(conn):
        insert(conn, "bad-1")
        raise LookupError("nope")

    gate = await hold_writer(store)
    good1 = asyncio.create_task(store.write(insert, "good-1"))
    bad = asyncio.create_task(store.write(half_then_fail))
    duplicate = asyncio.create_task(store.write(insert, "good-1"))  # UNIQUE violation
    good2 = asyncio.create_task(store.write(insert, "good-2"))
    await asyncio.sleep(0)
    before = store.writer_stats.transactions
    gate.release.set()
    assert await good1 == 1
    with pytest.raises(LookupError, match="nope"):
        await bad
    with pytest.raises(sqlite3.IntegrityError):
        await duplicate
    assert isinstance(await good2, int)
    assert values(store) == ["good-1", "good-2"]
    assert store.writer_stats.transactions - before == 2  # the gate's batch, then one for all four


async def test_a_function_that_ends_the_transaction_fails_alone(store):
    def rollback_everything(conn):
        conn.execute("ROLLBACK")

    gate = await hold_writer(store)
    first = asyncio.create_task(store.write(insert, "first"))
    rogue = asyncio.create_task(store.write(rollback_everything))
    last = asyncio.create_task(store.write(insert, "last"))
    await asyncio.sleep(0)
    gate.release.set()
    await first
    with pytest.raises(RuntimeError, match="ended the writer's transaction"):
        await rogue
    await last
    assert values(store) == ["first", "last"]


async def test_close_flushes_pending_writes(tmp_path):
    store = Store(str(tmp_path / "w.db"), [("0001_items", _schema)])
    store.migrate()
    await store.start()
    gate = await hold_writer(store)
    for i in range(50):
        store.write_nowait(insert, f"n{i:02}")
    waiting = [asyncio.create_task(store.write(insert, f"w{i}")) for i in range(5)]
    await asyncio.sleep(0)
    gate.release.set()
    await store.close()
    await store.close()  # idempotent
    assert len(values(store)) == 55
    assert all(task.done() and not task.cancelled() for task in waiting)
    with pytest.raises(RuntimeError, match="closed"):
        await store.write(insert, "late")
    with pytest.raises(RuntimeError, match="closed"):
        await store.read(lambda conn: 1)


async def test_a_cancelled_waiter_still_gets_its_write(store):
    gate = await hold_writer(store)
    task = asyncio.create_task(store.write(insert, "cancelled-but-written"))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.release.set()
    await store.write(insert, "after")  # the queue is FIFO: the earlier write is committed too
    assert values(store) == ["after", "cancelled-but-written"]


async def test_write_nowait_logs_errors_without_raising(store):
    def fail(conn):
        raise ValueError("bad write")

    with capture_logs() as logs:
        store.write_nowait(fail)
        await store.write(insert, "still-fine")
    assert values(store) == ["still-fine"]
    assert any(entry["event"] == "store.write_failed" and "bad write" in entry["error"] for entry in logs)


async def test_reads_run_off_the_event_loop_on_read_only_connections(store):
    await store.write(insert, "x")
    loop_thread = threading.get_ident()

    def where(conn):
        return threading.get_ident(), conn.execute("SELECT value FROM items").fetchall()

    thread, rows = await store.read(where)
    assert thread != loop_thread
    assert rows == [("x",)]
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        await store.read(insert, "sneaky")
    threads = {t for t, _ in await asyncio.gather(*(store.read(where) for _ in range(20)))}
    assert loop_thread not in threads and len(threads) <= store.readers


async def test_writes_wait_for_another_process_holding_the_lock(store):
    other = sqlite3.connect(store.path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("INSERT INTO items (value) VALUES ('other')")
    task = asyncio.create_task(store.write(insert, "mine"))
    await asyncio.sleep(0.2)
    assert not task.done()  # busy: waiting for the lock, not failing
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(task, 5)
    assert values(store) == ["mine", "other"]


async def test_not_started(tmp_path):
    store = Store(str(tmp_path / "w.db"), [])
    with pytest.raises(RuntimeError, match="start"):
        await store.write(insert, "x")
    with pytest.raises(RuntimeError, match="start"):
        await store.read(lambda conn: 1)
    await store.close()  # closing a store never started is fine


# --- batches without savepoints ------------------------------------------------------------


def insert_then_fail(conn, value):
    conn.execute("INSERT INTO items (value) VALUES (?)", (value,))
    raise ValueError(f"{value} refused")


def atomic_fails_then_goes_on(conn, first, then):
    """A write that catches the failure of an atomic block that began its work,
    then writes something else: only ``then`` may remain."""
    try:
        with atomic(conn):
            conn.execute("INSERT INTO items (value) VALUES (?)", (first,))
            raise ValueError("inside")
    except ValueError:
        pass
    return insert(conn, then)


async def _batch(store, writes):
    """Run ``writes`` (functions and their arguments) as one batch of the writer:
    a first write holds the writer thread while they queue."""
    entered, release = threading.Event(), threading.Event()

    def gate(conn):
        entered.set()
        assert release.wait(5)

    store.write_nowait(gate)
    await asyncio.to_thread(entered.wait, 5)
    tasks = [asyncio.create_task(store.write(fn, *args)) for fn, *args in writes]
    await asyncio.sleep(0)
    release.set()
    return await asyncio.gather(*tasks, return_exceptions=True)


async def test_a_batch_that_succeeds_runs_unguarded_in_one_transaction(store):
    before = store.writer_stats.transactions
    results = await _batch(store, [(insert, f"v{i}") for i in range(20)])
    assert sorted(results) == list(range(1, 21))
    assert store.writer_stats.transactions - before == 2  # the gate's, then the 20 writes
    assert store._writer._guarded_batches == 0


async def test_one_failure_among_several_rolls_back_its_own_work_only(store):
    results = await _batch(store, [(insert, "a"), (insert_then_fail, "b"), (insert, "c"), (insert, "a")])
    assert results[0] == 1 and isinstance(results[1], ValueError) and results[2] == 2
    assert isinstance(results[3], sqlite3.IntegrityError)  # "a" was written by the first write of the batch
    assert values(store) == ["a", "c"]
    assert store._writer._guarded_batches == GUARDED_AFTER_FAILURE - 1  # this batch ran guarded, then counts down
    assert store.writer_stats.failed == 2


async def test_a_write_going_on_after_a_failed_atomic_block_keeps_only_its_later_work(store):
    results = await _batch(store, [(insert, "a"), (atomic_fails_then_goes_on, "x", "y")])
    assert results == [1, 2]
    assert values(store) == ["a", "y"]
    alone = await store.write(atomic_fails_then_goes_on, "p", "q")  # a batch of one
    assert alone == 3
    assert values(store) == ["a", "q", "y"]


async def test_a_write_alone_that_fails_leaves_nothing(store):
    with pytest.raises(ValueError):
        await store.write(insert_then_fail, "z")
    assert values(store) == []
    assert await store.write(insert, "z") == 1  # the transaction was rolled back, the writer goes on


async def test_batches_run_unguarded_again_after_the_guarded_ones(store):
    await _batch(store, [(insert, "a"), (insert_then_fail, "b")])
    for n in range(GUARDED_AFTER_FAILURE):
        await store.write(insert, f"n{n}")
    assert store._writer._guarded_batches == 0
    results = await _batch(store, [(insert, "c"), (insert, "d")])
    assert all(isinstance(r, int) for r in results)
    assert "c" in values(store) and "d" in values(store)
