"""The Redis rate limiter: the same token buckets, shared by every worker and replica.

Every subject has a hash ``{prefix}:rl:{kind}:{id}`` with the requests and
tokens left (``r``, ``t``; a missing field is a full bucket) and the time they
were counted (``at``), and a sorted set ``{prefix}:rs:{kind}:{id}`` of the
requests in flight: one lease per request, scored by the time it expires.

One Lua script per acquire refills every subject's buckets, drops the expired
leases, checks every limit and then takes from all subjects or from none; one
per release frees the lease and corrects the tokens. Redis runs a script
alone, so two replicas never both take the last unit, and the time is Redis's
own (``TIME``), so replicas with drifting clocks count alike. The arithmetic of
refusals and reports is :mod:`gateway_core.ratelimit.rules`, shared with the
in-process limiter, so both answer the same.

Keys expire: a bucket when it would be full again, a set of leases when its
last lease does. A lease lasts ``lease_seconds`` (10 minutes) and is extended
every third of that while its request is in flight: a replica killed in the
middle of a request holds its slots no longer than one lease.

Redis unreachable while serving: by default the request is refused with a 503
(:class:`RateLimitStoreUnavailable`), in the caller's protocol; with
``fail_open=True`` it is let through without limits and a warning is logged.
A release that cannot reach Redis is logged; its lease expires on its own.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Sequence
from typing import Any

import attrs
import redis.asyncio as aioredis
import structlog
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gateway_core.errors import GatewayError
from gateway_core.ratelimit.faults import RATE_LIMITS
from gateway_core.ratelimit.rules import CONCURRENCY_RETRY_AFTER, Level, exceeded, refusal, report
from gateway_core.ratelimit.state import Permit, RateLimitState, Subject

from .faults import RedisFaults
from .resp import Arg, Encoded, RespClient, Script
from .scripts import ACQUIRE, REFRESH, RELEASE

log = structlog.get_logger("relaygate.ratelimit")

LEASE_SECONDS = 600.0
MAX_ENCODINGS = 10_000  # subjects whose encoded keys and limits are kept (then forgotten all at once)
UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)

class RateLimitStoreUnavailable(GatewayError):
    """Redis could not be reached to count a request's limits (fail closed)."""

    status = 503
    kind = "unavailable"


@attrs.define
class RedisPermit(Permit):
    lease: str = ""  # the request's lease in the sets of requests in flight ("" when nothing was taken)


