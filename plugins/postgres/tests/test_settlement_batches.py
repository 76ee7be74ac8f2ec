"""Settlements sent to PostgreSQL several per round trip (store/postgres/batch.py):
each batch is all or nothing, a faulty settlement fails alone, a batch whose
connection is killed mid-flight settles once, and batches taken together with
holds on several keys of one user keep the books exact."""

from __future__ import annotations

import asyncio
import random

import pytest

from gateway_core.store.request_store import HoldRefused

from .conftest import Seeder
from .test_postgres_faults import backend_waiting_on_a_lock, started, usage


@pytest.fixture
async def seed(pg_url: str):
    from relaygate_postgres.store import PostgresStore

    await PostgresStore(pg_url).migrate()
    seeder = await Seeder.open(pg_url)
    yield seeder
    await seeder.close()


async def test_settlements_waiting_together_go_in_one_batch(pg_url, seed):
    user_id = await seed.user(balance_micros=100_000)
    key_id = await seed.key(user_id, "hash-1")
    store = await started(pg_url)
    try:
        for n in range(20):
            await store.hold(user_id, 1_000, f"r{n}", key_id)
        await asyncio.gather(*(store.record(usage(f"r{n}", user_id, key_id, 100 + n), user_id) for n in range(20)))
        stats = store.batcher.stats
        assert stats.batches >= 1 and stats.settlements + stats.singles == 20 and stats.settlements >= 10
    finally:
        await store.close()
    assert await seed.value("SELECT count(*) FROM ledger WHERE kind = 'capture'") == 20
    assert await seed.balance(user_id) == await seed.available(user_id) == 100_000 - sum(100 + n for n in range(20))
    assert await seed.problems() == []


async def test_a_faulty_settlement_fails_alone(pg_url, seed):
    user_id = await seed.user(balance_micros=100_000)
    key_id = await seed.key(user_id, "hash-1")
    store = await started(pg_url)
    try:
        await store.hold(user_id, 1_000, "done", key_id)
        await store.record(usage("done", user_id, key_id, 300), user_id)
        for n in range(5):
            await store.hold(user_id, 1_000, f"r{n}", key_id)
        results = await asyncio.gather(
            store.record(usage("done", user_id, key_id, 300), user_id),  # recorded twice: refused whole
            store.record(usage("r9", 999, key_id, 300), 999),  # no such user
            *(store.record(usage(f"r{n}", user_id, key_id, 200), user_id) for n in range(5)),
            return_exceptions=True,
        )
    finally:
        await store.close()
    assert "unique" in str(results[0]).lower() or "duplicate" in str(results[0]).lower()
    assert isinstance(results[1], ValueError) and "no user" in str(results[1])
    assert results[2:] == [None] * 5
    assert await seed.ledger("done") == [("capture", -300)]
    assert await seed.value("SELECT count(*) FROM usage_logs") == 6
    assert await seed.balance(user_id) == 100_000 - 300 - 5 * 200
    assert await seed.problems() == []


async def test_a_batch_whose_connection_is_killed_settles_once(pg_url, seed):
    user_id = await seed.user(balance_micros=100_000)
    key_id = await seed.key(user_id, "hash-1")
    store = await started(pg_url)
    try:
        for n in range(6):
            await store.hold(user_id, 1_000, f"r{n}", key_id)
        blocker = await Seeder.open(pg_url)
        await blocker.execute("BEGIN")
        await blocker.execute("SELECT id FROM api_keys WHERE id = ? FOR UPDATE", key_id)
        recording = asyncio.gather(*(store.record(usage(f"r{n}", user_id, key_id, 250), user_id) for n in range(6)))
        pid = await backend_waiting_on_a_lock(seed)  # the batch waits on the key, inside its transaction
        assert await seed.value("SELECT pg_terminate_backend(?)", pid)
        await asyncio.sleep(0.1)
        await blocker.execute("ROLLBACK")
        await blocker.close()
        await recording
        assert store.batcher.stats.batches >= 1
    finally:
        await store.close()
    assert [await seed.ledger(f"r{n}") for n in range(6)] == [[("capture", -250)]] * 6
    assert await seed.value("SELECT count(*) FROM usage_logs") == 6
    assert await seed.balance(user_id) == 100_000 - 6 * 250
    assert await seed.problems() == []


async def test_batches_beside_holds_on_several_keys_of_one_user_keep_the_books(pg_url, seed):
    """Two stores (two replicas) hold and settle on three keys of one user and one
    key of another at once: batches lock keys then users, as holds do."""
    users = [await seed.user("alice", balance_micros=300_000), await seed.user("bob", balance_micros=300_000)]
    keys = [(users[0], await seed.key(users[0], f"hash-a{n}", name=f"a{n}")) for n in range(3)]
    keys.append((users[1], await seed.key(users[1], "hash-b", name="b")))
    stores = [await started(pg_url, timeout=5.0), await started(pg_url, timeout=5.0)]
    rng = random.Random(7)
    charged: list[int] = []

    async def one(n: int) -> None:
        user_id, key_id = keys[n % 4]
        store = stores[n % 2]
        try:
            await store.hold(user_id, 2_000, f"q{n}", key_id)
        except HoldRefused:
            return
        await asyncio.sleep(rng.random() / 100)
        cost = rng.randint(0, 2_000)
        await store.record(usage(f"q{n}", user_id, key_id, cost), user_id)
        charged.append(cost)

    try:
        await asyncio.gather(*(one(n) for n in range(400)))
        assert sum(store.batcher.stats.batches for store in stores) >= 2
    finally:
        for store in stores:
            await store.close()
    assert len(charged) >= 200 and await seed.value("SELECT count(*) FROM usage_logs") == len(charged)
    total = await seed.value("SELECT sum(balance_micros) FROM users")
    assert total == 600_000 - sum(charged)
    assert await seed.value("SELECT count(*) FROM holds") == 0
    assert await seed.problems() == []


async def test_settlements_queued_when_the_store_closes_are_written(pg_url, seed):
    user_id = await seed.user(balance_micros=100_000)
    key_id = await seed.key(user_id, "hash-1")
    store = await started(pg_url)
    for n in range(30):
        await store.hold(user_id, 1_000, f"r{n}", key_id)
    recording = asyncio.gather(*(store.record(usage(f"r{n}", user_id, key_id, 100), user_id) for n in range(30)))
    await asyncio.sleep(0)  # queued, and the first batch on its way
    await store.close()  # as a gateway shutting down: what was submitted is written first
    await recording
    assert await seed.value("SELECT count(*) FROM usage_logs") == 30
    assert await seed.value("SELECT count(*) FROM holds") == 0
    assert await seed.problems() == []
