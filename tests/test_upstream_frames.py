"""gateway_core.upstream's stream framings over loopback HTTP: newline-delimited
JSON and a streamed JSON array arrive frame by frame however the upstream cuts
its writes, a frame over the cap or a broken stream ends in an upstream error."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import aiohttp
import orjson
import pytest
from aiohttp import web

from gateway_core import Frame, UpstreamError
from gateway_core.framing import FrameTooLargeError
from gateway_core.testing import FakeUpstream, Fault
from gateway_core.upstream import json_array_frames, ndjson_frames, sse_frames

NDJSON = b'{"n": 1, "text": "a\\nb"}\n\n{"n": 2}\r\n{"n": 3, "nested": {"list": [1, 2]}}\n{"n": 4}'
ARRAY = b'[{"n": 1, "text": "] , ["},\r\n{"n": 2, "q": "\\"\\\\"}\r\n,{"n": 3}]'


class Writes(FakeUpstream):
    """Answers ``POST /stream`` with the bytes a test set, cut into the writes it set."""

    writes: list[bytes] = []

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/stream", self.handle)

    def check(self, request: web.Request, body: object) -> web.Response | None:
        return None

    async def handle(self, request: web.Request) -> web.StreamResponse:
        fault, refusal = await self.admit(request, None)
        return refusal or await self.stream(request, self.writes, fault, content_type="application/x-ndjson")


def cuts(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def decode(raw: bytes) -> Frame:
    return Frame(raw, tuple(orjson.loads(raw)) if raw.strip() else ())


async def frames_of(fake: Writes, writes: Iterable[bytes], framing: Callable, **kwargs) -> list[Frame]:
    fake.writes = list(writes)
    async with aiohttp.ClientSession() as session:
        response = await session.post(fake.url + "/stream")
        return [frame async for frame in framing(response, decode, **kwargs)]


@pytest.mark.parametrize("size", [1, 2, 3, 7, 1000])
async def test_ndjson_lines_arrive_whole_and_byte_for_byte(fake_upstream, size):
    fake = await fake_upstream(Writes(chunk_delay=0.001 if size < 3 else 0.0))
    frames = await frames_of(fake, cuts(NDJSON, size), ndjson_frames)
    assert b"".join(f.raw for f in frames) == NDJSON  # the fast path forwards them untouched
    assert [f.raw for f in frames if f.raw.strip()] == [
        b'{"n": 1, "text": "a\\nb"}\n', b'{"n": 2}\r\n', b'{"n": 3, "nested": {"list": [1, 2]}}\n', b'{"n": 4}'
    ]
    assert [event for f in frames for event in f.events] == ["n", "text", "n", "n", "nested", "n"]


@pytest.mark.parametrize("size", [1, 2, 5, 1000])
async def test_json_array_elements_arrive_whole(fake_upstream, size):
    fake = await fake_upstream(Writes(chunk_delay=0.001 if size < 3 else 0.0))
    frames = await frames_of(fake, cuts(ARRAY, size), json_array_frames)
    assert [orjson.loads(f.raw) for f in frames] == orjson.loads(ARRAY)


@pytest.mark.parametrize(
    ("framing", "body"),
    [
        (ndjson_frames, b'{"n": 1}\n{"big": "' + b"x" * 5000 + b'"}\n'),
        (json_array_frames, b'[{"n": 1}, {"big": "' + b"x" * 5000 + b'"}]'),
        (sse_frames, b"data: 1\n\ndata: " + b"x" * 5000 + b"\n\n"),
    ],
)
async def test_a_frame_over_the_cap_ends_the_stream_with_an_upstream_error(fake_upstream, framing, body):
    fake = await fake_upstream(Writes())
    seen: list[Frame] = []
    fake.writes = cuts(body, 100)
    async with aiohttp.ClientSession() as session:
        response = await session.post(fake.url + "/stream")
        with pytest.raises(FrameTooLargeError, match="larger than 1024 bytes"):
            async for frame in framing(response, lambda raw: Frame(raw), max_frame_bytes=1024):
                seen.append(frame)
        assert response.closed  # the half-read connection is not reused
    assert len(seen) == 1


async def test_an_array_cut_short_is_an_upstream_error(fake_upstream):
    fake = await fake_upstream(Writes())
    with pytest.raises(UpstreamError, match="ended before the array was closed"):
        await frames_of(fake, [b'[{"n": 1}, {"n": 2}'], json_array_frames)


async def test_a_connection_dropped_mid_stream_is_an_upstream_error(fake_upstream):
    fake = await fake_upstream(Writes())
    fake.fail_next(Fault(drop_after=2))
    with pytest.raises(UpstreamError, match="dropped in the middle of the stream"):
        await frames_of(fake, cuts(NDJSON, 10), ndjson_frames)


SSE_WRITES = [b"data: 1\n\ndata: 2\n\ndata: 3\n\n", b"data: 4\n\n", b"data: 5\n\ndata: BAD\n\ndata: 6\n\n"]


def sse_decode(raw: bytes) -> Frame:
    if b"BAD" in raw:
        raise UpstreamError("a frame the decoder refuses")
    return Frame(raw)


async def reads_of(fake: Writes, writes: list[bytes]) -> tuple[list[list[bytes]], Exception | None]:
    """The frames of ``writes`` as ``FrameStream.next_read`` groups them, and the error that ended them."""
    fake.writes = writes
    reads: list[list[bytes]] = []
    async with aiohttp.ClientSession() as session:
        stream = sse_frames(await session.post(fake.url + "/stream"), sse_decode)
        try:
            while True:
                reads.append([frame.raw for frame in await stream.next_read()])
        except StopAsyncIteration:
            return reads, None
        except UpstreamError as error:
            return reads, error
        finally:
            await stream.aclose()


async def test_the_frames_of_one_upstream_read_come_together_and_in_order(fake_upstream):
    fake = await fake_upstream(Writes(chunk_delay=0.05))
    reads, error = await reads_of(fake, SSE_WRITES[:2])
    assert error is None and all(reads)  # never an empty read
    assert [raw for read in reads for raw in read] == [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n", b"data: 4\n\n"]
    assert max(len(read) for read in reads) >= 3  # the first write's three frames: one read, so one send


async def test_the_frames_before_one_that_fails_to_decode_still_come_first(fake_upstream):
    fake = await fake_upstream(Writes(chunk_delay=0.05))
    reads, error = await reads_of(fake, SSE_WRITES)
    assert isinstance(error, UpstreamError) and "refuses" in error.message
    assert [raw for read in reads for raw in read] == [b"data: %d\n\n" % n for n in range(1, 6)]


async def test_frames_taken_one_by_one_and_by_read_are_the_same_frames(fake_upstream):
    fake = await fake_upstream(Writes(chunk_delay=0.05))
    fake.writes = SSE_WRITES[:2]
    async with aiohttp.ClientSession() as session:
        stream = sse_frames(await session.post(fake.url + "/stream"), sse_decode)
        first = await stream.__anext__()  # one frame of the first read ...
        rest = await stream.next_read()  # ... then what that read left
        later = [frame.raw async for frame in stream]
    assert [first.raw, *[frame.raw for frame in rest], *later] == [b"data: %d\n\n" % n for n in range(1, 5)]
    assert rest and rest[0].raw == b"data: 2\n\n"


async def test_a_stream_closed_before_its_first_read_closes_its_connection(fake_upstream):
    fake = await fake_upstream(Writes(chunk_delay=0.05))
    fake.writes = SSE_WRITES[:2]
    async with aiohttp.ClientSession() as session:
        response = await session.post(fake.url + "/stream")
        stream = sse_frames(response, sse_decode)
        await stream.aclose()
        assert response.closed and response.connection is None
        with pytest.raises(StopAsyncIteration):
            await stream.next_read()

