"""Cutting streamed bodies that are not server-sent events into frames.

Two framings besides SSE (:class:`gateway_core.sse.SSESplitter`):

- :class:`NDJSONSplitter`: newline-delimited JSON, one value per line.
- :class:`JSONArraySplitter`: one JSON array sent element by element
  (``[{...},\\r\\n{...}]``).

Each splitter is fed the chunks as they arrive (a chunk may end anywhere, in
the middle of a line, a string or an escape) and returns the frames completed
so far; ``flush`` at the end of the stream returns what is left. Memory stays
bounded: a line or element longer than ``max_bytes`` raises
:class:`FrameTooLargeError` (an upstream error) instead of growing the buffer
(after the frames completed before it, which the next call to ``feed`` or
``flush`` follows with the error).
The splitters only find frame boundaries; parsing a frame is the decoder's job
(:func:`gateway_core.upstream.parse_frame_json`).
"""

from __future__ import annotations

import re

from .errors import UpstreamError, excerpt

MAX_FRAME_BYTES = 32 * 1024 * 1024


class FrameTooLargeError(UpstreamError):
    """The upstream sent one frame (line, event, element) larger than the cap."""


def frame_too_large(what: str, max_bytes: int, head: bytes) -> FrameTooLargeError:
    error = FrameTooLargeError(
        f"the upstream sent a stream {what} larger than {max_bytes} bytes; "
        "the gateway does not buffer more than that for one frame"
    )
    error.upstream_body = excerpt(head[:512])
    return error


