"""One gateway's share of the state in Redis (the ``redis`` shared-state kind, :mod:`.kind`)."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import attrs
import redis.asyncio as aioredis

from gateway_core.routing.affinity import Affinity
from gateway_core.config import Config
from gateway_core.ratelimit.faults import CHANNEL_CONCURRENCY, RATE_LIMITS
from gateway_core.shared import events
from gateway_core.shared_state import Publish, SharedState

from .affinity import RedisAffinity
from .bus import RedisBus
from .faults import RedisFaults
from .health import SharedHealth
from .limiter import RedisRateLimiter, connect
from .resp import RespClient
from .signin import RedisSignInThrottle

if TYPE_CHECKING:
    from gateway_core.gateway import Gateway
    from gateway_core.routing.health import HealthBoard
    from gateway_core.routing.router import Router


@attrs.define
class RedisState(SharedState):
    """One gateway's connection to Redis and what it shares through it."""

    client: aioredis.Redis  # pub/sub, breakers, sign-in (redis-py)
    scripts: RespClient  # the request path's scripts: limits and channel slots (one pipelined connection)
    bus: RedisBus
    health: SharedHealth
    faults: RedisFaults
    signin: RedisSignInThrottle
    redeem: RedisSignInThrottle  # redemption-code attempts: the same counters in their own namespace
    rate_limiter: RedisRateLimiter  # the key and user limits, on the scripts' connection
    prefix: str

    @classmethod
    def open(cls, config: Config, board: HealthBoard, router: Router) -> RedisState:
        assert config.redis is not None
        faults = RedisFaults(config.redis_faults)
        client = connect(config.redis)
        scripts = RespClient(config.redis)
        origin = uuid.uuid4().hex
        slots = RedisRateLimiter(
            scripts, prefix=config.redis_prefix, faults=faults, kind=CHANNEL_CONCURRENCY,
            fail_open=faults.fails_open(CHANNEL_CONCURRENCY),
        )  # fmt: skip
        health = SharedHealth(board, client, config.redis_prefix, slots=slots, faults=faults, origin=origin, find_key=router.secret_of)
        board.shared = health
        bus = RedisBus(client, config.redis_prefix, origin=origin)
        return cls(
            client=client, scripts=scripts, bus=bus, health=health, faults=faults,
            signin=RedisSignInThrottle(client, config.redis_prefix, faults),
            redeem=RedisSignInThrottle(client, f"{config.redis_prefix}:redeem", faults),
            rate_limiter=RedisRateLimiter(scripts, prefix=config.redis_prefix, faults=faults, fail_open=faults.fails_open(RATE_LIMITS)),
            prefix=config.redis_prefix,
        )  # fmt: skip

    @property
    def publish(self) -> Publish:
        return self.bus.publish_nowait

    @property
    def unreachable(self) -> dict[tuple[str, str], int]:
        return self.faults.counts

    def affinity(self, config: Config) -> Affinity | None:
        if not config.session_affinity:
            return None
        return RedisAffinity(self.client, self.prefix, ttl=config.session_ttl, header=config.session_header or None)

    async def ping(self) -> None:
        await self.rate_limiter.ping()

    def start(self, gateway: Gateway) -> None:
        """Listen for invalidations and breaker changes (a task; reconnects by itself)."""
        origin = self.bus.origin

        async def connected() -> None:
            events.forget_everything(gateway)  # what changed while not listening
            await self.health.resync.run()

        self.bus.listen(lambda event: events.apply(gateway, event, origin), connected)
        self.health.report_in_flight()

    async def close(self) -> None:
        await self.bus.close()
        await self.health.close()
        await self.health.slots.close()
        await self.scripts.close()
        await self.client.aclose()
