"""The attempts of one request: which channel and key next, and what to answer
when none is left.

:class:`AttemptPlan` walks the router's ordered routes. A channel that is
cooling down, probing, at its concurrency cap or out of usable keys is skipped
(the next priority comes only when a whole tier is skipped or has failed). After
a failure of the channel the plan moves on to the next channel; after a failure
of the key (429, key refused) it tries the same channel with another key. No
channel key is tried twice, there are at most ``max_attempts`` attempts, and
none starts after the deadline (``attempt_deadline`` seconds after the request
arrived); each attempt's first-byte timeout is cut to what is left of it.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import attrs

from .channel_type import Timeouts
from .errors import GatewayError, UpstreamUnavailableError
from .health import HealthBoard, Lease
from .router import Route

if TYPE_CHECKING:
    from .policies.rate_limit import DeferredLimits

NO_CHANNEL = "no_channel_available"


class AttemptPlan:
    __slots__ = ("board", "routes", "model", "max_attempts", "deadline", "position", "attempts", "tried", "last_error", "skipped", "limits")

    def __init__(self, board: HealthBoard, routes: list[Route], model: str, max_attempts: int, deadline: float, limits: DeferredLimits | None = None) -> None:
        self.board = board
        self.routes = routes
        self.model = model
        self.max_attempts = max_attempts
        self.deadline = deadline  # time.perf_counter() value
        self.position = 0
        self.attempts = 0
        self.tried: set[tuple[int, str]] | None = None
        self.last_error: GatewayError | None = None
        self.skipped: list[tuple[str, str]] | None = None  # (channel, why), for the 503
        self.limits = limits  # the request's limits, taken with the first channel's claim (policies.rate_limit)

    def next(self) -> Lease | None:
        """The next attempt's lease, or ``None`` when no attempt is left."""
        if self.attempts >= self.max_attempts or (self.attempts and time.perf_counter() >= self.deadline):
            return None
        routes = self.routes
        while self.position < len(routes):
            route = routes[self.position]
            lease = self.board.lease(route, self.tried)
            if type(lease) is Lease:
                self.attempts += 1
                return lease
            if self.skipped is None:
                self.skipped = []
            self.skipped.append((route.channel.name, lease))  # type: ignore[arg-type]
            self.position += 1
        return None

    async def take(self) -> Lease | None:
        """:meth:`next`, made to hold across replicas when health is shared
        (a channel skipped there, at its cap or probed elsewhere, is skipped here)."""
        while True:
            lease = self.next()
            shared = self.board.shared
            limits = self.limits if self.limits is not None and not self.limits.taken else None
            if lease is None or shared is None or not (limits or lease.route.concurrency or lease.channel_probe or lease.key_probe):
                return lease
            why = await shared.claim(lease, limits)
            if why is None:
                return lease
            self.attempts -= 1
            if self.skipped is None:
                self.skipped = []
            self.skipped.append((lease.route.channel.name, why))
            self.position += 1

    def timeouts(self, lease: Lease) -> Timeouts:
        """The attempt's timeouts: the channel's, the first byte within the deadline."""
        timeouts = lease.route.timeouts
        left = self.deadline - time.perf_counter()
        if left < timeouts.first_byte:
            return attrs.evolve(timeouts, first_byte=max(left, 0.001))
        return timeouts

    def failed(self, lease: Lease, error: GatewayError) -> None:
        """Record a failed attempt (health included) and release its lease."""
        self.last_error = error
        try:
            key_fault = self.board.failed(lease, error)
        finally:
            lease.release()
        if self.tried is None:
            self.tried = set()
        self.tried.add((lease.route.channel.id, lease.api_key))
        if not key_fault:
            self.position += 1  # the channel failed: the next one

    def final_error(self) -> GatewayError:
        """What to answer when no attempt is left: the last attempt's error, or a
        503 naming the model when no channel could be tried."""
        error = self.last_error
        if error is not None:
            if self.attempts > 1 and "attempts)" not in error.message:
                error.message = f"{error.message} (after {self.attempts} attempts)"
            return error
        reasons = "; ".join(f"'{name}' {why}" for name, why in (self.skipped or ()))
        message = f"No channel is available for the model '{self.model}' right now"
        return UpstreamUnavailableError(f"{message}: {reasons}." if reasons else f"{message}.", code=NO_CHANNEL, retry_after=self._retry_after())

    def _retry_after(self) -> float | None:
        """Seconds until the first skipped channel's breaker cools down, if that is why."""
        now = self.board.clock()
        waits = []
        for route in self.routes:
            health = self.board.channels.get(route.channel.id)
            if health is not None and health.breaker.until > now:
                waits.append(health.breaker.until - now)
        return min(waits) if waits else None
