"""The relay with test channel types: failover before the first byte, broken streams."""

from __future__ import annotations

import pytest

from gateway_core import (
    ChannelType,
    Frame,
    JsonReply,
    PartDelta,
    PartStart,
    StreamReply,
    StreamStart,
    TextPart,
    UpstreamError,
    Usage,
    endpoints,
    hookimpl,
)
from gateway_core.model import ChatResponse, StopReason
from gateway_core.testing import FakeClient, Seed, fake_plugin


class ScriptedChannel(ChannelType):
    """Fails with a retryable error for channels named ``bad*``; streams then breaks
    with a bug for ``buggy*``; answers otherwise."""

    name = "scripted"
    calls: list[str] = []

    def wire(self, endpoint):
        return "scripted" if endpoint == endpoints.CHAT else None

    async def send(self, exchange):
        channel = exchange.target.channel.name
        ScriptedChannel.calls.append(channel)
        if channel.startswith("bad"):
            raise UpstreamError(f"{channel} is down", retryable=True)
        if exchange.call.stream:
            frames = self._frames(channel)
            return StreamReply(frames=frames, close=frames.aclose)
        response = ChatResponse(id="r1", model="m", parts=(TextPart(f"from {channel}"),), stop_reason=StopReason.END_TURN, usage=Usage(3, 2))
        return JsonReply(body=None, response=response, usage=response.usage)

    async def _frames(self, channel):
        yield Frame(b"", (StreamStart(id="s1", model="m"), PartStart(0, TextPart(""))))
        yield Frame(b"", (PartDelta(0, "partial answer"),))
        if channel.startswith("buggy"):
            raise RuntimeError("a bug in a translation")


class ScriptedPlugin:
    @hookimpl
    def register_channel_types(self, register):
        register(ScriptedChannel())


@pytest.fixture
def scripted(relaygate_config):
    ScriptedChannel.calls = []
    seed = Seed(relaygate_config, extra_plugins=[ScriptedPlugin()])
    user = seed.user("alice")
    _, key = seed.key(user)
    yield seed, key
    seed.close()


def client_for(gateway, key) -> FakeClient:
    """A client of the kit's ``fake`` protocol (a channel of another wire: the core model between)."""
    return FakeClient(gateway.url, key)


async def test_fails_over_by_priority_and_logs_every_attempt(scripted, start_gateway):
    seed, key = scripted
    seed.channel("bad-primary", type="scripted", base_url="local://x", models=["m"], priority=10)
    seed.channel("good-backup", type="scripted", base_url="local://x", models=["m"], priority=0)
    gateway = start_gateway(extra_plugins=[ScriptedPlugin(), fake_plugin])
    answer = await client_for(gateway, key).chat("m", "x")
    assert answer.status == 200 and answer.text == "from good-backup"
    assert ScriptedChannel.calls == ["bad-primary", "good-backup"]
    row = seed.rows("SELECT channel_name, attempts, status FROM usage_logs")[-1]
    assert row["channel_name"] == "good-backup" and row["status"] == 200
    assert '"bad-primary is down"' in row["attempts"] and '"good-backup"' in row["attempts"]


async def test_no_channel_left_is_the_last_error_with_the_request_id(scripted, start_gateway):
    seed, key = scripted
    seed.channel("bad-1", type="scripted", base_url="local://x", models=["m"])
    seed.channel("bad-2", type="scripted", base_url="local://x", models=["m"])
    gateway = start_gateway(extra_plugins=[ScriptedPlugin(), fake_plugin])
    answer = await client_for(gateway, key).chat("m", "x")
    assert answer.status == 502
    assert answer.headers["X-Request-ID"] == answer.error["request_id"]
    assert sorted(ScriptedChannel.calls) == ["bad-1", "bad-2"]


async def test_a_bug_mid_stream_ends_the_stream_with_an_error_event(scripted, start_gateway):
    seed, key = scripted
    seed.channel("buggy", type="scripted", base_url="local://x", models=["m"])
    gateway = start_gateway(extra_plugins=[ScriptedPlugin(), fake_plugin])
    answer = await client_for(gateway, key).chat("m", "x", stream=True)
    assert answer.text == "partial answer"
    assert answer.error is not None and answer.error["request_id"] == answer.headers["X-Request-ID"]
    row = seed.rows("SELECT status, end_reason, error_type, output_tokens, estimated FROM usage_logs")[-1]
    assert row == {"status": 200, "end_reason": "internal_error", "error_type": "internal", "output_tokens": 4, "estimated": 1}
