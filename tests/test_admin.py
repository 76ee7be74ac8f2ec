"""The admin layer on a real store: its rules, its errors, and the caches it tells.

The fronts (CLI, console) are tested through their own entry points; these
tests hold what every front relies on.
"""

from __future__ import annotations

import pytest

from gateway_core.admin import Admin, Caches, Conflict, Invalid, NotFound
from gateway_core.admin import channels, groups, keys, prices, usage, users, wallet
from gateway_core.config import Config
from gateway_core.key_cache import KeyCache
from gateway_core.plugins import collect
from gateway_core.records import PriceRecord, UsageFilter
from gateway_core.router import Router
from gateway_core.snapshot import TtlSnapshot
from gateway_core.secrets import hash_key
from gateway_core.store import admin_ports

HOUR = 3600.0  # cache lifetimes far longer than a test: only invalidation refreshes them


@pytest.fixture
async def running(db_url, start_store):
    """An admin whose caches are a running gateway's (key cache, router, price book), on either store."""
    registry = collect(Config(db_path=db_url, load=("demo",)))
    store = await start_store(registry.migrations)
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
    fields = {"name": "demo", "type": "demo", "base_url": "local://demo/", "models": ["demo-chat"], "groups": ["default", "vip"]}
    channel = await channels.add_channel(running, fields)
    assert channel.base_url == "local://demo" and "vip" in [g.name for g in await groups.list_groups(running)]
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
        await channels.add_channel(running, {"name": "x", "type": "demo", "base_url": "nowhere", "models": ["m"]})
    assert (bad_url.value.field, str(bad_url.value)) == ("base_url", "base url must be a URL like https://api.example.com, got 'nowhere'")
    with pytest.raises(Invalid, match="unknown channel type 'nope'"):
        await channels.add_channel(running, {"name": "x", "type": "nope", "base_url": "https://x", "models": ["m"]})
    with pytest.raises(Invalid, match="a key's quota must not be negative"):  # the store's own check, as Invalid
        await keys.create_key(running, alice.id, quota_micros=-1)
    await channels.add_channel(running, {"name": "a", "type": "demo", "base_url": "local://demo", "models": ["m"]})
    second = await channels.add_channel(running, {"name": "b", "type": "demo", "base_url": "local://demo", "models": ["m"]})
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
