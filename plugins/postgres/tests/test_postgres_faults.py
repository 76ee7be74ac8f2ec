"""Faults between the gateway and PostgreSQL: a server that is down at start-up,
goes away while serving (and comes back), hangs, kills a connection in the middle
of a settlement, or loses the reply to a committed write. The store answers with
StoreUnavailable within its timeout, retries what is safe, and never settles a
request twice or halfway."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import pytest

from gateway_core.records import UsageRow
from gateway_core.store.request_store import StoreUnavailable
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.databases import with_database

from .conftest import Seeder, TcpProxy

TIMEOUT = 1.0


def usage(request_id: str, user_id: int, key_id: int, cost: int) -> UsageRow:
    return UsageRow(request_id=request_id, started_at=time.time(), protocol="test", endpoint="chat",
                    user_id=user_id, key_id=key_id, cost_micros=cost, held_micros=500, status=200)  # fmt: skip


@pytest.fixture
async def seed(pg_url: str):
    await PostgresStore(pg_url).migrate()
    seeder = await Seeder.open(pg_url)
    yield seeder
    await seeder.close()


async def world(seed: Seeder) -> tuple[int, int]:
    user_id = await seed.user(balance_micros=10_000)
    return user_id, await seed.key(user_id, "hash-1")


async def started(url: str, **options) -> PostgresStore:
    store = PostgresStore(url, **{"timeout": TIMEOUT, **options})
    await store.start()
    return store


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_a_server_down_at_start_up_is_one_clear_error(pg_url):
    url = with_database(pg_url, "relaygate", port=closed_port())
    began = time.monotonic()
    with pytest.raises(StoreUnavailable, match=r"^PostgreSQL at 127\.0\.0\.1:\d+/relaygate is unreachable: ") as down:
        await PostgresStore(url.replace("postgres@", "postgres:secret@"), timeout=TIMEOUT).start()
    assert time.monotonic() - began < TIMEOUT + 0.5
    assert "secret" not in str(down.value) and (down.value.status, down.value.kind) == (503, "unavailable")


async def test_a_server_gone_while_serving_gives_503s_in_time_then_recovers(pg_url, seed, proxy: TcpProxy):
    user_id, key_id = await world(seed)
    store = await started(proxy.url(pg_url))
    try:
        assert await store.find_key("hash-1") is not None
        await proxy.cut()
        for call in (store.find_key("hash-1"), store.hold(user_id, 100, "r1", key_id), store.list_channels()):
            began = time.monotonic()
            with pytest.raises(StoreUnavailable, match=rf"PostgreSQL at 127\.0\.0\.1:{proxy.port}/relaygate_test_\w+ is unavailable"):
                await call
            assert time.monotonic() - began < TIMEOUT + 0.5
        await proxy.start()  # the server is back on the same address: the pool reconnects by itself
        key = await store.find_key("hash-1")
        assert key is not None and key.id == key_id
        assert await store.hold(user_id, 100, "r2", key_id) == 9_900
    finally:
        await store.close()
    assert await seed.fetch("SELECT request_id FROM holds") == [{"request_id": "r2"}]
    assert await seed.problems() == []


async def test_a_server_that_hangs_is_a_timeout_not_a_hang(pg_url, seed, proxy: TcpProxy):
    await world(seed)
    store = await started(proxy.url(pg_url))
    try:
        await proxy.drop()
        proxy.silent = True
        began = time.monotonic()
        with pytest.raises(StoreUnavailable, match=r"did not answer within 1 s \(find_key\)"):
            await store.find_key("hash-1")
        assert time.monotonic() - began < TIMEOUT + 0.5
    finally:
        proxy.silent = False
        await proxy.drop()
        await store.close()


async def backend_waiting_on_a_lock(seed: Seeder) -> int:
    for _ in range(200):
        pid = await seed.value(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'relaygate' AND wait_event_type = 'Lock' "
            "AND datname = current_database()"  # the server is shared: only this test's database
        )
        if pid is not None:
            return pid
        await asyncio.sleep(0.01)
    raise AssertionError("the settlement never waited on the locked key")


async def kill_mid_record(seed: Seeder, store: PostgresStore, row: UsageRow, user_id: int) -> asyncio.Future[None]:
    """Start recording ``row`` while the key's row is locked elsewhere, and kill the
    store's connection while the settlement waits inside its statement."""
    blocker = await Seeder.open(store.dsn)
    await blocker.execute("BEGIN")
    await blocker.execute("SELECT id FROM api_keys WHERE id = ? FOR UPDATE", row.key_id)
    recording = asyncio.ensure_future(store.record(row, user_id))
    pid = await backend_waiting_on_a_lock(seed)
    assert await seed.value("SELECT pg_terminate_backend(?)", pid)
    await asyncio.sleep(0.1)
    await blocker.execute("ROLLBACK")
    await blocker.close()
    return recording


