"""The two shared-state kinds the core registers through ``register_shared_state``:
in this process (the default) and Redis (``[gateway] redis``; redis-py is
imported only when it is configured)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from ..config import Config
from ..hookspecs import hookimpl
from ..shared_state import Publish, SharedState, SharedStateKind
from .in_process import InProcessKind

if TYPE_CHECKING:
    from ..health import HealthBoard
    from ..router import Router
    from ..hookspecs import RegisterSharedState


class RedisKind(SharedStateKind):
    """Limits, channel caps, breakers, sign-in counts, affinity and invalidations in Redis."""

    name = "redis"

    def wanted(self, config: Config) -> bool:
        return bool(config.redis)

    def open(self, config: Config, board: HealthBoard, router: Router) -> SharedState:
        from .setup import RedisState

        return RedisState.open(config, board, router)

    @asynccontextmanager
    async def publisher(self, config: Config) -> AsyncIterator[Publish | None]:
        from .bus import publisher

        assert config.redis is not None
        async with publisher(config.redis, config.redis_prefix) as publish:
            yield publish

    async def problem(self, config: Config) -> str | None:
        """``None`` when Redis answers a PING, else the one line to say."""
        from ..ratelimit.redis import RedisRateLimiter

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


BUILT_IN: tuple[SharedStateKind, ...] = (RedisKind(), InProcessKind())


@hookimpl
def register_shared_state(register: RegisterSharedState) -> None:
    for kind in BUILT_IN:
        register(kind)
