"""The request path's store port, the same on SQLite and PostgreSQL: each test runs
once per store (``books``), and the reads are compared across the two."""

from __future__ import annotations

import asyncio
import random
import time

import attrs
import pytest

from gateway_core.records import UsageRow, key_fingerprint
from gateway_core.store.request_store import BreakerReport, HoldRefused

from .conftest import POSTGRESQL, SQLITE, Books, open_books

pytestmark = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


def usage(request_id: str, user_id: int | None, key_id: int | None, *, cost: int = 0, held: int = 0) -> UsageRow:
    return UsageRow(
        request_id=request_id, started_at=time.time(), protocol="test", endpoint="chat", user_id=user_id, key_id=key_id,
        model="m", status=200, cost_micros=cost, held_micros=held, end_reason="done",
    )  # fmt: skip


async def seed_world(books: Books) -> tuple[int, int]:
    seed = books.seed
    await seed.group("vip", 1_500_000, rpm=60)
    user_id = await seed.user("alice", balance_micros=5_000_000, groups=("default", "vip"), tpm=1000)
    key_id = await seed.key(user_id, "hash-alice", group="vip", quota_micros=2_000_000, models=["m"], allow_ips=["10.0.0.0/8"], rpm=5)
    await seed.key(user_id, "hash-disabled", name="off", enabled=0)
    await seed.channel("up", type="openai", base_url="http://127.0.0.1:9/v1", models=["m", "n"], api_keys=["sk-a", "sk-b"],
                       groups=["default", "vip"], model_map={"m": "m-2024"}, priority=2, weight=3, concurrency=4,
                       timeout_first_byte=2.5)  # fmt: skip
    await seed.channel("down", type="anthropic", base_url="http://127.0.0.1:9", models=["c"])
    await seed.price("m", 2_500_000, 10_000_000, cached=1_250_000)
    await seed.price("free", 0, 0, free=1)
    return user_id, key_id


async def test_both_stores_read_the_same_records(tmp_path, pg_url):
    both = [await open_books(SQLITE, str(tmp_path / "relaygate.db")), await open_books(POSTGRESQL, pg_url)]
    try:
        for books in both:
            await seed_world(books)
        sqlite, postgres = (books.store for books in both)
        for key_hash in ("hash-alice", "hash-disabled", "missing"):
            assert await postgres.find_key(key_hash) == await sqlite.find_key(key_hash)
        key = await postgres.find_key("hash-alice")
        assert key is not None and key.limits.requests_per_minute == 5 and key.user_limits.tokens_per_minute == 1000
        assert key.models == ("m",) and key.allow_ips == ("10.0.0.0/8",) and key.quota_micros == 2_000_000
        assert list(await postgres.list_channels()) == list(await sqlite.list_channels())
        channel = (await postgres.list_channels())[0]
        assert (channel.api_keys, channel.model_map, channel.timeout_first_byte) == (("sk-a", "sk-b"), {"m": "m-2024"}, 2.5)
        assert await postgres.price_snapshot() == await sqlite.price_snapshot()
        snapshot = await postgres.price_snapshot()
        assert snapshot.ratio("vip") == 1_500_000 and snapshot.prices["free"].free and snapshot.prices["m"].cached_input_micros_per_mtok == 1_250_000
    finally:
        for books in both:
            await books.store.close()
            await books.seed.close()


async def test_hold_refusals_are_exact_and_change_nothing(books: Books):
    seed, store = books.seed, books.store
    user_id = await seed.user(balance_micros=1000)
    key_id = await seed.key(user_id, "hash-1", quota_micros=600)
    assert await store.hold(user_id, 400, "r1", key_id) == 600

    with pytest.raises(HoldRefused) as refused:  # the key's quota counts what is in flight
        await store.hold(user_id, 300, "r2", key_id)
    assert (refused.value.what, refused.value.needed, refused.value.limit, refused.value.used, refused.value.held) == ("key_quota", 300, 600, 0, 400)
    with pytest.raises(HoldRefused) as refused:
        await store.hold(user_id, 700, "r3", None)
    assert (refused.value.what, refused.value.needed, refused.value.limit, refused.value.used, refused.value.held) == ("balance", 700, 600, 0, 0)
    with pytest.raises(HoldRefused) as refused:  # both refuse: the key is named, as on SQLite
        await store.hold(user_id, 5000, "r4", key_id)
    assert refused.value.what == "key_quota"
    with pytest.raises(ValueError, match="no API key"):
        await store.hold(user_id, 1, "r5", 999)
    with pytest.raises(ValueError, match="no user"):
        await store.hold(999, 1, "r6", None)
    with pytest.raises(ValueError):
        await store.hold(user_id, -1, "r7", None)

    assert (await seed.balance(user_id), await seed.available(user_id)) == (1000, 600)
    assert await seed.value("SELECT held_micros FROM api_keys WHERE id = ?", key_id) == 400
    assert [r["request_id"] for r in await seed.fetch("SELECT request_id FROM holds")] == ["r1"]
    assert await seed.value("SELECT count(*) FROM ledger") == 1  # the top-up: a reservation moves no money
    assert await store.hold(user_id, 200, "r8", key_id) == 400  # exactly what is left of the quota
    assert await seed.problems() == []


