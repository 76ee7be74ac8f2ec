"""What the rate limiter works on and answers: subjects, allowances, permits.

These are plain values with no wire names. A client protocol turns a
:class:`RateLimitState` into its own headers (``ClientProtocol.rate_limit_headers``),
with its own names and formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import attrs

from ..records import RateLimits

REQUESTS = "requests"
TOKENS = "tokens"
CONCURRENCY = "concurrency"


@attrs.frozen
class Subject:
    """Who a limit applies to: ``kind`` is ``"key"`` or ``"user"``, ``id`` its id."""

    kind: str
    id: int
    limits: RateLimits

    @property
    def bucket(self) -> tuple[str, int]:
        return (self.kind, self.id)


@attrs.frozen
class Allowance:
    """One limit as a client sees it.

    ``limit`` is per minute for requests and tokens, at once for concurrency;
    ``remaining`` is what may still be used now; ``reset_after`` is the number of
    seconds until ``remaining`` is back to ``limit`` (0 when it already is, and
    always 0 for concurrency, which frees when requests finish).
    """

    limit: int
    remaining: int
    reset_after: float


@attrs.frozen
class RateLimitState:
    """A request's rate limits as the gateway counted them, for response headers.

    For each dimension the tightest allowance among the request's subjects (the
    one with least remaining), or ``None`` when no subject limits it.
    ``checked_at`` is the Unix time of the count: ``reset_at`` turns a
    ``reset_after`` into a time of day, for protocols whose headers carry one.
    ``retry_after`` is set when the request was refused: seconds until it would
    be let through.
    """

    checked_at: float
    requests: Allowance | None = None
    tokens: Allowance | None = None
    concurrency: Allowance | None = None
    retry_after: float | None = None

    def reset_at(self, allowance: Allowance) -> float:
        """The Unix time at which ``allowance`` is back to its limit."""
        return self.checked_at + allowance.reset_after


@attrs.define
class Permit:
    """What :meth:`RateLimiter.acquire` took, to give back in :meth:`RateLimiter.release`."""

    subjects: tuple[Subject, ...]
    tokens: int  # tokens taken at admission (the estimate)
    state: RateLimitState
    released: bool = False


class LimitExceeded(Exception):
    """A subject is over one of its limits; nothing was taken.

    ``dimension`` is ``"requests"``, ``"tokens"`` or ``"concurrency"``;
    ``retry_after`` the seconds until the request would pass (whole seconds,
    rounded up); ``state`` the allowances as they are.
    """

    def __init__(self, subject: Subject, dimension: str, limit: int, retry_after: float, state: RateLimitState) -> None:
        super().__init__(f"{subject.kind} {subject.id}: {dimension} limit {limit} reached")
        self.subject = subject
        self.dimension = dimension
        self.limit = limit
        self.retry_after = retry_after
        self.state = state


@runtime_checkable
class RateLimiter(Protocol):
    """Counts requests, tokens and requests in flight per subject.

    The in-process :class:`~gateway_core.ratelimit.memory.InProcessRateLimiter`
    serves one worker; a shared backend (Redis) can serve several replicas
    behind this same interface, without touching the policies.
    """

    async def acquire(self, subjects: Sequence[Subject], tokens: int) -> Permit:
        """Take one request, ``tokens`` (an estimate) and one slot in flight from
        every subject, all or nothing; raise :class:`LimitExceeded` when one of
        them is over a limit. Exact under concurrency: two requests never both
        take the last unit."""
        ...

    async def release(self, permit: Permit, tokens_used: int) -> None:
        """Give back the slot in flight and correct the tokens taken to
        ``tokens_used`` (the real usage). Idempotent."""
        ...


class SlotLimits(Protocol):
    """A request's rate limits left to be taken together with its first channel's
    slot (``ctx.slot_limits``, set by the ``rate_limit`` policy when the limits and
    the slots are counted on the same shared connection); the failover takes them
    with the first channel it claims."""

    @property
    def taken(self) -> bool:
        """Whether they were taken already."""

    async def take(self, slot: Subject | None, slots: Any) -> Permit | None:
        """Take the limits, with ``slot`` (counted by ``slots``) when given: the
        slot's permit. Raises a 429 when the request is over its limits;
        :class:`LimitExceeded` (naming ``slot``) when only the channel is full."""
