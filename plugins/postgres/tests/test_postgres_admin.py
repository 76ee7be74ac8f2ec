"""The admin port on PostgreSQL when the connection fails: a top-up whose answer
is lost is not run twice (the operator is told to look), an unreachable server
is a StoreFailure naming it, and the books stay clean."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.admin.errors import StoreFailure
from gateway_core.records import UsageRow
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.admin import PostgresAdmin

from .conftest import TcpProxy

TIMEOUT = 2.0


async def test_a_topup_whose_answer_is_lost_is_not_credited_twice(pg_url, proxy: TcpProxy):
    await PostgresStore(pg_url).migrate()
    store = PostgresStore(proxy.url(pg_url), timeout=TIMEOUT, max_size=1)  # one connection: its statements prepared
    await store.start()
    try:
        admin = PostgresAdmin(store)
        alice = await admin.create_user("alice", is_admin=False, password_hash=None, groups=["default"])
        assert await admin.topup(alice.id, 500_000, "first") == 500_000  # the statement is prepared: one round trip now
        proxy.swallow = True  # the server commits, its answer never arrives
        topup = asyncio.ensure_future(admin.topup(alice.id, 1_000_000, "lost answer"))
        await asyncio.sleep(0.3)
        await proxy.drop()  # the connection is lost: the client cannot know whether it committed
        proxy.swallow = False
        with pytest.raises(StoreFailure, match="may or may not have been applied: look at the ledger"):
            await topup
        user = await admin.get_user(alice.id)
        assert user is not None and user.balance_micros == 1_500_000  # committed once, not run again
        assert [entry.note for entry in await admin.list_ledger(alice.id, before_id=None, limit=10)] == ["lost answer", "first"]
        assert (await admin.check_ledger()).ok
    finally:
        await store.close()


async def test_an_unreachable_server_is_a_store_failure_naming_it(pg_url, proxy: TcpProxy):
    await PostgresStore(pg_url).migrate()
    store = PostgresStore(proxy.url(pg_url), timeout=TIMEOUT)
    await store.start()
    try:
        admin = PostgresAdmin(store)
        await proxy.cut()
        for call in (admin.list_users(), admin.topup(1, 5, None), admin.check_ledger()):
            with pytest.raises(StoreFailure, match=rf"PostgreSQL at 127\.0\.0\.1:{proxy.port}/relaygate_test_\w+ is unavailable"):
                await call
    finally:
        await store.close()


async def test_topups_and_adjustments_among_concurrent_requests_keep_the_books(pg_url):
    """Operators' money moves racing the request path's holds and settlements on
    one user: every change lands once, the ledger stays one chain, check is clean."""
    await PostgresStore(pg_url).migrate()
    store = PostgresStore(pg_url, max_size=12)
    await store.start()
    try:
        admin = PostgresAdmin(store)
        alice = await admin.create_user("alice", is_admin=False, password_hash=None, groups=["default"])
        key, _ = await admin.create_key(
            alice.id, name="ci", group="default", quota_micros=None, expires_at=None, models=(), allow_ips=(), limits={}
        )
        await admin.topup(alice.id, 1_000_000, "start")

        async def request(n: int) -> None:
            await store.hold(alice.id, 5_000, f"r{n}", key.id)
            await store.record(UsageRow(
                request_id=f"r{n}", started_at=1_700_000_000.0 + n, protocol="openai", endpoint="chat",
                user_id=alice.id, key_id=key.id, model="m", status=200, cost_micros=3_000,
            ), alice.id)  # fmt: skip

        moves = [admin.topup(alice.id, 10_000, f"t{n}") for n in range(40)]
        moves += [admin.adjust(alice.id, -1_000, f"a{n}") for n in range(20)]
        await asyncio.gather(*(request(n) for n in range(100)), *moves)
        user = await admin.get_user(alice.id)
        assert user is not None and user.balance_micros == 1_000_000 - 100 * 3_000 + 40 * 10_000 - 20 * 1_000
        report = await admin.check_ledger()
        assert report.ok and report.problems == () and report.open_holds == 0
        assert report.ledger_rows == 1 + 100 + 40 + 20  # start, a capture per request, the moves
        used = (await admin.get_key(key.id)).used_micros
        assert used == 100 * 3_000
    finally:
        await store.close()
