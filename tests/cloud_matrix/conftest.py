"""The cloud channels' matrix: one world for the folder's tests — the fake upstreams served
from a thread of their own, a store seeded through the admin port, one gateway on loopback —
and one client of each protocol (:mod:`.clients`) on it.

The fakes are the adapters' own (each proven by the provider's official client in its
adapter's tests): Azure OpenAI with Entra ID, Bedrock Runtime (SigV4 checked), Vertex AI with
Google's token endpoint, and the direct OpenAI, Anthropic and Gemini upstreams for failover.
The channels and their models are in :mod:`.world`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import pytest

from gateway_core.billing.testing import INPUT, OUTPUT
from gateway_core.config import Config
from gateway_core.testing import FakeUpstream, GatewayThread, Seed
from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_bedrock.fake_upstream import IAM_KEY, FakeBedrock
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import EXPECTED_KEY as OPENAI_KEY
from gateway_openai.fake_upstream import FakeOpenAI

from .clients import PROTOCOLS
from .world import DIRECT, KINDS, PROTOCOL_NAMES, World, error_model, failover_model


@pytest.fixture(scope="package")
def world(tmp_path_factory: pytest.TempPathFactory, fakes_thread: Any, adapter_fakes: Callable[[str, str], ModuleType]) -> Iterator[World]:
    fake_azure, fake_vertex = adapter_fakes("azure", "fake_azure"), adapter_fakes("vertex", "fake_vertex")
    config = Config(db_path=str(tmp_path_factory.mktemp("cloud-matrix") / "relaygate.db"))
    entra = fakes_thread.start(fake_azure.FakeEntra())
    oauth = fakes_thread.start(fake_vertex.FakeGoogleOAuth(account=fake_vertex.ServiceAccount.make()))
    upstreams: dict[str, FakeUpstream] = {
        "azure": fakes_thread.start(fake_azure.FakeAzure(entra=entra)),
        "bedrock": fakes_thread.start(FakeBedrock()),
        "vertex": fakes_thread.start(fake_vertex.FakeVertex(oauth=oauth)),
        "openai": fakes_thread.start(FakeOpenAI()),
        "anthropic": fakes_thread.start(FakeAnthropic()),
        "gemini": fakes_thread.start(FakeGemini()),
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
                seed.channel(f"{kind.name}-{protocol}-first", models=[model], model_map={model: direct.cloud_model or kind.upstream_model},
                             priority=10, **cloud)  # fmt: skip
                seed.channel(f"{kind.name}-{protocol}-direct", type=direct.channel_type, base_url=upstreams[direct.channel_type].url,
                             api_keys=[keys[direct.channel_type]], models=[model], model_map={model: direct.upstream_model},
                             priority=0, free_unpriced=False)  # fmt: skip
                seed.price(error_model(kind, protocol), INPUT, OUTPUT)
                seed.price(model, INPUT, OUTPUT)
        with GatewayThread(config) as gateway:
            yield World(gateway=gateway, seed=seed, secret=secret, user_id=user_id, upstreams=upstreams)


@pytest.fixture(scope="package")
def clients(world: World) -> dict[str, Any]:
    """One driver of each client protocol (making a client takes a while)."""
    return {name: driver(world) for name, driver in PROTOCOLS.items()}
