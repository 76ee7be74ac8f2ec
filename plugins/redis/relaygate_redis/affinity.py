"""Session affinity shared by every replica through Redis (``[gateway]
session_affinity`` with Redis configured): see :mod:`gateway_core.routing.affinity`."""

from __future__ import annotations

import asyncio
from typing import Any

import redis.asyncio as aioredis
import structlog

from gateway_core.routing.affinity import Place

log = structlog.get_logger("relaygate.affinity")


class RedisAffinity:
    """Sessions shared by every replica through Redis keys that expire."""

    def __init__(self, client: aioredis.Redis, prefix: str, *, ttl: float, header: str | None) -> None:
        self._client = client
        self._prefix = f"{prefix}:af:"
        self.ttl_ms = max(1, int(ttl * 1000))
        self.header = header
        self._tasks: set[asyncio.Task[Any]] = set()
        self.unreachable = 0  # times Redis did not answer (the request was routed as usual)

    async def recall(self, digest: str) -> Place | None:
        try:
            value = await self._client.getex(self._prefix + digest, px=self.ttl_ms)
        except Exception as error:  # unreachable, or refused (GETEX needs Redis 6.2): an optimisation, not a failure
            self._unreachable(error)
            return None
        if not value:
            return None
        channel, _, fingerprint = (value.decode() if isinstance(value, bytes) else str(value)).partition(":")
        return (int(channel), fingerprint) if channel.isdigit() and fingerprint else None

    def remember(self, digest: str, place: Place) -> None:
        self._spawn(self._client.set(self._prefix + digest, f"{place[0]}:{place[1]}", px=self.ttl_ms))

    def forget(self, digest: str) -> None:
        self._spawn(self._client.delete(self._prefix + digest))

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(self._quietly(work))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _quietly(self, work: Any) -> None:
        try:
            await work
        except Exception as error:  # as in recall
            self._unreachable(error)

    def _unreachable(self, error: BaseException) -> None:
        self.unreachable += 1
        if self.unreachable == 1 or self.unreachable % 1000 == 0:
            log.warning("session affinity: Redis did not answer; routing as usual", error=repr(error), times=self.unreachable)

    async def close(self) -> None:
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
