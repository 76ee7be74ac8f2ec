"""The event-stream splitter against botocore's own reader, byte by byte, with broken
CRCs, impossible lengths, a message over the cap and a body cut short."""

from __future__ import annotations

import struct

import pytest
from botocore.eventstream import EventStreamBuffer

from gateway_bedrock.eventstream import EventStreamError, EventStreamSplitter, encode_message, read_message
from gateway_bedrock.fake_upstream import encode_event

MESSAGES = [encode_event("messageStart", {"role": "assistant"}),
            encode_event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "héllo " * 50}}),
            encode_event("metadata", {"usage": {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}})]  # fmt: skip
BODY = b"".join(MESSAGES)


def test_what_botocore_reads_the_splitter_reads_the_same():
    theirs = EventStreamBuffer()
    theirs.add_data(BODY)
    expected = [(message.headers, message.payload) for message in theirs]
    ours = [read_message(raw) for raw in EventStreamSplitter(1 << 20).feed(BODY)]
    assert ours == expected
    assert ours[0][0] == {":event-type": "messageStart", ":content-type": "application/json", ":message-type": "event"}


def test_a_body_fed_byte_by_byte_gives_whole_messages_as_they_complete():
    splitter = EventStreamSplitter(1 << 20)
    got = []
    for n in range(len(BODY)):
        got.extend(splitter.feed(BODY[n : n + 1]))
    assert got == MESSAGES
    assert splitter.flush() == b""


def test_every_header_type_is_read():
    headers = b"".join([
        b"\x01a\x00", b"\x01b\x01", b"\x01c\x02\xff", b"\x01d\x03" + struct.pack(">h", -2), b"\x01e\x04" + struct.pack(">i", 7),
        b"\x01f\x05" + struct.pack(">q", 1 << 40), b"\x01g\x06\x00\x02\x00\x01", b"\x01h\x08" + struct.pack(">q", 1700000000000),
        b"\x01i\x09" + bytes(range(16)),
    ])  # fmt: skip
    total = 16 + len(headers) + 2
    import zlib

    head = struct.pack(">II", total, len(headers))
    body = head + struct.pack(">I", zlib.crc32(head)) + headers + b"{}"
    raw = body + struct.pack(">I", zlib.crc32(body))
    (message,) = EventStreamSplitter(1024).feed(raw)
    parsed, payload = read_message(message)
    assert payload == b"{}"
    assert parsed == {"a": True, "b": False, "c": -1, "d": -2, "e": 7, "f": 1 << 40, "g": b"\x00\x01", "h": 1700000000000,
                      "i": "00010203-0405-0607-0809-0a0b0c0d0e0f"}  # fmt: skip


@pytest.mark.parametrize("at", [2, 9, 20, -2])
def test_a_flipped_byte_breaks_a_crc(at):
    broken = bytearray(MESSAGES[1])
    broken[at] ^= 0x01
    splitter = EventStreamSplitter(1 << 20)
    got = []
    with pytest.raises(EventStreamError):
        for raw in splitter.feed(MESSAGES[0] + bytes(broken)):
            got.append(raw)
    assert got == [MESSAGES[0]]  # the message before it still went out
    with pytest.raises(EventStreamError):  # and the stream stays broken
        list(splitter.feed(MESSAGES[2]))


def test_a_message_over_the_cap_is_refused_from_its_prelude():
    splitter = EventStreamSplitter(100)
    with pytest.raises(EventStreamError, match="larger than 100"):
        list(splitter.feed(MESSAGES[1][:12]))  # the prelude alone says it


def test_impossible_lengths_are_refused():
    head = struct.pack(">II", 10, 0)
    import zlib

    with pytest.raises(EventStreamError, match="impossible"):
        list(EventStreamSplitter(1024).feed(head + struct.pack(">I", zlib.crc32(head))))


def test_a_body_cut_short_is_an_error_at_its_end():
    splitter = EventStreamSplitter(1 << 20)
    assert list(splitter.feed(BODY[:-5])) == MESSAGES[:2]
    with pytest.raises(EventStreamError, match="ended"):
        splitter.flush()


def test_encode_round_trips():
    raw = encode_message({":event-type": "x"}, b"payload")
    assert read_message(raw) == ({":event-type": "x"}, b"payload")
