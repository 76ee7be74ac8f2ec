"""The admin layer on a real store: its rules, its errors, and the caches it tells.

The fronts (CLI, console) are tested through their own entry points; these
tests hold what every front relies on.
"""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.admin import Admin, Caches, Conflict, Invalid, NotFound
from gateway_core.admin import channels, groups, keys, prices, usage, users, wallet
from gateway_core.config import Config
from gateway_core.request.key_cache import KeyCache
from gateway_core.runtime.plugins import collect
from gateway_core.testing import fake_plugin
from gateway_core.records import DailySpending, PriceRecord, UsageFilter, UsageRow, UsageTotal
from gateway_core.store.request_store import BreakerReport
from gateway_core.routing.router import Router
from gateway_core.routing.snapshot import TtlSnapshot
from gateway_core.secrets import hash_key
from gateway_core.testing.stores import admin_ports

HOUR = 3600.0  # cache lifetimes far longer than a test: only invalidation refreshes them


@pytest.fixture
def registry(db_url):
    return collect(Config(db_path=db_url, load=()), [fake_plugin])  # the kit's channel type "fake"


@pytest.fixture
async def store(registry, start_store):
    """The running gateway's store (either kind)."""
    return await start_store(registry.migrations)


@pytest.fixture
async def running(registry, store):
    """An admin whose caches are a running gateway's (key cache, router, price book), on either store."""
    caches = Caches(keys=KeyCache(store, ttl=HOUR), channels=Router(store, registry.channel_types, ttl=HOUR), prices=TtlSnapshot(store.price_snapshot, ttl=HOUR))
    return Admin(admin_ports(store)[0], registry.channel_types, caches)


async def test_key_changes_reach_the_key_cache_at_once(running):
    alice = await users.create_user(running, "alice")
    key, secret = await keys.create_key(running, alice.id, name="ci")
    assert (await running.caches.keys.get(hash_key(secret))).enabled
    await keys.set_key_enabled(running, key.id, False)
    assert not (await running.caches.keys.get(hash_key(secret))).enabled
    await users.set_user_enabled(running, alice.id, False)
    assert not (await running.caches.keys.get(hash_key(secret))).user_enabled
    await groups.set_group(running, "default", limits={"rpm": 7})
    assert (await running.caches.keys.get(hash_key(secret))).user_limits.requests_per_minute == 7


async def test_channel_changes_reach_the_router_at_once(running):
    fields = {"name": "demo", "type": "fake", "base_url": "http://127.0.0.1:9/", "models": ["demo-chat"], "groups": ["default", "vip"]}
    channel = await channels.add_channel(running, fields)
    assert channel.base_url == "http://127.0.0.1:9" and "vip" in [g.name for g in await groups.list_groups(running)]
    assert "demo-chat" in (await running.caches.channels.index()).models
    await channels.disable_channel(running, channel.id)
    assert "demo-chat" not in (await running.caches.channels.index()).models
    await channels.enable_channel(running, channel.id)
    await channels.update_channel(running, channel.id, {"models": ["demo-2"]})
    assert set((await running.caches.channels.index()).models) == {"demo-2"}
    await channels.delete_channel(running, channel.id)
    assert not (await running.caches.channels.index()).models


async def test_price_changes_reach_the_price_book_at_once(running):
    assert (await running.caches.prices.current()).prices == {}
    await prices.set_price(running, PriceRecord("gpt-x", 2_500_000, 10_000_000))
    assert (await running.caches.prices.current()).prices["gpt-x"].input_micros_per_mtok == 2_500_000
    await groups.set_group(running, "vip", ratio_ppm=groups.parse_ratio("0.8"))
    assert (await running.caches.prices.current()).ratio("vip") == 800_000
    await prices.delete_price(running, "gpt-x")
    assert (await running.caches.prices.current()).prices == {}


async def test_errors_say_what_is_wrong_in_the_admin_layers_terms(running):
    alice = await users.create_user(running, "alice", groups=["default"])
    with pytest.raises(Conflict, match="user 'alice' already exists"):
        await users.create_user(running, "alice")
    with pytest.raises(NotFound, match="no user named 'bob'"):
        await users.find_user(running, "bob")
    with pytest.raises(Invalid, match="not open to user 'alice'") as refused:
        await keys.create_key(running, alice.id, group="vip")
    assert refused.value.field is None
    with pytest.raises(Invalid) as bad_url:
        await channels.add_channel(running, {"name": "x", "type": "fake", "base_url": "nowhere", "models": ["m"]})
    assert (bad_url.value.field, str(bad_url.value)) == ("base_url", "base url must be a URL like https://api.example.com, got 'nowhere'")
    with pytest.raises(Invalid, match="unknown channel type 'nope'"):
        await channels.add_channel(running, {"name": "x", "type": "nope", "base_url": "https://x", "models": ["m"]})
    with pytest.raises(Invalid, match="quota must not be negative") as negative:  # the admin layer's amount rule
        await keys.create_key(running, alice.id, quota_micros=-1)
    assert negative.value.field == "quota"
    await channels.add_channel(running, {"name": "a", "type": "fake", "base_url": "http://127.0.0.1:9", "models": ["m"]})
    second = await channels.add_channel(running, {"name": "b", "type": "fake", "base_url": "http://127.0.0.1:9", "models": ["m"]})
    with pytest.raises(Conflict, match="channel 'a' already exists"):
        await channels.update_channel(running, second.id, {"name": "a"})
    with pytest.raises(Invalid, match="You cannot disable yourself"):
        await users.set_user_enabled(running, alice.id, False, by=alice.id)


