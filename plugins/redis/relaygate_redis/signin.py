"""Sign-in throttling in Redis: the counters of :mod:`gateway_core.ratelimit.signin`
shared by every worker and replica.

Each counter is a hash ``{prefix}:si:{p|a|u}:...`` with the failures (``n``)
and the time of the last attempt (``at``, Redis's clock), expiring ``window``
seconds after that attempt. An attempt reads the three counters under
``WATCH`` and counts itself in one ``MULTI``/``EXEC`` (tried again when
another attempt changed them in between), so two attempts at once are both
counted; the arithmetic is :meth:`SignInRule.wait`, as in memory.

Redis unreachable: the ``signin`` fault policy
(:mod:`gateway_core.ratelimit.faults`) — open (the default) throttles in this
process's memory meanwhile; closed refuses the attempt with
:class:`SignInThrottleUnavailable`.
"""

from __future__ import annotations

import redis.asyncio as aioredis
from redis.exceptions import WatchError

from gateway_core.ratelimit.faults import SIGNIN
from gateway_core.ratelimit.signin import (
    InProcessSignInThrottle,
    SignInRule,
    SignInThrottled,
    SignInThrottleUnavailable,
    account_name,
    whole_seconds,
)

from .faults import RedisFaults
from .limiter import UNREACHABLE

# KEYS: the address's and the account's counters: one failure fewer (gone at zero).
_TAKE_BACK = """
for _, key in ipairs(KEYS) do
  if redis.call('HINCRBY', key, 'n', -1) <= 0 then redis.call('DEL', key) end
end
return 1
"""

TRIES = 5  # attempts of one sign-in to count itself while others change the counters


class RedisSignInThrottle:
    def __init__(self, client: aioredis.Redis, prefix: str, faults: RedisFaults) -> None:
        self._client = client
        self._prefix = prefix
        self.faults = faults
        self.local = InProcessSignInThrottle()  # while Redis is unreachable and sign-in fails open
        self._take_back = client.register_script(_TAKE_BACK)

    def _keys(self, account: str, address: str) -> list[str]:
        who = account_name(account)
        base = f"{self._prefix}:si"
        return [f"{base}:p:{who}:{address}", f"{base}:a:{address}", f"{base}:u:{who}"]

    async def attempt(self, account: str, address: str, rule: SignInRule) -> None:
        keys = self._keys(account, address)
        try:
            for _ in range(TRIES):
                if await self._count(keys, rule):
                    return
            raise SignInThrottled(1)  # a crowd of attempts on these counters: one more second
        except UNREACHABLE as error:
            if not self.faults.record(SIGNIN, error):
                raise SignInThrottleUnavailable(str(error)) from error
            await self.local.attempt(account, address, rule)

    async def _count(self, keys: list[str], rule: SignInRule) -> bool:
        async with self._client.pipeline(transaction=True) as pipe:
            await pipe.watch(*keys)
            seconds, micros = await pipe.time()
            now = seconds + micros / 1_000_000
            counts: list[tuple[int, float]] = []
            for key in keys:
                stored, last = await pipe.hmget(key, ["n", "at"])
                counts.append((int(stored or 0), float(last or 0.0)))
            wait = rule.wait(now, counts[0], counts[1], counts[2])
            if wait > 0:
                raise SignInThrottled(whole_seconds(wait))
            pipe.multi()
            for key, (failures, _) in zip(keys, counts):
                pipe.hset(key, mapping={"n": failures + 1, "at": repr(now)})
                pipe.pexpire(key, int(rule.window * 1000))
            try:
                await pipe.execute()
            except WatchError:
                return False
            return True

    async def succeeded(self, account: str, address: str) -> None:
        pair, by_address, by_account = self._keys(account, address)
        try:
            await self._client.delete(pair)
            await self._take_back(keys=[by_address, by_account])
        except UNREACHABLE as error:
            self.faults.record(SIGNIN, error, opened=True)
        await self.local.succeeded(account, address)