class _BoundedSplitter:
    """What both splitters share: the buffer, the cap, and an overflow held back
    until the frames completed before it are out."""

    __slots__ = ("_buffer", "_error", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self._buffer = bytearray()
        self._error: FrameTooLargeError | None = None
        self.max_bytes = max_bytes

    def _take(self, chunk: bytes) -> bytearray:
        """The buffer with ``chunk`` added; raises an overflow already found."""
        if self._error is not None:
            raise self._error
        self._buffer += chunk
        return self._buffer

    def _overflow(self, error: FrameTooLargeError, frames: list[bytes]) -> list[bytes]:
        """Drop the buffer; the frames completed before the overflow, or the error now."""
        self._error = error
        self._buffer.clear()
        if not frames:
            raise error
        return frames


class NDJSONSplitter(_BoundedSplitter):
    """Cuts a byte stream into lines (newline-delimited JSON).

    Each line is returned with its line end (``\\n`` or ``\\r\\n``), byte for byte
    as received, so a same-wire stream can be forwarded untouched; blank lines
    are returned too (a decoder treats them as keep-alives). ``flush`` returns a
    last line that has no line end.
    """

    __slots__ = ("_scanned",)

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        super().__init__(max_bytes)
        self._scanned = 0  # bytes of the buffer known to hold no line end

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._take(chunk)
        lines: list[bytes] = []
        start = 0
        end = buffer.find(b"\n", self._scanned)
        while end >= 0 and end + 1 - start <= self.max_bytes:
            lines.append(bytes(buffer[start : end + 1]))
            start = end + 1
            end = buffer.find(b"\n", start)
        if start:
            del buffer[:start]
        self._scanned = len(buffer)
        if end >= 0 or len(buffer) > self.max_bytes:
            return self._overflow(frame_too_large("line", self.max_bytes, bytes(buffer[:512])), lines)
        return lines

    def flush(self) -> bytes:
        """What is left when the stream ends: a last line without a line end."""
        if self._error is not None:
            raise self._error
        rest = bytes(self._buffer)
        self._buffer.clear()
        self._scanned = 0
        return rest


# where the array stands between elements
_BEFORE_ARRAY, _FIRST, _NEXT, _AFTER, _DONE = range(5)
# inside an element
_CONTAINER, _STRING, _SCALAR = range(5, 8)

_NOT_SPACE = re.compile(rb"[^ \t\r\n]")
_CONTAINER_SPECIAL = re.compile(rb'["{}\[\]]')
_STRING_SPECIAL = re.compile(rb'["\\]')
_SCALAR_END = re.compile(rb"[ \t\r\n,\]]")
_SCALAR_START = frozenset(b"-0123456789tfn")


class JSONArraySplitter(_BoundedSplitter):
    """Cuts a streamed JSON array into its top-level elements.

    Each element is returned as its own bytes (from its first to its last byte);
    the brackets, commas and white space between elements belong to none. Only
    the boundaries are checked here (brackets balanced, strings closed, commas
    between elements): a malformed boundary raises :class:`UpstreamError`, a
    malformed element is for the decoder to find. ``flush`` raises when the
    stream ended before the array was closed.
    """

    __slots__ = ("_pos", "_start", "_state", "_depth")

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        super().__init__(max_bytes)
        self._pos = 0  # next byte to look at
        self._start = 0  # first byte of the element being read
        self._state = _BEFORE_ARRAY
        self._depth = 0  # open brackets of the element being read

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._take(chunk)
        elements: list[bytes] = []
        try:
            pos = self._scan(buffer, elements)
            if self._state >= _CONTAINER and len(buffer) - self._start > self.max_bytes:
                raise frame_too_large("array element", self.max_bytes, bytes(buffer[self._start : self._start + 512]))
        except FrameTooLargeError as error:
            return self._overflow(error, elements)
        if self._state >= _CONTAINER:  # keep the element read so far, from its start
            del buffer[: self._start]
            pos -= self._start
            self._start = 0
        else:
            del buffer[:pos]
            pos = 0
        self._pos = pos
        return elements

    def flush(self) -> bytes:
        """Nothing is ever left over; raises when the array was not closed."""
        if self._error is not None:
            raise self._error
        if self._state in (_DONE, _BEFORE_ARRAY) and not self._buffer.strip():
            return b""
        where = "inside an element" if self._state >= _CONTAINER else "before the array was closed"
        error = UpstreamError(f"the upstream's JSON array stream ended {where}")
        error.upstream_body = excerpt(bytes(self._buffer[:512]))
        raise error

    def _scan(self, buffer: bytearray, elements: list[bytes]) -> int:
        pos, size = self._pos, len(buffer)
        while pos < size:
            state = self._state
            if state == _STRING:
                found = _STRING_SPECIAL.search(buffer, pos)
                if found is None:
                    return size
                at = found.start()
                if buffer[at] == 0x5C:  # a backslash escapes the next byte
                    if at + 1 >= size:
                        return at  # the escaped byte is in the next chunk
                    pos = at + 2
                    continue
                pos = at + 1
                if self._depth:
                    self._state = _CONTAINER
                else:  # a string element
                    self._emit(buffer, pos, elements)
            elif state == _CONTAINER:
                found = _CONTAINER_SPECIAL.search(buffer, pos)
                if found is None:
                    return size
                at = found.start()
                pos = at + 1
                byte = buffer[at]
                if byte == 0x22:  # "
                    self._state = _STRING
                elif byte in (0x7B, 0x5B):  # { [
                    self._depth += 1
                else:
                    self._depth -= 1
                    if not self._depth:
                        self._emit(buffer, pos, elements)
            elif state == _SCALAR:
                found = _SCALAR_END.search(buffer, pos)
                if found is None:
                    return size
                pos = found.start()
                self._emit(buffer, pos, elements)
            else:
                found = _NOT_SPACE.search(buffer, pos)
                if found is None:
                    return size
                pos = found.start()
                pos = self._between(buffer, pos, state)
        return pos

    def _between(self, buffer: bytearray, pos: int, state: int) -> int:
        """Read the byte at ``pos`` outside any element; the next position."""
        byte = buffer[pos]
        if state == _BEFORE_ARRAY:
            if byte != 0x5B:
                raise self._malformed(buffer, pos, "does not start with '['")
            self._state = _FIRST
            return pos + 1
        if state == _AFTER:
            if byte == 0x2C:  # ,
                self._state = _NEXT
            elif byte == 0x5D:  # ]
                self._state = _DONE
            else:
                raise self._malformed(buffer, pos, "has no comma between two elements")
            return pos + 1
        if state == _DONE:
            raise self._malformed(buffer, pos, "goes on after its closing ']'")
        if byte == 0x5D and state == _FIRST:  # an empty array
            self._state = _DONE
            return pos + 1
        self._start = pos
        if byte in (0x7B, 0x5B):
            self._state, self._depth = _CONTAINER, 1
        elif byte == 0x22:
            self._state, self._depth = _STRING, 0
        elif byte in _SCALAR_START:
            self._state = _SCALAR
            return pos  # the scalar's first byte is read again as part of it
        else:
            raise self._malformed(buffer, pos, "has something that is not a JSON value where an element belongs")
        return pos + 1

    def _emit(self, buffer: bytearray, end: int, elements: list[bytes]) -> None:
        if end - self._start > self.max_bytes:
            raise frame_too_large("array element", self.max_bytes, bytes(buffer[self._start : self._start + 512]))
        elements.append(bytes(buffer[self._start : end]))
        self._state = _AFTER

    def _malformed(self, buffer: bytearray, pos: int, what: str) -> UpstreamError:
        error = UpstreamError(f"the upstream's JSON array stream {what}")
        error.upstream_body = excerpt(bytes(buffer[max(0, pos - 200) : pos + 200]))
        return error
