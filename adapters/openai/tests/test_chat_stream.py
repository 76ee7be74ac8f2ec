"""chat.completion.chunk streams: decoding, encoding, and the round trip between them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletionChunk

from gateway_core.errors import UpstreamError
from gateway_core.sse import frame_fields
from gateway_core.model import (
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
from gateway_openai.chat_stream import ChunkDecoder, ChunkEncoder, FrameDecoder

STREAMS = Examples.beside(__file__).names("chat_stream_*.sse")


def decode(chunks: list[dict[str, Any]]) -> list[StreamEvent]:
    decoder = ChunkDecoder()
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.close()


def encode(events: list[StreamEvent], include_usage: bool = True) -> list[dict[str, Any]]:
    encoder = ChunkEncoder("chatcmpl-gw1", "client-model", 1754480000, include_usage)
    return [chunk for event in events for chunk in encoder.encode(event)]


def summary(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a client makes of a stream: the texts, the tool calls, the finish and the usage."""
    out: dict[str, Any] = {"content": "", "reasoning": "", "refusal": "", "tools": {}, "finish": None, "usage": None}
    for chunk in chunks:
        if chunk.get("usage"):
            usage = chunk["usage"]
            out["usage"] = (
                usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"],
                (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0),
                (usage.get("completion_tokens_details") or {}).get("reasoning_tokens", 0),
            )
        for choice in chunk["choices"]:
            delta = choice["delta"]
            out["content"] += delta.get("content") or ""
            out["reasoning"] += delta.get("reasoning_content") or ""
            out["refusal"] += delta.get("refusal") or ""
            for call in delta.get("tool_calls") or ():
                tool = out["tools"].setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                tool["id"] = call.get("id") or tool["id"]
                tool["name"] += (call.get("function") or {}).get("name") or ""
                tool["arguments"] += (call.get("function") or {}).get("arguments") or ""
            out["finish"] = choice["finish_reason"] or out["finish"]
    return out


@pytest.mark.parametrize("name", STREAMS)
def test_every_recorded_stream_ends_with_done(examples, name: str) -> None:
    assert frame_fields(examples.frames(name)[-1])[1] == b"[DONE]"


@pytest.mark.parametrize("name", STREAMS)
def test_round_trip(examples, name: str) -> None:
    original = examples.sse(name)
    chunks = encode(decode(original))
    assert summary(chunks) == summary(original)
    for chunk in chunks:
        ChatCompletionChunk.model_validate(chunk)
    assert chunks[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert all(c["usage"] is None for c in chunks[:-1])
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks[-2]["choices"][0]["delta"] == {} and chunks[-2]["choices"][0]["finish_reason"]


@pytest.mark.parametrize("name", STREAMS)
def test_sdk_accumulates_what_we_send(examples, name: str) -> None:
    """The SDK's own stream accumulator builds the same completion from our chunks as from the original."""

    def final(chunks: list[dict[str, Any]]) -> Any:
        state = ChatCompletionStreamState()
        for chunk in chunks:
            list(state.handle_chunk(ChatCompletionChunk.model_validate(chunk)))
        return state.get_final_completion()

    original = final(examples.sse(name))
    ours = final(encode(decode(examples.sse(name))))
    # the first chunk always carries content "" (OpenAI sends null when the answer is only tool calls)
    assert ours.choices[0].message.content == (original.choices[0].message.content or "")
    assert ours.choices[0].finish_reason == original.choices[0].finish_reason
    calls = [(c.id, c.function.name, c.function.arguments) for c in ours.choices[0].message.tool_calls or ()]
    expected = [(c.id, c.function.name, c.function.arguments) for c in original.choices[0].message.tool_calls or ()]
    assert calls == expected
    assert ours.usage.total_tokens == original.usage.total_tokens


def test_decode_text_stream(examples) -> None:
    events = decode(examples.sse("chat_stream_text_usage.sse"))
    assert events[0] == StreamStart("chatcmpl-C1xD7kLp3qRs9tUv1wXy5zAb2cDe4", "gpt-4o-mini-2024-07-18", 1754472701)
    assert events[1] == PartStart(0, TextPart(""))
    assert "".join(e.text for e in events if isinstance(e, PartDelta)) == "Hello! How can I assist you today?"
    assert events[-3:] == [PartStop(0), StreamFinish(StopReason.END_TURN), UsageReport(Usage(9, 10))]


def test_decode_parallel_tool_calls(examples) -> None:
    events = decode(examples.sse("chat_stream_parallel_tools.sse"))
    starts = [e for e in events if isinstance(e, PartStart)]
    assert starts == [
        PartStart(0, ToolCallPart("call_Vb6Qm0D3kT2pXh7uYd1Ls9aZ", "get_weather")),
        PartStart(1, ToolCallPart("call_R2nW8cJ5eK4gF1tP0oXy7Hqb", "get_weather")),
    ]
    arguments = ["".join(e.text for e in events if isinstance(e, PartDelta) and e.index == i) for i in (0, 1)]
    assert arguments == ['{"location": "Paris, France", "unit": "celsius"}', '{"location": "Tokyo, Japan", "unit": "celsius"}']
    assert events[-4:] == [
        PartStop(0), PartStop(1), StreamFinish(StopReason.TOOL_USE), UsageReport(Usage(118, 58, cached_input_tokens=64)),
    ]


def test_decode_reasoning_stream(examples) -> None:
    events = decode(examples.sse("chat_stream_reasoning.sse"))
    assert [e for e in events if isinstance(e, PartStart)] == [PartStart(0, ReasoningPart("")), PartStart(1, TextPart(""))]
    assert "".join(e.text for e in events if isinstance(e, PartDelta) and e.index == 1) == "9.11 is smaller."
    assert events[-4:] == [
        PartStop(0), PartStop(1), StreamFinish(StopReason.END_TURN),
        UsageReport(Usage(1542, 187, cached_input_tokens=1536, reasoning_tokens=151)),
    ]


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **fields: Any) -> dict[str, Any]:
    body = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {**body, **fields}


