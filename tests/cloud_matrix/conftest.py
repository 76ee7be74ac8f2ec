"""The cloud channels' matrix: one world for the folder's tests — the fake upstreams served
from a thread of their own, a store seeded through the admin port, one gateway on loopback —
and one client of each protocol (:mod:`.clients`) on it.

The fakes are the adapters' own (each proven by the provider's official client in its
adapter's tests): Azure OpenAI with Entra ID, Bedrock Runtime (SigV4 checked), Vertex AI with
Google's token endpoint, and the direct OpenAI, Anthropic and Gemini upstreams for failover.
The channels and their models are in :mod:`.world`.
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gateway_core.billing.testing import INPUT, OUTPUT
from gateway_core.config import Config
from gateway_core.testing import FakeUpstream, GatewayThread, Seed, UpstreamServers
from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_bedrock.fake_upstream import IAM_KEY, FakeBedrock
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import EXPECTED_KEY as OPENAI_KEY
from gateway_openai.fake_upstream import FakeOpenAI

from .clients import PROTOCOLS
from .world import DIRECT, PROTOCOL_NAMES, KINDS, World, error_model, failover_model

ADAPTERS = Path(__file__).resolve().parents[2] / "adapters"


def adapter_test_module(adapter: str, name: str) -> ModuleType:
    """A module of an adapter's tests folder (its fake), by path: the folders are not packages."""
    qualified = f"relaygate_matrix_{adapter}_{name}"
    if qualified not in sys.modules:
        spec = importlib.util.spec_from_file_location(qualified, ADAPTERS / adapter / "tests" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[qualified] = module
        spec.loader.exec_module(module)
    return sys.modules[qualified]


class FakesThread:
    """Fake upstreams served on loopback from an event loop in a thread of its own, so
    that one set serves every (synchronous) test of a module."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="cloud-matrix-fakes", daemon=True)
        self.thread.start()
        self.servers = UpstreamServers()

    def start(self, fake: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(self.servers.start(fake), self.loop).result(timeout=30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.servers.close(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    fake_azure = adapter_test_module("azure", "fake_azure")
    fake_vertex = adapter_test_module("vertex", "fake_vertex")
    fakes = FakesThread()
    config = Config(db_path=str(tmp_path_factory.mktemp("cloud-matrix") / "relaygate.db"))
    try:
        entra = fakes.start(fake_azure.FakeEntra())
        oauth = fakes.start(fake_vertex.FakeGoogleOAuth(account=fake_vertex.ServiceAccount.make()))
        upstreams: dict[str, FakeUpstream] = {
            "azure": fakes.start(fake_azure.FakeAzure(entra=entra)),
            "bedrock": fakes.start(FakeBedrock()),
            "vertex": fakes.start(fake_vertex.FakeVertex(oauth=oauth)),
            "openai": fakes.start(FakeOpenAI()),
            "anthropic": fakes.start(FakeAnthropic()),
            "gemini": fakes.start(FakeGemini()),
        }
        keys = {
            "azure": fake_azure.AZURE_KEY, "bedrock": IAM_KEY, "vertex": oauth.account.json(oauth.token_uri),
            "openai": OPENAI_KEY, "anthropic": ANTHROPIC_KEY, "gemini": GEMINI_KEY,
        }  # fmt: skip
        with Seed(config) as seed:
            user_id = seed.user("alice", balance_usd=100)
            _, secret = seed.key(user_id)
            for kind in KINDS.values():
                cloud = {"type": kind.channel_type, "base_url": upstreams[kind.fake].url + kind.base_path, "api_keys": [keys[kind.fake]],
                         "settings": kind.settings, "free_unpriced": False}  # fmt: skip
                direct = DIRECT[kind.name]
                seed.channel(kind.name, models=[kind.model], model_map={kind.model: kind.upstream_model}, **cloud)
                seed.price(kind.model, INPUT, OUTPUT)
                for protocol in PROTOCOL_NAMES:
                    model = error_model(kind, protocol)
                    seed.channel(f"{kind.name}-{protocol}-errors", models=[model], model_map={model: kind.upstream_model}, **cloud)
                    model = failover_model(kind, protocol)
                    seed.channel(f"{kind.name}-{protocol}-first", models=[model], model_map={model: kind.upstream_model}, priority=10, **cloud)
                    seed.channel(f"{kind.name}-{protocol}-direct", type=direct.channel_type, base_url=upstreams[direct.channel_type].url,
                                 api_keys=[keys[direct.channel_type]], models=[model], model_map={model: direct.upstream_model},
                                 priority=0, free_unpriced=False)  # fmt: skip
                    seed.price(error_model(kind, protocol), INPUT, OUTPUT)
                    seed.price(model, INPUT, OUTPUT)
            with GatewayThread(config) as gateway:
                yield World(gateway=gateway, seed=seed, secret=secret, user_id=user_id, upstreams=upstreams)
    finally:
        fakes.close()


@pytest.fixture(scope="package")
def clients(world: World) -> dict[str, Any]:
    """One driver of each client protocol (making a client takes a while)."""
    return {name: driver(world) for name, driver in PROTOCOLS.items()}
