"""The decoding of a streamed images answer (pure): a recorded wire stream into core
events that keep the stream contract, the tokens of every completed event summed,
an upstream ``error`` event an upstream error, and the request fields checked."""

from __future__ import annotations

import orjson
import pytest

from gateway_core import InvalidRequestError, RouteSpec, UpstreamError, endpoints
from gateway_core.model import PartDelta, StreamFinish, StreamStart, Usage, UsageReport
from gateway_core.request.stream_contract import StreamContract
from gateway_core.testing import Examples
from gateway_openai.calls import image_generation_call
from gateway_openai.image_stream import ImageEvents
from gateway_openai.media import image_output_tokens

examples = Examples.beside(__file__)
GENERATIONS = RouteSpec("/v1/images/generations", endpoints.IMAGES_GENERATIONS)


def decode_all(decoder: ImageEvents, raws: list[bytes]) -> list:
    contract, events = StreamContract("openai"), []
    frames = [decoder.decode(raw) for raw in raws]
    last = decoder.end()
    for frame in [*frames, *([last] if last else [])]:
        contract.check(frame)
        events += frame.events
    assert [f.raw for f in frames] == raws  # forwarded untouched
    return events


def test_a_recorded_partial_image_stream_keeps_the_contract_and_reports_its_usage():
    events = decode_all(ImageEvents(), examples.frames("images_stream_partial.sse"))
    assert isinstance(events[0], StreamStart)
    assert sum(1 for e in events if isinstance(e, PartDelta)) == 3  # each image reached the client
    assert [type(e) for e in events[-2:]] == [StreamFinish, UsageReport]
    assert events[-1].usage == Usage(input_tokens=17, output_tokens=1256)


def test_the_tokens_of_several_completed_events_are_summed_as_they_come():
    raws = examples.frames("images_stream_partial.sse")
    decoder = ImageEvents()
    events = decode_all(decoder, [*raws, raws[-1]])
    reports = [e.usage for e in events if isinstance(e, UsageReport)]
    assert reports[0] == Usage(input_tokens=17, output_tokens=1256)  # reported after the first image
    assert reports[-1] == Usage(input_tokens=34, output_tokens=2512) and decoder.completed == 2


def test_a_stream_closed_before_any_completed_event_is_not_finished():
    decoder = ImageEvents()
    decode_all(decoder, examples.frames("images_stream_partial.sse")[:2])
    assert decoder.end() is None  # the relay takes it for the upstream's failure


def test_an_error_event_is_the_upstreams_error():
    error = {"type": "error", "error": {"message": "Your request was rejected by the safety system.", "type": "invalid_request_error"}}
    with pytest.raises(UpstreamError, match="safety system"):
        ImageEvents().decode(b"event: error\ndata: " + orjson.dumps(error) + b"\n\n")


def test_a_stream_reserves_100_output_tokens_per_partial_image():
    call = image_generation_call(GENERATIONS, {"model": "gpt-image-1", "prompt": "p", "stream": True, "partial_images": 3, "quality": "low", "size": "1024x1024"})
    assert call.stream and call.billing.max_output_tokens == 272 + 300 == image_output_tokens("gpt-image-1", "1024x1024", "low", 3)
    plain = image_generation_call(GENERATIONS, {"model": "gpt-image-1", "prompt": "p", "partial_images": 3, "quality": "low", "size": "1024x1024"})
    assert not plain.stream and plain.billing.max_output_tokens == 272  # no stream: no partial images
    with pytest.raises(InvalidRequestError):
        image_generation_call(GENERATIONS, {"model": "gpt-image-1", "prompt": "p", "stream": True, "partial_images": -1})
