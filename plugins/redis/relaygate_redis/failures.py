"""Consecutive failures of a closed breaker counted across replicas through Redis.

A breaker's (a channel's, or an upstream key's: ``slot``) consecutive failures
are counted in ``{prefix}:bf:{channel}:{slot}``. One script per failure
increments the count (it expires :data:`FAILURE_MEMORY` seconds after the
latest failure) and, when it reaches ``breaker_failures``, opens the breaker
for every replica as :mod:`relaygate_redis.health` does (state stored,
probe claim and count dropped, published); below the threshold it publishes
the count, which every replica keeps as its breaker's ``failures``. So
failures spread over any number of replicas open the breaker after
``breaker_failures`` of them in all. Opening and closing a breaker drop the
count.

A success (an answer, or a stream that ended whole) deletes the count, and
publishes that, only when this replica's ``failures`` says there is one: a
success with nothing counted costs no round trip. The price of that shortcut:
a success on a replica that has not yet heard of a failure counted elsewhere
(within a publish's latency, or while its subscription was broken) leaves that
count standing, so the breaker may open on failures a success came between.

Redis unreachable (whatever ``[gateway.redis_faults] breakers`` says, it is
counted as served open): the failure is counted by this replica alone, on top
of the counts it last heard, and opens its breaker at ``breaker_failures``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson
import redis.asyncio as aioredis

from gateway_core.routing.breaker import CLOSED
from gateway_core.ratelimit.faults import BREAKERS
from .limiter import UNREACHABLE
from gateway_core.shared import events

if TYPE_CHECKING:
    from gateway_core.routing.health import Breaker, Lease
    from .health import SharedHealth

FAILURE_MEMORY = 600.0  # seconds a count of consecutive failures outlives its latest failure

# KEYS: count, state, probe claim. ARGV: events channel, threshold, cool-down, the
# count's lifetime (ms), the state's margin, error, the open message's head and
# tail, the count message's head and tail (the count goes between). Returns
# {count, opened}.
_FAIL = """
local count = redis.call('INCR', KEYS[1])
if count < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  redis.call('PUBLISH', ARGV[1], ARGV[9] .. count .. ARGV[10])
  return {count, 0}
end
local clock = redis.call('TIME')
local now = tonumber(clock[1]) + tonumber(clock[2]) / 1000000
local cooldown = tonumber(ARGV[3])
redis.call('HSET', KEYS[2], 'until', string.format('%.6f', now + cooldown), 'failures', count, 'error', ARGV[6])
redis.call('PEXPIRE', KEYS[2], math.ceil((cooldown + tonumber(ARGV[5])) * 1000))
redis.call('DEL', KEYS[1], KEYS[3])
redis.call('PUBLISH', ARGV[1], ARGV[7] .. count .. ARGV[8])
return {count, 1}
"""

# KEYS: count. ARGV: events channel, the message. Publishes only when there was a count.
_RESET = """
if redis.call('DEL', KEYS[1]) == 1 then redis.call('PUBLISH', ARGV[1], ARGV[2]) end
return 1
"""


class SharedFailures:
    """The counts of :class:`~relaygate_redis.health.SharedHealth`'s breakers."""

    def __init__(self, shared: SharedHealth, client: aioredis.Redis, prefix: str, *, margin: float) -> None:
        self.shared = shared
        self._client = client
        self._prefix = prefix
        self._margin = margin  # seconds an open breaker's stored state outlives its cool-down
        self._count = client.register_script(_FAIL)
        self._reset = client.register_script(_RESET)
        self.resets = 0  # counts this replica asked Redis to drop

    def key(self, channel_id: int, slot: str) -> str:
        return f"{self._prefix}:bf:{channel_id}:{slot or '-'}"

    def count(self, lease: Lease, slot: str, breaker: Breaker) -> None:
        """A failure of the closed ``breaker``: count it across replicas; the
        board hears the count (:meth:`~gateway_core.routing.health.HealthBoard.counted`)."""
        self.shared.spawn(self._count_one(lease, slot, breaker))

    async def _count_one(self, lease: Lease, slot: str, breaker: Breaker) -> None:
        shared, board = self.shared, self.shared.board
        channel_id = lease.route.channel.id
        state, claim = shared.keys(channel_id, slot)
        error = breaker.last_error or ""
        opened = shared.breaker_event(lease, slot, True) | {"left": board.cooldown, "error": error}
        counted = {"k": events.FAILURES, "c": channel_id, "s": slot, "o": shared.origin}
        args: list[Any] = [shared.channel, board.failures, repr(board.cooldown), int(FAILURE_MEMORY * 1000), repr(self._margin), error,
                           orjson.dumps(opened)[:-1] + b',"failures":', b"}", orjson.dumps(counted)[:-1] + b',"f":', b"}"]  # fmt: skip
        try:
            count, is_open = await self._count(keys=[self.key(channel_id, slot), state, claim], args=args)
        except UNREACHABLE as unreachable:
            shared.faults.record(BREAKERS, unreachable, opened=True)
            board.counted(lease, slot, breaker, None, False)
            return
        shared.resync.changed_here(channel_id, slot)
        board.counted(lease, slot, breaker, int(count), bool(is_open))

    def reset(self, channel_id: int, slot: str) -> None:
        """A success where failures were counted: drop the count on every replica."""
        self.resets += 1
        self.shared.resync.changed_here(channel_id, slot)
        message = orjson.dumps({"k": events.FAILURES, "c": channel_id, "s": slot, "f": 0, "o": self.shared.origin})
        self.shared.spawn(self.shared.run(self._reset, [self.key(channel_id, slot)], [self.shared.channel, message]))

    def apply(self, channel_id: int, slot: str, count: int) -> None:
        """Another replica's count (0: a success there reset it)."""
        breaker = self.shared.breaker(channel_id, slot, create=count > 0)
        if breaker is not None and breaker.state is CLOSED:
            breaker.failures = count
