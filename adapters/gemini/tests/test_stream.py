"""Streams through every conversion direction: Gemini chunks → core events → Gemini
chunks / OpenAI chunks, and OpenAI chunks → core events → Gemini chunks."""

from __future__ import annotations

import json

import orjson
import pytest

from gateway_core import Frame, UpstreamError
from gateway_core.model import (
    InputReport,
    PartDelta,
    PartStart,
    PartStop,
    ReasoningPart,
    StopReason,
    StreamFinish,
    StreamStart,
    TextPart,
    ToolCallPart,
    Usage,
    UsageReport,
)
from gateway_gemini.channel import FrameDecoder
from gateway_gemini.stream import ChunkDecoder, ChunkEncoder
from gateway_gemini.stream_writers import ConvertedChunks, Framing, PassthroughChunks
from gateway_openai.chat_stream import ChunkDecoder as OpenAIDecoder
from gateway_openai.chat_stream import ChunkEncoder as OpenAIEncoder


def decode(chunks) -> list:
    decoder = ChunkDecoder()
    return [event for chunk in chunks for event in decoder.feed(chunk)]


def encode(events, *, thoughts: bool = False) -> list[dict]:
    encoder = ChunkEncoder("gemini-x", thoughts=thoughts)
    return [chunk for event in events for chunk in encoder.encode(event)] + [encoder.finish()]


