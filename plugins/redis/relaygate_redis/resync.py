"""What a replica reads from Redis when its subscription (re)connects: the
breakers held open and the counts of consecutive failures, which messages it
missed may have changed.

While the snapshot is on its way the subscriber reads no message (they wait,
in order, and arrive after it), but requests go on: this replica may open or
close a breaker, reset a count or get one back from Redis meanwhile. Such a
change is at least as new as the snapshot, which may have been read before it
(a count read before this replica's own reset would stand again, and its own
reset message is not for itself: nothing would correct it). So what changed
here during the resync keeps what it has; the rest takes the snapshot, and the
messages that waited bring everything up to date. A count this replica still
has that Redis no longer has is left as it is: it costs one needless reset at
its next success.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis.asyncio as aioredis

if TYPE_CHECKING:
    from .health import SharedHealth

# ARGV: the pattern of breaker states. Returns now, then key, until, failures, error per state.
_SNAPSHOT = """
local clock = redis.call('TIME')
local out = {string.format('%.6f', tonumber(clock[1]) + tonumber(clock[2]) / 1000000)}
local cursor = '0'
repeat
  local page = redis.call('SCAN', cursor, 'MATCH', ARGV[1], 'COUNT', 500)
  cursor = page[1]
  for _, key in ipairs(page[2]) do
    local h = redis.call('HMGET', key, 'until', 'failures', 'error')
    if h[1] then
      table.insert(out, key); table.insert(out, h[1]); table.insert(out, h[2] or '0'); table.insert(out, h[3] or '')
    end
  end
until cursor == '0'
return out
"""


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Resync:
    """Reads the snapshot and applies it, minus what changed here meanwhile."""

    def __init__(self, shared: SharedHealth, client: aioredis.Redis, prefix: str) -> None:
        self._shared = shared
        self._client = client
        self._prefix = prefix
        self._snapshot = client.register_script(_SNAPSHOT)
        self._changed: set[tuple[int, str]] | None = None  # a set only while a resync runs

    def changed_here(self, channel_id: int, slot: str) -> None:
        """This replica changed the breaker or count of ``slot``: a resync under way leaves it alone."""
        if self._changed is not None:
            self._changed.add((channel_id, slot))

    async def run(self) -> None:
        changed = self._changed = set()
        try:
            states = await self._snapshot(args=[f"{self._prefix}:br:*"])
            names = [name async for name in self._client.scan_iter(match=f"{self._prefix}:bf:*", count=500)]
            counts = await self._client.mget(names) if names else []
        finally:
            self._changed = None
        shared, head = self._shared, len(self._prefix) + 4
        now = float(states[0])
        for i in range(1, len(states), 4):
            channel_text, _, slot = _text(states[i])[head:].partition(":")
            channel_id, slot = int(channel_text), "" if slot == "-" else slot
            if (channel_id, slot) in changed:
                continue
            breaker = shared.breaker(channel_id, slot, create=True)
            if breaker is not None:
                shared.hold_open(breaker, max(0.0, float(states[i + 1]) - now), int(states[i + 2]), _text(states[i + 3]))
        for name, count in zip(names, counts):
            channel_text, _, slot = _text(name)[head:].partition(":")
            channel_id, slot = int(channel_text), "" if slot == "-" else slot
            if count is not None and (channel_id, slot) not in changed:
                shared.failures.apply(channel_id, slot, int(count))
