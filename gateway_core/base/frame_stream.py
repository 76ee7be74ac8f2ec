"""A streamed upstream response cut into frames as it arrives (see
:func:`gateway_core.upstream.sse_frames` and its siblings, which make one)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Protocol

import aiohttp

from ..client_protocol import Frame
from .coarse_timers import Timer, timers_of
from ..errors import UpstreamError, UpstreamTimeoutError


class Splitter(Protocol):
    """Cuts a streamed body into frames (see :mod:`gateway_core.framing`)."""

    def feed(self, chunk: bytes) -> Iterable[bytes]: ...

    def flush(self) -> bytes: ...


class FrameStream:
    """The frames of a streamed response: an async iterator of frames (what a
    channel type returns in its ``StreamReply``), and :meth:`next_read`, the
    same frames grouped by the upstream read that completed them, which the
    relay uses to write each read to the client in one send. ``aclose`` stops it
    (and closes the upstream connection when the body was not read to its end).

    A frame that fails to decode (or to split) ends the stream with its error,
    after the frames of the same read before it. A silent or dropped upstream
    ends it with an upstream error. Each read is one await on the response's
    body, its frames split and decoded at once: nothing waits for more bytes.

    The upstream's idle timeout (aiohttp's read timeout, which re-arms a loop
    timer at every packet) is taken over by a coarse timer of the stream's own
    (:class:`IdleWatch`): a read notes when it began waiting, and the timer, which
    wakes once per timeout, ends a read that has waited the whole timeout.
    """

    __slots__ = ("_response", "_readany", "_splitter", "_decode", "_terminator", "_pending", "_next", "_held", "_ended", "_idle")

    def __init__(self, response: aiohttp.ClientResponse, splitter: Splitter, decode: Callable[[bytes], Frame], terminator: bytes) -> None:
        self._response = response
        self._readany = response.content.readany
        self._splitter = splitter
        self._decode = decode
        self._terminator = terminator
        self._pending: list[Frame] = []  # frames of the current read not yet taken one by one
        self._next = 0
        self._held: BaseException | None = None  # what broke a read whose frames before it went out first
        self._ended = False  # the response released (read to its end) or closed
        self._idle = IdleWatch.of(response)

    def __aiter__(self) -> FrameStream:
        return self

    async def __anext__(self) -> Frame:
        while self._next >= len(self._pending):
            self._pending, self._next = await self.next_read(), 0
        frame = self._pending[self._next]
        self._next += 1
        return frame

    async def next_read(self) -> list[Frame]:
        """The frames of the next upstream read not taken yet (never an empty
        list); ``StopAsyncIteration`` at the end, as ``__anext__``."""
        if self._next < len(self._pending):  # what ``__anext__`` left of a read
            rest = self._pending[self._next :] if self._next else self._pending
            self._pending, self._next = [], 0
            return rest
        if self._held is not None:
            error, self._held = self._held, None
            raise error
        if self._ended:
            raise StopAsyncIteration
        splitter, decode, idle = self._splitter, self._decode, self._idle
        while True:
            try:
                if idle is None:
                    chunk = await self._readany()
                else:
                    idle.since = idle.loop.time()
                    try:
                        chunk = await self._readany()
                    finally:
                        idle.since = 0.0
            except (TimeoutError, aiohttp.ServerTimeoutError):
                self._end(finished=False)
                raise UpstreamTimeoutError("the upstream went silent in the middle of the stream") from None
            except (aiohttp.ClientError, ConnectionError) as exc:
                self._end(finished=False)
                raise UpstreamError(
                    f"the upstream connection dropped in the middle of the stream ({type(exc).__name__})"
                ) from None
            except BaseException:  # cancelled
                self._end(finished=False)
                raise
            if not chunk:
                return self._last()
            frames: list[Frame] = []
            try:
                for raw in splitter.feed(chunk):
                    frames.append(decode(raw))
            except Exception as error:
                self._end(finished=False)
                if not frames:
                    raise
                self._held = error  # the frames before the one that failed still go out first
            if frames:
                return frames

    async def aclose(self) -> None:
        if not self._ended:
            self._end(finished=False)

    def _last(self) -> list[Frame]:
        """The frame an unterminated end of the body holds; the end of the stream."""
        try:
            rest = self._splitter.flush()
            frames = [self._decode(rest + self._terminator)] if rest.strip() else None
        except BaseException:
            self._end(finished=False)
            raise
        self._end(finished=True)
        if frames is None:
            raise StopAsyncIteration
        return frames

    def _end(self, finished: bool) -> None:
        # a stream left half-read cannot go back to the pool: close its connection
        self._ended = True
        if self._idle is not None:
            self._idle.close()
        if finished:
            self._response.release()
        else:
            self._response.close()


class IdleWatch:
    """Ends a read of a response's body that waited ``timeout`` seconds (see
    :class:`FrameStream`): the reader sets ``since`` (loop time) while it waits."""

    __slots__ = ("loop", "since", "_content", "_timeout", "_timer")

    def __init__(self, content: aiohttp.StreamReader, timeout: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.since = 0.0  # when the read in progress began waiting (0: none)
        self._content = content
        self._timeout = timeout
        self._timer: Timer | None = timers_of(self.loop).after(timeout, self._check)

    @classmethod
    def of(cls, response: aiohttp.ClientResponse) -> IdleWatch | None:
        """The watch that takes over ``response``'s read timeout (``None`` when it has none)."""
        connection = getattr(response, "connection", None)  # (a stand-in response has none)
        protocol = connection.protocol if connection is not None else None
        timeout = protocol.read_timeout if protocol is not None else None
        if protocol is None or not timeout:
            return None
        protocol.read_timeout = None
        protocol.start_timeout()  # disarms aiohttp's timer
        return cls(response.content, timeout)

    def _check(self) -> None:
        since, now = self.since, self.loop.time()
        if since and now - since >= self._timeout:
            self._timer = None
            self._content.set_exception(aiohttp.ServerTimeoutError("Timeout on reading data from socket"))
            return
        self._timer = timers_of(self.loop).after(self._timeout - (now - since) if since else self._timeout, self._check)

    def close(self) -> None:
        if self._timer is not None:
            timers_of(self.loop).cancel(self._timer)
            self._timer = None


def read_by_read(frames: AsyncIterator[Frame]) -> Callable[[], Awaitable[list[Frame]]]:
    """How to take ``frames`` one upstream read at a time: a :class:`FrameStream`'s
    reads, any other iterator's frames one by one (``StopAsyncIteration`` at the end)."""
    if isinstance(frames, FrameStream):
        return frames.next_read

    async def next_read() -> list[Frame]:
        return [await frames.__anext__()]

    return next_read