def texts(chunks) -> str:
    return "".join(p.get("text", "") for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", []) if not p.get("thought"))


def test_text_stream_decodes_to_one_text_part(examples):
    events = decode(examples.sse("stream_text.sse"))
    assert events == [
        StreamStart(id="Vbt0aKfGHbqVz7IPlNq5uAk", model="gemini-2.5-flash"),
        PartStart(0, TextPart("")),
        PartDelta(0, "The"),
        InputReport(Usage(input_tokens=9)),  # the prompt counted on an early chunk
        PartDelta(0, " sky is blue because of Rayleigh"),
        PartDelta(0, " scattering."),
        PartStop(0),
        StreamFinish(StopReason.END_TURN),
        UsageReport(Usage(input_tokens=9, output_tokens=39, reasoning_tokens=29)),
    ]


def test_text_stream_round_trips_to_gemini_chunks(examples):
    chunks = encode(decode(examples.sse("stream_text.sse")))
    assert texts(chunks) == "The sky is blue because of Rayleigh scattering."
    last = chunks[-1]
    assert last["candidates"] == [{"finishReason": "STOP", "index": 0}]
    assert last["usageMetadata"] == {"promptTokenCount": 9, "candidatesTokenCount": 10, "totalTokenCount": 48, "thoughtsTokenCount": 29}
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    assert {c["responseId"] for c in chunks} == {"Vbt0aKfGHbqVz7IPlNq5uAk"}


def test_text_stream_to_openai_chunks(examples):
    encoder = OpenAIEncoder(id="chatcmpl-1", model="gemini-x", created=1, include_usage=True)
    chunks = [c for e in decode(examples.sse("stream_text.sse")) for c in encoder.encode(e)]
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "The sky is blue because of Rayleigh scattering."
    assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
    assert chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 29


def test_function_call_stream(examples):
    events = decode(examples.sse("stream_function_call.sse"))
    starts = [e.part for e in events if isinstance(e, PartStart)]
    assert isinstance(starts[0], ReasoningPart) and starts[1] == TextPart("")
    calls = starts[2:]
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_get_current_weather_0_fc-stream-1", "get_current_weather", ""),
        ("call_get_current_weather_1_fc-stream-1", "get_current_weather", ""),
    ]
    assert calls[0].provider_metadata == {"gemini_thought_signature": "CpICAcu98PD5"}
    assert [json.loads(e.text) for e in events if isinstance(e, PartDelta) and e.index >= 2] == [{"location": "Boston, MA"}, {"location": "Paris"}]
    assert [e for e in events if isinstance(e, StreamFinish)] == [StreamFinish(StopReason.TOOL_USE)]
    encoder = OpenAIEncoder(id="chatcmpl-1", model="gemini-x", created=1, include_usage=False)
    chunks = [c for e in events for c in encoder.encode(e)]
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "tool_calls"
    ids = [tc["id"] for c in chunks for tc in c["choices"][0]["delta"].get("tool_calls", []) if "id" in tc]
    assert ids == [c.id for c in calls]
    reasoning = "".join(c["choices"][0]["delta"].get("reasoning_content") or "" for c in chunks)
    assert reasoning == "**Planning the call**\n\nI need the weather."
    gemini = encode(events)
    parts = [p for c in gemini for p in c["candidates"][0].get("content", {}).get("parts", [])]
    assert parts[0] == {"text": "**Planning the call**\n\nI need the weather.", "thought": True}
    assert parts[2] == {
        "functionCall": {"id": calls[0].id, "name": "get_current_weather", "args": {"location": "Boston, MA"}},
        "thoughtSignature": "CpICAcu98PD5",
    }
    assert gemini[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize("name", ["chat_stream_text_usage.sse", "chat_stream_parallel_tools.sse", "chat_stream_reasoning.sse"])
def test_openai_streams_to_gemini_end_with_a_finish_reason(name, openai_examples):
    decoder = OpenAIDecoder()
    events = []
    for chunk in openai_examples.sse(name):
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    chunks = encode(events, thoughts=True)
    assert "finishReason" in chunks[-1]["candidates"][0]
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    calls = [p["functionCall"] for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", []) if "functionCall" in p]
    starts = [e.part for e in events if isinstance(e, PartStart) and isinstance(e.part, ToolCallPart)]
    assert [c["id"] for c in calls] == [p.id for p in starts]
    assert all(isinstance(c["args"], dict) and c["args"] for c in calls)
    reported = [e.usage for e in events if isinstance(e, UsageReport)]
    if reported:
        assert chunks[-1]["usageMetadata"]["promptTokenCount"] == reported[-1].input_tokens
    if name == "chat_stream_reasoning.sse":
        assert any(p.get("thought") for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", []))


def test_anthropic_stream_to_gemini(anthropic_examples):
    anthropic = pytest.importorskip("gateway_anthropic.messages_stream")
    files = anthropic_examples
    if not (files.root / "messages_stream_tool_use.sse").exists():
        pytest.skip("no anthropic stream example")
    decoder = anthropic.EventDecoder()
    events = []
    for frame in files.raw("messages_stream_tool_use.sse").split(b"\n\n"):
        data = [line[6:] for line in frame.split(b"\n") if line.startswith(b"data: ")]
        if data:
            events.extend(decoder.feed(orjson.loads(data[0])))
    chunks = encode(events)
    calls = [p["functionCall"] for c in chunks for p in c["candidates"][0].get("content", {}).get("parts", []) if "functionCall" in p]
    assert calls and calls[0]["id"].startswith("toolu_") and isinstance(calls[0]["args"], dict)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert chunks[-1]["usageMetadata"]["promptTokenCount"] > 0


def test_blocked_prompt_finishes_the_stream():
    events = decode([{"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 3}, "responseId": "b"}])
    assert events[-2:] == [StreamFinish(StopReason.CONTENT_FILTER), UsageReport(Usage(input_tokens=3))]


def test_error_chunk_raises():
    with pytest.raises(UpstreamError) as caught:
        decode([{"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}])
    assert "Internal error encountered." in caught.value.message


def test_usage_after_the_finish_is_reported_again():
    events = decode([
        {"candidates": [{"content": {"parts": [{"text": "a"}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 2}},
        {"usageMetadata": {"promptTokenCount": 2, "candidatesTokenCount": 1}},
    ])  # fmt: skip
    assert [e for e in events if isinstance(e, UsageReport)] == [UsageReport(Usage(2, 0)), UsageReport(Usage(2, 1))]


def test_repeated_usage_is_read_as_the_first_and_a_count_of_another_type_again():
    text = {"candidates": [{"content": {"parts": [{"text": "a"}]}}]}
    last = {"candidates": [{"content": {"parts": [{"text": "b"}]}, "finishReason": "STOP"}]}
    repeated = decode([{**text, "usageMetadata": {"promptTokenCount": 4}}] * 3 + [{**last, "usageMetadata": {"promptTokenCount": 4}}])
    assert [e for e in repeated if isinstance(e, (InputReport, UsageReport))] == [InputReport(Usage(4)), UsageReport(Usage(4))]
    # equal to the last as Python compares (1 == True), where that one was no count: read again
    retyped = decode([{**text, "usageMetadata": {"promptTokenCount": True}}, {**last, "usageMetadata": {"promptTokenCount": 1}}])
    assert [e for e in retyped if isinstance(e, UsageReport)] == [UsageReport(Usage(1))]
    float_counts = decode([{**text, "usageMetadata": {"promptTokenCount": 5}}, {**last, "usageMetadata": {"promptTokenCount": 5.0, "candidatesTokenCount": 2.0}}])
    assert [e for e in float_counts if isinstance(e, UsageReport)] == [UsageReport(Usage(5, 2))]


def test_only_candidate_0_is_read_wherever_it_is_in_the_list():
    other = {"index": 1, "content": {"parts": [{"text": "other"}]}}
    events = decode([
        {"candidates": [other, {"content": {"parts": [{"text": "first"}]}}]},  # no index: 0
        {"candidates": [{"index": 0, "content": {"parts": [{"text": " second"}]}, "finishReason": "STOP"}, other]},
    ])  # fmt: skip
    assert [e.text for e in events if isinstance(e, PartDelta)] == ["first", " second"]


def test_frame_decoder_reads_crlf_frames_and_rejects_junk(examples):
    decoder = FrameDecoder()
    frame = decoder.decode(examples.raw("stream_text.sse").split(b"\r\n\r\n")[0] + b"\r\n\r\n")
    assert isinstance(frame.events[0], StreamStart)
    with pytest.raises(UpstreamError):
        decoder.decode(b"data: {oops\r\n\r\n")


def test_writers_frame_sse_and_json_arrays(examples):
    raw_frames = [f + b"\r\n\r\n" for f in examples.raw("stream_text.sse").split(b"\r\n\r\n") if f]
    sse = PassthroughChunks(Framing(sse=True))
    assert b"".join(sse.write(Frame(f)) for f in raw_frames) + sse.end() == examples.raw("stream_text.sse")
    array = PassthroughChunks(Framing(sse=False))
    body = b"".join(array.write(Frame(f)) for f in raw_frames) + array.end()
    assert orjson.loads(body) == examples.sse("stream_text.sse")
    converted = ConvertedChunks("m", Framing(sse=False))
    decoder = ChunkDecoder()
    body = b"".join(converted.write(Frame(b"", tuple(decoder.feed(c)))) for c in examples.sse("stream_text.sse")) + converted.end()
    chunks = orjson.loads(body)
    assert texts(chunks) == "The sky is blue because of Rayleigh scattering." and chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert PassthroughChunks(Framing(sse=False)).end() == b"[]"
