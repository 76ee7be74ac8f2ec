"""The long-lived objects one app shares across its requests."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import aiohttp
import attrs

from ..base.asgi import ClientAddress
from ..billing.sweeper import HoldSweeper
from ..config import Config
from ..routing.health import HealthBoard
from ..request.key_cache import KeyCache
from ..routing.readiness import Readiness
from .retention_job import RetentionJob
from .registry import Registry
from ..policy import Pipeline
from ..ratelimit import RateLimiter
from ..ratelimit.memory import InProcessRateLimiter
from ..request.recorder import Recorder
from ..routing.router import Router
from ..admin import Admin
from ..admin.port import AdminStore
from ..routing.affinity import Affinity
from ..store.request_store import PriceSnapshot, RequestStore
from ..routing.snapshot import TtlSnapshot
from ..sql import SqlHandle
from ..kept_responses import ResponseStore
from ..ratelimit.signin import InProcessSignInThrottle, SignInThrottle
from ..shared.in_process import InProcessState
from ..request.observing import Observers
from ..shared_state import Publish, SharedState

if TYPE_CHECKING:
    from ..gateway import Gateway


@attrs.define
class Services:
    config: Config
    registry: Registry
    store: RequestStore
    keys: KeyCache
    router: Router
    pipeline: Pipeline
    recorder: Recorder
    client_address: ClientAddress
    admin: AdminStore  # the admin layer's port (gateway_core.admin)
    sql: SqlHandle  # plugins' own tables (gateway_core.sql)
    responses: ResponseStore  # answers protocols keep for their clients (gateway_core.kept_responses)
    session: aiohttp.ClientSession | None = None
    rate_limiter: RateLimiter = attrs.field(factory=InProcessRateLimiter)
    prices: TtlSnapshot[PriceSnapshot] | None = None  # prices and group ratios
    hold_sweeper: HoldSweeper | None = None
    health: HealthBoard = attrs.field(factory=HealthBoard)
    observers: Observers = attrs.field(factory=Observers)  # the plugins' metrics and traces (gateway_core.observers)
    readiness: Readiness = attrs.field(factory=Readiness)
    shared: SharedState = attrs.field(factory=InProcessState)  # what workers and replicas share (gateway_core.shared_state)
    signin: SignInThrottle = attrs.field(factory=InProcessSignInThrottle)  # console sign-in attempts
    redeem: SignInThrottle = attrs.field(factory=InProcessSignInThrottle)  # redemption-code attempts (gateway_core.admin.codes)
    clock: Callable[[], float] = time.time  # Unix time, for budgets' windows (tests move it)
    affinity: Affinity | None = None  # session affinity ([gateway] session_affinity; gateway_core.routing.affinity)
    retention: RetentionJob | None = None  # rolls the usage log up and prunes it ([retention]; gateway_core.runtime.retention_job)

    @property
    def publish_invalidation(self) -> Publish | None:
        """Queues a cache invalidation for the other workers (when the state is shared), else ``None``."""
        return self.shared.publish

    @classmethod
    def build(
        cls, config: Config, registry: Registry, *, store: RequestStore | None = None, rate_limiter: RateLimiter | None = None
    ) -> Services:
        """The services for ``config``; ``store`` and ``rate_limiter`` default to the
        ones the configuration names (the embedded store; limits in Redis when
        ``config.redis`` names it, else in this process); the observers are the
        registered ones' (``register_observers``: the metrics and tracing plugins)."""
        if store is None:
            kind = registry.store_kind(config.db_path)
            store = kind.open(config.db_path, registry.migrations, pool_size=config.db_pool_size, timeout=config.db_timeout)
        else:
            kind = registry.kind_of_store(store)
        from ..billing.catalogue import with_catalogue
        from ..store.sealing import default_key_file, use_key_file

        use_key_file(default_key_file(config.db_path))  # relaygate init's secret key, when no RELAYGATE_SECRET_KEY is set
        ports = kind.ports(store)
        admin, sql = ports.admin, ports.sql
        router = Router(
            store, registry.channel_types, timeouts=config.timeouts, hide_forbidden_models=config.hide_forbidden_models, fallbacks=admin.list_fallbacks
        )
        health = HealthBoard(
            failures=config.breaker_failures, cooldown=config.breaker_cooldown, store=store, last_resort=config.breaker_last_resort
        )
        shared = registry.shared_state_kind(config).open(config, health, router)  # redis-py loaded only for Redis
        services = cls(
            config=config,
            registry=registry,
            store=store,
            keys=KeyCache(store),
            router=router,
            health=health,
            shared=shared,
            signin=shared.signin,
            redeem=shared.redeem,
            pipeline=Pipeline(registry.policies),
            recorder=Recorder(store, locked_retry_seconds=config.locked_retry_seconds),
            client_address=ClientAddress(config.trusted_proxies),
            admin=admin,
            sql=sql,
            responses=ports.responses,
            rate_limiter=shared.rate_limiter if rate_limiter is None else rate_limiter,
            prices=TtlSnapshot(with_catalogue(store.price_snapshot) if config.price_catalogue else store.price_snapshot),
            affinity=shared.affinity(config),
            hold_sweeper=HoldSweeper(store, config.stale_hold_seconds, lease=config.hold_lease_seconds, replica=config.replica),
            retention=RetentionJob(Admin(admin, registry.channel_types), config.retention),
        )
        observers = (make(services) for make in registry.observers)
        services.observers = health.observers = Observers(observer for observer in observers if observer is not None)
        return services

    async def start(self) -> None:
        """Open the store and the shared upstream HTTP session (one per worker)."""
        await self.store.start()
        self.observers.start()
        await self.router.index()  # warns about channels whose type is not loaded
        if self.hold_sweeper is not None:
            await self.hold_sweeper.begin()  # this worker's holds are owned (and a dead one's released) before it serves
        self.shared.start(self)
        if self.retention is not None:
            self.retention.start()
        connector = aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60, ttl_dns_cache=300)
        self.session = aiohttp.ClientSession(
            connector=connector,
            timeout=aiohttp.ClientTimeout(total=None),
            auto_decompress=True,
            skip_auto_headers=("User-Agent",),
            # one session serves every client: a cookie one upstream answer set must not
            # ride along on the next client's requests (and no jar is kept per request)
            cookie_jar=aiohttp.DummyCookieJar(),
        )

    async def close(self) -> None:
        """Close upstream connections, then flush every pending write."""
        if self.session is not None:
            await self.session.close()
            self.session = None
        if self.hold_sweeper is not None:
            await self.hold_sweeper.stop()
        if self.retention is not None:
            await self.retention.stop()
        close = getattr(self.rate_limiter, "close", None)
        if close is not None:
            await close()
        if self.affinity is not None:
            await self.affinity.close()
        await self.shared.close()
        await self.store.close()
        await self.observers.close()



if TYPE_CHECKING:

    def _services_are_a_gateway(services: Services) -> Gateway:
        return services  # mypy checks that Services satisfies the Gateway Protocol
