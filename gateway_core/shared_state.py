"""What the workers and replicas of one gateway share, and through what: the
``register_shared_state`` hook.

A :class:`SharedStateKind` opens one gateway's :class:`SharedState`: its rate
limiter (limits and channel slots), the sign-in and redemption throttles, the
session-affinity table, the invalidations it tells the others about, and (on
``start``) whatever it listens to. The core registers the kind in this
process (the default: one worker alone); the first-party plugin
``relaygate-redis`` registers Redis (``[gateway] redis``): the first kind whose
``wanted(config)`` is true serves, else the default.

A kind that shares channel health across replicas sets the health board's
``shared`` to a :class:`SharedChannelHealth`: what the core asks it.
"""

from __future__ import annotations

import abc
import contextlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from .config import Config, ConfigError

if TYPE_CHECKING:
    from .routing.affinity import Affinity
    from .routing.breaker import Breaker
    from .gateway import Gateway
    from .routing.health import HealthBoard, Lease
    from .ratelimit import RateLimiter, SlotLimits
    from .ratelimit.signin import SignInThrottle
    from .routing.router import Router

Publish = Callable[[dict[str, Any]], None]
"""Queue one invalidation (``gateway_core.shared.events``) for the other gateways; never blocks."""


class SharedFailureCounts(Protocol):
    """A closed breaker's consecutive failures, counted across replicas."""

    def count(self, lease: Lease, slot: str, breaker: Breaker) -> None:
        """A failure of the closed ``breaker`` (``slot``: the channel's, or a key's
        fingerprint); the board hears the count (``HealthBoard.counted``)."""

    def reset(self, channel_id: int, slot: str) -> None:
        """A success where failures were counted: the count is dropped everywhere."""


class SharedChannelHealth(Protocol):
    """What the core asks of channel health shared across replicas (``HealthBoard.shared``):
    breakers, concurrency slots, the one half-open probe, requests in flight."""

    @property
    def failures(self) -> SharedFailureCounts: ...

    def counts_with(self, limiter: object) -> bool:
        """Whether the request limits of ``limiter`` can be taken with a channel's slot (:meth:`claim`)."""

    async def claim(self, lease: Lease, limits: SlotLimits | None = None) -> str | None:
        """Make ``lease`` hold across replicas (its probe claim, its slot, the request's
        ``limits`` still to take): ``None`` when it may go, else why not (the lease is
        then released). Raises a ``GatewayError`` (429, 503) as the limits say."""

    def released(self, lease: Lease) -> None:
        """The lease is given back: its slot, and its probe claim when the probe ended without an outcome."""

    def changed(self, lease: Lease, slot: str, breaker: Breaker, is_open: bool) -> None:
        """A breaker of this replica opened or closed: the others hear it."""

    def key_disabled(self, channel_id: int, api_key: str) -> None:
        """An upstream refused one of the channel's keys here: the others skip it."""

    def apply(self, event: dict[str, Any]) -> None:
        """Another replica's message (:mod:`gateway_core.shared.events`: a breaker, a count, a key refused)."""

    async def in_flight(self) -> dict[int, int]:
        """Requests in flight per channel in every worker and replica (the console's channel page)."""


class SharedState(abc.ABC):
    """One gateway's share of the state its workers and replicas hold together."""

    rate_limiter: RateLimiter
    signin: SignInThrottle  # console sign-in attempts
    redeem: SignInThrottle  # redemption-code attempts (gateway_core.admin.codes)

    @property
    def publish(self) -> Publish | None:
        """How a change made here reaches the other gateways (``None``: there are none to tell)."""
        return None

    @property
    def unreachable(self) -> Mapping[tuple[str, str], int]:
        """Times the shared state could not be reached, by (kind, ``open``/``closed``), for the metrics."""
        return {}

    @abc.abstractmethod
    def affinity(self, config: Config) -> Affinity | None:
        """The session-affinity table ``[gateway] session_affinity`` asks for (``None``: off)."""

    def start(self, gateway: Gateway) -> None:
        """Start listening to the others (invalidations, breakers), when there are others."""

    async def ping(self) -> None:
        """Raise when the shared state cannot be reached (readiness, metrics)."""

    async def close(self) -> None:
        """Stop listening and close connections."""


class SharedStateKind(abc.ABC):
    """Where the state is shared: ``name`` in messages and in ``/readyz``; ``across_processes``
    whether several workers (``serve --workers``) count their limits together through it."""

    name: str
    default: bool = False
    across_processes: bool = True

    @abc.abstractmethod
    def wanted(self, config: Config) -> bool:
        """Whether ``config`` asks for this kind (Redis: ``[gateway] redis`` is set)."""

    @abc.abstractmethod
    def open(self, config: Config, board: HealthBoard, router: Router) -> SharedState:
        """One gateway's share (breakers on ``board`` shared when the kind shares them; ``router``
        finds an upstream key by its fingerprint)."""

    def publisher(self, config: Config) -> AbstractAsyncContextManager[Publish | None]:
        """For a process that only changes things (a CLI command): how to tell the running
        gateways, for the block (what was queued goes out on the way out)."""
        return contextlib.nullcontext(None)

    async def problem(self, config: Config) -> str | None:
        """Why ``serve`` cannot start with this kind (unreachable), in one line, or ``None``."""
        return None


def kind_for_config(kinds: Sequence[SharedStateKind], config: Config) -> SharedStateKind:
    """The first kind ``config`` asks for, else the default."""
    for kind in kinds:
        if not kind.default and kind.wanted(config):
            return kind
    for kind in kinds:
        if kind.default:
            return kind
    raise ConfigError("no shared-state kind is registered (the core registers the in-process one: was it unloaded?)")
