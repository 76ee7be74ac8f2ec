"""Messages streams: decoding, encoding, the round trip, and conversions to and from OpenAI chunks."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from anthropic.lib.streaming._messages import accumulate_event

from gateway_core.errors import UpstreamUnavailableError
from gateway_core.model import (
    InputReport,
    PartDelta,
    PartStart,
    PartStop,
    ReasoningPart,
    StopReason,
    StreamEvent,
    StreamFinish,
    StreamStart,
    TextPart,
    ToolCallPart,
    Usage,
    UsageReport,
)
from gateway_core.testing import Examples
from gateway_anthropic.messages_stream import EventDecoder, EventEncoder

STREAMS = [n for n in Examples.beside(__file__).names("messages_stream_*.sse") if "error" not in n]
Events = list[tuple[str, dict[str, Any]]]


def decode(events: Events) -> list[StreamEvent]:
    decoder = EventDecoder()
    return [core for _, payload in events for core in decoder.feed(payload)]


def encode(core: list[StreamEvent]) -> Events:
    encoder = EventEncoder("msg_gw1", "client-model")
    out = [event for item in core for event in encoder.encode(item)]
    return out + encoder.close()


def check_sequence(events: Events) -> None:
    """Anthropic's event grammar, as strict clients rely on it."""
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    assert names.count("message_delta") == 1 and names.index("message_delta") == len(names) - 2
    open_index, next_index = None, 0
    for name, payload in events:
        assert payload["type"] == name
        if name == "content_block_start":
            assert open_index is None, "one block at a time"
            assert payload["index"] == next_index, "indexes count from 0 in order"
            open_index, next_index = payload["index"], next_index + 1
        elif name == "content_block_delta":
            assert payload["index"] == open_index
        elif name == "content_block_stop":
            assert payload["index"] == open_index
            open_index = None
        elif name == "message_delta":
            assert open_index is None, "every started block is stopped"
            assert payload["delta"]["stop_reason"] and "output_tokens" in payload["usage"]
    if "content_block_start" in names:
        assert names[names.index("content_block_start") + 1] == "ping"


def final_message(events: Events) -> dict[str, Any]:
    """The message the official SDK's stream helper assembles from the events."""
    snapshot, buffers = None, {}
    for name, payload in events:
        if name in ("ping", "error"):
            continue
        snapshot = accumulate_event(event=payload, current_snapshot=snapshot, json_bufs=buffers)
    assert snapshot is not None
    return snapshot.to_dict()


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_frame_names_its_event_and_carries_that_type(examples, name: str) -> None:
    for event, payload in examples.events(name):
        assert event is not None and payload["type"] == event


@pytest.mark.parametrize("name", STREAMS)
def test_decode_then_encode_gives_the_same_message(examples, name: str) -> None:
    original = examples.events(name)
    again = encode(decode(original))
    check_sequence(again)
    before, after = final_message(original), final_message(again)
    assert after["content"] == before["content"]
    assert after["stop_reason"] == before["stop_reason"]
    assert after["usage"]["output_tokens"] == before["usage"]["output_tokens"]
    assert after["usage"].get("input_tokens") == before["usage"].get("input_tokens")
    assert after["usage"].get("cache_read_input_tokens", 0) == before["usage"].get("cache_read_input_tokens", 0)


def test_decoded_text_stream(examples) -> None:
    events = decode(examples.events("messages_stream_text.sse"))
    assert events == [
        StreamStart(id="msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY", model="claude-sonnet-4-5-20250929"),
        InputReport(Usage(input_tokens=25 + 1024, cached_input_tokens=1024)),  # message_start counts the input
        PartStart(0, TextPart("")),
        PartDelta(0, "Hello"),
        PartDelta(0, "! How can I help?"),
        PartStop(0),
        StreamFinish(StopReason.END_TURN),
        UsageReport(Usage(input_tokens=25 + 1024, output_tokens=15, cached_input_tokens=1024)),
    ]


def test_decoded_tool_and_thinking_streams(examples) -> None:
    events = decode(examples.events("messages_stream_tool_use.sse"))
    assert PartStart(1, ToolCallPart("toolu_01T1x1fJ34qAmk2tNTrN7Up6", "get_weather")) in events
    arguments = "".join(e.text for e in events if isinstance(e, PartDelta) and e.index == 1)
    assert orjson.loads(arguments) == {"location": "San Francisco, CA", "unit": "fahrenheit"}
    assert StreamFinish(StopReason.TOOL_USE) in events
    thinking = decode(examples.events("messages_stream_thinking.sse"))
    assert thinking[2] == PartStart(0, ReasoningPart(""))
    assert PartStop(0, {"anthropic_signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}) in thinking


def test_an_error_event_raises_after_what_came_before(examples) -> None:
    decoder = EventDecoder()
    seen: list[StreamEvent] = []
    with pytest.raises(UpstreamUnavailableError) as caught:
        for _, payload in examples.events("messages_stream_error.sse"):
            seen.extend(decoder.feed(payload, b"raw"))
    assert PartDelta(0, "Partial") in seen
    assert "Overloaded" in caught.value.message and not caught.value.retryable


def test_decoder_closes_blocks_an_upstream_left_open() -> None:
    decoder = EventDecoder()
    decoder.feed({"type": "message_start", "message": {"id": "m", "model": "x", "usage": {"input_tokens": 3}}})
    decoder.feed({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "Hi"}})
    # no message_delta: message_start's output count is a placeholder, so no usage is
    # reported (the input came as an InputReport; the output is counted as delivered)
    assert decoder.feed({"type": "message_stop"}) == [PartStop(0), StreamFinish(None)]
    assert decoder.feed({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "late"}}) == []


