"""Invalidation messages on Redis pub/sub: published by whoever changes something,
heard by every gateway.

:meth:`RedisBus.publish_nowait` never waits: messages are queued and sent in
order by one task (:meth:`RedisBus.flush` waits for them, as the CLI does
before it exits). Redis unreachable, the queue is dropped with a warning:
running gateways see the change within their caches' one-second lifetime.

:meth:`RedisBus.listen` runs the subscriber: a task that receives messages on
``{prefix}:events`` and hands each to a callback; when the connection is lost
it reconnects by itself (every 0.2 s to 2 s), and after each (re)connection
calls ``on_connect`` so the gateway can forget what it may have missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import redis.asyncio as aioredis
import structlog

from .limiter import UNREACHABLE, connect

log = structlog.get_logger("relaygate.shared")

RECONNECT_FIRST, RECONNECT_MAX = 0.2, 2.0


class RedisBus:
    def __init__(self, client: aioredis.Redis, prefix: str, *, origin: str | None = None) -> None:
        self._client = client
        self.channel = f"{prefix}:events"
        self.origin = origin or uuid.uuid4().hex  # this process's (or app's) name in its messages
        self._pending: deque[bytes] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()  # set while the subscriber is subscribed
        self.published = 0
        self.received = 0

    # --- publishing ---------------------------------------------------------------

    def publish_nowait(self, event: dict[str, Any]) -> None:
        """Queue ``event`` (with this origin) for every gateway; sent in order."""
        self._pending.append(orjson.dumps({**event, "o": self.origin}))
        if self._sender is None or self._sender.done():
            self._sender = asyncio.get_running_loop().create_task(self._send(), name="relaygate-events-publish")

    async def _send(self) -> None:
        while self._pending:
            try:
                await self._client.publish(self.channel, self._pending[0])
            except UNREACHABLE as error:
                dropped = len(self._pending)
                self._pending.clear()
                log.warning("redis unreachable: invalidation not published; gateways see the change within a second",
                            dropped=dropped, error=f"{type(error).__name__}: {error}")  # fmt: skip
                return
            self._pending.popleft()
            self.published += 1

    async def flush(self) -> None:
        """Wait until every queued message is published (or dropped)."""
        sender = self._sender
        if sender is not None:
            await asyncio.shield(sender)

    # --- listening ----------------------------------------------------------------

    def listen(self, handle: Callable[[dict[str, Any]], None], on_connect: Callable[[], Awaitable[None]]) -> None:
        """Start the subscriber task (once)."""
        if self._listener is None:
            self._listener = asyncio.get_running_loop().create_task(self._listen(handle, on_connect), name="relaygate-events")

    async def _listen(self, handle: Callable[[dict[str, Any]], None], on_connect: Callable[[], Awaitable[None]]) -> None:
        delay = RECONNECT_FIRST
        while True:
            pubsub = self._client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(self.channel)
                await on_connect()
                self.connected.set()
                delay = RECONNECT_FIRST
                while True:
                    received = await pubsub.get_message(timeout=1.0)
                    if received is not None:
                        self._deliver(handle, received.get("data"))
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001 - whatever broke the connection, subscribe again
                if self.connected.is_set():
                    log.warning("redis unreachable: invalidations paused, reconnecting", error=f"{type(error).__name__}: {error}")
                self.connected.clear()
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(delay)
            delay = min(delay * 2, RECONNECT_MAX)

    def _deliver(self, handle: Callable[[dict[str, Any]], None], data: object) -> None:
        self.received += 1
        try:
            event = orjson.loads(data) if isinstance(data, (bytes, str)) else None
            if isinstance(event, dict):
                handle(event)
        except Exception:  # noqa: BLE001 - one bad message must not stop the subscriber
            log.exception("invalidation message not applied", data=repr(data)[:200])

    async def close(self) -> None:
        """Stop listening; publish what is queued first."""
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.flush(), timeout=2.0)
        if self._listener is not None:
            self._listener.cancel()
            await asyncio.gather(self._listener, return_exceptions=True)
            self._listener = None


@contextlib.asynccontextmanager
async def publisher(url: str, prefix: str) -> AsyncIterator[Callable[[dict[str, Any]], None]]:
    """``publish_nowait`` of a bus on its own connection, for a process that only
    changes things (the CLI); what was queued is published on the way out."""
    client = connect(url)
    bus = RedisBus(client, prefix)
    try:
        yield bus.publish_nowait
    finally:
        await bus.close()
        await client.aclose()