async def test_a_users_own_key_and_rows_only(running):
    alice = await users.create_user(running, "alice")
    bob = await users.create_user(running, "bob")
    key, _ = await keys.create_key(running, bob.id)
    for change in (keys.get_key(running, key.id, owner=alice.id), keys.delete_key(running, key.id, owner=alice.id),
                   keys.set_key_enabled(running, key.id, False, owner=alice.id)):  # fmt: skip
        with pytest.raises(NotFound, match=f"no API key with id {key.id}"):
            await change
    assert (await keys.delete_key(running, key.id, owner=bob.id)).deleted
    with pytest.raises(NotFound):
        await keys.get_key(running, key.id, owner=bob.id)  # deleted: gone for its owner too
    assert (await keys.get_key(running, key.id)).deleted  # an operator still finds it


async def test_money_moves_in_whole_micro_usd_and_the_books_balance(running):
    alice = await users.create_user(running, "alice")
    assert await wallet.topup(running, alice.id, 1) == 1
    for amount in (0, -5, 1.5, True):
        with pytest.raises(Invalid):
            await wallet.topup(running, alice.id, amount)
    with pytest.raises(Invalid, match="note must say why"):
        await wallet.adjust(running, alice.id, -1, " ")
    assert await wallet.adjust(running, alice.id, -1, "correction") == 0
    found = await wallet.wallet(running, alice.id, limit=1)
    assert [row.kind for row in found.ledger] == ["adjustment"] and found.more
    assert (await wallet.check_ledger(running)).ok
    page = await usage.page_usage(running, UsageFilter(user_id=alice.id))
    assert (page.rows, page.more) == ([], False)


async def test_one_users_totals_by_key_and_over_time_read_the_same_on_either_store(running, store):
    """The dashboard's figures: a user's totals by key and model within a span,
    and the same totals in buckets of time (empty buckets included)."""
    alice, bob = await users.create_user(running, "alice"), await users.create_user(running, "bob")
    first, _ = await keys.create_key(running, alice.id, name="first")
    second, _ = await keys.create_key(running, alice.id, name="second")
    bobs, _ = await keys.create_key(running, bob.id, name="bobs")
    start = 1_700_006_400.0  # 2023-11-15 00:00 UTC
    rows = [  # (user, key, hours after start, status, cost, input, output)
        (alice.id, first.id, 0.5, 200, 100, 10, 1), (alice.id, first.id, 0.9, 500, 0, 10, 0),
        (alice.id, second.id, 2.25, 200, 40, 5, 5), (bob.id, bobs.id, 1.0, 200, 999, 1, 1),
        (alice.id, second.id, 5.0, 200, 7, 1, 1),  # after the span
    ]
    for n, (user_id, key_id, hours, status, cost, tokens_in, tokens_out) in enumerate(rows):
        await store.record(UsageRow(
            request_id=f"k{n}", started_at=start + hours * 3600, protocol="openai", endpoint="chat", user_id=user_id,
            key_id=key_id, key_name="stale name", model="m-a" if n % 2 else "m-b", status=status, cost_micros=cost,
            input_tokens=tokens_in, output_tokens=tokens_out,
        ), None)  # fmt: skip
    until = start + 4 * 3600
    by_key = await usage.usage_totals(running, "key", start, until=until, user_id=alice.id)
    assert by_key == [UsageTotal("first", 2, 20, 1, 100, 1), UsageTotal("second", 1, 5, 5, 40, 0)]
    assert [t.label for t in await usage.usage_totals(running, "model", start, until=until, user_id=alice.id)] == ["m-b", "m-a"]
    assert [t.requests for t in await usage.usage_totals(running, "user", start, until=until)] == [1, 3]  # bob's 999 first
    series = await usage.usage_series(running, start, until, 3600, user_id=alice.id)
    assert [at for at, _ in series] == [start + h * 3600 for h in range(4)]
    assert [t.requests for _, t in series] == [2, 0, 1, 0]
    assert series[0][1] == UsageTotal("0", 2, 20, 1, 100, 1) and series[1][1] == UsageTotal(None, 0, 0, 0, 0, 0)
    assert [t.requests for _, t in await usage.usage_series(running, start, until, 7200)] == [3, 1]  # everyone's
    with pytest.raises(Invalid):
        await usage.usage_series(running, start, start + 2000 * 3600, 3600)
    with pytest.raises(Invalid):
        await usage.usage_totals(running, "colour", start)