def test_encoder_serializes_interleaved_parts_and_keeps_signatures() -> None:
    core = [
        StreamStart("chatcmpl-1", "gpt"),
        PartStart(0, ReasoningPart("")),
        PartDelta(0, "thinking"),
        PartStart(1, TextPart("")),
        PartDelta(1, "Hello"),
        PartStart(2, ToolCallPart("call_1", "get_weather")),
        PartDelta(2, '{"city": "Paris"}'),
        PartDelta(1, " again"),  # the text resumes after the tool call began
        PartStop(0, {"anthropic_signature": "sig"}),
        PartStop(1),
        PartStop(2),
        StreamFinish(StopReason.END_TURN),
        UsageReport(Usage(input_tokens=10, output_tokens=5, cached_input_tokens=4)),
    ]
    events = encode(core)
    check_sequence(events)
    message = final_message(events)
    assert [b["type"] for b in message["content"]] == ["thinking", "text", "tool_use", "text"]
    assert message["content"][2]["input"] == {"city": "Paris"}
    assert message["content"][1]["text"] == "Hello" and message["content"][3]["text"] == " again"
    assert message["stop_reason"] == "tool_use"
    assert events[-2][1]["usage"] == {"input_tokens": 6, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 4}


def test_signature_reaches_the_thinking_block() -> None:
    events = encode([PartStart(0, ReasoningPart("")), PartDelta(0, "hmm"), PartStop(0, {"anthropic_signature": "sig"}), StreamFinish(StopReason.END_TURN)])
    check_sequence(events)
    assert final_message(events)["content"] == [{"type": "thinking", "thinking": "hmm", "signature": "sig"}]


def test_usage_after_finish_and_a_stream_without_usage() -> None:
    encoder = EventEncoder("msg_1", "m")
    out = encoder.encode(PartStart(0, TextPart("")))
    out += encoder.encode(PartDelta(0, "x"))
    out += encoder.encode(StreamFinish(StopReason.MAX_TOKENS))
    assert [name for name, _ in out][-1] == "content_block_stop"  # message_delta waits for the usage
    out += encoder.encode(UsageReport(Usage(input_tokens=1, output_tokens=2)))
    assert out[-1][1]["delta"]["stop_reason"] == "max_tokens" and out[-1][1]["usage"]["output_tokens"] == 2
    check_sequence(out + encoder.close())
    bare = EventEncoder("msg_2", "m")
    events = bare.encode(StreamFinish(StopReason.END_TURN)) + bare.close()
    check_sequence(events)
    assert events[-2][1]["usage"] == {"output_tokens": 0}


def test_abort_stops_the_open_block() -> None:
    encoder = EventEncoder("msg_1", "m")
    encoder.encode(PartStart(0, TextPart("")))
    encoder.encode(PartDelta(0, "half"))
    assert encoder.abort() == [("content_block_stop", {"type": "content_block_stop", "index": 0})]
    assert encoder.abort() == []


@pytest.mark.parametrize("name", ["chat_stream_parallel_tools.sse", "chat_stream_reasoning.sse", "chat_stream_text_usage.sse"])
def test_openai_streams_as_anthropic_events(openai_examples, name: str) -> None:
    chat_stream = pytest.importorskip("gateway_openai.chat_stream")
    decoder = chat_stream.ChunkDecoder()
    core = [event for chunk in openai_examples.sse(name) for event in decoder.feed(chunk)] + decoder.close()
    events = encode(core)
    check_sequence(events)
    message = final_message(events)
    kinds = [b["type"] for b in message["content"]]
    if "parallel_tools" in name:
        assert kinds == ["tool_use", "tool_use"] and message["stop_reason"] == "tool_use"
        assert all(block["id"].startswith("call_") and block["input"] for block in message["content"])
    elif "reasoning" in name:
        assert kinds[0] == "thinking" and "text" in kinds
    else:
        assert kinds == ["text"] and message["usage"]["output_tokens"] > 0


@pytest.mark.parametrize("name", STREAMS)
def test_anthropic_streams_as_openai_chunks(examples, name: str) -> None:
    chat_stream = pytest.importorskip("gateway_openai.chat_stream")
    encoder = chat_stream.ChunkEncoder("chatcmpl-gw", "gpt-client", 1754480000, include_usage=True)
    chunks = [chunk for event in decode(examples.events(name)) for chunk in encoder.encode(event)]
    content = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks if c["choices"])
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for call in (chunk["choices"][0]["delta"].get("tool_calls") or []) if chunk["choices"] else []:
            entry = calls.setdefault(call["index"], {"id": "", "arguments": ""})
            entry["id"] = call.get("id") or entry["id"]
            entry["arguments"] += call.get("function", {}).get("arguments") or ""
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    usage = [c["usage"] for c in chunks if c.get("usage")]
    assert len(finish) == 1 and len(usage) == 1
    if "tool_use" in name:
        assert finish == ["tool_calls"] and content.startswith("Okay")
        assert [c["id"] for c in calls.values()] == ["toolu_01T1x1fJ34qAmk2tNTrN7Up6", "toolu_02U2y2gK45rBnl3uOuSo8Vq7"]
        assert orjson.loads(calls[0]["arguments"])["unit"] == "fahrenheit"
    elif "thinking" in name:
        assert reasoning.startswith("I need to find") and content.endswith("**21**.")
    else:
        assert content == "Hello! How can I help?" and usage[0]["prompt_tokens_details"]["cached_tokens"] == 1024
