"""Redis as a shared-state kind (``[gateway] redis``). Nothing here imports
redis-py until Redis is configured."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from gateway_core.config import Config
from gateway_core.shared_state import Publish, SharedState, SharedStateKind

if TYPE_CHECKING:
    from gateway_core.routing.health import HealthBoard
    from gateway_core.routing.router import Router


class RedisKind(SharedStateKind):
    """Limits, channel caps, breakers, sign-in counts, affinity and invalidations in Redis."""

    name = "redis"

    def wanted(self, config: Config) -> bool:
        return bool(config.redis)

    def open(self, config: Config, board: HealthBoard, router: Router) -> SharedState:
        from .state import RedisState

        return RedisState.open(config, board, router)

    @asynccontextmanager
    async def publisher(self, config: Config) -> AsyncIterator[Publish | None]:
        from .bus import publisher

        assert config.redis is not None
        async with publisher(config.redis, config.redis_prefix) as publish:
            yield publish

    async def problem(self, config: Config) -> str | None:
        """``None`` when Redis answers a PING, else the one line to say."""
        from .limiter import RedisRateLimiter

        url = config.redis
        assert url is not None
        limiter = RedisRateLimiter(url)
        try:
            await limiter.ping()
        except Exception as exc:
            return f"Redis at {url} is unreachable ({type(exc).__name__}: {exc}); start it or fix --redis / RELAYGATE_REDIS / [gateway] redis"
        finally:
            await limiter.close()
        return None
