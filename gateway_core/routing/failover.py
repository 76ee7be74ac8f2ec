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

When the routes run out, one last attempt may go to the channel whose breaker
opened longest ago and is still cooling down (the *last resort*: a channel that
failed once should not turn every request away for its whole cool-down); a
cooling channel is taken so at most once per ``breaker_last_resort`` seconds. When
every candidate is out because the upstream rate-limited its keys, the answer
is a 429 with the shortest ``Retry-After`` left, not a 503.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
import structlog

from .affinity import Affinity, Steering, session_digest, session_of
from ..channel_type import Timeouts
from ..errors import GatewayError, RateLimitError, UpstreamUnavailableError
from .health import OPEN, HealthBoard, Lease
from ..records import key_fingerprint
from .router import Route

if TYPE_CHECKING:
    from ..client_protocol import ClientProtocol
    from ..ratelimit import SlotLimits

NO_CHANNEL = "no_channel_available"
RATE_LIMITED = "upstream_rate_limited"

log = structlog.get_logger("relaygate.failover")


class AttemptPlan:
    __slots__ = ("board", "routes", "model", "max_attempts", "deadline", "position", "attempts", "tried", "last_error", "skipped", "limits", "resorted", "steering")

    def __init__(self, board: HealthBoard, routes: list[Route], model: str, max_attempts: int, deadline: float, limits: SlotLimits | None = None) -> None:
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
        self.resorted = False  # the last resort was looked for
        self.steering: Steering | None = None  # the request's session (gateway_core.routing.affinity)

    def next(self) -> Lease | None:
        """The next attempt's lease, or ``None`` when no attempt is left."""
        if self.attempts >= self.max_attempts or (self.attempts and time.perf_counter() >= self.deadline):
            return None
        routes = self.routes
        steering = self.steering
        while self.position < len(routes):
            route = routes[self.position]
            if steering is not None and steering.secret is not None and steering.place is not None and steering.place[0] == route.channel.id:
                lease = self.board.lease(route, self.tried, prefer=steering.secret)
            else:
                lease = self.board.lease(route, self.tried)
            if type(lease) is Lease:
                self.attempts += 1
                return lease
            if self.skipped is None:
                self.skipped = []
            self.skipped.append((route.channel.name, lease))  # type: ignore[arg-type]
            self.position += 1
        if self.resorted:
            return None
        self.resorted = True
        resort = self._last_resort()
        if resort is not None:
            self.attempts += 1
        return resort

    def _last_resort(self) -> Lease | None:
        """A lease on the channel open in its breaker that failed longest ago, if
        any: one whose breaker opened (or was last taken as a last resort) at least
        ``board.last_resort`` seconds ago, so that a channel that is really down
        gets one such request a second, not every request."""
        board = self.board
        spacing = board.last_resort
        if spacing <= 0:
            return None
        now = board.clock()
        cooling = []
        for route in self.routes:
            health = board.channels.get(route.channel.id)
            if health is not None:
                breaker = health.breaker
                if breaker.state is OPEN and now - max(breaker.opened_at, breaker.resorted_at) >= spacing:
                    cooling.append((breaker.opened_at, route))
        for _, route in sorted(cooling, key=lambda pair: pair[0]):
            lease = board.lease(route, self.tried, last_resort=True)
            if type(lease) is Lease:
                log.info("last resort", channel=route.channel.name, model=self.model)
                return lease
        return None

    async def take(self) -> Lease | None:
        """:meth:`next`, made to hold across replicas when health is shared
        (a channel skipped there, at its cap or probed elsewhere, is skipped here)."""
        while True:
            lease = self.next()
            shared = self.board.shared
            limits = self.limits if self.limits is not None and not self.limits.taken else None
            if lease is None or shared is None or not (limits or lease.route.concurrency or lease.channel_probe or lease.key_probe):
                if lease is not None and self.steering is not None:
                    self.steering.taken(lease)
                return lease
            why = await shared.claim(lease, limits)
            if why is None:
                if self.steering is not None:
                    self.steering.taken(lease)
                return lease
            self.attempts -= 1
            if self.skipped is None:
                self.skipped = []
            self.skipped.append((lease.route.channel.name, why))
            self.position += 1

    async def follow(self, affinity: Affinity, key_id: int, protocol: ClientProtocol, body: Mapping[str, Any], headers: Any) -> None:
        """Steer the request to where its session went last, if it names one
        (the header, else ``protocol``'s fields of ``body``): that channel first,
        that key first within it."""
        session = session_of(protocol, body, headers, affinity.header)
        if session is None:
            return
        digest = session_digest(key_id, session)
        place = await affinity.recall(digest)
        steering = self.steering = Steering(affinity, digest, place)
        if place is None:
            return
        channel_id, fingerprint = place
        for n, route in enumerate(self.routes):
            if route.channel.id == channel_id:
                steering.secret = next((key for _, key in route.keys if key_fingerprint(key) == fingerprint), None)
                if n:
                    self.routes = [route, *self.routes[:n], *self.routes[n + 1:]]
                return
        steering.place = None  # the channel no longer serves this model here

    def switch(self, model: str, routes: list[Route]) -> None:
        """Go on with another model's routes (a model fallback): attempts counted
        afresh and a last resort of its own, within the same deadline."""
        self.model = model
        self.routes = routes
        self.position = 0
        self.attempts = 0
        self.resorted = False
        self.steering = None  # the session's place is the first model's

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
        if self.steering is not None:
            self.steering.failed(lease)
        if self.tried is None:
            self.tried = set()
        self.tried.add((lease.route.channel.id, lease.api_key))
        if not key_fault:
            self.position += 1  # the channel failed: the next one

    def final_error(self) -> GatewayError:
        """What to answer when no attempt is left: the last attempt's error, or a
        503 naming the model when no channel could be tried."""
        limited = self._rate_limited()
        if limited is not None:
            wait = max(1, math.ceil(limited))  # whole seconds, rounded up: an upstream's "37" stays 37 a moment later
            return RateLimitError(
                f"Every channel for the model '{self.model}' is rate limited by its upstream right now; retry in {wait} s.",
                code=RATE_LIMITED, retry_after=float(wait),
            )
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

    def _rate_limited(self) -> float | None:
        """The shortest wait left when every candidate is out because the upstream
        rate-limited each of its usable keys (a 429 with ``Retry-After``), else ``None``."""
        board = self.board
        now = board.clock()
        waits: list[float] = []
        for route in self.routes:
            health = board.channels.get(route.channel.id)
            if health is None or not health.keys or not health.breaker.ready(now):
                return None
            for _, api_key in route.keys:
                if health.recently_disabled.get(api_key) is not None:
                    continue
                breaker = health.keys.get(api_key)
                if breaker is None or breaker.state is not OPEN or breaker.until <= now:
                    return None
                waits.append(breaker.until - now)
        return min(waits) if waits else None


def attempt_record(lease: Lease, started: float, error: GatewayError | None, status: int = 200) -> dict[str, Any]:
    """One attempt as the usage log keeps it (``ctx.attempts``), for both relays: the
    key by its position, never itself."""
    channel = lease.route.channel
    attempt: dict[str, Any] = {
        "channel": channel.name,
        "channel_id": channel.id,
        "key_index": lease.key_index,
        "latency_ms": round((time.perf_counter() - started) * 1000.0, 2),
        "status": status if error is None else (error.upstream_status or error.status),
    }
    if error is not None:
        attempt["error"] = error.message[:300]
    elif status == 499:
        attempt["error"] = "the client disconnected"
    return attempt
