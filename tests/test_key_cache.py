import asyncio

import pytest

from gateway_core.request.key_cache import KeyCache
from gateway_core.secrets import hash_key
from gateway_core.store import CORE_MIGRATIONS, Store, keys, users
from gateway_core.store.keys import find_key


class FakeStore:
    """Counts reads; ``gate`` (when set) holds them until opened."""

    def __init__(self, records=None):
        self.records = records or {}
        self.reads = 0
        self.gate: asyncio.Event | None = None
        self.fail_next = False

    async def find_key(self, key_hash):
        self.reads += 1
        snapshot = self.records.get(key_hash)  # what the database held when the read ran
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise OSError("disk on fire")
        return snapshot


async def test_hits_within_ttl_do_not_touch_the_store():
    store = FakeStore({"h1": "record-1"})
    cache = KeyCache(store, ttl=60)
    assert await cache.get("h1") == "record-1"
    for _ in range(100):
        assert await cache.get("h1") == "record-1"
    assert store.reads == 1


def test_a_hit_completes_without_suspending():
    store = FakeStore({"h1": "record-1"})
    cache = KeyCache(store, ttl=60)
    asyncio.run(cache.get("h1"))
    coroutine = cache.get("h1")
    with pytest.raises(StopIteration) as done:  # finished on the first step: no await on anything
        coroutine.send(None)
    assert done.value.value == "record-1"


async def test_stale_entries_are_read_again():
    store = FakeStore({"h1": "old"})
    cache = KeyCache(store, ttl=0.05)
    assert await cache.get("h1") == "old"
    store.records["h1"] = "new"
    assert await cache.get("h1") == "old"
    await asyncio.sleep(0.06)
    assert await cache.get("h1") == "new"
    assert store.reads == 2


async def test_concurrent_misses_share_one_read():
    store = FakeStore({"h1": "record-1"})
    store.gate = asyncio.Event()
    cache = KeyCache(store, ttl=60)
    waiters = [asyncio.create_task(cache.get("h1")) for _ in range(20)]
    await asyncio.sleep(0)
    store.gate.set()
    assert await asyncio.gather(*waiters) == ["record-1"] * 20
    assert store.reads == 1


async def test_a_cancelled_waiter_does_not_cancel_the_shared_read():
    store = FakeStore({"h1": "record-1"})
    store.gate = asyncio.Event()
    cache = KeyCache(store, ttl=60)
    first = asyncio.create_task(cache.get("h1"))
    second = asyncio.create_task(cache.get("h1"))
    await asyncio.sleep(0)
    first.cancel()
    store.gate.set()
    assert await second == "record-1"
    assert first.cancelled()
    assert store.reads == 1


async def test_unknown_keys_are_cached_too():
    store = FakeStore()
    cache = KeyCache(store, ttl=60)
    assert await cache.get("nope") is None
    assert await cache.get("nope") is None
    assert store.reads == 1


async def test_errors_are_not_cached():
    store = FakeStore({"h1": "record-1"})
    store.fail_next = True
    cache = KeyCache(store, ttl=60)
    with pytest.raises(OSError):
        await cache.get("h1")
    assert await cache.get("h1") == "record-1"
    assert store.reads == 2


async def test_invalidate_one_or_all():
    store = FakeStore({"a": 1, "b": 2})
    cache = KeyCache(store, ttl=60)
    await cache.get("a")
    await cache.get("b")
    cache.invalidate("a")
    await cache.get("a")
    await cache.get("b")
    assert store.reads == 3
    cache.invalidate()
    await cache.get("a")
    await cache.get("b")
    assert store.reads == 5


async def test_a_read_under_way_does_not_refill_an_invalidated_cache():
    store = FakeStore({"a": "old"})
    store.gate = asyncio.Event()
    cache = KeyCache(store, ttl=60)
    loading = asyncio.create_task(cache.get("a"))
    while store.reads == 0:  # the read has started
        await asyncio.sleep(0)
    cache.invalidate("a")
    store.records["a"] = "new"
    store.gate.set()
    assert await loading == "old"
    assert await cache.get("a") == "new"


async def test_the_cache_is_bounded():
    store = FakeStore()
    cache = KeyCache(store, ttl=60, max_entries=10)
    for i in range(100):
        await cache.get(f"k{i}")
    assert len(cache) <= 10
    assert await cache.get("k99") is None
    assert store.reads == 100  # the newest entries survive


async def test_with_a_real_store(tmp_path):
    store = Store(str(tmp_path / "k.db"), CORE_MIGRATIONS)
    store.migrate()
    conn = store.connect()
    user_id = users.add_user(conn, "alice")
    key_id, secret = keys.create_key(conn, user_id, name="k", group="default")
    await store.start()
    try:
        cache = KeyCache(store, ttl=60)
        record = await cache.get(hash_key(secret))
        assert record.id == key_id and record.enabled
        keys.set_key_enabled(conn, key_id, False)  # another process changes it
        assert (await cache.get(hash_key(secret))).enabled  # still within ttl
        cache.invalidate(hash_key(secret))
        assert not (await cache.get(hash_key(secret))).enabled
    finally:
        conn.close()
        await store.close()


async def test_invalidate_by_key_id_or_user_id():
    from gateway_core.testing import make_key_record

    records = {
        "a": make_key_record(id=1, user_id=10),
        "b": make_key_record(id=2, user_id=10),
        "c": make_key_record(id=3, user_id=20),
    }
    store = FakeStore(records)
    cache = KeyCache(store, ttl=60)
    for h in records:
        await cache.get(h)
    await cache.get("unknown")  # cached as None
    cache.invalidate_key(2)
    assert len(cache) == 3
    cache.invalidate_user(10)
    assert len(cache) == 2  # "c" and the unknown one remain
    for h in records:
        await cache.get(h)
    assert store.reads == 4 + 2


async def test_other_processes_changes_are_seen_after_the_ttl(tmp_path):
    store = Store(str(tmp_path / "k.db"), CORE_MIGRATIONS)
    store.migrate()
    conn = store.connect()
    user_id = users.add_user(conn, "alice")
    key_id, secret = keys.create_key(conn, user_id, name="k", group="default")
    await store.start()
    try:
        cache = KeyCache(store, ttl=0.2)
        assert (await cache.get(hash_key(secret))).enabled
        keys.set_key_enabled(conn, key_id, False)  # another process: no invalidation here
        assert (await cache.get(hash_key(secret))).enabled
        await asyncio.sleep(0.25)
        assert not (await cache.get(hash_key(secret))).enabled
    finally:
        conn.close()
        await store.close()
