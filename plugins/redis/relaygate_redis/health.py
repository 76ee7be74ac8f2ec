"""Channel health shared by every replica through Redis.

- **Concurrency caps**: a channel's requests in flight are leases in a sorted
  set, counted by the rate limiter's own script (subject ``channel``): a cap of
  2 is 2 across all replicas; a killed replica's leases expire.
- **Consecutive failures** of a closed breaker are counted in Redis too
  (:mod:`relaygate_redis.failures`).
- **Breakers**: when a breaker opens (on the count above, or at once: a
  half-open probe's failure, an upstream's ``Retry-After``), one script stores
  the state in ``{prefix}:br:{channel}:{slot}`` (expiring after the cool-down
  and a margin), drops any probe claim and count and publishes it; every replica
  then holds the breaker open for the same cool-down. A close is stored and
  published the same way.
- **One probe**: when a cool-down ends, a replica sends the half-open probe only
  after claiming ``{prefix}:bp:{channel}:{slot}`` (``SET NX`` with an expiry of
  the attempt's timeouts). The others skip the channel and look again a second
  later, by when the probe's outcome has usually been published.

Redis unreachable: see :mod:`gateway_core.ratelimit.faults` (``breakers`` open:
the replica probes on its own; closed: it skips a channel due for a probe; either
way a failure that could not be counted in Redis is counted by the replica alone,
which opens the breaker at ``breaker_failures`` of its own;
``channel_concurrency`` open: the per-process cap only; closed: 503).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson
import redis.asyncio as aioredis
import structlog

from gateway_core.errors import GatewayError
from gateway_core.ratelimit.faults import BREAKERS
from gateway_core.ratelimit.state import LimitExceeded, Subject
from gateway_core.records import RateLimits, key_fingerprint
from gateway_core.store.request_store import CHANNEL_SLOT
from gateway_core.shared import events

from .faults import RedisFaults
from .limiter import UNREACHABLE, RedisRateLimiter
from .failures import SharedFailures
from .resync import Resync

if TYPE_CHECKING:
    from gateway_core.routing.health import Breaker, HealthBoard, Lease
    from gateway_core.ratelimit import SlotLimits

log = structlog.get_logger("relaygate.shared")

PROBE_RECHECK = 1.0  # seconds a replica that lost the probe claim waits before looking again
REPORT_EVERY = 1.0  # seconds between two reports of this process's requests in flight per channel
STATE_MARGIN = 60.0  # seconds a breaker's stored state outlives its cool-down

# KEYS: state, probe claim, count. ARGV: events channel, the message, cool-down, failures, error, margin.
_OPEN = """
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local cooldown = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'until', string.format('%.6f', now + cooldown), 'failures', ARGV[4], 'error', ARGV[5])
redis.call('PEXPIRE', KEYS[1], math.ceil((cooldown + tonumber(ARGV[6])) * 1000))
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
"""

# KEYS: state, probe claim, count. ARGV: events channel, the message.
_CLOSE = """
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('PUBLISH', ARGV[1], ARGV[2])
return 1
"""

# KEYS: probe claim. ARGV: the claimant. Drops the claim only when it is the claimant's.
_UNCLAIM = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

class SharedHealth:
    """What :class:`~gateway_core.routing.health.HealthBoard` asks Redis, and what it hears."""

    def __init__(
        self,
        board: HealthBoard,
        client: aioredis.Redis,
        prefix: str,
        *,
        slots: RedisRateLimiter,
        faults: RedisFaults,
        origin: str,
        find_key: Callable[[int, str], str | None] = lambda channel_id, fingerprint: None,
    ) -> None:
        self.board = board
        self._client = client
        self._prefix = prefix
        self.slots = slots
        self.faults = faults
        self.origin = origin
        self.find_key = find_key  # an upstream key's secret by channel and fingerprint (the router knows)
        self.channel = f"{prefix}:events"
        self._open = client.register_script(_OPEN)
        self._close = client.register_script(_CLOSE)
        self._unclaim = client.register_script(_UNCLAIM)
        self.failures = SharedFailures(self, client, prefix, margin=STATE_MARGIN)  # consecutive failures counted across replicas
        self.resync = Resync(self, client, prefix)  # what Redis holds, read on (re)connecting
        self._tasks: set[asyncio.Task[Any]] = set()
        self._reporter: asyncio.Future[None] | None = None
        self.probes_claimed = 0
        self.probes_lost = 0

    def keys(self, channel_id: int, slot: str) -> tuple[str, str]:
        tail = f"{channel_id}:{slot or '-'}"
        return f"{self._prefix}:br:{tail}", f"{self._prefix}:bp:{tail}"

    # --- taking a channel -------------------------------------------------------

    def counts_with(self, limiter: object) -> bool:
        """Whether ``limiter`` (the request limits') runs its scripts on the
        connection of the channels' slots: then a request's limits can be taken
        with its channel's slot (:meth:`claim`), in one script."""
        return isinstance(limiter, RedisRateLimiter) and limiter.client is self.slots.client

    async def claim(self, lease: Lease, limits: SlotLimits | None = None) -> str | None:
        """Make ``lease`` hold across replicas: the probe claim when it is a
        probe, a slot when the channel has a cap, and the request's own
        ``limits`` when they are still to take (with the slot, in one script).
        ``None`` when it may go; else why not (the lease is then released).
        Raises a 503 when the channel's cap cannot be counted and
        ``channel_concurrency`` fails closed, a 429 when the request is over
        its limits."""
        channel_id = lease.route.channel.id
        if lease.channel_probe and not await self._claim_probe(lease, CHANNEL_SLOT):
            lease.channel_probe = False
            self._lost_probe(lease, lease.health.breaker)
            return "probing (on another replica)"
        if lease.key_probe and not await self._claim_probe(lease, key_fingerprint(lease.api_key)):
            lease.key_probe = False
            self._lost_probe(lease, lease.health.keys.get(lease.api_key))
            return "probing a key (on another replica)"
        cap = lease.route.concurrency
        if limits is not None:
            subject = Subject("channel", channel_id, RateLimits(concurrency=cap)) if cap else None
            try:
                lease.permit = await limits.take(subject, self.slots)
            except LimitExceeded:
                lease.release()
                return "at its concurrency cap"
            except GatewayError:
                lease.release()
                raise
        elif cap:
            subject = Subject("channel", channel_id, RateLimits(concurrency=cap))
            try:
                lease.permit = await self.slots.acquire([subject], 0)
            except LimitExceeded:
                lease.release()
                return "at its concurrency cap"
            except GatewayError:
                lease.release()
                raise
        return None

    async def _claim_probe(self, lease: Lease, slot: str) -> bool:
        _, claim = self.keys(lease.route.channel.id, slot)
        timeouts = lease.route.timeouts
        ttl_ms = int((timeouts.connect + timeouts.first_byte + 1.0) * 1000)
        try:
            won = bool(await self._client.set(claim, self.origin, nx=True, px=ttl_ms))
        except UNREACHABLE as error:
            won = self.faults.record(BREAKERS, error)
        if won:
            self.probes_claimed += 1
        else:
            self.probes_lost += 1
        return won

    def _lost_probe(self, lease: Lease, breaker: Breaker | None) -> None:
        """Another replica probes: skip the channel (or key) here for a while
        (the lease gives back what else it holds: a probe claim won before)."""
        lease.release()
        if breaker is not None:
            from gateway_core.routing.health import OPEN

            now = self.board.clock()
            breaker.state = OPEN
            breaker.probing = False
            breaker.until = now + PROBE_RECHECK
            breaker.resorted_at = now  # the probe elsewhere tells soon: no last resort here meanwhile

    def released(self, lease: Lease) -> None:
        """The lease is given back: its slot, and its probe claim when the probe
        ended without an outcome."""
        permit = lease.permit
        if permit is not None:
            lease.permit = None
            self.slots.release_nowait(permit)
        channel_id = lease.route.channel.id
        if lease.channel_probe:
            self.spawn(self._drop_claim(self.keys(channel_id, CHANNEL_SLOT)[1]))
        if lease.key_probe:
            self.spawn(self._drop_claim(self.keys(channel_id, key_fingerprint(lease.api_key))[1]))

    async def _drop_claim(self, claim: str) -> None:
        try:
            await self._unclaim(keys=[claim], args=[self.origin])
        except UNREACHABLE:
            pass  # the claim expires on its own

    # --- requests in flight, for the console ---------------------------------------------

    def report_in_flight(self) -> None:
        """Keep this process's requests in flight per channel in
        ``{prefix}:if:{origin}`` (a hash, rewritten every :data:`REPORT_EVERY`
        seconds while not empty, expiring after three), so that any worker or
        replica can tell the whole deployment's (:meth:`in_flight`)."""
        if self._reporter is None or self._reporter.done():
            self._reporter = asyncio.ensure_future(self._report_in_flight())

    async def _report_in_flight(self) -> None:
        key = f"{self._prefix}:if:{self.origin}"
        last: dict[int, int] = {}
        while True:
            counts = self.board.in_flight()
            try:
                if counts:
                    async with self._client.pipeline(transaction=True) as pipe:
                        pipe.delete(key)
                        pipe.hset(key, mapping={str(c): n for c, n in counts.items()})
                        pipe.pexpire(key, int(REPORT_EVERY * 3000))
                        await pipe.execute()
                elif last:
                    await self._client.delete(key)
                last = counts
            except UNREACHABLE:
                pass  # the figures expire; the console shows this process's own meanwhile
            await asyncio.sleep(REPORT_EVERY)

    async def in_flight(self) -> dict[int, int]:
        """Requests in flight per channel in every worker and replica (reported
        within the last second or so); this process's own when Redis cannot be reached."""
        own = self.board.in_flight()
        totals: dict[int, int] = {}
        try:
            names = [name async for name in self._client.scan_iter(match=f"{self._prefix}:if:*", count=500)]
            mine = f"{self._prefix}:if:{self.origin}".encode()
            async with self._client.pipeline(transaction=False) as pipe:
                for name in names:
                    if name != mine:
                        pipe.hgetall(name)
                reports = await pipe.execute()
        except UNREACHABLE:
            return own  # the page shows this process's own figures meanwhile
        for report in reports:
            for channel, count in report.items():
                totals[int(channel)] = totals.get(int(channel), 0) + int(count)
        for channel, count in own.items():  # this process's, as of now
            totals[channel] = totals.get(channel, 0) + count
        return {channel: count for channel, count in totals.items() if count > 0}

    # --- breakers changing here -------------------------------------------------------

    def changed(self, lease: Lease, slot: str, breaker: Breaker, is_open: bool) -> None:
        """A breaker of this replica opened or closed: store it and tell the others."""
        channel = lease.route.channel
        state, claim = self.keys(channel.id, slot)
        count = self.failures.key(channel.id, slot)
        event = self.breaker_event(lease, slot, is_open)
        self.resync.changed_here(channel.id, slot)
        if is_open:
            left = max(0.0, breaker.until - self.board.clock())
            event.update(left=left, failures=breaker.failures, error=breaker.last_error or "")
            args = [self.channel, orjson.dumps(event), repr(left), breaker.failures, breaker.last_error or "", repr(STATE_MARGIN)]
            self.spawn(self.run(self._open, [state, claim, count], args))
        else:
            self.spawn(self.run(self._close, [state, claim, count], [self.channel, orjson.dumps(event)]))

    def breaker_event(self, lease: Lease, slot: str, is_open: bool) -> dict[str, Any]:
        channel = lease.route.channel
        # the channel's name and the key's position: for the others' breaker gauges
        return {"k": events.BREAKER, "c": channel.id, "s": slot, "n": channel.name,
                "i": "channel" if slot == CHANNEL_SLOT else str(lease.key_index), "open": is_open, "o": self.origin}  # fmt: skip

    def key_disabled(self, channel_id: int, api_key: str) -> None:
        """An upstream refused one of the channel's keys here: the others skip it at once."""
        event = {"k": events.KEY_DISABLED, "c": channel_id, "s": key_fingerprint(api_key), "o": self.origin}
        self.spawn(self._publish(event))

    async def run(self, script: Any, keys: list[str], args: list[Any]) -> None:
        try:
            await script(keys=keys, args=args)
        except UNREACHABLE as error:
            self.faults.record(BREAKERS, error, opened=True)

    async def _publish(self, event: dict[str, Any]) -> None:
        try:
            await self._client.publish(self.channel, orjson.dumps(event))
        except UNREACHABLE as error:
            self.faults.record(BREAKERS, error, opened=True)

    def spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- breakers changed elsewhere -----------------------------------------------------

    def apply(self, event: dict[str, Any]) -> None:
        """An event from another replica: a breaker opened or closed, a key refused."""
        channel_id, slot = int(event["c"]), str(event.get("s") or "")
        health = self.board.health(channel_id)
        if event["k"] == events.KEY_DISABLED:
            secret = self.find_key(channel_id, slot)
            if secret is not None:
                health.recently_disabled[secret] = self.board.clock()
            return
        if event["k"] == events.FAILURES:
            self.failures.apply(channel_id, slot, int(event.get("f") or 0))
            return
        breaker = self.breaker(channel_id, slot, create=bool(event.get("open")))
        if breaker is None:
            return
        is_open = bool(event.get("open"))
        if is_open:
            self.hold_open(breaker, float(event.get("left") or 0.0), int(event.get("failures") or 0), str(event.get("error") or ""))
        else:
            breaker.succeed()
        observers = self.board.observers
        if observers is not None and event.get("n"):
            observers.breaker_changed(str(event["n"]), str(event.get("i") or "channel"), is_open)

    def breaker(self, channel_id: int, slot: str, *, create: bool) -> Breaker | None:
        health = self.board.health(channel_id)
        if slot == CHANNEL_SLOT:
            return health.breaker
        secret = self.find_key(channel_id, slot)
        if secret is None:
            return None
        breaker = health.keys.get(secret)
        if breaker is None and create:
            from gateway_core.routing.health import Breaker

            breaker = health.keys[secret] = Breaker()
        return breaker

    def hold_open(self, breaker: Breaker, left: float, failures: int, error: str) -> None:
        from gateway_core.routing.health import OPEN

        now = self.board.clock()
        breaker.state = OPEN
        breaker.probing = False
        breaker.opened_at = now
        breaker.until = now + left
        breaker.failures = failures
        breaker.last_error = error or breaker.last_error

    async def close(self) -> None:
        if self._reporter is not None:
            self._reporter.cancel()
            await asyncio.gather(self._reporter, return_exceptions=True)
            self._reporter = None
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
