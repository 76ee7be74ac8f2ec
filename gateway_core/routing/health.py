"""The health of channels and of their upstream keys, in this worker's memory.

Each channel, and each upstream key of a channel, has a circuit breaker:

- **closed**: attempts go through. ``failures`` consecutive failures open it
  (counted across replicas when Redis is configured: see
  :mod:`relaygate_redis.failures`).
- **open**: no attempt for ``cooldown`` seconds.
- **half-open**: the cool-down is over; ONE attempt (the probe) goes through.
  Its success closes the breaker, its failure opens it again.

What counts (:func:`classify`): connection errors, timeouts, 5xx, broken
answers and streams that break are the channel's failures; a 429 is its key's
(with ``Retry-After`` the key cools down that long at once); a 401/403 — the
upstream refusing the channel's own key — disables the key for good (stored,
with the reason, until an operator re-enables it). A request the upstream
refused for its content (400 …) shows the upstream is alive. A stream's head
is not yet a success: the failures counted so far stand until the stream ends
whole, so a channel whose streams keep breaking after their heads opens like one
that keeps failing outright.

:class:`HealthBoard` also counts each channel's requests in flight, for its
concurrency cap, and hands out :class:`Lease`\\ s: one attempt's right to use a
channel and one of its keys (round-robin among the usable keys). Breakers are
per worker unless Redis is configured: then ``board.shared``
(:class:`~gateway_core.shared_state.SharedChannelHealth`) opens and closes them on every replica,
lets one replica probe, and counts concurrency caps across replicas (an
attempt's lease is made to hold there by :meth:`AttemptPlan.take`). Changes
of state are written to the store (``channel_health``) so
that ``relaygate channel list`` and the console can show them.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import structlog

from .breaker import CLOSED, HALF_OPEN, OPEN, Breaker
from ..errors import GatewayError, InternalError
from ..records import key_fingerprint
from .router import Route
from ..store.request_store import CHANNEL_SLOT, BreakerReport, RequestStore
from ..secrets import redact

if TYPE_CHECKING:
    from ..request.observing import Observers
    from ..ratelimit.state import Permit
    from ..shared_state import SharedChannelHealth

log = structlog.get_logger("relaygate.health")

__all__ = ["CLOSED", "HALF_OPEN", "OPEN", "Breaker", "ChannelHealth", "HealthBoard", "Lease", "classify"]

# how an attempt's error counts
CHANNEL_FAULT, KEY_LIMITED, KEY_REFUSED, ALIVE, NEUTRAL = range(5)
STREAM_FAULTS = frozenset(("upstream", "timeout", "unavailable"))
MAX_RETRY_AFTER = 600.0  # longest an upstream's Retry-After cools a key down
RECENT_DISABLE = 10.0  # seconds a key disabled here is skipped before the store says so


def classify(error: GatewayError) -> int:
    """Whose failure ``error`` is, for the breakers."""
    if error.key_refused:
        return KEY_REFUSED
    status = error.upstream_status
    if status == 429:
        return KEY_LIMITED
    if not error.retryable:
        return ALIVE  # the upstream answered; the request was at fault
    if isinstance(error, InternalError):
        return NEUTRAL  # a bug of the gateway's, not the upstream's
    if status is not None and 400 <= status < 500 and status != 408:
        return NEUTRAL  # a refusal about this model or path, not the channel's health
    return CHANNEL_FAULT


class ChannelHealth:
    """One channel's breaker, its keys' breakers (created at their first
    failure), its requests in flight and its round-robin key cursor."""

    __slots__ = ("breaker", "keys", "in_flight", "cursor", "recently_disabled")

    def __init__(self) -> None:
        self.breaker = Breaker()
        self.keys: dict[str, Breaker] = {}
        self.in_flight = 0
        self.cursor = 0
        self.recently_disabled: dict[str, float] = {}


class Lease:
    """One attempt's hold on a channel (a concurrency slot) and one of its keys.

    Report the outcome with :meth:`HealthBoard.succeeded` / :meth:`HealthBoard.failed`
    and give it back with :meth:`release` (idempotent) when the request is done
    with the channel.
    """

    __slots__ = ("board", "health", "route", "key_index", "api_key", "channel_probe", "key_probe", "held", "permit", "on_trial")

    def __init__(self, board: HealthBoard, health: ChannelHealth, route: Route, key_index: int, api_key: str, channel_probe: bool, key_probe: bool) -> None:
        self.board = board
        self.health = health
        self.route = route
        self.key_index = key_index
        self.api_key = api_key
        self.channel_probe = channel_probe
        self.key_probe = key_probe
        self.held = True
        self.permit: Permit | None = None  # the channel's slot across replicas (shared health)
        self.on_trial = False  # a probe whose stream head closed the breaker: a break reopens it

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        self.health.in_flight -= 1
        shared = self.board.shared
        if shared is not None:
            shared.released(self)
        if self.channel_probe:  # ended without an outcome: let another request probe
            self.health.breaker.probing = False
        if self.key_probe:
            breaker = self.health.keys.get(self.api_key)
            if breaker is not None:
                breaker.probing = False


class HealthBoard:
    """The breakers and in-flight counts of every channel, for one worker."""

    def __init__(
        self, *, failures: int = 3, cooldown: float = 30.0, store: RequestStore | None = None,
        clock: Callable[[], float] = time.monotonic, observers: Observers | None = None, last_resort: float = 1.0,
    ) -> None:  # fmt: skip
        self.failures = failures
        self.last_resort = last_resort  # seconds between last resorts on a cooling channel (0: none)
        self.observers = observers  # told of breaker changes (the metrics count them)
        self.cooldown = cooldown
        self.channels: dict[int, ChannelHealth] = {}
        self._store = store  # breaker changes and disabled keys are saved there, not awaited
        self.clock = clock
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self.shared: SharedChannelHealth | None = None  # breakers and caps shared across replicas (the Redis plugin's)

    def health(self, channel_id: int) -> ChannelHealth:
        health = self.channels.get(channel_id)
        if health is None:
            health = self.channels[channel_id] = ChannelHealth()
        return health

    # --- taking a channel ------------------------------------------------------

    def lease(self, route: Route, tried: set[tuple[int, str]] | None, last_resort: bool = False, prefer: str | None = None) -> Lease | str:
        """A lease on ``route`` and one of its keys not in ``tried``, or why there is none.

        ``last_resort`` leases a channel whose breaker is open and cooling down
        (its outcome closes or reopens the breaker; it is no probe); ``prefer``
        is the key to take when it is usable (a session's, :mod:`gateway_core.routing.affinity`)."""
        health = self.health(route.channel.id)
        breaker = health.breaker
        now = 0.0
        if breaker.state is not CLOSED:
            now = self.clock()
            if not breaker.ready(now) and not last_resort:
                return "probing" if breaker.state is HALF_OPEN else "cooling down"
        if route.concurrency and health.in_flight >= route.concurrency:
            return "at its concurrency cap"
        picked = self._pick_key(health, route, tried, now, prefer)
        if picked is None:
            return "no usable upstream key"
        index, api_key, key_breaker = picked
        channel_probe = False
        if breaker.state is not CLOSED:
            if last_resort:
                breaker.resorted_at = now
            else:
                channel_probe = breaker.take()
        key_probe = key_breaker.take() if key_breaker is not None and key_breaker.state is not CLOSED else False
        health.in_flight += 1
        return Lease(self, health, route, index, api_key, channel_probe, key_probe)

    def _pick_key(self, health: ChannelHealth, route: Route, tried, now: float, prefer: str | None = None) -> tuple[int, str, Breaker | None] | None:
        keys = route.keys
        count = len(keys)
        if count == 1 and not health.keys and not health.recently_disabled and not tried:
            return keys[0][0], keys[0][1], None
        if count == 0:
            return None
        channel_id = route.channel.id
        if prefer is not None:
            for index, api_key in keys:
                if api_key == prefer:
                    breaker = self._usable(health, channel_id, api_key, tried, now)
                    if breaker is not False:
                        return index, api_key, breaker
                    break
        start = health.cursor
        health.cursor = start + 1
        for offset in range(count):  # (inline: the request path's loop)
            index, api_key = keys[(start + offset) % count]
            if tried and (channel_id, api_key) in tried:
                continue
            if health.recently_disabled and self._recently_disabled(health, api_key):
                continue
            breaker = health.keys.get(api_key)
            if breaker is not None and breaker.state is not CLOSED:
                now = now or self.clock()
                if not breaker.ready(now):
                    continue
            return index, api_key, breaker
        return None

    def _usable(self, health: ChannelHealth, channel_id: int, api_key: str, tried, now: float) -> Breaker | None | Literal[False]:
        """``False`` when the key may not be used now, else its breaker (if it has
        one): the test of :meth:`_pick_key`'s loop, for a preferred key."""
        if tried and (channel_id, api_key) in tried:
            return False
        if health.recently_disabled and self._recently_disabled(health, api_key):
            return False
        breaker = health.keys.get(api_key)
        if breaker is not None and breaker.state is not CLOSED and not breaker.ready(now or self.clock()):
            return False
        return breaker

    def _recently_disabled(self, health: ChannelHealth, api_key: str) -> bool:
        at = health.recently_disabled.get(api_key)
        if at is None:
            return False
        if self.clock() - at < RECENT_DISABLE:
            return True
        del health.recently_disabled[api_key]  # the router's records say it now
        return False

    # --- outcomes --------------------------------------------------------------

    def succeeded(self, lease: Lease, head: bool = False) -> None:
        """The attempt got its answer, or with ``head`` its stream's head (the
        stream's end is told to :meth:`stream_ended`)."""
        health = lease.health
        self._channel_alive(lease, head)
        if health.keys:
            breaker = health.keys.get(lease.api_key)
            lease.key_probe = False
            if breaker is not None:
                counted = breaker.state is CLOSED and breaker.failures
                if breaker.succeed():
                    self._report(lease, key_fingerprint(lease.api_key), breaker)
                elif counted and self.shared is not None:
                    self.shared.failures.reset(lease.route.channel.id, key_fingerprint(lease.api_key))

    def _channel_alive(self, lease: Lease, head: bool = False) -> None:
        """The channel answered. A stream's head does not erase the failures
        counted so far (a channel whose streams keep breaking must still pass the
        threshold); it closes an open or half-open breaker, on trial until the
        stream ends."""
        breaker = lease.health.breaker
        lease.channel_probe = False
        if breaker.state is CLOSED:
            if breaker.failures and not head:
                self._reset(lease, breaker)
            return
        lease.on_trial = head
        if breaker.succeed():
            self._report(lease, CHANNEL_SLOT, breaker)

    def failed(self, lease: Lease, error: GatewayError) -> bool:
        """The attempt failed with ``error``; ``True`` when the key was at fault (so
        the channel may be tried again with another key)."""
        kind = classify(error)
        if kind == ALIVE:
            self.succeeded(lease)
            return False
        if kind == NEUTRAL:
            return False
        now = self.clock()
        health = lease.health
        message = redact(error.message, lease.api_key)[:300]
        if kind == KEY_REFUSED or kind == KEY_LIMITED:
            self._channel_alive(lease)  # the upstream answered: the key is at fault
        if kind == KEY_REFUSED:
            lease.key_probe = False
            self._disable_key(lease, error, now)
            return True
        if kind == KEY_LIMITED:
            breaker = health.keys.get(lease.api_key)
            if breaker is None:
                breaker = health.keys[lease.api_key] = Breaker()
            lease.key_probe = False
            hold = min(error.retry_after, MAX_RETRY_AFTER) if error.retry_after else None
            self._fail(lease, key_fingerprint(lease.api_key), breaker, now, message, hold)
            return True
        lease.channel_probe = False
        self._fail(lease, CHANNEL_SLOT, health.breaker, now, message)
        return False

    def _fail(self, lease: Lease, slot: str, breaker: Breaker, now: float, message: str, hold: float | None = None) -> None:
        """A failure of ``breaker`` (the channel's or a key's): counted in Redis
        when the breaker is closed and Redis configured (then :meth:`counted`), else here."""
        if self.shared is not None and breaker.state is CLOSED and not hold:
            breaker.count(message)  # this replica's hint, until Redis answers
            self.shared.failures.count(lease, slot, breaker)
        elif breaker.fail(now, self.failures, self.cooldown, message, hold):
            self._opened(lease, slot, breaker)

    def counted(self, lease: Lease, slot: str, breaker: Breaker, count: int | None, opened: bool) -> None:
        """Redis counted a failure of :meth:`_fail`: ``count`` in a row across
        replicas, ``opened`` everywhere at the threshold; ``None``: unreachable, the local count decides."""
        if breaker.state is not CLOSED:
            return  # opened meanwhile (by another replica, or a probe's failure here)
        if count is None:
            if breaker.failures >= self.failures:
                breaker.trip(self.clock(), self.cooldown)
                self._opened(lease, slot, breaker)
            return
        breaker.failures = count
        if opened:
            breaker.trip(self.clock(), self.cooldown)
            self._opened(lease, slot, breaker, tell_others=False)  # the script told them

    def _opened(self, lease: Lease, slot: str, breaker: Breaker, *, tell_others: bool = True) -> None:
        if slot == CHANNEL_SLOT:
            log.warning("circuit breaker open", channel=lease.route.channel.name, cooldown_s=self.cooldown,
                        failures=breaker.failures, error=breaker.last_error)  # fmt: skip
        self._report(lease, slot, breaker, tell_others=tell_others)

    def _reset(self, lease: Lease, breaker: Breaker) -> None:
        """A success of the channel's closed breaker: no failures in a row any more, on every replica."""
        breaker.failures = 0
        if self.shared is not None:
            self.shared.failures.reset(lease.route.channel.id, CHANNEL_SLOT)

    def stream_ended(self, lease: Lease, error: GatewayError | None, done: bool) -> None:
        """A stream whose head arrived ended: ``done`` (whole), broken by ``error``,
        or neither (the client left: it says nothing of the channel)."""
        if error is not None:
            self.stream_failed(lease, error)
        elif done and lease.health.breaker.failures and lease.health.breaker.state is CLOSED:
            self._reset(lease, lease.health.breaker)
        lease.on_trial = False

    def stream_failed(self, lease: Lease, error: GatewayError) -> None:
        """A stream broke after its head arrived: the channel's failure (dropped,
        silent, malformed, an error event), unless the gateway itself failed. It
        adds to the failures counted before the head; a probe's stream that breaks
        opens the breaker again at once."""
        if error.kind in STREAM_FAULTS:
            health = lease.health
            message = redact(error.message, lease.api_key)[:300]
            hold = self.cooldown if lease.on_trial else None
            self._fail(lease, CHANNEL_SLOT, health.breaker, self.clock(), message, hold)
        lease.on_trial = False

    def _disable_key(self, lease: Lease, error: GatewayError, now: float) -> None:
        channel = lease.route.channel
        if not channel.api_keys:
            return  # a channel without keys has nothing to disable
        lease.health.recently_disabled[lease.api_key] = now
        status = error.upstream_status
        reason = redact(f"upstream answered {status}: {error.message}" if status else error.message, lease.api_key)
        log.warning("upstream key disabled", channel=channel.name, key_index=lease.key_index, reason=reason)
        if self._store is not None:
            self._store.disable_channel_key(channel.id, key_fingerprint(lease.api_key), lease.key_index, reason)
        if self.shared is not None:
            self.shared.key_disabled(channel.id, lease.api_key)

    def _report(self, lease: Lease, slot: str, breaker: Breaker, *, tell_others: bool = True) -> None:
        is_open = breaker.state is OPEN
        if self.observers is not None:
            key = "channel" if slot == CHANNEL_SLOT else str(lease.key_index)
            self.observers.breaker_changed(lease.route.channel.name, key, is_open)
        if self.shared is not None and tell_others:
            self.shared.changed(lease, slot, breaker, is_open)
        if self._store is None:
            return
        wall = time.time()
        now = self.clock()
        report = BreakerReport(
            channel_id=lease.route.channel.id,
            key_slot=slot,
            key_index=None if slot == CHANNEL_SLOT else lease.key_index,
            state=OPEN if is_open else CLOSED,
            failures=breaker.failures,
            opened_at=wall - (now - breaker.opened_at) if is_open else None,
            until=wall + (breaker.until - now) if is_open else None,
            last_error=breaker.last_error,
            worker=self.worker,
            updated_at=wall,
        )
        self._store.report_breaker(report)

    # --- for people ------------------------------------------------------------

    def in_flight(self) -> dict[int, int]:
        return {channel_id: health.in_flight for channel_id, health in self.channels.items() if health.in_flight}
