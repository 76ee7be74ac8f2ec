"""An OpenAI upstream's chat stream relayed to an OpenAI client (the passthrough
path), over real loopback HTTP, with upstream bytes set frame by frame: every
frame reaches the client byte for byte however the upstream cuts its writes,
the upstream's ``[DONE]`` is replaced by the gateway's own after the request is
recorded, the usage is billed as reported or estimated from the characters
delivered, and an error chunk or an oversized frame ends the stream with an
OpenAI error event after the frames before it."""

from __future__ import annotations

from typing import Any

import aiohttp
import attrs
import orjson
import pytest
from aiohttp import web

from gateway_core.billing import testing as kit
from gateway_core.config import Config
from gateway_core.tally import estimate_tokens
from gateway_core.testing import FakeUpstream

MODEL = "gpt-frames"
FRAME_LIMIT = 4096
DONE = b"data: [DONE]\n\n"


@attrs.define
class FramesUpstream(FakeUpstream):
    """Answers each chat request with the next queued stream: its bytes, written
    in the pieces given (each piece a separate write, so a separate read)."""

    streams: list[list[bytes]] = attrs.field(factory=list)

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.chat)

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        return None

    async def chat(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, await request.json())
        return refusal or await self.stream(request, self.streams.pop(0), fault)


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    payload: dict[str, Any] = {"id": "chatcmpl-f1", "object": "chat.completion.chunk", "created": 1754480000, "model": MODEL}
    payload["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    if usage is not None or delta is None:
        payload["usage"] = usage
    return b"data: " + orjson.dumps(payload) + b"\n\n"


TEXTS = ["Hel", "lo, ", "wörld \"quoted\"\n", "é😀", ""]
USAGE = {"prompt_tokens": 9, "completion_tokens": 7, "total_tokens": 16}
TEXT_STREAM = [
    chunk({"role": "assistant", "content": "", "refusal": None}),
    *[chunk({"content": text}) for text in TEXTS],
    chunk({}, "stop"),
    chunk(None, usage=USAGE),
    DONE,
]


def pieces_of(frames: list[bytes], cut: str) -> list[bytes]:
    whole = b"".join(frames)
    if cut == "frame by frame":
        return frames
    if cut == "one write":
        return [whole]
    return [whole[i : i + 7] for i in range(0, len(whole), 7)]  # frames and lines split anywhere


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",), max_frame_bytes=FRAME_LIMIT, breaker_failures=1_000_000, max_attempts=1)


@pytest.fixture
async def upstream(fake_upstream) -> FramesUpstream:
    return await fake_upstream(FramesUpstream(chunk_delay=0.002))


@pytest.fixture
def secret(seed, upstream):
    seed.channel("frames", type="openai", base_url=upstream.url + "/v1", models=[MODEL])
    seed.price(MODEL, 1_000_000, 2_000_000)
    return seed.key(seed.user("alice", balance_usd=100))[1]


async def relay(gateway, secret: str, include_usage: bool = True) -> tuple[bytes, str]:
    """The whole body the client received, and the request id."""
    body: dict[str, Any] = {"model": MODEL, "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"})
        assert response.status == 200
        return await response.read(), response.headers["x-request-id"]


@pytest.mark.parametrize("cut", ["frame by frame", "one write", "7-byte pieces"])
async def test_every_frame_reaches_the_client_byte_for_byte_and_the_usage_is_billed(start_gateway, seed, upstream, secret, cut):
    upstream.streams.append(pieces_of(TEXT_STREAM, cut))
    received, request_id = await relay(start_gateway(), secret)
    assert received == b"".join(TEXT_STREAM)  # the gateway's own [DONE] in place of the upstream's
    row = await kit.wait_for_row(seed, request_id)
    assert (row["status"], row["end_reason"], row["estimated"]) == (200, "done", 0)
    assert (row["input_tokens"], row["output_tokens"]) == (9, 7)
    assert row["first_token_ms"] is not None


