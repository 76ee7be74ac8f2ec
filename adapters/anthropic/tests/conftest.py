"""Fixtures of the anthropic adapter's tests: the openai adapter's recorded examples,
fake upstreams and a gateway with an anthropic channel and an openai channel."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from gateway_core.testing import Examples, Fault


@pytest.fixture
def openai_examples() -> Examples:
    """The openai adapter's recorded examples, for the conversions between the two wires."""
    return Examples.of(pytest.importorskip("gateway_openai"))


# --- a gateway with an anthropic channel and an openai channel -------------------

CLAUDE = "claude-test"  # served by the anthropic channel
CLAUDE_UPSTREAM = "claude-test-20260101"
GPT = "gpt-bridge"  # served by the openai channel
ROUTES = {"anthropic": CLAUDE, "openai": GPT}


@pytest.fixture
async def anthropic_upstream(fake_upstream):
    from gateway_anthropic.fake_upstream import FakeAnthropic

    return await fake_upstream(FakeAnthropic())


@pytest.fixture
async def openai_upstream(fake_upstream):
    from gateway_openai.fake_upstream import FakeOpenAI

    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def gateway_key(seed, anthropic_upstream, openai_upstream) -> str:
    from gateway_anthropic.fake_upstream import EXPECTED_KEY

    user = seed.user("alice")
    _, secret = seed.key(user)
    seed.channel("claude", type="anthropic", base_url=anthropic_upstream.url + "/v1", models=[CLAUDE],
                 model_map={CLAUDE: CLAUDE_UPSTREAM}, api_keys=(EXPECTED_KEY,))
    seed.channel("gpt", type="openai", base_url=openai_upstream.url, models=[GPT])
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
def models() -> SimpleNamespace:
    """The model names of the gateway fixture (test modules cannot import conftest)."""
    return SimpleNamespace(claude=CLAUDE, claude_upstream=CLAUDE_UPSTREAM, gpt=GPT)


@pytest.fixture(params=sorted(ROUTES))
def route(request, anthropic_upstream, openai_upstream):
    """Each test runs against the anthropic channel and against the openai channel."""
    upstream = anthropic_upstream if request.param == "anthropic" else openai_upstream
    return Route(request.param, ROUTES[request.param], upstream)


class Route:
    def __init__(self, channel_type: str, model: str, upstream: Any) -> None:
        self.channel_type = channel_type
        self.model = model
        self.upstream = upstream

    def answer_with_tool(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        if self.channel_type == "anthropic":
            self.upstream.tool_uses = [{"id": call_id, "name": name, "input": arguments}]
        else:
            self.upstream.tool_call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": orjson.dumps(arguments).decode()}}

    def answer_with_text(self) -> None:
        if self.channel_type == "anthropic":
            self.upstream.tool_uses = None
        else:
            self.upstream.tool_call = None

    def fail_next(self, status: int) -> None:
        self.upstream.fail_next(Fault(status=status))

    def drop_next_stream(self, after: int) -> None:
        self.upstream.fail_next(Fault(drop_after=after))
