from gateway_core.sse import SSESplitter, data_frame, event_frame, frame_fields


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