class RedisRateLimiter:
    """Token buckets per subject in Redis, exact across processes and replicas."""

    def __init__(
        self,
        client: RespClient | str,
        *,
        prefix: str = "relaygate",
        fail_open: bool = False,
        lease_seconds: float = LEASE_SECONDS,
        timeout: float = 2.0,
        faults: RedisFaults | None = None,
        kind: str = RATE_LIMITS,
    ) -> None:
        """``kind`` names what is counted, for :class:`RedisFaults` and the 503's
        message (``channel_concurrency`` when it counts channels' slots)."""
        if isinstance(client, str):
            client = RespClient(client, timeout)
            self._owned = True
        else:
            self._owned = False
        self._client = client
        self._prefix = prefix
        self.fail_open = fail_open
        self.faults = faults if faults is not None else RedisFaults()
        self.kind = kind
        self.lease_seconds = lease_seconds
        self._acquire = Script(ACQUIRE)
        self._release = Script(RELEASE)
        self._refresh = Script(REFRESH)
        self._held: dict[str, RedisPermit] = {}  # the leases this process holds, by id
        self._encodings: dict[Subject, tuple[Encoded, Encoded]] = {}
        self._origin = uuid.uuid4().hex[:16] + ":"
        self._leases = 0
        self._refresher: asyncio.Task[None] | None = None

    @property
    def client(self) -> RespClient:
        return self._client

    def keys(self, subject: Subject) -> tuple[str, str]:
        """The subject's bucket hash and its set of leases."""
        tail = f"{subject.kind}:{subject.id}"
        return f"{self._prefix}:rl:{tail}", f"{self._prefix}:rs:{tail}"

    async def ping(self) -> None:
        """Reach Redis once; raise the client's error when it cannot be reached."""
        await self._client.ping()

    async def close(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
            self._refresher = None
        if self._owned:
            await self._client.close()

    async def acquire(self, subjects: Sequence[Subject], tokens: int) -> Permit:
        tokens = max(0, int(tokens))
        keys, args = self._arguments(subjects)
        lease = self._lease()
        try:
            answer = await self._client.run(self._acquire, keys, [tokens, lease, float(self.lease_seconds), *args])
        except UNREACHABLE as error:
            return self._unreachable(subjects, tokens, error)
        admitted, now, counts = int(answer[0]), float(answer[1]), answer[2:]
        levels = [
            Level(subject, float(counts[3 * i]), float(counts[3 * i + 1]), int(counts[3 * i + 2]))
            for i, subject in enumerate(subjects)
        ]
        if not admitted:
            worst = refusal(levels, tokens)
            if worst is None:  # at the edge of a float's precision: Lua refused, ask again soon
                worst = (CONCURRENCY_RETRY_AFTER, subjects[0], "requests", subjects[0].limits.requests_per_minute)
            raise exceeded(levels, worst, now)
        permit = RedisPermit(subjects=tuple(subjects), tokens=tokens, state=report(levels, now, None), lease=lease)
        self._hold(permit)
        return permit

    async def acquire_with_slot(self, subjects: Sequence[Subject], tokens: int, slot: Subject, slots: RedisRateLimiter) -> tuple[Permit, Permit]:
        """:meth:`acquire` of ``subjects`` (a request's own limits) and of a
        channel's concurrency slot (``slot``, counted by ``slots``) in ONE
        script, all or nothing: the request's permit and the slot's. Raises
        :class:`LimitExceeded` naming a subject of ``subjects`` when the
        request is over its limits, naming ``slot`` when only the channel is
        full. Both permits carry one lease id, so :meth:`release_with_slot` can
        give both back in one script too."""
        tokens = max(0, int(tokens))
        everyone = (*subjects, slot)
        keys, args = self._arguments(subjects)
        slot_keys, slot_args = slots._arguments((slot,))
        lease = self._lease()
        try:
            answer = await self._client.run(self._acquire, keys + slot_keys, [tokens, lease, float(self.lease_seconds), *args, *slot_args])
        except UNREACHABLE as error:
            permit = self._unreachable(subjects, tokens, error)  # raises when the limits fail closed
            return permit, slots._unreachable((slot,), 0, error)
        admitted, now, counts = int(answer[0]), float(answer[1]), answer[2:]
        levels = [
            Level(subject, float(counts[3 * i]), float(counts[3 * i + 1]), int(counts[3 * i + 2]))
            for i, subject in enumerate(everyone)
        ]
        own, channel = levels[:-1], levels[-1:]
        if not admitted:
            worst = refusal(own, tokens)
            if worst is not None:
                raise exceeded(own, worst, now)
            worst = refusal(channel, 0) or (CONCURRENCY_RETRY_AFTER, slot, "concurrency", slot.limits.concurrency)
            raise exceeded(channel, worst, now)
        permit = RedisPermit(subjects=tuple(subjects), tokens=tokens, state=report(own, now, None), lease=lease)
        taken = RedisPermit(subjects=(slot,), tokens=0, state=RateLimitState(checked_at=now), lease=lease)  # no headers
        self._hold(permit)
        slots._hold(taken)
        return permit, taken

    def _hold(self, permit: RedisPermit) -> None:
        """Keep ``permit``'s lease extended while it is held (when it counts a concurrency)."""
        if any(subject.limits.concurrency for subject in permit.subjects):
            self._held[permit.lease] = permit
            if self._refresher is None or self._refresher.done():
                self._refresher = asyncio.create_task(self._refresh_leases(), name="relaygate-lease-refresh")

    def release_with_slot(self, permit: Permit, tokens_used: int, slot: Permit, slots: RedisRateLimiter) -> bool:
        """Give back a request's permit and the channel slot taken with it
        (:meth:`acquire_with_slot`) in one script, not waited for. ``False``
        when that cannot be done (the slot already given back, another lease,
        not connected): then nothing was sent and nothing marked released."""
        if permit.released or slot.released or not isinstance(permit, RedisPermit) or not isinstance(slot, RedisPermit):
            return False
        if not permit.lease or permit.lease != slot.lease:
            return False
        keys, args = self._arguments(permit.subjects)
        slot_keys, slot_args = slots._arguments(slot.subjects)
        refund = permit.tokens - max(0, int(tokens_used))
        if not self._client.run_nowait(self._release, keys + slot_keys, [permit.lease, refund, *args, *slot_args]):
            return False
        permit.released = slot.released = True
        self._held.pop(permit.lease, None)
        slots._held.pop(slot.lease, None)
        return True

    async def release(self, permit: Permit, tokens_used: int) -> None:
        """Given back without waiting for Redis when connected (this process's
        later commands run after it, on the same connection); else once
        connected again, or its lease expires on its own."""
        sent = self._release_command(permit, tokens_used)
        if sent is None or self._client.run_nowait(self._release, *sent):
            return
        try:
            await self._client.run(self._release, *sent)
        except UNREACHABLE as error:
            log.warning("rate-limit store unavailable at release: the lease expires on its own", error=str(error))

    def release_nowait(self, permit: Permit) -> None:
        """:meth:`release` with nothing to correct, never waiting (a channel's
        slot at the end of an attempt). Not connected: the lease expires on its own."""
        sent = self._release_command(permit, permit.tokens)
        if sent is not None and not self._client.run_nowait(self._release, *sent):
            log.warning("rate-limit store unavailable at release: the lease expires on its own")

    def _release_command(self, permit: Permit, tokens_used: int) -> tuple[list[str | Encoded], list[Arg]] | None:
        """The release script's keys and arguments (``None``: nothing to give back)."""
        if permit.released:
            return None
        permit.released = True
        lease = permit.lease if isinstance(permit, RedisPermit) else ""
        if not lease:
            return None
        self._held.pop(lease, None)
        keys, args = self._arguments(permit.subjects)
        return keys, [lease, permit.tokens - max(0, int(tokens_used)), *args]

    async def refresh(self) -> None:
        """Extend the leases of the requests this process still has in flight."""
        keys: list[str] = []
        leases: list[str] = []
        for lease, permit in list(self._held.items()):
            for subject in permit.subjects:
                if subject.limits.concurrency:
                    keys.append(self.keys(subject)[1])
                    leases.append(lease)
        if keys:
            await self._client.run(self._refresh, keys, [float(self.lease_seconds), *leases])

    async def _refresh_leases(self) -> None:
        """Every third of a lease, extend the held ones: a long stream keeps its slot,
        a killed process's slots expire."""
        while self._held:
            await asyncio.sleep(self.lease_seconds / 3)
            try:
                await self.refresh()
            except UNREACHABLE as error:
                log.warning("rate-limit store unavailable: leases not extended", error=str(error))

    def _arguments(self, subjects: Sequence[Subject]) -> tuple[list[str | Encoded], list[Arg]]:
        """The scripts' keys and limits for ``subjects`` (each subject's encoded once)."""
        keys: list[str | Encoded] = []
        args: list[Arg] = []
        encodings = self._encodings
        for subject in subjects:
            encoded = encodings.get(subject)
            if encoded is None:
                if len(encodings) >= MAX_ENCODINGS:
                    encodings.clear()
                limits = subject.limits
                encoded = encodings[subject] = (
                    Encoded(self.keys(subject)),
                    Encoded((limits.requests_per_minute, limits.tokens_per_minute, limits.concurrency)),
                )
            keys.append(encoded[0])
            args.append(encoded[1])
        return keys, args

    def _lease(self) -> str:
        """A new lease id, unique across processes (this limiter's random prefix and a count)."""
        self._leases += 1
        return f"{self._origin}{self._leases:x}"

    def _unreachable(self, subjects: Sequence[Subject], tokens: int, error: Exception) -> Permit:
        if not self.faults.record(self.kind, error, opened=self.fail_open):
            what = "rate-limit store" if self.kind == RATE_LIMITS else "store of channel concurrency"
            raise RateLimitStoreUnavailable(
                f"The {what} is unavailable; try again shortly.", code="rate_limit_store_unavailable", retry_after=1.0
            ) from error
        return RedisPermit(subjects=tuple(subjects), tokens=tokens, state=RateLimitState(checked_at=time.time()))


def connect(url: str, timeout: float = 2.0) -> aioredis.Redis:
    """A client for ``url`` that answers within ``timeout`` seconds or raises: no retries, no hang."""
    return aioredis.Redis.from_url(
        url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=30,
    )


__all__ = ["LEASE_SECONDS", "RateLimitStoreUnavailable", "RedisPermit", "RedisRateLimiter", "connect"]
