"""Throttling console sign-ins: per account and address, with growing delays.

Every attempt is counted as a failure when it starts (so that a burst of
attempts at once cannot slip past the count) and taken back when the password
was right. Three counters, each with the time of its last attempt, forgotten
``window`` seconds after it:

- the account *from this address* (``pair``): once it has ``free_failures``
  failures, the next attempt waits ``base_delay`` seconds after the last one,
  and each further failure doubles that, up to ``max_delay``;
- the address, whatever the account (``address``): the same past
  ``address_free_failures``, against one address trying many accounts;
- the account, whatever the address (``account``): past
  ``account_free_failures``, against many addresses guessing one account — but
  only for addresses that have failed on that account themselves.

So an address that has not failed is never delayed: the right password from
there always gets in, however many wrong ones an attacker sent from elsewhere.
A success forgets the pair's failures.

:class:`InProcessSignInThrottle` counts in memory (one process); the Redis one
(:mod:`relaygate_redis.signin`, the Redis plugin's) counts for every worker and
replica with the same arithmetic (:meth:`SignInRule.wait`).
"""

from __future__ import annotations

import hashlib
import time
from typing import Protocol

import attrs


@attrs.frozen
class SignInRule:
    free_failures: int = 3
    address_free_failures: int = 10
    account_free_failures: int = 20
    base_delay: float = 1.0
    max_delay: float = 300.0
    window: float = 900.0
    # the account's count delays every address, not only those that failed on it
    # (for an account the attempts come from: a signed-in user redeeming codes)
    account_everywhere: bool = False

    def delay(self, failures: int, free: int) -> float:
        """Seconds between the last attempt and the next one after ``failures``."""
        over = failures - free
        if over < 0:
            return 0.0
        return float(min(self.max_delay, self.base_delay * 2 ** min(over, 30)))

    def wait(self, now: float, pair: tuple[int, float], address: tuple[int, float], account: tuple[int, float]) -> float:
        """Seconds until an attempt may start, from each counter's ``(failures, last)``."""
        waits = [pair[1] + self.delay(pair[0], self.free_failures), address[1] + self.delay(address[0], self.address_free_failures)]
        if pair[0] > 0 or self.account_everywhere:  # else only an address that failed on this account feels its count
            waits.append(account[1] + self.delay(account[0], self.account_free_failures))
        return max(0.0, max(waits) - now)


class SignInThrottled(Exception):
    """An attempt refused for now; ``retry_after`` the whole seconds to wait."""

    def __init__(self, retry_after: int) -> None:
        super().__init__(f"retry after {retry_after} s")
        self.retry_after = retry_after


class SignInThrottleUnavailable(Exception):
    """The shared count could not be reached and sign-in fails closed."""


class SignInThrottle(Protocol):
    async def attempt(self, account: str, address: str, rule: SignInRule) -> None:
        """Count an attempt, or raise :class:`SignInThrottled` (nothing counted)."""
        ...

    async def succeeded(self, account: str, address: str) -> None:
        """The attempt's password was right: take it back and forget the pair's failures."""
        ...


def account_name(account: str) -> str:
    """The account as counted: case-folded and hashed (a fixed-size key, any name)."""
    return hashlib.sha256(account.casefold().encode("utf-8")).hexdigest()[:24]


def whole_seconds(wait: float) -> int:
    return max(1, int(-(-wait // 1)))


class InProcessSignInThrottle:
    """The counters in this process's memory (bounded: ``max_entries``)."""

    def __init__(self, max_entries: int = 100_000, clock=time.time) -> None:
        self._counts: dict[tuple[str, ...], tuple[int, float]] = {}
        self._max_entries = max_entries
        self._clock = clock

    async def attempt(self, account: str, address: str, rule: SignInRule) -> None:
        now = self._clock()
        names = self._names(account, address)
        counts = [self._count(name, now, rule.window) for name in names]
        wait = rule.wait(now, counts[0], counts[1], counts[2])
        if wait > 0:
            raise SignInThrottled(whole_seconds(wait))
        if len(self._counts) + 3 > self._max_entries:
            self._prune(now, rule.window)
        for name, (failures, _) in zip(names, counts):
            self._counts[name] = (failures + 1, now)

    async def succeeded(self, account: str, address: str) -> None:
        pair, by_address, by_account = self._names(account, address)
        self._counts.pop(pair, None)
        for name in (by_address, by_account):
            failures, last = self._counts.get(name, (0, 0.0))
            if failures > 1:
                self._counts[name] = (failures - 1, last)
            else:
                self._counts.pop(name, None)

    @staticmethod
    def _names(account: str, address: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        who = account_name(account)
        return ("p", who, address), ("a", address), ("u", who)

    def _count(self, name: tuple[str, ...], now: float, window: float) -> tuple[int, float]:
        count = self._counts.get(name)
        if count is None or now - count[1] >= window:
            return (0, 0.0)
        return count

    def _prune(self, now: float, window: float) -> None:
        for name in [n for n, (_, last) in self._counts.items() if now - last >= window]:
            del self._counts[name]
        excess = len(self._counts) + 3 - self._max_entries
        for name in list(self._counts)[: max(0, excess)]:
            del self._counts[name]