async def test_totals_and_traffic_read_the_same_on_either_store(running, store):
    """The console's dashboards: spending per day and model, totals by model, user
    and channel, each channel's traffic and last error, the breakers reported."""
    alice = await users.create_user(running, "alice")
    await wallet.topup(running, alice.id, 1_000_000)
    day = 1_700_006_400.0  # 2023-11-15 00:00 UTC
    for n, (model, status, cost, channel) in enumerate(
        [("m-a", 200, 100, 1), ("m-a", 200, 50, 1), ("m-b", 502, 0, 2), ("m-b", 200, 7, 2), ("m-a", 429, 0, None)]
    ):
        await store.record(UsageRow(
            request_id=f"r{n}", started_at=day + n * 3600 + (86_400 if n == 4 else 0), protocol="openai", endpoint="chat",
            user_id=alice.id, model=model, status=status, cost_micros=cost, input_tokens=10, output_tokens=n,
            channel_id=channel, channel_name=None if channel is None else f"c{channel}", duration_ms=10.0 * (n + 1),
            error_message="bad gateway" if status == 502 else None, upstream_status=502 if status == 502 else None,
        ), alice.id if cost else None)  # fmt: skip
    assert await usage.daily_spending(running, day) == [
        DailySpending("2023-11-15", "m-a", 150, 2, 0), DailySpending("2023-11-15", "m-b", 7, 2, 1),
        DailySpending("2023-11-16", "m-a", 0, 1, 1),
    ]  # fmt: skip
    assert await usage.daily_spending(running, day, alice.id + 1) == []
    by_model = await usage.usage_totals(running, "model", day)
    assert by_model == [UsageTotal("m-a", 3, 30, 5, 150, 1), UsageTotal("m-b", 2, 20, 5, 7, 1)]
    assert await usage.usage_totals(running, "user", day) == [UsageTotal("alice", 5, 50, 10, 157, 2)]
    assert [t.label for t in await usage.usage_totals(running, "channel", day, limit=1)] == ["c1"]
    traffic = {t.channel_id: t for t in await running.store.channel_traffic(day)}
    assert (traffic[1].requests, traffic[1].errors, traffic[1].mean_ms, traffic[1].last_error) == (2, 0, 15.0, None)
    assert (traffic[2].requests, traffic[2].errors, traffic[2].last_error, traffic[2].last_error_at) == (2, 1, "bad gateway", day + 2 * 3600)
    store.report_breaker(BreakerReport(2, "", None, "open", 3, day, day + 30, "bad gateway", "w1", day))
    for _ in range(100):
        if await running.store.list_breakers():
            break
        await asyncio.sleep(0.01)
    assert [(b.channel_id, b.state, b.last_error) for b in await running.store.list_breakers()] == [(2, "open", "bad gateway")]
    assert (await wallet.check_ledger(running)).ok


async def test_deleting_a_user_ends_its_keys_tokens_and_sign_ins_but_keeps_its_money(running):
    from gateway_core.admin import tokens

    root = await users.create_user(running, "root", is_admin=True)
    alice = await users.create_user(running, "alice", password="alice-password-1")
    key, secret = await keys.create_key(running, alice.id, name="ci")
    _, token = await tokens.create_token(running, alice.id, name="script", scope="write")
    await wallet.topup(running, alice.id, 2_500_000, "first")
    assert (await running.caches.keys.get(hash_key(secret))).enabled
    with pytest.raises(Invalid, match="You cannot delete yourself"):
        await users.delete_user(running, root.id, by=root.id)
    gone = await users.delete_user(running, alice.id, by=root.id)
    assert (gone.deleted, gone.enabled, gone.balance_micros) == (True, False, 2_500_000)
    assert await running.caches.keys.get(hash_key(secret)) is None or not (await running.caches.keys.get(hash_key(secret))).enabled
    assert (await keys.get_key(running, key.id)).deleted
    assert await tokens.token_holder(running, token) is None
    assert [item.user.name for item in await users.list_users(running)] == ["root"]
    assert [item.user.name for item in await users.list_users(running, include_deleted=True)] == ["root", "alice"]
    for change in (users.set_user_enabled(running, alice.id, True), users.set_password(running, alice.id, "another-one-1"),
                   keys.create_key(running, alice.id), users.delete_user(running, alice.id)):  # fmt: skip
        with pytest.raises(Invalid, match="user 'alice' is (already )?deleted"):
            await change
    assert (await running.store.check_ledger()).ok
