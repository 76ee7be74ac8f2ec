"""AWS's binary event-stream framing (``application/vnd.amazon.eventstream``), as
Bedrock's ConverseStream sends it.

A message is a 12-byte prelude (total length, headers length, the prelude's CRC32,
all big-endian unsigned 32-bit), the headers, the payload and the CRC32 of all the
bytes before it. A header is a name (one length byte, UTF-8), a type byte and a
value; Bedrock sends strings (``:event-type``, ``:message-type``, ``:content-type``,
``:exception-type``), the other types are read too.

:class:`EventStreamSplitter` cuts a body into whole messages as chunks arrive
(the splitter :func:`gateway_core.upstream.split_frames` takes): it checks both
CRCs and refuses a message over the channel's frame cap as soon as its prelude
says so, holding at most one message's bytes. :func:`read_message` reads the
headers and payload of a message the splitter returned. :func:`encode_message`
writes one (the fake upstream of the tests uses it).

botocore has a reader too (``botocore.eventstream.EventStreamBuffer``); it is not
used here because it returns parsed messages where the gateway's stream reader
wants each frame's bytes, its size limit is fixed (24 MB of payload) instead of
the channel's ``max_frame_bytes``, and it copies its whole buffer for every
message it takes off.
"""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Iterator, Mapping

from gateway_core.errors import UpstreamError, excerpt

PRELUDE = struct.Struct(">III")
CRC = struct.Struct(">I")
PRELUDE_BYTES = 12
OVERHEAD = PRELUDE_BYTES + 4  # prelude and message CRC
HeaderValue = bool | int | bytes | str


class EventStreamError(UpstreamError):
    """The upstream's event stream is broken: a bad CRC, an impossible length,
    a message over the cap or cut short."""


def _broken(reason: str, head: bytes | bytearray = b"") -> EventStreamError:
    error = EventStreamError(f"the upstream's event stream is broken: {reason}")
    if head:
        error.upstream_body = excerpt(bytes(head[:256]))
    return error


class EventStreamSplitter:
    """Cuts an event-stream body into whole messages, checked (see the module)."""

    __slots__ = ("_buffer", "_error", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self._buffer = bytearray()
        self._error: EventStreamError | None = None
        self.max_bytes = max_bytes

    def feed(self, chunk: bytes) -> Iterator[bytes]:
        """The messages ``chunk`` completes, in order; a broken one raises after
        the messages before it."""
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += chunk
        start = 0
        try:
            while len(buffer) - start >= PRELUDE_BYTES:
                total = self._check_prelude(buffer, start)
                if len(buffer) - start < total:
                    break
                end = start + total
                (crc,) = CRC.unpack_from(buffer, end - 4)
                message = bytes(buffer[start:end])
                if zlib.crc32(memoryview(message)[:-4]) != crc:
                    raise _broken("a message's CRC does not match its bytes", message)
                start = end
                yield message
        except EventStreamError as error:
            self._error = error
            buffer.clear()
            raise
        del buffer[:start]

    def _check_prelude(self, buffer: bytearray, start: int) -> int:
        total, headers, crc = PRELUDE.unpack_from(buffer, start)
        if zlib.crc32(memoryview(buffer)[start : start + 8]) != crc:
            raise _broken("a message's prelude CRC does not match", buffer[start : start + PRELUDE_BYTES])
        if total < OVERHEAD or headers > total - OVERHEAD:
            raise _broken(f"a message declares impossible lengths (total {total}, headers {headers})")
        if total > self.max_bytes:
            raise _broken(
                f"a message of {total} bytes is larger than {self.max_bytes}, the most the gateway "
                "holds for one frame (max_frame_bytes)"
            )
        return total

    def flush(self) -> bytes:
        """The end of the body: nothing may be left of a message."""
        if self._buffer:
            left = len(self._buffer)
            self._buffer.clear()
            raise _broken(f"the stream ended {left} bytes into a message")
        return b""


def read_message(message: bytes) -> tuple[dict[str, HeaderValue], bytes]:
    """The headers and payload of one whole, checked message (from the splitter)."""
    total, headers_length, _ = PRELUDE.unpack_from(message, 0)
    headers_end = PRELUDE_BYTES + headers_length
    return _headers(message, PRELUDE_BYTES, headers_end), message[headers_end : total - 4]


def _headers(data: bytes, at: int, end: int) -> dict[str, HeaderValue]:
    headers: dict[str, HeaderValue] = {}
    try:
        while at < end:
            size = data[at]
            name = data[at + 1 : at + 1 + size].decode()
            at += 1 + size
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in FIXED:
                fmt = FIXED[kind]
                (value,) = struct.unpack_from(fmt, data, at)
                at += struct.calcsize(fmt)
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, at)
                raw = data[at + 2 : at + 2 + length]
                value = raw.decode() if kind == 7 else bytes(raw)
                at += 2 + length
            elif kind == 9:
                value = str(uuid.UUID(bytes=bytes(data[at : at + 16])))
                at += 16
            else:
                raise _broken(f"a header of unknown type {kind}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError):
        raise _broken("a message's headers are cut short or not UTF-8") from None
    if at != end:
        raise _broken("a message's headers overrun their length")
    return headers


FIXED = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}  # byte, short, integer, long, timestamp (ms)


def encode_message(headers: Mapping[str, str], payload: bytes) -> bytes:
    """One message with string ``headers`` (type 7) and ``payload``."""
    encoded = bytearray()
    for name, value in headers.items():
        key, text = name.encode(), value.encode()
        encoded += bytes((len(key),)) + key + b"\x07" + struct.pack(">H", len(text)) + text
    total = OVERHEAD + len(encoded) + len(payload)
    head = struct.pack(">II", total, len(encoded))
    body = head + CRC.pack(zlib.crc32(head)) + bytes(encoded) + payload
    return body + CRC.pack(zlib.crc32(body))
