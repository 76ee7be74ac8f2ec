"""The Anthropic client protocol's pure parts: keys, claims, parsing, model pages and stream writers."""

from __future__ import annotations

import orjson
import pytest
from anthropic.types import ModelInfo as SDKModelInfo

from gateway_core import BillingHints, Frame, ModelInfo, endpoints
from gateway_core.errors import AuthenticationError, GatewayError, InvalidRequestError
from gateway_anthropic.channel import FrameDecoder
from gateway_anthropic.protocol import AnthropicProtocol, RouteSpec, is_anthropic_request, models_page
from gateway_anthropic.stream_writers import ConvertedEvents, PassthroughEvents

PROTOCOL = AnthropicProtocol()
MESSAGES = RouteSpec("/v1/messages", endpoints.CHAT)
COUNT = RouteSpec("/v1/messages/count_tokens", endpoints.COUNT_TOKENS)


@pytest.mark.parametrize(
    ("headers", "key"),
    [
        ({"x-api-key": "sk-one"}, "sk-one"),
        ({"authorization": "Bearer sk-two"}, "sk-two"),
        ({"x-api-key": "sk-one", "authorization": "Bearer sk-two"}, "sk-one"),
        ({"x-api-key": "", "authorization": "Bearer sk-two"}, "sk-two"),
    ],
)
def test_keys_come_from_x_api_key_then_bearer(headers, key) -> None:
    assert PROTOCOL.read_key(headers, {}) == key


@pytest.mark.parametrize(
    "headers",
    [{}, {"x-api-key": "sk-with space"}, {"x-api-key": "sk-line\nbreak"}, {"authorization": "Bearer sk a"}, {"authorization": "Basic abc"}],
)
def test_missing_and_malformed_keys_are_refused_without_echoing_them(headers) -> None:
    with pytest.raises(AuthenticationError) as caught:
        PROTOCOL.read_key(headers, {})
    assert not any(secret in caught.value.message for secret in ("sk-with", "sk-line", "sk a", "abc"))


def test_claims_and_the_models_route_matcher() -> None:
    assert PROTOCOL.claim("/v1/v1/messages", {}, {}) == 2
    assert PROTOCOL.claim("/v2/anything", {"anthropic-version": "2023-06-01"}, {}) == 2
    assert PROTOCOL.claim("/v2/anything", {"x-api-key": "k"}, {}) == 2
    assert PROTOCOL.claim("/v1/v1/chat/completions", {"authorization": "Bearer k"}, {}) == 0
    assert is_anthropic_request({"anthropic-version": "2023-06-01"}, {}) and not is_anthropic_request({"authorization": "x"}, {})


def test_parse_caps_billing_by_max_tokens() -> None:
    body = b'{"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "x"}]}'
    assert PROTOCOL.parse(MESSAGES, body, {}, {}, {}).billing == BillingHints(max_output_tokens=64)
    for value in (b"0", b'"64"', b"true"):
        body = b'{"model": "m", "max_tokens": ' + value + b', "messages": [{"role": "user", "content": "x"}]}'
        assert PROTOCOL.parse(MESSAGES, body, {}, {}, {}).billing == BillingHints()


