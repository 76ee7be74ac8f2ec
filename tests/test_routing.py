"""The router's candidates: priority tiers, weighted order (statistically, with a
fixed seed), the endpoint and group filters, and routes' keys and timeouts."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway_core import endpoints
from gateway_core.channel_type import ChannelType, Timeouts
from gateway_core.routing.router import Router
from gateway_core.store import CORE_MIGRATIONS, Store
from gateway_core.store.channels import add_channel, disable_channel_key
from gateway_core.records import key_fingerprint
from gateway_core.testing import make_key_record


class ChatOnly(ChannelType):
    name = "chatonly"

    def wire(self, endpoint):
        return "x" if endpoint == endpoints.CHAT else None

    async def send(self, exchange):  # pragma: no cover - never called here
        raise NotImplementedError


@pytest.fixture
async def store(tmp_path):
    store = Store(str(tmp_path / "r.db"), CORE_MIGRATIONS)
    store.migrate()
    await store.start()
    yield store
    await store.close()


def add(store: Store, name: str, **fields) -> int:
    conn = store.connect()
    try:
        values = {"type": "chatonly", "base_url": "http://x", "api_keys": ["sk-" + name + "-0123456789"], "models": ["m"], **fields}
        return add_channel(conn, name=name, **values)
    finally:
        conn.close()


def router(store: Store, seed: int = 7, **kwargs) -> Router:
    return Router(store, {"chatonly": ChatOnly()}, rng=random.Random(seed), **kwargs)


KEY = make_key_record()


async def test_weights_share_first_picks_within_a_priority(store):
    add(store, "light", weight=1)
    add(store, "medium", weight=2)
    add(store, "heavy", weight=7)
    add(store, "standby", weight=0)
    add(store, "lower", priority=-1, weight=100)
    r = router(store, seed=42)
    firsts: Counter[str] = Counter()
    runs = 20_000
    for _ in range(runs):
        order = [route.channel.name for route in await r.candidates(KEY, "m", endpoints.CHAT)]
        assert order[-1] == "lower" and order[-2] == "standby"  # the next tier only after the whole first one
        firsts[order[0]] += 1
    shares = {name: count / runs for name, count in firsts.items()}
    assert set(shares) == {"light", "medium", "heavy"}
    assert shares["light"] == pytest.approx(0.1, abs=0.015)
    assert shares["medium"] == pytest.approx(0.2, abs=0.015)
    assert shares["heavy"] == pytest.approx(0.7, abs=0.015)


async def test_the_same_seed_gives_the_same_order(store):
    for n in range(5):
        add(store, f"c{n}", weight=n + 1)
    orders = []
    for _ in range(2):
        r = router(store, seed=3)
        orders.append([[route.channel.name for route in await r.candidates(KEY, "m", endpoints.CHAT)] for _ in range(20)])
    assert orders[0] == orders[1]


async def test_priorities_order_tiers_highest_first(store):
    add(store, "low", priority=0)
    add(store, "high", priority=10)
    add(store, "mid-a", priority=5)
    add(store, "mid-b", priority=5)
    order = [route.channel.name for route in await router(store).candidates(KEY, "m", endpoints.CHAT)]
    assert order[0] == "high" and set(order[1:3]) == {"mid-a", "mid-b"} and order[3] == "low"


async def test_disabled_channels_other_groups_and_endpoints_are_not_candidates(store):
    add(store, "on")
    add(store, "off", enabled=False)
    add(store, "vip", groups=["vip"])
    add(store, "embed-only", endpoints=[endpoints.EMBEDDINGS])
    names = [route.channel.name for route in await router(store).candidates(KEY, "m", endpoints.CHAT)]
    assert names == ["on"]


async def test_routes_carry_usable_keys_and_the_channels_timeouts(store):
    channel_id = add(store, "multi", api_keys=["sk-one-0123456789", "sk-two-0123456789"], timeout_first_byte=3.0, concurrency=4)
    conn = store.connect()
    disable_channel_key(conn, channel_id, key_fingerprint("sk-one-0123456789"), 0, "upstream answered 401")
    conn.close()
    (route,) = await router(store, timeouts=Timeouts(connect=2, first_byte=50, idle=40)).candidates(KEY, "m", endpoints.CHAT)
    assert route.keys == ((1, "sk-two-0123456789"),)
    assert route.timeouts == Timeouts(connect=2, first_byte=3.0, idle=40)
    assert route.concurrency == 4
    assert route.channel.disabled_keys[0].reason == "upstream answered 401"