async def settled_request(books: Books, *, cost: int) -> tuple[int, int, UsageRow]:
    """alice with 10,000 micro-USD and a key; request r1 held 500, then recorded at ``cost``."""
    user_id = await books.seed.user(balance_micros=10_000)
    key_id = await books.seed.key(user_id, "hash-1")
    await books.store.hold(user_id, 500, "r1", key_id)
    row = usage("r1", user_id, key_id, cost=cost, held=500)
    await books.store.record(row, user_id)
    return user_id, key_id, row


async def test_a_settlement_releases_captures_and_logs_in_one_commit(books: Books):
    seed, store = books.seed, books.store
    user_id, key_id, row = await settled_request(books, cost=700)

    assert await seed.ledger("r1") == [("capture", -700)]
    logged = (await seed.fetch("SELECT cost_micros, held_micros, overrun_micros, created_at, stream FROM usage_logs WHERE request_id = ?", "r1"))[0]
    assert logged == {"cost_micros": 700, "held_micros": 500, "overrun_micros": 200, "created_at": row.started_at, "stream": 0}
    key = (await seed.fetch("SELECT used_micros, held_micros, last_used_at FROM api_keys WHERE id = ?", key_id))[0]
    assert key == {"used_micros": 700, "held_micros": 0, "last_used_at": row.started_at}
    assert await seed.balance(user_id) == 9_300

    unbilled = usage("r2", None, key_id)  # a free request: logged, the key touched, nothing charged
    await store.record(attrs.evolve(unbilled, started_at=row.started_at + 5), None)
    assert await seed.value("SELECT last_used_at FROM api_keys WHERE id = ?", key_id) == row.started_at + 5
    assert await seed.ledger("r2") == [] and await seed.balance(user_id) == 9_300
    assert await seed.problems() == []


async def test_a_request_recorded_twice_is_refused_whole(books: Books):
    seed, store = books.seed, books.store
    user_id, key_id, _ = await settled_request(books, cost=300)
    before = (await seed.balance(user_id), await seed.ledger("r1"), await seed.value("SELECT used_micros FROM api_keys"))

    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await store.record(usage("r1", user_id, key_id, cost=300, held=500), user_id)
    await store.record(usage("free-1", None, key_id), None)
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await store.record(usage("free-1", None, key_id), None)

    assert (await seed.balance(user_id), await seed.ledger("r1"), await seed.value("SELECT used_micros FROM api_keys")) == before
    assert await seed.value("SELECT count(*) FROM usage_logs") == 2
    assert await seed.problems() == []


RESERVATION = 1_000
REQUESTS = 200


