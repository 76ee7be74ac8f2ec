"""Fixtures of the gemini adapter's tests: recorded wire examples, fake upstreams, a gateway.

The gateway's channels: ``google`` (type gemini) serves ``gemini-test`` (mapped to
``gemini-2.5-flash``) and ``text-embedding-test``; ``oai`` (type openai) serves
``gpt-test`` (mapped to ``gpt-test-2026-01-01``). Test modules repeat these names
as constants (they cannot import this file under ``--import-mode=importlib``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from google import genai
from google.genai import types

from gateway_core.sse import SSESplitter, frame_fields
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

EXAMPLES = Path(__file__).parent / "examples"
GEMINI_MODEL = "gemini-test"
GEMINI_UPSTREAM_MODEL = "gemini-2.5-flash"
OPENAI_MODEL = "gpt-test"
OPENAI_UPSTREAM_MODEL = "gpt-test-2026-01-01"
EMBED_MODEL = "text-embedding-test"


class Examples:
    """Reads the files of ``tests/examples``."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def raw(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def json(self, name: str) -> Any:
        return orjson.loads(self.raw(name))

    def sse(self, name: str) -> list[dict[str, Any]]:
        """The JSON objects of a ``data:`` transcript (Gemini's has no ``[DONE]``; OpenAI's
        ends with one, left out)."""
        splitter = SSESplitter()
        frames = list(splitter.feed(self.raw(name)))
        assert not splitter.flush().strip(), f"{name}: unterminated last frame"
        datas = [frame_fields(frame)[1] for frame in frames]
        return [orjson.loads(data) for data in datas if data and data != b"[DONE]"]


def _examples_of(package) -> Examples:
    return Examples(Path(package.__file__).resolve().parents[1] / "tests" / "examples")


@pytest.fixture
def examples() -> Examples:
    return Examples(EXAMPLES)


@pytest.fixture
def openai_examples() -> Examples:
    """The openai adapter's recorded wire examples."""
    import gateway_openai

    return _examples_of(gateway_openai)


@pytest.fixture
def anthropic_examples() -> Examples:
    """The anthropic adapter's recorded wire examples (skips when it is not installed)."""
    return _examples_of(pytest.importorskip("gateway_anthropic"))


@pytest.fixture
async def gemini_upstream(aiohttp_server):
    fake = FakeGemini()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


@pytest.fixture
async def openai_upstream(aiohttp_server):
    fake = FakeOpenAI()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


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
