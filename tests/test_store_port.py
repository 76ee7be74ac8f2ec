"""The request path reaches the database only through the RequestStore port, and
``create_app`` takes the store and the rate limiter it is given (constructor injection)."""

from __future__ import annotations

import collections
import inspect

import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.runtime.plugins import collect
from gateway_core.ratelimit import RateLimiter
from gateway_core.ratelimit.memory import InProcessRateLimiter
from gateway_core.store.request_store import RequestStore
from gateway_core.store import Store
from gateway_core.testing.stores import open_store
from gateway_core.store.limits import set_key_limits
from gateway_openai.fake_upstream import FakeOpenAI

PORT_METHODS = [
    name for name, member in inspect.getmembers(RequestStore) if not name.startswith("_") and (callable(member) or isinstance(member, property))
]


class PortOnly:
    """A real store seen through the port alone: any other attribute the request
    path asks for (``read``, ``write``, a connection) is an AttributeError."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.calls: collections.Counter[str] = collections.Counter()

    def __getattr__(self, name: str):
        if name not in PORT_METHODS:
            raise AttributeError(f"the request path asked the store for {name!r}, which is not in the RequestStore port")
        self.calls[name] += 1
        return getattr(self._store, name)


class CountingLimiter(InProcessRateLimiter):
    def __init__(self) -> None:
        super().__init__()
        self.acquired = 0

    async def acquire(self, *args, **kwargs):
        self.acquired += 1
        return await super().acquire(*args, **kwargs)


def test_the_sqlite_store_implements_the_port(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'gw.db'}", [])
    assert isinstance(store, RequestStore) and store.path == str(tmp_path / "gw.db")
    assert open_store("sqlite:///data/gw.db", []).path == "data/gw.db" and open_store("gw.db", []).path == "gw.db"
    assert set(PORT_METHODS) >= {"find_key", "list_channels", "price_snapshot", "hold", "record", "release_stale_holds", "report_breaker", "disable_channel_key"}


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai",))


async def test_the_request_path_uses_only_the_port_and_the_injected_services(relaygate_config, seed, start_gateway, fake_upstream):
    fake = await fake_upstream(FakeOpenAI())
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=fake.url)
    seed._write(set_key_limits, key_id, {"rpm": 100})
    store = PortOnly(Store(relaygate_config.db_path, collect(relaygate_config).migrations))
    limiter = CountingLimiter()
    assert isinstance(limiter, RateLimiter)
    gateway = start_gateway(store=store, rate_limiter=limiter)
    assert gateway.services.store is store and gateway.services.rate_limiter is limiter

    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    completion = await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=20)
    assert completion.choices[0].message.content
    row = await kit.wait_for_row(seed)
    assert row["status"] == 200 and row["cost_micros"] > 0
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    assert {"find_key", "list_channels", "price_snapshot", "hold", "record"} <= set(store.calls)
    assert limiter.acquired == 1
