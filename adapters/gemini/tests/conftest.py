"""Fixtures of the gemini adapter's tests: other adapters' wire examples, fake upstreams, a gateway.

The gateway's channels: ``google`` (type gemini) serves ``gemini-test`` (mapped to
``gemini-2.5-flash``) and ``text-embedding-test``; ``oai`` (type openai) serves
``gpt-test`` (mapped to ``gpt-test-2026-01-01``). Test modules repeat these names
as constants (they cannot import this file under ``--import-mode=importlib``).
"""

from __future__ import annotations

import pytest
from google import genai
from google.genai import types

from gateway_core.testing import Examples
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

GEMINI_MODEL = "gemini-test"
GEMINI_UPSTREAM_MODEL = "gemini-2.5-flash"
OPENAI_MODEL = "gpt-test"
OPENAI_UPSTREAM_MODEL = "gpt-test-2026-01-01"
EMBED_MODEL = "text-embedding-test"


@pytest.fixture
def openai_examples() -> Examples:
    """The openai adapter's recorded wire examples."""
    return Examples.of("gateway_openai")


@pytest.fixture
def anthropic_examples() -> Examples:
    """The anthropic adapter's recorded wire examples (skips when it is not installed)."""
    return Examples.of(pytest.importorskip("gateway_anthropic"))


@pytest.fixture
async def gemini_upstream(fake_upstream):
    return await fake_upstream(FakeGemini())


@pytest.fixture
async def openai_upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def user(seed):
    return seed.user("alice")


@pytest.fixture
def gateway_key(seed, user, gemini_upstream, openai_upstream):
    _, secret = seed.key(user)
    seed.channel(
        "google", type="gemini", base_url=gemini_upstream.url + "/v1beta", models=[GEMINI_MODEL, EMBED_MODEL],
        model_map={GEMINI_MODEL: GEMINI_UPSTREAM_MODEL},
    )
    seed.channel("oai", type="openai", base_url=openai_upstream.url + "/v1", models=[OPENAI_MODEL], model_map={OPENAI_MODEL: OPENAI_UPSTREAM_MODEL})
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
async def genai_client(gateway):
    """Makes ``google-genai`` async clients for the gateway: ``genai_client(key, version)``."""
    clients: list[genai.Client] = []

    def make(key: str, version: str = "v1beta"):
        client = genai.Client(api_key=key, http_options=types.HttpOptions(base_url=gateway.url, api_version=version))
        clients.append(client)
        return client.aio

    yield make
    for client in clients:
        await client.aio.aclose()
