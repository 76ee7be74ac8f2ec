"""Server-sent events: splitting a byte stream into frames, and writing frames.

The other stream framings (newline-delimited JSON, a streamed JSON array) are in
:mod:`gateway_core.framing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import attrs
import orjson

from .framing import MAX_FRAME_BYTES, frame_too_large


class SSESplitter:
    """Cuts a byte stream into complete SSE frames (each ending with a blank line).

    Frames are returned with their terminating blank line, byte for byte as
    received, so the fast path can forward them untouched. CRLF and LF line ends
    are both understood. A frame larger than ``max_bytes`` raises
    :class:`gateway_core.framing.FrameTooLargeError` and drops what was held of it.

    A frame spread over many chunks is kept in a growing buffer whose scanned part is not searched again. The usual chunk,
    one whole frame, is returned as it is, found in a few steps.
    """

    __slots__ = ("_buffer", "_scanned", "max_bytes")

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()  # the start of a frame whose end has not come
        self._scanned = 0  # bytes of ``_buffer`` known to hold no frame end
        self.max_bytes = max_bytes

    def feed(self, chunk: bytes) -> Iterable[bytes]:
        """The frames ``chunk`` completes, in order."""
        size = len(chunk)
        if not self._buffer and 2 <= size <= self.max_bytes:
            if chunk.find(b"\r") < 0:
                if _blank_line(chunk, 0) == size - 2:
                    return (chunk,)  # the usual read: one whole frame
            elif size >= 4 and chunk.find(b"\r\n\r\n") == size - 4 and chunk.find(b"\n\n") < 0:
                return (chunk,)  # one whole frame with CRLF line ends
        return self._frames(chunk)

    def _frames(self, chunk: bytes) -> Iterator[bytes]:
        buffer: bytes = chunk
        if self._buffer:
            pending = self._buffer
            pending += chunk
            # a frame end may straddle the old bytes and the new: look back 3 bytes
            end, width = _frame_end(pending, max(0, self._scanned - 3))
            if end < 0:
                self._scanned = len(pending)
                if len(pending) > self.max_bytes:
                    head = bytes(pending[:512])
                    self._drop()
                    raise frame_too_large("event", self.max_bytes, head)
                return
            if end + width > self.max_bytes:
                head = bytes(pending[:512])
                self._drop()
                raise frame_too_large("event", self.max_bytes, head)
            yield bytes(pending[: end + width])
            buffer = bytes(pending[end + width :])
            self._drop()
        start = 0
        if buffer.find(b"\r") < 0:  # LF line ends only (the usual): every frame ends with "\n\n"
            pieces = buffer.split(b"\n\n")  # as many finds from the left
            pieces.pop()  # what follows the last frame end: the start of a frame, or nothing
            for piece in pieces:
                if len(piece) + 2 > self.max_bytes:
                    raise frame_too_large("event", self.max_bytes, buffer[start : start + 512])
                start += len(piece) + 2
                yield piece + b"\n\n"
        else:
            while True:
                end, width = _frame_end(buffer, start)
                if end < 0:
                    break
                if end + width - start > self.max_bytes:
                    raise frame_too_large("event", self.max_bytes, buffer[start : start + 512])
                yield buffer[start : end + width]
                start = end + width
        if start < len(buffer):
            if len(buffer) - start > self.max_bytes:
                raise frame_too_large("event", self.max_bytes, buffer[start : start + 512])
            self._buffer += buffer[start:] if start else buffer
            self._scanned = len(self._buffer)

    def flush(self) -> bytes:
        """What is left when the stream ends (an unterminated last frame)."""
        rest = bytes(self._buffer)
        self._drop()
        return rest

    def _drop(self) -> None:
        self._buffer = bytearray()  # a new one: the old may be large, released now
        self._scanned = 0


def _blank_line(buffer: bytes, start: int) -> int:
    """Where the first blank line (``\\n\\n``) at or after ``start`` is (``-1`` when
    none), found line end by line end: a search for one byte is a ``memchr``,
    several times faster than one for two."""
    end = buffer.find(b"\n", start)
    last = len(buffer) - 1
    while 0 <= end < last and buffer[end + 1] != 10:
        end = buffer.find(b"\n", end + 2)
    return end if end < last else -1


def _frame_end(buffer: bytes | bytearray, start: int) -> tuple[int, int]:
    """Where the first frame end at or after ``start`` is (``-1`` when none), and its width."""
    lf = buffer.find(b"\n\n", start)
    if buffer.find(b"\r", start, len(buffer) if lf < 0 else lf) < 0:
        return lf, 2
    crlf = buffer.find(b"\r\n\r\n", start)
    if crlf >= 0 and (lf < 0 or crlf < lf):
        return crlf, 4
    return lf, 2


def frame_fields(frame: bytes) -> tuple[str | None, bytes]:
    """The ``event`` name and the joined ``data`` of one frame."""
    if frame.find(b"\r") < 0:  # (not `in`: on bytes it first tries the operand as an int and formats that error)
        if frame.startswith(b"data: ") and frame.count(b"\n", 0, -2) == 0:
            return None, frame[6:].rstrip(b"\n")  # the common one-line frame
        if frame.startswith(b"event: ") and frame.endswith(b"\n\n"):  # an event line and a data line
            first = frame.find(b"\n")
            if frame.startswith(b"data: ", first + 1) and frame.count(b"\n", first + 1, -2) == 0:
                return frame[6:first].strip().decode("utf-8", "replace"), frame[first + 7 : -2]
    elif frame.startswith(b"data: ") and frame.endswith(b"\r\n\r\n"):
        size = len(frame)
        if frame.find(b"\r") == size - 4 and frame.find(b"\n") == size - 3:
            return None, frame[6:-4]  # one line, CRLF line ends
    event: str | None = None
    data: list[bytes] = []
    for line in frame.splitlines():
        if line.startswith(b"data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(b" ") else value)
        elif line.startswith(b"event:"):
            event = line[6:].strip().decode("utf-8", "replace")
    return event, b"\n".join(data)


def data_frame(payload: object) -> bytes:
    """``data: <json>`` frame."""
    return b"data: " + orjson.dumps(payload) + b"\n\n"


def event_frame(event: str, payload: object) -> bytes:
    """``event: <name>`` + ``data: <json>`` frame."""
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(payload) + b"\n\n"


_NOT_PLAIN = bytes(range(0x20)) + b'"\\'  # what a JSON string holds only escaped (or never)


@attrs.frozen
class TextTemplate:
    """The bytes of a stream's text frame before and after its text, and the text's part index.

    Most frames of a streamed answer are one kind of text delta, byte for byte the
    same but for the text. A frame that is ``head + text + tail``, with ``text``
    plain (valid UTF-8 holding nothing JSON escapes: no quote, backslash or control
    character), is then the same payload with that text, and a decoder reads its
    text without parsing it. A template is made from a frame the decoder has parsed
    and proved once by the decoder (:meth:`candidate`): the frame the template makes
    around a probe text must parse to the same payload with the probe as its text.
    """

    head: bytes
    tail: bytes
    index: int

    @classmethod
    def candidate(cls, raw: bytes, text: str, index: int) -> tuple[TextTemplate, str, bytes] | None:
        """A template of ``raw`` around its first ``"text"`` (plain, not empty), with
        the probe text and the frame the template makes of it, for the caller to
        parse; ``None`` when ``raw`` cannot make one."""
        encoded = text.encode()
        at = raw.find(b'"' + encoded + b'"')
        if at < 0 or not encoded or len(encoded.translate(None, _NOT_PLAIN)) != len(encoded):
            return None
        template = cls(raw[: at + 1], raw[at + 1 + len(encoded) :], index)
        probe = "probe" if text != "probe" else "other"
        return template, probe, template.head + probe.encode() + template.tail

    def text(self, raw: bytes) -> str | None:
        """The text of a frame that is this template around plain text, else ``None``."""
        head, tail = self.head, self.tail
        if len(raw) < len(head) + len(tail) or not raw.startswith(head) or not raw.endswith(tail):
            return None
        text = raw[len(head) : len(raw) - len(tail)]
        if len(text.translate(None, _NOT_PLAIN)) != len(text):
            return None
        try:
            return text.decode()
        except UnicodeDecodeError:
            return None
