"""Serving the app with uvicorn (httptools) on uvloop: ``relaygate serve --server uvicorn``.

It keeps what the gateway does on hypercorn (:mod:`gateway_core.runtime.server`):

- **Shutdown.** No signal handlers of uvicorn's own: ``serve_until_stopped``
  drains and then sets ``stop``; the server stops accepting, closes idle
  connections, lets requests and streams finish for ``grace`` seconds, then
  cancels the rest *and waits for them* (a cut stream settles what it delivered
  and sends its protocol's error event) before the app's lifespan ends.
- **The HTTP layer's refusals** as JSON with a request id
  (:func:`gateway_core.runtime.http_errors.raw_answer`): 400 for a request that is not
  valid HTTP/1.1, 431 for headers over 16 KiB, 501 for a ``Transfer-Encoding``
  other than chunked.
- **Idle connections** close after ``KEEP_ALIVE`` (75) seconds without a
  request under way, counted from the connection's start or the last response,
  however slowly its next request's head trickles in (uvicorn's own timer
  restarts with every byte).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from typing import Any

import httptools
import structlog
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .http_errors import raw_answer

log = structlog.get_logger("relaygate.server")

KEEP_ALIVE = 75  # seconds, as on hypercorn
MAX_HEAD = 16 * 1024  # bytes of request line and headers, as hypercorn's h11 reads at most
BACKLOG = 1024
LINGER = 2.0  # seconds a refused client's connection stays open for it to read the answer


class _RequestRefused(Exception):
    def __init__(self, status: int) -> None:
        self.status = status


class GatewayHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the gateway's refusals and idle timeout."""

    _head = 0  # bytes of the current request's head read so far (None-free: 0 between heads)
    _in_head = True  # waiting for a request's head to complete
    _refused = False  # answered by the HTTP layer: the connection only closes

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._unset_keepalive_if_required()  # also after a reset (uvicorn's only after a clean close)

    def _arm_idle(self) -> None:
        self._unset_keepalive_if_required()
        self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive, self.timeout_keep_alive_handler)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # what a refused client still sends is read and dropped until it closes (or LINGER)
        # uvicorn cancels the idle timer on any byte; here only a complete head does (on_headers_complete)
        if self._in_head:
            self._head += len(data)
        try:
            self.parser.feed_data(data)
        except _RequestRefused as refusal:
            self._refuse(refusal.status)
            return
        except httptools.HttpParserUpgrade:
            self._unsupported_upgrade_warning()  # no WebSocket on the gateway's HTTP routes
            return
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            self._refuse(cause.status if isinstance(cause, _RequestRefused) else _status_of(exc))
            return
        if self._in_head and self._head > MAX_HEAD:
            self._refuse(431)

    def _refuse(self, status: int) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and cycle.response_started:
            self.transport.close()  # an answer is under way: only closing is left
            return
        if cycle is not None:  # the app, reading the body, sees the client gone; what it sends is dropped
            cycle.disconnected = True
            cycle.message_event.set()
        self.transport.write(raw_answer(status, self.client, self.server_state.default_headers))
        self.linger()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_HEAD:
            raise _RequestRefused(431)

    def on_header(self, name: bytes, value: bytes) -> None:
        if name.lower() == b"transfer-encoding" and value.strip().lower() != b"chunked":
            raise _RequestRefused(501)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers)
        if size > MAX_HEAD:
            raise _RequestRefused(431)
        self._in_head = False
        self._head = 0
        self._unset_keepalive_if_required()  # a request is under way: no idle timeout until its answer ends
        super().on_headers_complete()
        if self.cycle is not None:  # uvicorn closes the connection after a closing answer: see _EarlyAnswerClose
            self.cycle.transport = _EarlyAnswerClose(self.transport, self)  # type: ignore[assignment]  # a proxy of it

    def linger(self) -> None:
        """End the writing side, drop what the client still sends, close when it does
        (or after LINGER): closing with unread bytes would reset the connection, and
        the client might lose the answer."""
        self._refused = True
        self._unset_keepalive_if_required()
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER, self.transport.close)


class _EarlyAnswerClose:
    """The transport as one request's cycle sees it. uvicorn closes the connection
    as soon as an answer that ends it is sent; when the request's body has not all
    arrived (an answer given early: 413, 408), the client is still sending, and that
    close would reset the connection under the answer. Such a close lingers instead
    (:meth:`GatewayHttpProtocol.linger`); every other call goes to the transport."""

    __slots__ = ("_transport", "_protocol")

    def __init__(self, transport: asyncio.Transport, protocol: GatewayHttpProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def close(self) -> None:
        cycle = self._protocol.cycle
        if cycle is not None and cycle.more_body and not self._transport.is_closing():
            self._protocol.linger()
        else:
            self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _status_of(error: httptools.HttpParserError) -> int:
    text = str(error).lower()
    return 501 if "transfer-encoding" in text else 431 if "header overflow" in text else 400


def uvicorn_config(app: Any, *, host: str = "127.0.0.1", port: int = 8080) -> uvicorn.Config:
    """uvicorn's settings for one serving process (the event loop is the caller's: uvloop)."""
    return uvicorn.Config(
        app, host=host, port=port, loop="none", http=GatewayHttpProtocol, ws="none", lifespan="on", interface="asgi3",
        access_log=False, log_config=None, timeout_keep_alive=KEEP_ALIVE,
        backlog=BACKLOG, server_header=False,
    )  # fmt: skip


class GatewayServer(uvicorn.Server):
    """uvicorn's server without its signal handlers, whose shutdown gives requests
    ``grace`` seconds and waits for the ones it cuts."""

    def __init__(self, config: uvicorn.Config, grace: float, stop: asyncio.Event) -> None:
        super().__init__(config)
        self.grace = grace
        self.stop = stop

    async def main_loop(self) -> None:
        """Until ``stop``: the ``Date`` header refreshed once a second (uvicorn's
        own loop wakes ten times a second to look at ``should_exit``)."""
        while not await self.on_tick(0):
            try:
                await asyncio.wait_for(self.stop.wait(), 1.0)
            except asyncio.TimeoutError:
                continue
            self.should_exit = True

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Stop accepting, close idle connections, give the rest ``grace`` seconds,
        cut what is left and wait for it, then end the app's lifespan."""
        for server in self.servers:
            server.close()
        for sock in sockets or ():
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle: closed; busy: closed after its answer
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        while (state.connections or state.tasks) and loop.time() < deadline:
            await asyncio.sleep(0.05)
        cut = [task for task in state.tasks if not task.done()]
        if cut:  # each settles and records itself, and a stream sends its error event
            log.warning("shutdown grace over: cutting requests", requests=len(cut))
            for task in cut:
                task.cancel()
            await asyncio.wait(cut)
        for connection in list(state.connections):
            connection.transport.close()
        await self.lifespan.shutdown()


async def serve_uvicorn(config: uvicorn.Config, stop: asyncio.Event, *, grace: float, sockets: list[socket.socket] | None = None) -> None:
    """Serve until ``stop`` is set (on ``config``'s host and port, or on ``sockets``)."""
    await GatewayServer(config, grace, stop).serve(sockets)
