"""A load generator that costs little: raw asyncio protocols on keep-alive
connections, one prebuilt request, answers read by their ``Content-Length``.

``bench/loadgen.py`` (aiohttp) costs about 0.16 ms of CPU per request, as much
as a fifth of what the gateway spends. That is fine beside one gateway process,
which has a CPU of its own, but on a two-CPU machine where two gateway workers
share both CPUs with the load, the load generator's CPU would be taken from
them. This one spends about a tenth of that: each connection writes the same
bytes and parses only the status line and ``Content-Length`` of each answer (a
non-streaming chat answer, which the gateway sends with a length), then checks
that the body is a chat completion. It serves ``bench/workers_scaling.py``.
"""

from __future__ import annotations

import asyncio
import time
from urllib.parse import urlsplit

from loadgen import REQUEST_ID, Budget, Recorder

HEAD_END = b"\r\n\r\n"
LENGTH = b"\r\ncontent-length:"


def raw_request(url: str, api_key: str, body: bytes) -> bytes:
    """The bytes of one keep-alive ``POST`` of ``body`` to ``url``."""
    parts = urlsplit(url)
    head = (
        f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {api_key}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class _Connection(asyncio.Protocol):
    """One connection of the closed loop: sends the next request once an answer is whole."""

    def __init__(self, request: bytes, budget: Budget, rec: Recorder | None, finished: asyncio.Future[bool]) -> None:
        self.request, self.budget, self.rec, self.finished = request, budget, rec, finished
        self.buffer = bytearray()
        self.started = 0
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's TCP transport
        self._next()

    def _next(self) -> None:
        if not self.budget.take():
            self._end(True)
            return
        self.started = time.perf_counter_ns()
        assert self.transport is not None
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        end = buffer.find(HEAD_END)
        if end < 0:
            return
        head = bytes(buffer[:end]).lower()
        at = head.find(LENGTH)
        if at < 0:
            self._failed("an answer without content-length")
            return
        stop = head.find(b"\r\n", at + 2)
        length = int(head[at + len(LENGTH) : stop if stop > 0 else len(head)])
        whole = end + 4 + length
        if len(buffer) < whole:
            return
        status, body = head[9:12], bytes(buffer[end + 4 : whole])
        del buffer[:whole]
        if status != b"200":
            self._record(f"HTTP {status.decode()}: {body[:160].decode('utf-8', 'replace')}")
        elif not body.startswith(b"{") or b'"choices"' not in body:
            self._record(f"not a chat completion: {body[:160].decode('utf-8', 'replace')}")
        else:
            self._record(None)
        self._next()

    def _record(self, error: str | None) -> None:
        if self.rec is None:
            return
        if error is None:
            self.rec.latencies.append(time.perf_counter_ns() - self.started)
        else:
            self.rec.errors[REQUEST_ID.sub("req_…", error)] += 1

    def _failed(self, error: str) -> None:
        self._record(error)
        self._end(False)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.finished.done():  # the server closed it with an answer owed
            self._record(f"connection lost: {exc or 'closed by the server'}")
            self.finished.set_result(False)

    def _end(self, budget_spent: bool) -> None:
        if not self.finished.done():
            self.finished.set_result(budget_spent)
        if self.transport is not None:
            self.transport.close()


async def raw_closed_loop(url: str, api_key: str, body: bytes, concurrency: int, budget: Budget, rec: Recorder | None) -> None:
    """``concurrency`` connections, each sending the next request as soon as the
    last answer is whole, until ``budget`` runs out. A connection that fails is
    counted in ``rec`` and opened again while the budget lasts."""
    loop = asyncio.get_running_loop()
    request = raw_request(url, api_key, body)
    parts = urlsplit(url)

    async def connection() -> None:
        budget_spent = False
        while not budget_spent:
            finished: asyncio.Future[bool] = loop.create_future()
            try:
                await loop.create_connection(lambda: _Connection(request, budget, rec, finished), parts.hostname, parts.port)
            except OSError as exc:
                if rec is not None:
                    rec.errors[f"connect: {exc}"] += 1
                return
            budget_spent = await finished

    await asyncio.gather(*(connection() for _ in range(concurrency)))
