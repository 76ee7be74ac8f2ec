"""The ``Gateway`` Protocol: what policies and plugin routes may use of a gateway.

A policy's ``admit(ctx, gateway)`` and ``finish(ctx, gateway)`` and a plugin
route (``services_from_scope(scope)``) get an object of this shape; the app's
composition root (``gateway_core.runtime.services.Services``, internal) satisfies it
structurally and mypy checks that it does. Each member is read-only here: a
policy reads the gateway, it never rewires it. Members not named here are
internal and may change without notice.

Like the rest of the contract, this module names no concrete part of the app in
its hints: the channels' health and what the plugins registered are the small
Protocols below (the ``HealthBoard`` and ``Registry`` of ``gateway_core.routing``
and ``gateway_core.runtime`` satisfy them), so the modules these parts are built
from can name ``Gateway`` without an import circle (``tests/test_architecture.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import aiohttp

    from .admin.port import AdminStore
    from .base.asgi import ClientAddress
    from .channel_type import ChannelType
    from .config import Config
    from .request.key_cache import KeyCache
    from .ratelimit import RateLimiter
    from .ratelimit.signin import SignInThrottle
    from .sign_in import SessionReader
    from .store.request_store import PriceSnapshot, RequestStore
    from .routing.router import Router
    from .routing.snapshot import TtlSnapshot
    from .sql import SqlHandle


class SharedHealthView(Protocol):
    """Channel health shared across replicas, as the gateway's users see it (the
    whole port is ``gateway_core.shared_state.SharedChannelHealth``)."""

    def counts_with(self, limiter: object) -> bool:
        """Whether the request limits of ``limiter`` are taken with a channel's slot."""

    def apply(self, event: dict[str, Any]) -> None:
        """Another replica's message (a breaker, a count, a key refused)."""

    async def in_flight(self) -> dict[int, int]:
        """Requests in flight per channel in every worker and replica."""


class ChannelHealthView(Protocol):
    """The channels' breakers and in-flight counts of this worker."""

    @property
    def shared(self) -> SharedHealthView | None:
        """The health shared across workers and replicas (``None``: this worker's only)."""

    def in_flight(self) -> dict[int, int]:
        """Requests in flight per channel in this worker."""


class Registrations(Protocol):
    """What the plugins registered, as policies and plugin routes may read it."""

    @property
    def channel_types(self) -> Mapping[str, ChannelType]:
        """Channel types by name."""

    @property
    def keyless_channel_types(self) -> frozenset[str]:
        """The channel types whose channels need no upstream key."""

    @property
    def session_readers(self) -> Sequence[SessionReader]:
        """The sign-in session readers (the console's, for the management API)."""


class Gateway(Protocol):
    """The gateway as policies and plugin routes see it."""

    @property
    def config(self) -> Config:
        """The gateway's configuration."""

    @property
    def clock(self) -> Callable[[], float]:
        """Unix time now (budgets' windows; tests move it)."""

    @property
    def router(self) -> Router:
        """The model lookup: ``await router.index()`` (channels by group and model),
        ``router.known_model(name)``, ``router.invalidate()`` after a channel write."""

    @property
    def sql(self) -> SqlHandle:
        """SQL on a plugin's own tables (``gateway_core.sql``)."""

    @property
    def admin(self) -> AdminStore:
        """The admin layer's port (``gateway_core.admin``)."""

    @property
    def rate_limiter(self) -> RateLimiter:
        """Rate limits and concurrency slots (in-process, or shared across workers)."""

    @property
    def prices(self) -> TtlSnapshot[PriceSnapshot] | None:
        """Prices and group ratios, cached; ``invalidate()`` after a price write."""

    @property
    def store(self) -> RequestStore:
        """The request path's store port: holds, settlements, price snapshots."""

    @property
    def keys(self) -> KeyCache:
        """API keys by hash, cached."""

    @property
    def health(self) -> ChannelHealthView:
        """Channels' breakers and in-flight counts (``health.shared`` across workers)."""

    @property
    def registry(self) -> Registrations:
        """What the plugins registered: channel types, session readers."""

    @property
    def client_address(self) -> ClientAddress:
        """A request's client address, through the trusted proxies."""

    @property
    def session(self) -> aiohttp.ClientSession | None:
        """The worker's shared upstream HTTP session (``None`` before start-up)."""

    @property
    def signin(self) -> SignInThrottle:
        """Console sign-in attempts."""

    @property
    def redeem(self) -> SignInThrottle:
        """Redemption-code attempts."""

    @property
    def publish_invalidation(self) -> Callable[[dict[str, Any]], None] | None:
        """Tells the other workers a cache is stale (``None`` without shared state)."""