def test_decoder_tolerance() -> None:
    decoder = ChunkDecoder()
    events = decoder.feed(chunk({"content": ""}, usage=None))  # no role, empty content, usage null
    assert events == [StreamStart("c1", "m", 1)]
    assert decoder.feed(chunk(None)) == []  # no choices, no usage
    assert decoder.feed("not a dict") == []  # type: ignore[arg-type]
    # a tool call without an index or id (some compatible servers), arguments in one piece
    events = decoder.feed(chunk({"tool_calls": [{"function": {"name": "f", "arguments": '{"a":1}'}}]}))
    assert events == [PartStart(0, ToolCallPart("call_c1_0", "f")), PartDelta(0, '{"a":1}')]
    events = decoder.feed(chunk({"content": "late text", "tool_calls": [{"index": 0, "function": {"arguments": ""}}]}))
    assert events == [PartStart(1, TextPart("")), PartDelta(1, "late text")]
    events = decoder.feed(chunk({}, "tool_calls", usage={"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}))
    assert events == [PartStop(0), PartStop(1), StreamFinish(StopReason.TOOL_USE), UsageReport(Usage(1, 2))]
    assert decoder.feed(chunk({"content": "after the end"})) == []
    assert decoder.close() == []


def test_decoder_refusal_and_legacy_function_call() -> None:
    decoder = ChunkDecoder()
    events = decoder.feed(chunk({"role": "assistant", "refusal": "No."}))
    assert events[1:] == [PartStart(0, TextPart("", {"openai_refusal": True})), PartDelta(0, "No.")]
    events = decoder.feed(chunk({"function_call": {"name": "f", "arguments": "{}"}}))
    assert events == [PartStart(1, ToolCallPart("f", "f", provider_metadata={"openai_function_call": True})), PartDelta(1, "{}")]


def test_decoder_close_without_finish() -> None:
    decoder = ChunkDecoder()
    decoder.feed(chunk({"content": "cut"}))
    assert decoder.close() == [PartStop(0), StreamFinish(None)]
    assert ChunkDecoder().close() == []


def test_decoder_error_chunk() -> None:
    with pytest.raises(UpstreamError, match="server overloaded"):
        ChunkDecoder().feed({"error": {"message": "server overloaded", "type": "server_error"}})


def test_encoder_without_usage() -> None:
    events = [
        StreamStart("up", "up-model", 5), PartStart(0, TextPart("")), PartDelta(0, "Hi"), PartStop(0),
        StreamFinish(StopReason.MAX_TOKENS), UsageReport(Usage(1, 1)),
    ]
    chunks = encode(events, include_usage=False)
    assert [c["choices"][0]["delta"] for c in chunks] == [{"role": "assistant", "content": ""}, {"content": "Hi"}, {}]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert all("usage" not in c for c in chunks)
    assert {(c["id"], c["model"], c["created"], c["object"]) for c in chunks} == {
        ("chatcmpl-gw1", "client-model", 1754480000, "chat.completion.chunk")
    }


def test_encoder_foreign_events() -> None:
    """Events another channel produced: reasoning with a signature, text before and after
    a tool call, a part that starts with text, tool use reported as END_TURN, usage
    reported before the finish, a delta for an unknown index."""
    events = [
        StreamStart("msg_1", "claude", None),
        UsageReport(Usage(10, 0)),
        PartStart(0, ReasoningPart("")), PartDelta(0, "Think."), PartStop(0, {"signature": "s"}),
        PartStart(1, TextPart("Sure, ")), PartDelta(1, "calling."), PartDelta(1, ""), PartStop(1),
        PartStart(2, ToolCallPart("toolu_1", "lookup")), PartDelta(2, '{"q":'), PartDelta(2, ' "x"}'), PartStop(2),
        PartStart(3, ToolCallPart("toolu_2", "other", "{}")), PartStop(3),
        PartDelta(9, "stray"),
        StreamFinish(StopReason.END_TURN),
        UsageReport(Usage(10, 7)),
    ]
    chunks = encode(events)
    for c in chunks:
        ChatCompletionChunk.model_validate(c)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"reasoning_content": "Think."},
        {"content": "Sure, "},
        {"content": "calling."},
        {"tool_calls": [{"index": 0, "id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": ""}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"q":'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": ' "x"}'}}]},
        {"tool_calls": [{"index": 1, "id": "toolu_2", "type": "function", "function": {"name": "other", "arguments": "{}"}}]},
        {"content": "stray"},
        {},
    ]
    finish = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert [c["choices"][0]["finish_reason"] for c in finish] == ["tool_calls"]
    usage_chunks = [c for c in chunks if c["usage"]]
    assert [c["usage"]["completion_tokens"] for c in usage_chunks] == [0, 7]  # held one, then the final one
    assert chunks.index(finish[0]) < chunks.index(usage_chunks[0])


def test_encoder_ignores_a_second_finish() -> None:
    encoder = ChunkEncoder("id", "m", 1, include_usage=False)
    assert len(encoder.encode(StreamFinish(StopReason.END_TURN))) == 2  # the role chunk, then the finish
    assert encoder.encode(StreamFinish(StopReason.END_TURN)) == []


def test_custom_tool_call_stream_round_trip() -> None:
    chunks = [
        chunk({"role": "assistant", "tool_calls": [{"index": 0, "id": "c1", "type": "custom", "custom": {"name": "shell", "input": ""}}]}),
        chunk({"tool_calls": [{"index": 0, "custom": {"input": "ls "}}]}),
        chunk({"tool_calls": [{"index": 0, "custom": {"input": "-la"}}]}),
        chunk({}, "tool_calls"),
    ]
    events = decode(chunks)
    assert events[1] == PartStart(0, ToolCallPart("c1", "shell", provider_metadata={"openai_tool_type": "custom"}))
    assert "".join(e.text for e in events if isinstance(e, PartDelta)) == "ls -la"
    deltas = [c["choices"][0]["delta"] for c in encode(events, include_usage=False)]
    assert deltas[1:] == [
        {"tool_calls": [{"index": 0, "id": "c1", "type": "custom", "custom": {"name": "shell", "input": ""}}]},
        {"tool_calls": [{"index": 0, "custom": {"input": "ls "}}]},
        {"tool_calls": [{"index": 0, "custom": {"input": "-la"}}]},
        {},
    ]


def frame_events(frames: list[bytes]) -> list[StreamEvent]:
    decoder = FrameDecoder()
    return [event for frame in frames for event in decoder.decode(frame).events]


@pytest.mark.parametrize("name", STREAMS)
def test_the_frame_decoder_gives_the_chunk_decoders_events(examples, name: str) -> None:
    """Frames read on the short path (one content delta) and the long one give the
    events of the chunks fed whole, in order; CRLF frames the same."""
    frames = examples.frames(name)
    expected = decode(examples.sse(name))
    assert frame_events(frames) == expected
    assert frame_events([frame.replace(b"\n\n", b"\r\n\r\n") for frame in frames]) == expected


def test_the_short_path_is_taken_only_for_a_plain_content_delta() -> None:
    def frame(payload: dict[str, Any]) -> bytes:
        return b"data: " + orjson.dumps(payload) + b"\n\n"

    for other in (
        chunk({"content": "x", "refusal": None}),  # another field beside the content
        chunk({"content": "x"}, "stop"),  # the finish
        chunk({"content": "x"}, usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        {**chunk({"content": "x"}), "choices": [{"index": 1, "delta": {"content": "x"}}]},  # another choice
        chunk({"reasoning_content": "x"}),
    ):
        fed, decoded = ChunkDecoder(), FrameDecoder()
        for first in (chunk({"role": "assistant", "content": ""}), chunk({"content": "a"})):
            fed.feed(first)
            decoded.decode(frame(first))
        assert list(decoded.decode(frame(other)).events) == fed.feed(other), other
    decoder = FrameDecoder()
    assert decoder.decode(frame(chunk({"content": "a"}))).events[1:] == (PartStart(0, TextPart("")), PartDelta(0, "a"))
    assert decoder.decode(frame(chunk({"content": "b\n\u00e9"}))).events == (PartDelta(0, "b\n\u00e9"),)
    assert decoder.decode(frame(chunk({"content": ""}))).events == ()
    with pytest.raises(UpstreamError, match="not a JSON object"):
        decoder.decode(b"data: {not json}\n\n")


def test_an_error_chunk_raises_on_either_path() -> None:
    decoder = FrameDecoder()
    decoder.decode(b"data: " + orjson.dumps(chunk({"content": "a"})) + b"\n\n")
    with pytest.raises(UpstreamError, match="overloaded"):
        decoder.decode(b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n')


def test_a_frame_like_the_first_content_frame_is_read_by_its_bytes_with_the_same_events(monkeypatch) -> None:
    """After the first content frame, a frame that is it around other plain text gives
    its delta without being parsed; anything else (escapes, quotes that change the
    JSON, bytes that are not UTF-8 or not allowed in JSON, a delta after the finish)
    is read as before: the events are the chunk decoder's every time."""
    import gateway_openai.chat_stream as chat_stream

    def frame(payload: dict[str, Any]) -> bytes:
        return b"data: " + orjson.dumps(payload) + b"\n\n"

    first = frame(chunk({"content": "a"}))
    head, tail = first[: first.index(b'"a"') + 1], first[first.index(b'"a"') + 2 :]
    texts = [b"b", b"", "\u00e9 \u5b8c\u4e86 \u2713".encode(), b"tok 42", b'x\\"y', b"x\\ny", b'x","role":"assistant',
             b'x"},"finish_reason":"stop","x":{"y":"', b"\xff", b"tab\there"]  # fmt: skip
    frames = [frame(chunk({"role": "assistant", "content": ""})), first, *(head + text + tail for text in texts)]
    frames += [frame(chunk({}, "stop")), head + b"late" + tail]
    parsed = []
    monkeypatch.setattr(chat_stream, "_loads", lambda data: parsed.append(data) or orjson.loads(data))
    fed, decoder = ChunkDecoder(), FrameDecoder()
    for raw in frames:
        try:
            payload = orjson.loads(raw[6:])
        except orjson.JSONDecodeError:
            with pytest.raises(UpstreamError):
                decoder.decode(raw)
            continue
        assert list(decoder.decode(raw).events) == fed.feed(payload), raw
    plain = {head + text + tail for text in texts[1:4]}  # "a" opened the text part, "b" became the template
    assert not plain & set(b"data: " + data for data in parsed)  # the plain ones after it were never parsed
    assert len(parsed) == len(frames) - len(plain) + 1  # each other frame once, and the template's probe


def test_a_stream_whose_frames_differ_beyond_the_text_is_parsed_frame_by_frame() -> None:
    """A field that changes in every chunk (an upstream's per-chunk padding) leaves no
    template: every frame is parsed, with the same events."""

    def frame(payload: dict[str, Any]) -> bytes:
        return b"data: " + orjson.dumps(payload) + b"\n\n"

    chunks = [chunk({"role": "assistant", "content": ""})] + [{**chunk({"content": f"t{i}"}), "obfuscation": "x" * i} for i in range(8)]
    fed = ChunkDecoder()
    assert frame_events([frame(c) for c in chunks]) == [event for c in chunks for event in fed.feed(c)]
