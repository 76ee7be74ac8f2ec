"""The stream-event contract (gateway_core.request.stream_contract): which event sequences
a channel type may send, and what a client sees when an adapter breaks it — the
protocol's error event naming the channel type, the error logged and recorded as
the gateway's, not the upstream's — over real HTTP with an NDJSON fake upstream."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from structlog.testing import capture_logs

from gateway_core import (
    ChannelType,
    Exchange,
    Frame,
    PartDelta,
    PartStart,
    PartStop,
    StopReason,
    StreamFinish,
    StreamReply,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
    endpoints,
    hookimpl,
)
from gateway_core.sse import SSESplitter, frame_fields
from gateway_core.request.stream_contract import StreamContract, StreamContractError
from gateway_core.testing import FakeUpstream
from gateway_core.upstream import ndjson_frames, parse_frame_json, post

START, FINISH, USAGE = StreamStart("s1", "m"), StreamFinish(StopReason.END_TURN), UsageReport(Usage(input_tokens=1, output_tokens=2))
TEXT = PartStart(0, TextPart(""))

GOOD = {
    "a whole stream": [(START, TEXT, PartDelta(0, "hi"), PartStop(0)), (FINISH,), (USAGE,)],
    "a part left open until the finish": [(START, TEXT, PartDelta(0, "hi"), FINISH, USAGE)],
    "usage before the finish": [(START,), (USAGE, TEXT, PartStop(0), FINISH)],
    "no usage at all": [(START, TEXT, PartStop(0), FINISH)],
    "no finish (the upstream stopped early: not the adapter's fault)": [(START, TEXT, PartDelta(0, "a"))],
}
BROKEN = {
    "a PartDelta for part 1, which was never started": [(START, TEXT, PartDelta(1, "x"))],
    "a PartStop for part 0, which was already stopped": [(START, TEXT, PartStop(0), PartStop(0))],
    "a PartDelta for part 0, which was already stopped": [(START, TEXT), (PartStop(0),), (PartDelta(0, "late"),)],
    "a second PartStart for part 0": [(START, TEXT, PartStop(0), TEXT)],
    "a PartDelta after the StreamFinish (only a UsageReport may follow it)": [(START, TEXT, FINISH), (PartDelta(0, "more"),)],
    "a PartStart after the StreamFinish (only a UsageReport may follow it)": [(START, FINISH, USAGE, PartStart(1, TextPart("")))],
    "a StreamFinish after the StreamFinish (only a UsageReport may follow it)": [(START, FINISH, FINISH)],
    "a second StreamStart": [(START, START)],
    "a PartStart before the StreamStart (a stream begins with one)": [(TEXT, START)],
    "a UsageReport before the StreamStart (a stream begins with one)": [(USAGE,)],
    "'not an event', which is not a core stream event": [(START, "not an event")],
}


@pytest.mark.parametrize("name", sorted(GOOD))
def test_streams_that_keep_the_contract(name):
    contract = StreamContract("tidy")
    for events in GOOD[name]:
        contract.check(Frame(b"", events))


@pytest.mark.parametrize("problem", sorted(BROKEN))
def test_streams_that_break_it_blame_the_channel_type(problem):
    contract = StreamContract("sloppy")
    with pytest.raises(StreamContractError) as caught, capture_logs() as logs:
        for events in BROKEN[problem]:
            contract.check(Frame(b"", events))
    assert caught.value.message == (
        f"The channel type 'sloppy' broke the stream contract: {problem}. This is a bug in its adapter, not an upstream failure."
    )
    assert caught.value.kind == "internal" and caught.value.status == 500
    assert [(log["event"], log["channel_type"], log["problem"]) for log in logs] == [("stream contract broken", "sloppy", problem)]


def test_a_terminal_frame_must_come_with_the_finish():
    contract = StreamContract("tidy")
    contract.check(Frame(b"", (START, TEXT, PartStop(0), FINISH), terminal=True))
    sloppy = StreamContract("sloppy")
    sloppy.check(Frame(b"", (START, TEXT)))
    with pytest.raises(StreamContractError, match="a frame marked terminal .* came before any StreamFinish"):
        sloppy.check(Frame(b"", (PartStop(0),), terminal=True))


# --- through the gateway ----------------------------------------------------------


class WordsUpstream(FakeUpstream):
    """``POST /generate`` streams ``{"text": word}`` lines, then ``{"done": true, "in": n, "out": n}``."""

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/generate", self.generate)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body)
        if refusal is not None:
            return refusal
        words = body["prompt"].split()
        lines = [orjson.dumps({"text": word}) + b"\n" for word in words]
        done = orjson.dumps({"done": True, "in": len(words), "out": len(words)}) + b"\n"
        return await self.stream(request, lines, fault, content_type="application/x-ndjson", end=done)


class SloppyChannel(ChannelType):
    """An NDJSON channel type whose decoder has the bug named by the channel's
    ``bug`` setting (none: it keeps the contract)."""

    name = "sloppy"

    def wire(self, endpoint: str) -> str | None:
        return "sloppy" if endpoint == endpoints.CHAT else None

    async def send(self, exchange: Exchange) -> StreamReply:
        target = exchange.target
        prompt = exchange.request.messages[-1].parts[0].text  # type: ignore[union-attr]
        headers = {"Authorization": f"Bearer {target.api_key}"}
        response = await post(exchange, target.channel.base_url + "/generate", headers=headers,
                              body=orjson.dumps({"prompt": prompt}), error_message=lambda status, data: data.decode())  # fmt: skip
        frames = ndjson_frames(response, Decoder(str(target.channel.settings.get("bug", ""))).decode)
        return StreamReply(frames=frames, close=frames.aclose)


class Decoder:
    def __init__(self, bug: str) -> None:
        self.bug = bug
        self.started = False

    def decode(self, raw: bytes) -> Frame:
        line = parse_frame_json(raw)
        if "text" in line:
            head = () if self.started else (StreamStart("sloppy-1", "sloppy-model"), PartStart(0, TextPart("")))
            self.started = True
            index = 1 if self.bug == "delta for a part never started" else 0
            tail = (StreamFinish(StopReason.END_TURN),) if self.bug == "events after the finish" else ()
            return Frame(raw, (*head, PartDelta(index, line["text"] + " "), *tail))
        usage = UsageReport(Usage(input_tokens=line["in"], output_tokens=line["out"]))
        if self.bug == "terminal without a finish":
            return Frame(raw, (PartStop(0), usage), terminal=True)
        if self.bug == "no finish":
            return Frame(raw, (PartStop(0), usage))
        return Frame(raw, (PartStop(0), StreamFinish(StopReason.END_TURN), usage), terminal=True)


class SloppyPlugin:
    @hookimpl
    def register_channel_types(self, register: Any) -> None:
        register(SloppyChannel())


@pytest.fixture
def relaygate_plugins() -> list[Any]:
    return [SloppyPlugin()]


BUGS = {
    "delta for a part never started": "a PartDelta for part 1, which was never started",
    "events after the finish": "a PartDelta after the StreamFinish (only a UsageReport may follow it)",
    "terminal without a finish": "a frame marked terminal (the upstream's end of stream) came before any StreamFinish",
}


@pytest.fixture
async def gateway(seed, fake_upstream, start_gateway):
    upstream = await fake_upstream(WordsUpstream())
    for bug in ("", *BUGS, "no finish"):
        seed.channel(bug or "tidy", type="sloppy", base_url=upstream.url, models=[bug or "tidy"], settings={"bug": bug})
    gateway = start_gateway()
    gateway.key = seed.key(seed.user("alice"))[1]
    return gateway


async def stream_frames(gateway, protocol: str, model: str) -> list[tuple[str | None, Any]]:
    if protocol == "openai":
        path, headers = "/v1/chat/completions", {"Authorization": f"Bearer {gateway.key}"}
        body = {"model": model, "stream": True, "messages": [{"role": "user", "content": "one two three"}]}
    else:
        path, headers = "/v1/messages", {"x-api-key": gateway.key, "anthropic-version": "2023-06-01"}
        body = {"model": model, "stream": True, "max_tokens": 50, "messages": [{"role": "user", "content": "one two three"}]}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + path, json=body, headers=headers) as response:
            assert response.status == 200
            data = await response.read()
    frames = list(SSESplitter().feed(data))
    return [(event, orjson.loads(payload) if payload != b"[DONE]" else payload) for event, payload in map(frame_fields, frames)]


@pytest.mark.usefixtures("bundled_adapters")  # through the openai and anthropic protocols
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_a_tidy_stream_passes(gateway, seed, protocol):
    frames = await stream_frames(gateway, protocol, "tidy")
    assert not any("error" in str(event) or (isinstance(data, dict) and "error" in data) for event, data in frames)
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["end_reason"], row["output_tokens"], row["estimated"]) == ("done", 3, 0)


@pytest.mark.usefixtures("bundled_adapters")  # through the openai and anthropic protocols
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("bug", sorted(BUGS))
async def test_a_broken_stream_ends_with_the_protocols_error_event_naming_the_channel_type(gateway, seed, protocol, bug):
    with capture_logs() as logs:
        frames = await stream_frames(gateway, protocol, bug)
    message = f"The channel type 'sloppy' broke the stream contract: {BUGS[bug]}. This is a bug in its adapter, not an upstream failure."
    event, last = frames[-1]
    assert event == (None if protocol == "openai" else "error")  # each protocol's own error event
    assert last["error"]["message"].startswith(message)
    assert [log["channel_type"] for log in logs if log["event"] == "stream contract broken"] == ["sloppy"]
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["status"], row["error_type"], row["error_message"]) == (200, "internal", message)
    assert row["end_reason"] == "internal_error"
    assert row["upstream_status"] is None  # nothing the upstream said is blamed


@pytest.mark.usefixtures("bundled_adapters")  # through the openai protocol
async def test_a_stream_without_a_finish_is_the_upstreams_early_end(gateway, seed):
    frames = await stream_frames(gateway, "openai", "no finish")
    assert frames[-1][1]["error"]["message"].startswith("the upstream ended the stream before it finished")
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["end_reason"], row["error_type"]) == ("upstream_error", "upstream")