def test_parse_keeps_versions_and_beta_query() -> None:
    headers = {"anthropic-version": "2023-06-01", "anthropic-beta": "claude-code-20250219,fine-grained-tool-streaming-2025-05-14"}
    body = orjson.dumps({"model": "claude-x", "max_tokens": 5, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    call = PROTOCOL.parse(MESSAGES, body, headers, {"beta": "true"}, {})
    assert (call.wire, call.model, call.stream) == ("anthropic.messages", "claude-x", True)
    assert call.options == {"anthropic_version": "2023-06-01", "anthropic_beta": headers["anthropic-beta"], "beta": "true"}
    count = PROTOCOL.parse(COUNT, b'{"model": "m", "messages": [{"role": "user", "content": "x"}]}', {}, {}, {})
    assert (count.endpoint, count.wire, count.stream) == (endpoints.COUNT_TOKENS, "anthropic.count_tokens", False)


@pytest.mark.parametrize("body", [b"", b"{nope", b"[]", b'{"messages": [{"role": "user", "content": "x"}]}', b'{"model": "m"}', b'{"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": "yes"}'])
def test_parse_refuses_malformed_bodies(body) -> None:
    with pytest.raises(InvalidRequestError):
        PROTOCOL.parse(MESSAGES, body, {}, {}, {})


def test_model_pages() -> None:
    models = [ModelInfo(id=f"m{i}", created=1_700_000_000 + i) for i in range(5)]
    page = models_page(models, {})
    assert [m["id"] for m in page["data"]] == ["m0", "m1", "m2", "m3", "m4"] and page["has_more"] is False
    SDKModelInfo.model_validate(page["data"][0])
    assert page["data"][0]["created_at"] == "2023-11-14T22:13:20Z"
    first = models_page(models, {"limit": "2"})
    assert (first["first_id"], first["last_id"], first["has_more"]) == ("m0", "m1", True)
    second = models_page(models, {"limit": "2", "after_id": "m1"})
    assert [m["id"] for m in second["data"]] == ["m2", "m3"] and second["has_more"] is True
    before = models_page(models, {"limit": "2", "before_id": "m3"})
    assert [m["id"] for m in before["data"]] == ["m1", "m2"] and before["has_more"] is True
    assert models_page([], {}) == {"data": [], "has_more": False, "first_id": None, "last_id": None}
    for bad in ({"limit": "0"}, {"limit": "many"}, {"limit": "1001"}):
        with pytest.raises(InvalidRequestError):
            models_page(models, bad)


def frames_of(examples, name: str) -> list[Frame]:
    decoder = FrameDecoder()
    return [decoder.decode(raw) for raw in examples.frames(name)]


def test_passthrough_forwards_bytes_and_holds_message_stop(examples) -> None:
    writer = PassthroughEvents()
    frames = frames_of(examples, "messages_stream_tool_use.sse")
    written = b"".join(writer.write(frame) for frame in frames)
    raw = examples.raw("messages_stream_tool_use.sse")
    assert raw.startswith(written) and not written.endswith(b'{"type": "message_stop"}\n\n')
    assert written + writer.end() == raw


def test_passthrough_stops_open_blocks_before_an_error(examples) -> None:
    writer = PassthroughEvents()
    decoder = FrameDecoder()
    out = b""
    with pytest.raises(GatewayError) as caught:
        for raw in examples.frames("messages_stream_error.sse"):
            out += writer.write(decoder.decode(raw))
    tail = writer.fail(caught.value, "req_1")
    assert tail.startswith(b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n')
    assert b"event: error" in tail and b"overloaded_error" in tail


def test_passthrough_stops_a_block_the_upstream_never_stopped() -> None:
    decoder, writer = FrameDecoder(), PassthroughEvents()
    frames = [
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1,"output_tokens":1}}}\n\n',
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}\n\n',
    ]
    out = [writer.write(decoder.decode(raw)) for raw in frames]
    assert out[3] == b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' + frames[3]


def test_converted_writer_frames_carry_event_and_data_lines() -> None:
    from gateway_core.model import PartDelta, PartStart, StreamFinish, StreamStart, TextPart, Usage, UsageReport

    writer = ConvertedEvents("claude-client")
    body = writer.write(Frame(b"", (StreamStart("chatcmpl-9", "gpt"), PartStart(0, TextPart("")), PartDelta(0, "Hi"))))
    body += writer.write(Frame(b"", (StreamFinish(None), UsageReport(Usage(input_tokens=2, output_tokens=1)))))
    body += writer.end()
    frames = [f for f in body.split(b"\n\n") if f]
    assert all(f.startswith(b"event: ") and b"\ndata: {" in f for f in frames)
    assert frames[0].startswith(b"event: message_start") and b'"id":"msg_chatcmpl-9"' in frames[0]
    assert frames[-1] == b'event: message_stop\ndata: {"type":"message_stop"}'
    assert writer.keepalive() == b'event: ping\ndata: {"type":"ping"}\n\n'


def test_rate_limit_headers_in_anthropic_names() -> None:
    from gateway_core.ratelimit.state import Allowance, RateLimitState
    from gateway_anthropic.protocol import rate_limit_headers

    state = RateLimitState(checked_at=1_700_000_000.0, requests=Allowance(60, 59, 1.0), tokens=Allowance(1000, 0, 30.4))
    assert rate_limit_headers(state) == [
        (b"anthropic-ratelimit-requests-limit", b"60"),
        (b"anthropic-ratelimit-requests-remaining", b"59"),
        (b"anthropic-ratelimit-requests-reset", b"2023-11-14T22:13:21Z"),
        (b"anthropic-ratelimit-tokens-limit", b"1000"),
        (b"anthropic-ratelimit-tokens-remaining", b"0"),
        (b"anthropic-ratelimit-tokens-reset", b"2023-11-14T22:13:50Z"),
    ]
    assert rate_limit_headers(RateLimitState(checked_at=0.0)) == []