async def test_without_include_usage_the_usage_chunk_is_dropped_but_billed(start_gateway, seed, upstream, secret):
    upstream.streams.append(TEXT_STREAM)
    received, request_id = await relay(start_gateway(), secret, include_usage=False)
    assert received == b"".join(frame for frame in TEXT_STREAM if b'"choices":[]' not in frame)
    row = await kit.wait_for_row(seed, request_id)
    assert (row["output_tokens"], row["estimated"]) == (7, 0)


async def test_a_stream_whose_last_chunk_has_no_usage_is_billed_on_the_characters_delivered(start_gateway, seed, upstream, secret):
    frames = [frame for frame in TEXT_STREAM if b'"choices":[]' not in frame]
    upstream.streams.append(frames)
    received, request_id = await relay(start_gateway(), secret)
    assert received == b"".join(frames)
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("done", 1)
    assert row["output_tokens"] == estimate_tokens(len("".join(TEXTS)))  # characters, not bytes: ö, é and 😀 count one each


async def test_a_tool_call_stream_is_forwarded_and_its_arguments_counted(start_gateway, seed, upstream, secret):
    arguments = ['{"city"', ': "Paris"', "}"]
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "weather", "arguments": ""}}
    frames = [
        chunk({"role": "assistant", "content": None, "tool_calls": [call]}),
        *[chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}) for part in arguments],
        chunk({}, "tool_calls"),
        DONE,
    ]
    upstream.streams.append(frames)
    received, request_id = await relay(start_gateway(), secret)
    assert received == b"".join(frames)
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("done", 1)
    assert row["output_tokens"] == estimate_tokens(len("".join(arguments)))


@pytest.mark.parametrize("cut", ["frame by frame", "one write"])
async def test_an_error_chunk_mid_stream_ends_it_with_an_openai_error_after_the_frames_before(start_gateway, seed, upstream, secret, cut):
    before = TEXT_STREAM[:3]
    error = b'data: {"error": {"message": "the model is overloaded", "type": "server_error"}}\n\n'
    upstream.streams.append(pieces_of([*before, error, chunk({"content": "never sent"}), DONE], cut))
    received, request_id = await relay(start_gateway(), secret)
    assert received.startswith(b"".join(before))
    last = received[len(b"".join(before)) :]
    assert last.startswith(b"data: ") and last.endswith(b"\n\n") and last.count(b"\n\n") == 1  # one event, no [DONE]
    failure = orjson.loads(last[6:])["error"]
    assert "the model is overloaded" in failure["message"] and failure["type"]
    row = await kit.wait_for_row(seed, request_id)
    assert row["end_reason"] != "done" and row["output_tokens"] == estimate_tokens(len("Hello, "))


@pytest.mark.parametrize("cut", ["frame by frame", "one write"])
async def test_a_frame_over_max_frame_bytes_ends_the_stream_after_the_frames_before(start_gateway, seed, upstream, secret, cut):
    before = TEXT_STREAM[:3]
    huge = chunk({"content": "x" * FRAME_LIMIT})
    upstream.streams.append(pieces_of([*before, huge, chunk({}, "stop"), DONE], cut))
    received, request_id = await relay(start_gateway(), secret)
    assert received.startswith(b"".join(before)) and b"xxxx" not in received
    failure = orjson.loads(received[len(b"".join(before)) + 6 :])["error"]
    assert f"larger than {FRAME_LIMIT} bytes" in failure["message"]
    row = await kit.wait_for_row(seed, request_id)
    assert row["end_reason"] != "done"


async def test_crlf_frames_and_comments_pass_too(start_gateway, seed, upstream, secret):
    frames = [b": keep-alive\n\n", *[frame.replace(b"\n\n", b"\r\n\r\n") for frame in TEXT_STREAM]]
    upstream.streams.append(frames)
    received, request_id = await relay(start_gateway(), secret)
    assert received == b"".join(frames[:-1]) + DONE
    row = await kit.wait_for_row(seed, request_id)
    assert (row["output_tokens"], row["estimated"], row["end_reason"]) == (7, 0, "done")
