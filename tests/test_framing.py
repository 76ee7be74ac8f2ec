"""The stream framings of gateway_core.framing (and the SSE one's size cap):
frames found wherever the chunk boundaries fall, byte for byte, with bounded
memory and a clear upstream error past the cap."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import orjson
import pytest

from gateway_core.errors import UpstreamError
from gateway_core.framing import FrameTooLargeError, JSONArraySplitter, NDJSONSplitter
from gateway_core.sse import SSESplitter

Splitter = NDJSONSplitter | JSONArraySplitter | SSESplitter


def splits(data: bytes) -> Iterator[list[bytes]]:
    """Every way to cut ``data`` into two or three chunks, and byte by byte."""
    size = len(data)
    yield [data]
    yield [data[i : i + 1] for i in range(size)]
    for first in range(size + 1):
        yield [data[:first], data[first:]]
        for second in range(first, size + 1, 3 if size > 60 else 1):
            yield [data[:first], data[first:second], data[second:]]


def run(make: Callable[[], Splitter], chunks: list[bytes]) -> tuple[list[bytes], bytes]:
    splitter = make()
    frames = [frame for chunk in chunks for frame in splitter.feed(chunk)]
    return frames, splitter.flush()


NDJSON = b'{"a": 1}\n{"b": "two\\nlines"}\r\n\n{"c": [3, {"d": "}"}]}\n{"last": true}'


def test_ndjson_lines_come_out_whole_wherever_the_chunks_are_cut():
    expected = [b'{"a": 1}\n', b'{"b": "two\\nlines"}\r\n', b"\n", b'{"c": [3, {"d": "}"}]}\n']
    for chunks in splits(NDJSON):
        frames, rest = run(NDJSONSplitter, chunks)
        assert (frames, rest) == (expected, b'{"last": true}'), chunks
        assert b"".join(frames) + rest == NDJSON  # byte for byte, line ends kept


ARRAY = (
    b' [{"text": "a ] b } c", "esc": "q\\"]\\\\", "n": [1, [2, {}]]},\r\n'
    b'{"x": "\\u005d"} , "top \\" string" ,-12.5e3,true, null,[] ,{}]  \n'
)
ELEMENTS = [
    b'{"text": "a ] b } c", "esc": "q\\"]\\\\", "n": [1, [2, {}]]}',
    b'{"x": "\\u005d"}',
    b'"top \\" string"',
    b"-12.5e3",
    b"true",
    b"null",
    b"[]",
    b"{}",
]


def test_json_array_elements_come_out_whole_wherever_the_chunks_are_cut():
    for chunks in splits(ARRAY):
        frames, rest = run(JSONArraySplitter, chunks)
        assert (frames, rest) == (ELEMENTS, b""), chunks
    assert [orjson.loads(element) for element in ELEMENTS] == orjson.loads(ARRAY)


def test_a_gemini_style_array_stream():
    stream = b'[{"candidates": [{"content": {"parts": [{"text": "Hi"}]}}]}\r\n,\r\n{"usageMetadata": {"promptTokenCount": 3}}]'
    for chunks in splits(stream):
        frames, _ = run(JSONArraySplitter, chunks)
        assert [orjson.loads(f) for f in frames] == orjson.loads(stream)


@pytest.mark.parametrize("stream", [b"[]", b" [ ] ", b"", b"  \r\n"])
def test_an_empty_array_or_body_has_no_elements(stream):
    for chunks in splits(stream):
        assert run(JSONArraySplitter, chunks) == ([], b"")


@pytest.mark.parametrize(
    "stream, message",
    [
        (b'{"not": "an array"}', "does not start with '['"),
        (b'[{"a": 1} {"b": 2}]', "no comma between two elements"),
        (b'[{"a": 1}] [', "goes on after its closing ']'"),
        (b'[{"a": 1},]', "not a JSON value"),
        (b"[@]", "not a JSON value"),
    ],
)
def test_a_malformed_array_boundary_is_an_upstream_error(stream, message):
    for chunks in splits(stream):
        with pytest.raises(UpstreamError, match=re.escape(message)) as caught:
            run(JSONArraySplitter, chunks)
        assert caught.value.upstream_body  # an excerpt of what came, for the log


@pytest.mark.parametrize(
    "stream, where", [(b'[{"a": "unfinished', "inside an element"), (b'[{"a": 1}, {"b": 2}', "before the array was closed"), (b"[1", "inside an element")]
)
def test_an_array_cut_short_is_an_upstream_error_at_the_end(stream, where):
    for chunks in splits(stream):
        splitter = JSONArraySplitter()
        for chunk in chunks:
            splitter.feed(chunk)
        with pytest.raises(UpstreamError, match=where):
            splitter.flush()


CAP = 64


@pytest.mark.parametrize(
    "make, stream",
    [
        (lambda: NDJSONSplitter(CAP), b'{"ok": 1}\n' + b'{"big": "' + b"x" * 100 + b'"}\n'),
        (lambda: NDJSONSplitter(CAP), b'{"ok": 1}\n' + b'{"big": "' + b"x" * 100),  # never ends
        (lambda: JSONArraySplitter(CAP), b'[{"ok": 1}, {"big": "' + b"x" * 100 + b'"}]'),
        (lambda: JSONArraySplitter(CAP), b'[{"ok": 1}, {"big": "' + b"x" * 100),
        (lambda: SSESplitter(CAP), b"data: 1\n\n" + b"data: " + b"x" * 100 + b"\n\n"),
        (lambda: SSESplitter(CAP), b"data: 1\n\n" + b"data: " + b"x" * 100),
    ],
)
def test_a_frame_over_the_cap_is_an_upstream_error_not_a_growing_buffer(make, stream):
    for chunks in splits(stream):
        splitter = make()
        frames: list[bytes] = []
        with pytest.raises(FrameTooLargeError, match=f"larger than {CAP} bytes") as caught:
            for chunk in chunks:
                frames.extend(splitter.feed(chunk))
                assert len(getattr(splitter, "_buffer")) <= CAP
            splitter.flush()
        assert isinstance(caught.value, UpstreamError) and caught.value.kind == "upstream"
        assert len(frames) == 1 and b"1" in frames[0]  # the frame before the big one still came out


def test_frames_up_to_the_cap_pass():
    line = b'{"k": "' + b"x" * (CAP - 10) + b'"}\n'
    assert len(line) == CAP
    assert run(lambda: NDJSONSplitter(CAP), [line, line]) == ([line, line], b"")
    element = line.rstrip()
    assert run(lambda: JSONArraySplitter(CAP - 1), [b"[" + element + b"," + element + b"]"]) == ([element, element], b"")


def test_memory_stays_bounded_while_a_long_element_arrives_in_small_chunks():
    splitter = JSONArraySplitter()
    splitter.feed(b'[{"a": 1}, {"text": "')
    for _ in range(2000):
        assert splitter.feed(b"y" * 500) == []
    assert len(splitter._buffer) < 1_100_000  # only the element being read is kept
    (element,) = splitter.feed(b'"}]')
    assert orjson.loads(element)["text"] == "y" * 1_000_000