async def test_a_connection_killed_mid_settlement_is_retried_and_settles_once(pg_url, seed):
    user_id, key_id = await world(seed)
    store = await started(pg_url)
    try:
        await store.hold(user_id, 500, "r1", key_id)
        await (await kill_mid_record(seed, store, usage("r1", user_id, key_id, 300), user_id))
    finally:
        await store.close()
    assert await seed.ledger("r1") == [("capture", -300)]
    assert await seed.value("SELECT count(*) FROM usage_logs") == 1
    assert await seed.available(user_id) == await seed.balance(user_id) == 9_700
    assert await seed.problems() == []


async def test_a_settlement_killed_for_good_leaves_the_hold_for_the_sweeper(pg_url, seed):
    user_id, key_id = await world(seed)
    store = await started(pg_url, attempts=1)
    try:
        await store.hold(user_id, 500, "r1", key_id)
        with pytest.raises(StoreUnavailable, match=r"is unavailable \(record\)"):
            await (await kill_mid_record(seed, store, usage("r1", user_id, key_id, 300), user_id))
        assert await seed.ledger("r1") == []  # nothing of the settlement happened
        assert (await seed.balance(user_id), await seed.available(user_id)) == (10_000, 9_500)  # the hold stays
        assert await seed.value("SELECT count(*) FROM usage_logs") == 0
        assert await seed.problems() == []
        assert await store.release_stale_holds(time.time() + 1) == 1
    finally:
        await store.close()
    assert await seed.ledger("r1") == []  # released by the sweeper: no money moved
    assert await seed.available(user_id) == await seed.balance(user_id) == 10_000
    assert await seed.problems() == []


async def committed_then_cut(seed: Seeder, proxy: TcpProxy, call: asyncio.Future[Any], committed: str) -> None:
    """Wait until ``call``'s write has committed (its reply lost on the way back),
    then drop the connection under it."""
    for _ in range(200):
        if await seed.value(committed):
            break
        await asyncio.sleep(0.01)
    else:
        raise AssertionError("the write never committed")
    assert not call.done()
    proxy.swallow = False
    await proxy.drop()


async def test_a_write_whose_reply_was_lost_is_recognised_on_retry(pg_url, seed, proxy: TcpProxy):
    user_id, key_id = await world(seed)
    store = await started(proxy.url(pg_url), max_size=1, timeout=3.0)

    async def prepare(request_id: str) -> None:
        """One hold and record first, so that the one connection has both statements
        prepared: a lost reply then loses the answer to the write itself."""
        await store.hold(user_id, 1000, request_id, key_id)
        await store.record(usage(request_id, user_id, key_id, 1000), user_id)

    try:
        await prepare("warm-1")
        proxy.swallow = True
        holding = asyncio.ensure_future(store.hold(user_id, 500, "r1", key_id))
        await committed_then_cut(seed, proxy, holding, "SELECT count(*) FROM holds")
        assert await holding == 8_500

        await prepare("warm-2")
        proxy.swallow = True
        recording = asyncio.ensure_future(store.record(usage("r1", user_id, key_id, 300), user_id))
        await committed_then_cut(seed, proxy, recording, "SELECT count(*) FROM usage_logs WHERE request_id = 'r1'")
        await recording
    finally:
        await store.close()
    assert await seed.ledger("r1") == [("capture", -300)]
    assert await seed.available(user_id) == await seed.balance(user_id) == 7_700
    assert await seed.problems() == []


async def test_a_command_waits_the_configured_db_timeout_not_the_default(pg_url, seed, proxy: TcpProxy, tmp_path, capsys):
    """``relaygate`` commands open the store with ``[gateway] db_timeout`` (and
    ``db_pool_size``): a server that hangs fails the command within 0.5 s, not 5."""
    from gateway_core.commands.cli import main

    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = []\n[gateway]\ndb_timeout = 0.5\ndb_pool_size = 2\n', encoding="utf-8")
    proxy.silent = True
    try:
        began = time.monotonic()
        status = await asyncio.to_thread(main, ["user", "list", "--db", proxy.url(pg_url), "--plugins", str(plugins)])
        took = time.monotonic() - began
    finally:
        proxy.silent = False
    err = capsys.readouterr().err
    assert status == 1 and took < 2.5, (status, took, err)
    assert f"PostgreSQL at 127.0.0.1:{proxy.port}/relaygate_test_" in err and "Traceback" not in err
