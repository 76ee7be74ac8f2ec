import pytest

from gateway_core.framing import FrameTooLargeError
from gateway_core.sse import SSESplitter, TextTemplate, data_frame, event_frame, frame_fields


def test_splitter_yields_complete_frames_byte_for_byte_across_chunk_boundaries():
    stream = b'data: {"a":1}\n\ndata: {"b":2}\r\n\r\n: keep-alive\n\nevent: x\ndata: y\n\n'
    for cut in range(1, len(stream)):
        splitter = SSESplitter()
        frames = list(splitter.feed(stream[:cut])) + list(splitter.feed(stream[cut:]))
        assert b"".join(frames) == stream
        assert len(frames) == 4
        assert splitter.flush() == b""


def test_unterminated_last_frame_is_left_for_flush():
    splitter = SSESplitter()
    assert list(splitter.feed(b"data: 1\n\ndata: 2")) == [b"data: 1\n\n"]
    assert splitter.flush() == b"data: 2"


def test_frame_fields():
    assert frame_fields(b'data: {"a":1}\n\n') == (None, b'{"a":1}')
    assert frame_fields(b"event: message_start\ndata: {}\n\n") == ("message_start", b"{}")
    assert frame_fields(b"data:1\ndata: 2\n\n") == (None, b"1\n2")
    assert frame_fields(b": comment\n\n") == (None, b"")
    assert frame_fields(b"data: x\r\n\r\n") == (None, b"x")


def test_writers():
    assert data_frame({"a": 1}) == b'data: {"a":1}\n\n'
    assert event_frame("ping", {"type": "ping"}) == b'event: ping\ndata: {"type":"ping"}\n\n'


def test_a_chunk_of_one_whole_frame_is_that_frame():
    for frame in (b'data: {"a":1}\n\n', b"event: x\ndata: y\n\n", b'data: {"a":1}\r\n\r\n', b"\n\n"):
        splitter = SSESplitter()
        assert list(splitter.feed(frame)) == [frame]
        assert splitter.flush() == b""
    # a frame end after a CRLF frame end: two frames, as CRLF line ends mean
    assert list(SSESplitter().feed(b"a\r\n\r\nb\n\n")) == [b"a\r\n\r\n", b"b\n\n"]
    assert list(SSESplitter().feed(b"a\n\n\n\n")) == [b"a\n\n", b"\n\n"]


def test_the_one_frame_shortcuts_cut_every_short_chunk_as_the_full_splitter_does():
    # every chunk of up to 7 bytes of "a", CR and LF: the shortcut of feed (one whole
    # frame, LF or CRLF line ends) against the frame-by-frame cutting it skips
    chunks = [b""]
    for _ in range(7):
        chunks = [c + b for c in chunks for b in (b"a", b"\r", b"\n")]
        for chunk in chunks:
            fast, full = SSESplitter(), SSESplitter()
            assert (list(fast.feed(chunk)), fast.flush()) == (list(full._frames(chunk)), full.flush()), chunk


def test_a_frame_over_the_cap_comes_after_the_frames_before_it_in_the_same_chunk():
    for end in (b"\n\n", b"\r\n\r\n"):
        splitter = SSESplitter(max_bytes=64)
        frames = splitter.feed(b"data: 1" + end + b"data: " + b"x" * 100 + end + b"data: 2" + end)
        assert next(iter(frames)) == b"data: 1" + end
        with pytest.raises(FrameTooLargeError) as caught:
            list(frames)
        assert caught.value.upstream_body.startswith("data: xxx")
    with pytest.raises(FrameTooLargeError):
        list(SSESplitter(max_bytes=64).feed(b"data: " + b"x" * 100 + b"\n\n"))  # alone in its chunk


def test_frame_fields_of_the_usual_shapes_and_their_neighbours():
    assert frame_fields(b"event: content_block_delta\ndata: {}\n\n") == ("content_block_delta", b"{}")
    assert frame_fields(b'data: {"a":1}\r\n\r\n') == (None, b'{"a":1}')
    assert frame_fields(b"event: x\ndata: 1\ndata: 2\n\n") == ("x", b"1\n2")
    assert frame_fields(b"event: x\r\ndata: 1\r\n\r\n") == ("x", b"1")
    assert frame_fields(b"data: 1\r2\r\n\r\n") == (None, b"1")  # a lone CR ends a line too
    assert frame_fields(b"event: x\ndata:1\n\n") == ("x", b"1")


def test_a_text_template_reads_plain_texts_and_leaves_the_rest_to_the_parser():
    raw = b'data: {"delta":{"text":"Hello"},"i":0}\n\n'
    found = TextTemplate.candidate(raw, "Hello", 3)
    assert found is not None
    template, probe, frame = found
    assert (probe, frame) == ("probe", b'data: {"delta":{"text":"probe"},"i":0}\n\n') and template.index == 3
    assert template.text(b'data: {"delta":{"text":"na\xc3\xafve \xe2\x9c\x93"},"i":0}\n\n') == "naïve ✓"
    assert template.text(b'data: {"delta":{"text":""},"i":0}\n\n') == ""
    for other in (b'data: {"delta":{"text":"a\\"b"},"i":0}\n\n', b'data: {"delta":{"text":"a\tb"},"i":0}\n\n',
                  b'data: {"delta":{"text":"\xff"},"i":0}\n\n', b'data: {"delta":{"text":"x"},"i":1}\n\n', b"data: {}\n\n"):  # fmt: skip
        assert template.text(other) is None, other
    assert TextTemplate.candidate(raw, "probe", 0) is None  # not in the frame
    assert TextTemplate.candidate(b'data: {"t":"say \\"hi\\""}\n\n', 'say "hi"', 0) is None  # needs escapes
    assert TextTemplate.candidate(b'data: {"t":""}\n\n', "", 0) is None  # nothing to find it by
    assert TextTemplate.candidate(b'data: {"t":"probe"}\n\n', "probe", 0)[1] == "other"  # type: ignore[index]
