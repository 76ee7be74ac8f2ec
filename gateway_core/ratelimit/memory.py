"""The in-process rate limiter: token buckets in a dict, exact within one event loop.

Each subject has a bucket per limited dimension holding up to one minute's
worth (``requests_per_minute`` requests, ``tokens_per_minute`` tokens), refilled
continuously, and a count of requests in flight. ``acquire`` checks every
subject and only then takes from all of them, with no ``await`` in between:
within one event loop nothing can interleave, so the last unit is never taken
twice. Every operation is O(number of subjects) — two at most.

Tokens are taken as estimated before the call and corrected by the real usage
afterwards. A request whose estimate is larger than the whole per-minute budget
waits for a full bucket and may then leave it in debt, which delays later
requests until it is paid back; the real usage settles the difference.

Limits are counted per worker process: with ``--workers N`` each worker counts
on its own. A shared backend behind :class:`~gateway_core.ratelimit.state.RateLimiter`
is the way to count across workers and replicas.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence

from ..records import RateLimits
from .rules import WINDOW, Level, exceeded, refusal, report
from .state import Permit, Subject

_UNLIMITED = RateLimits()
SWEEP_EVERY = 60.0


class _Bucket:
    __slots__ = ("requests", "tokens", "at", "in_flight", "limits")

    def __init__(self, now: float) -> None:
        self.requests = math.inf  # inf: full (or not limited); refill caps it at the limit
        self.tokens = math.inf
        self.at = now
        self.in_flight = 0
        self.limits = _UNLIMITED  # the last limits seen

    def refill(self, limits: RateLimits, now: float) -> None:
        self.limits = limits
        elapsed = now - self.at
        self.at = now
        rpm = limits.requests_per_minute
        if rpm:
            self.requests = min(float(rpm), self.requests + elapsed * rpm / WINDOW)
        else:
            self.requests = math.inf
        tpm = limits.tokens_per_minute
        if tpm:
            self.tokens = min(float(tpm), self.tokens + elapsed * tpm / WINDOW)
        else:
            self.tokens = math.inf

    def full(self) -> bool:
        limits = self.limits
        return self.requests >= limits.requests_per_minute and self.tokens >= limits.tokens_per_minute


class InProcessRateLimiter:
    """Token buckets per subject, in this process's memory."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, wall: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._wall = wall
        self._buckets: dict[tuple[str, int], _Bucket] = {}
        self._next_sweep = clock() + SWEEP_EVERY

    def __len__(self) -> int:
        return len(self._buckets)

    async def acquire(self, subjects: Sequence[Subject], tokens: int) -> Permit:
        return self.acquire_now(subjects, tokens)

    async def release(self, permit: Permit, tokens_used: int) -> None:
        self.release_now(permit, tokens_used)

    # --- the synchronous core (no await: atomic within the event loop) -------------

    def acquire_now(self, subjects: Sequence[Subject], tokens: int) -> Permit:
        now = self._clock()
        if now >= self._next_sweep:
            self._sweep(now)
        tokens = max(0, int(tokens))
        buckets = self._buckets
        pairs: list[tuple[Subject, _Bucket]] = []
        for subject in subjects:
            key = subject.bucket
            bucket = buckets.get(key)
            if bucket is None:
                bucket = buckets[key] = _Bucket(now)
            bucket.refill(subject.limits, now)
            pairs.append((subject, bucket))
        worst = refusal(_levels(pairs), tokens)
        if worst is not None:
            raise exceeded(_levels(pairs), worst, self._wall())
        for subject, bucket in pairs:
            limits = subject.limits
            if limits.requests_per_minute:
                bucket.requests -= 1.0
            if limits.tokens_per_minute:
                bucket.tokens -= tokens
            bucket.in_flight += 1
        return Permit(subjects=tuple(subjects), tokens=tokens, state=report(_levels(pairs), self._wall(), None))

    def release_now(self, permit: Permit, tokens_used: int) -> None:
        if permit.released:
            return
        permit.released = True
        now = self._clock()
        refund = permit.tokens - max(0, int(tokens_used))
        for subject in permit.subjects:
            bucket = self._buckets.get(subject.bucket)
            if bucket is None:
                continue
            if bucket.in_flight > 0:
                bucket.in_flight -= 1
            limits = subject.limits
            if refund and limits.tokens_per_minute:
                bucket.refill(limits, now)
                bucket.tokens = min(float(limits.tokens_per_minute), bucket.tokens + refund)

    # --- helpers ----------------------------------------------------------------------

    def _sweep(self, now: float) -> None:
        """Forget the buckets that are full and idle (refilled with their last limits)."""
        self._next_sweep = now + SWEEP_EVERY
        stale = []
        for key, bucket in self._buckets.items():
            if bucket.in_flight == 0:
                bucket.refill(bucket.limits, now)
                if bucket.full():
                    stale.append(key)
        for key in stale:
            del self._buckets[key]


def _levels(pairs: list[tuple[Subject, _Bucket]]) -> list[Level]:
    return [Level(subject, bucket.requests, bucket.tokens, bucket.in_flight) for subject, bucket in pairs]
