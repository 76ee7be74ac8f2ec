"""The pure translations, against the recorded wire examples in tests/examples."""

from __future__ import annotations

import pytest

from gateway_core import (
    ChatRequest,
    ImagePart,
    InvalidRequestError,
    Message,
    PartDelta,
    PartStart,
    PartStop,
    Role,
    StopReason,
    StreamFinish,
    StreamStart,
    TextPart,
    Usage,
    UsageReport,
)
from relaygate_skeleton.wire import StreamDecoder, answer_from_wire, error_message, request_to_wire

REQUEST = ChatRequest(
    model="client-model",
    messages=(Message(Role.USER, (TextPart("Why is the sky "), TextPart("blue?"))),),
    system=(TextPart("Be brief."),),
    max_tokens=64,
    temperature=0.2,
    stream=True,
)


def test_a_request_to_the_wire(examples):
    assert request_to_wire(REQUEST, "tiny-1b", stream=True) == examples.json("chat_request.json")


def test_only_text_is_carried():
    request = ChatRequest(model="m", messages=(Message(Role.USER, (ImagePart(url="https://x/y.png"),)),))
    with pytest.raises(InvalidRequestError, match="text only"):
        request_to_wire(request, "tiny-1b", stream=False)


def test_a_whole_answer_from_the_wire(examples):
    answer = answer_from_wire(examples.json("chat_answer.json"))
    assert answer.parts == (TextPart("Rayleigh scattering."),) and answer.model == "tiny-1b"
    assert (answer.stop_reason, answer.usage) == (StopReason.END_TURN, Usage(input_tokens=18, output_tokens=5))


def test_a_stream_from_the_wire(examples):
    decoder = StreamDecoder()
    events = [event for line in examples.ndjson("chat_stream.ndjson") for event in decoder.feed(line)]
    assert events == [
        StreamStart(id="2026-01-01T10:00:00.000000Z", model="tiny-1b"),
        PartStart(0, TextPart("")),
        PartDelta(0, "Rayleigh"),
        PartDelta(0, " scattering"),
        PartDelta(0, "."),
        PartStop(0),
        StreamFinish(StopReason.MAX_TOKENS),
        UsageReport(Usage(input_tokens=18, output_tokens=5)),
    ]


def test_error_messages():
    assert error_message(404, b'{"error": "model \\"x\\" not found"}') == 'model "x" not found'
    assert error_message(502, b"<html>bad gateway</html>") == "the upstream answered HTTP 502"
