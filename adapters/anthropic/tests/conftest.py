"""Fixtures of the anthropic adapter's tests: the recorded wire examples."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest

from gateway_core.sse import SSESplitter, frame_fields

EXAMPLES = Path(__file__).parent / "examples"
OPENAI_EXAMPLES = Path(__file__).parents[2] / "openai" / "tests" / "examples"


class Examples:
    """Reads the files of a ``tests/examples`` folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def raw(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def json(self, name: str) -> Any:
        return orjson.loads(self.raw(name))

    def frames(self, name: str) -> list[bytes]:
        """The SSE frames of a transcript, each with its blank line."""
        splitter = SSESplitter()
        frames = list(splitter.feed(self.raw(name)))
        assert not splitter.flush().strip(), f"{name}: unterminated last frame"
        return frames

    def events(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        """The ``(event, payload)`` pairs of an Anthropic transcript (every frame names its event)."""
        out = []
        for frame in self.frames(name):
            event, data = frame_fields(frame)
            assert event is not None, f"{name}: a frame without an event line"
            payload = orjson.loads(data)
            assert payload["type"] == event, f"{name}: event {event} carries type {payload['type']}"
            out.append((event, payload))
        return out

    def openai_chunks(self, name: str) -> list[dict[str, Any]]:
        """The JSON chunks of an OpenAI ``data:`` transcript, up to ``[DONE]``."""
        datas = [frame_fields(frame)[1] for frame in self.frames(name)]
        assert datas and datas[-1] == b"[DONE]"
        return [orjson.loads(data) for data in datas[:-1]]

    def names(self, pattern: str) -> list[str]:
        return sorted(path.name for path in self.root.glob(pattern))


@pytest.fixture
def examples() -> Examples:
    return Examples(EXAMPLES)


@pytest.fixture
def openai_examples() -> Examples:
    """The openai adapter's recorded examples, for the conversions between the two wires."""
    return Examples(OPENAI_EXAMPLES)


# --- a gateway with an anthropic channel and an openai channel -------------------

CLAUDE = "claude-test"  # served by the anthropic channel
CLAUDE_UPSTREAM = "claude-test-20260101"
GPT = "gpt-bridge"  # served by the openai channel
ROUTES = {"anthropic": CLAUDE, "openai": GPT}


@pytest.fixture
async def anthropic_upstream(aiohttp_server):
    from gateway_anthropic.fake_upstream import FakeAnthropic

    fake = FakeAnthropic()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


@pytest.fixture
async def openai_upstream(aiohttp_server):
    from gateway_openai.fake_upstream import FakeOpenAI

    fake = FakeOpenAI()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


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
        if self.channel_type == "anthropic":
            from gateway_anthropic.fake_upstream import Fault
        else:
            from gateway_openai.fake_upstream import Fault
        self.upstream.fail_next(Fault(status=status))

    def drop_next_stream(self, after: int) -> None:
        if self.channel_type == "anthropic":
            from gateway_anthropic.fake_upstream import Fault

            self.upstream.fail_next(Fault(drop_after_events=after))
        else:
            from gateway_openai.fake_upstream import Fault

            self.upstream.fail_next(Fault(drop_after_chunks=after))