async def test_200_concurrent_requests_on_a_small_balance_never_overdraw(books: Books):
    """Every request holds, waits a little, then records a cost up to its reservation;
    a refused one is logged unbilled. A key with a small quota shares the balance."""
    seed, store = books.seed, books.store
    user_id = await seed.user(balance_micros=40 * RESERVATION)
    capped = await seed.key(user_id, "hash-capped", quota_micros=8 * RESERVATION)
    open_key = await seed.key(user_id, "hash-open", name="open")
    rng = random.Random(13)
    costs = {n: rng.randint(0, RESERVATION) for n in range(REQUESTS)}

    async def one(n: int) -> tuple[str, int]:
        key_id = capped if n % 3 == 0 else open_key
        request_id = f"req-{n:03d}"
        try:
            await store.hold(user_id, RESERVATION, request_id, key_id)
        except HoldRefused as refused:
            await store.record(usage(request_id, user_id, key_id, held=0), None)
            return refused.what, 0
        await asyncio.sleep(rng.random() / 50)
        await store.record(usage(request_id, user_id, key_id, cost=costs[n], held=RESERVATION), user_id)
        return "admitted", costs[n]

    results = await asyncio.gather(*(one(n) for n in range(REQUESTS)))
    admitted = [cost for outcome, cost in results if outcome == "admitted"]
    outcomes = {outcome for outcome, _ in results}
    assert len(admitted) >= 40 and outcomes == {"admitted", "balance", "key_quota"}, outcomes
    assert await seed.balance(user_id) == 40 * RESERVATION - sum(admitted)
    assert await seed.value("SELECT min(balance_after_micros) FROM ledger") >= 0  # never overdrawn, at any step
    assert await seed.value("SELECT count(*) FROM usage_logs") == REQUESTS
    assert await seed.value("SELECT count(*) FROM holds") == 0
    capped_used = await seed.value("SELECT used_micros FROM api_keys WHERE id = ?", capped)
    assert 0 < capped_used <= 8 * RESERVATION
    assert await seed.value("SELECT count(*) FROM ledger WHERE kind = 'capture'") == sum(1 for c in admitted if c)
    assert await seed.problems() == []


async def test_stale_holds_are_released_exactly_once_by_two_sweepers(books: Books):
    seed, store = books.seed, books.store
    users = [await seed.user(f"user-{n}", balance_micros=1_000_000) for n in range(3)]
    keys = [await seed.key(user_id, f"hash-{user_id}") for user_id in users]
    for n in range(60):
        await store.hold(users[n % 3], 100 + n, f"req-{n:02d}", keys[n % 3] if n % 2 else None)
    other = await open_books(books.dialect, books.target)  # a second replica's store
    try:
        swept = await asyncio.gather(store.release_stale_holds(time.time() + 1), other.store.release_stale_holds(time.time() + 1))
    finally:
        await other.store.close()
        await other.seed.close()
    assert sum(swept) == 60
    assert await seed.value("SELECT count(*) FROM ledger WHERE request_id IS NOT NULL") == 0  # no money moved
    assert [await seed.available(user_id) for user_id in users] == [1_000_000] * 3
    assert await seed.value("SELECT sum(held_micros) FROM users") == 0
    assert await seed.value("SELECT count(*) FROM holds") == 0 and await store.release_stale_holds(time.time() + 1) == 0

    # the request settles after all: its cost is captured, with nothing left to release
    await store.record(usage("req-01", users[1], keys[1], cost=50, held=101), users[1])
    assert await seed.ledger("req-01") == [("capture", -50)]
    assert await seed.problems() == []


async def test_breaker_reports_and_disabled_keys_are_saved_without_waiting(books: Books):
    seed, store = books.seed, books.store
    channel_id = await seed.channel("up", type="openai", base_url="http://127.0.0.1:9", models=["m"], api_keys=["sk-a", "sk-b"])
    report = BreakerReport(channel_id, key_fingerprint("sk-b"), 1, "open", 3, 10.0, 40.0, "HTTP 500", "w1", 11.0)
    store.report_breaker(report)
    store.report_breaker(attrs.evolve(report, state="closed", failures=0, updated_at=12.0))
    store.disable_channel_key(channel_id, key_fingerprint("sk-b"), 1, "HTTP 401: invalid key")
    await store.close()  # waits for them
    store.disable_channel_key(channel_id, key_fingerprint("sk-a"), 0, "closed: dropped")

    health = await seed.fetch("SELECT * FROM channel_health")
    assert [(h["key_slot"], h["state"], h["failures"], h["until"], h["updated_at"]) for h in health] == [
        (key_fingerprint("sk-b"), "closed", 0, 40.0, 12.0)
    ]
    reopened = await open_books(books.dialect, books.target)
    try:
        reopened.store.disable_channel_key(channel_id, key_fingerprint("sk-b"), 1, "a second reason")
        await asyncio.sleep(0)
        (channel,) = await reopened.store.list_channels()
    finally:
        await reopened.store.close()
        await reopened.seed.close()
    assert [(d.index, d.fingerprint, d.reason) for d in channel.disabled_keys] == [(1, key_fingerprint("sk-b"), "HTTP 401: invalid key")]
