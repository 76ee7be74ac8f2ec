"""Fake upstreams for tests: aiohttp apps that speak a provider's real wire format.

:class:`FakeUpstream` holds what every fake shares: it records each request it
received, checks the key the gateway sent, plays the faults a test queued
(:class:`Fault`: an error status, a slow first byte, a stream dropped or broken
mid-way, a malformed body) and writes streams chunk by chunk. A subclass adds
its routes and its wire's shapes (error bodies, the mid-stream error event).
:class:`UpstreamServers` serves fakes on loopback ports; the ``fake_upstream``
fixture of :mod:`gateway_core.testing.pytest_plugin` is built on it.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import attrs
import orjson
from aiohttp import web
from aiohttp.test_utils import TestServer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@attrs.define
class Fault:
    """What a fake upstream does instead of answering normally, for one request.

    - ``status``: answer this error status, with ``body`` (bytes as they are,
      anything else as JSON) or the fake's own error body for that status.
    - ``headers``: headers of that error answer (``retry-after`` …).
    - ``first_byte_delay``: seconds to wait before answering at all.
    - ``drop_after``: close the connection after this many chunks of a stream.
    - ``error_after``: send the wire's error event after this many chunks, then end.
    - ``malformed``: a complete answer that is not valid JSON; in a stream, the
      second chunk replaced by one that is not.
    """

    status: int | None = None
    body: Any = None
    headers: dict[str, str] = attrs.field(factory=dict)
    first_byte_delay: float = 0.0
    drop_after: int | None = None
    error_after: int | None = None
    malformed: bool = False


@attrs.define
class FakeUpstream:
    """The base of a fake upstream. A subclass implements :meth:`add_routes` and,
    for its wire, :meth:`check` (the key), :meth:`error_body` and
    :attr:`error_event`; its handlers call :meth:`admit` first.

    ``api_key`` is the key the fake accepts (``None``: any); ``chunk_delay`` the
    pause between stream chunks; ``requests`` every request received (``headers``,
    ``body``, ``path`` and what the subclass adds); ``cancelled`` how many handlers
    the gateway hung up on; ``requests_in_flight`` the requests being answered
    now and ``most_in_flight`` the most at once (a concurrency cap, seen from
    upstream); ``url``
    where it is served (set by :class:`UpstreamServers`).
    """

    api_key: str | None = "sk-upstream-test"
    chunk_delay: float = 0.0
    requests: list[dict[str, Any]] = attrs.field(factory=list)
    faults: deque[Fault] = attrs.field(factory=deque)
    cancelled: int = 0
    requests_in_flight: int = 0
    most_in_flight: int = 0
    url: str = ""

    malformed_body = b'{"id": "broken", "choices": ['
    malformed_chunk = b"data: {not json}\n\n"
    error_event = b'data: {"error": {"message": "fake failure mid-stream", "type": "server_error"}}\n\n'

    def fail_next(self, *faults: Fault) -> None:
        """Play these faults on the next requests, one each, in order."""
        self.faults.extend(faults)

    def app(self) -> web.Application:
        app = web.Application(client_max_size=1024**3, middlewares=[self._observe])
        self.add_routes(app.router)
        return app

    def add_routes(self, router: web.UrlDispatcher) -> None:
        raise NotImplementedError(f"{type(self).__name__} must add its routes")

    # --- the wire's shapes (override) -------------------------------------------

    def check(self, request: web.Request, body: Any) -> web.Response | None:
        """An answer refusing the request before any fault (a wrong key, a missing
        field …), or ``None``. The default accepts ``Authorization: Bearer <api_key>``."""
        if self.api_key is not None and request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self.error(401, "Incorrect API key provided.")
        return None

    def error_body(self, status: int, message: str) -> Any:
        """The JSON body of an error answer in this wire's shape."""
        return {"error": {"message": message, "type": "server_error" if status >= 500 else "invalid_request_error"}}

    # --- for handlers -------------------------------------------------------------

    async def admit(self, request: web.Request, body: Any, **extra: Any) -> tuple[Fault, web.Response | None]:
        """Record the request, check it and take the next fault: the fault to play
        and, when the request is answered at once (refused, an error status), that
        answer."""
        self.requests.append({"headers": dict(request.headers), "body": body, "path": request.path_qs, **extra})
        refused = self.check(request, body)
        if refused is not None:
            return Fault(), refused
        fault = self.faults.popleft() if self.faults else Fault()
        if fault.first_byte_delay:
            await asyncio.sleep(fault.first_byte_delay)
        if fault.status is None:
            return fault, None
        if fault.body is None:
            return fault, self.error(fault.status, f"fake failure {fault.status}", fault.headers)
        data = fault.body if isinstance(fault.body, bytes) else orjson.dumps(fault.body)
        return fault, web.Response(status=fault.status, body=data, headers=fault.headers, content_type="application/json")

    def error(self, status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
        body = orjson.dumps(self.error_body(status, message))
        return web.Response(status=status, body=body, headers=headers, content_type="application/json")

    def answer(self, payload: Any, fault: Fault | None = None) -> web.Response:
        """A JSON answer (or, for a ``malformed`` fault, a body cut short)."""
        body = self.malformed_body if fault is not None and fault.malformed else orjson.dumps(payload)
        return web.Response(body=body, content_type="application/json")

    async def stream(
        self,
        request: web.Request,
        chunks: Iterable[bytes],
        fault: Fault,
        *,
        content_type: str = "text/event-stream",
        end: bytes = b"",
        malformed_chunk: bytes | None = None,
    ) -> web.StreamResponse:
        """Write ``chunks`` one by one (``chunk_delay`` apart), then ``end``,
        playing the stream faults of ``fault``."""
        response = web.StreamResponse(headers={"Content-Type": content_type, "Cache-Control": "no-cache"})
        await response.prepare(request)
        for n, chunk in enumerate(chunks):
            if fault.drop_after == n:
                assert request.transport is not None
                request.transport.close()
                return response
            if fault.error_after == n:
                await response.write(self.error_event)
                await response.write_eof()
                return response
            if fault.malformed and n == 1:
                chunk = self.malformed_chunk if malformed_chunk is None else malformed_chunk
            await response.write(chunk)
            if self.chunk_delay:
                await asyncio.sleep(self.chunk_delay)
        if end:
            await response.write(end)
        await response.write_eof()
        return response

    @web.middleware
    async def _observe(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        self.requests_in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.requests_in_flight)
        try:
            return await handler(request)
        except asyncio.CancelledError:
            self.cancelled += 1  # the gateway hung up on this request
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # a body whose shape the fake cannot read: a provider validates and answers 400
            return self.error(400, f"fake upstream: invalid request ({type(exc).__name__}: {exc})")
        finally:
            self.requests_in_flight -= 1


Fake = TypeVar("Fake", bound=FakeUpstream)


class UpstreamServers:
    """Serves fake upstreams on loopback ports for as long as it is open."""

    def __init__(self) -> None:
        self._servers: list[TestServer] = []

    async def start(self, fake: Fake) -> Fake:
        """Serve ``fake`` on a free loopback port and set its ``url`` (no trailing slash)."""
        server = TestServer(fake.app(), host="127.0.0.1")
        await server.start_server()
        self._servers.append(server)
        fake.url = str(server.make_url("")).rstrip("/")
        return fake

    async def close(self) -> None:
        while self._servers:
            await self._servers.pop().close()

    async def __aenter__(self) -> UpstreamServers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
