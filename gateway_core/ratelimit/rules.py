"""The arithmetic every rate limiter shares: when a request must wait, and what to report.

A limiter counts, per subject, the requests and tokens left in its buckets
(``math.inf`` where the dimension is not limited) and the requests in flight;
:func:`refusal` and :func:`report` turn those levels into the answer the
:class:`~gateway_core.ratelimit.state.RateLimiter` contract promises, so the
in-process and the shared limiters round and report alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

from .state import CONCURRENCY, REQUESTS, TOKENS, Allowance, LimitExceeded, RateLimitState, Subject

WINDOW = 60.0  # seconds: limits are per minute
CONCURRENCY_RETRY_AFTER = 1.0  # when a slot frees is unknown: ask the client to retry soon
EPSILON = 1e-9


class Level(NamedTuple):
    """One subject's counts at one moment."""

    subject: Subject
    requests: float
    tokens: float
    in_flight: int


def refusal(levels: Sequence[Level], tokens: int) -> tuple[float, Subject, str, int] | None:
    """The longest wait among the subjects (seconds, subject, dimension, limit), or
    ``None`` when every subject admits a request of ``tokens``."""
    worst: tuple[float, Subject, str, int] | None = None
    for subject, requests, level, in_flight in levels:
        limits = subject.limits
        rpm, tpm, slots = limits.requests_per_minute, limits.tokens_per_minute, limits.concurrency
        if rpm and requests < 1.0 - EPSILON:
            wait = (1.0 - requests) * WINDOW / rpm
            if worst is None or wait > worst[0]:
                worst = (wait, subject, REQUESTS, rpm)
        if tpm:
            need = min(tokens, tpm)
            if level < need - EPSILON:
                wait = (need - level) * WINDOW / tpm
                if worst is None or wait > worst[0]:
                    worst = (wait, subject, TOKENS, tpm)
        if slots and in_flight >= slots:
            if worst is None or CONCURRENCY_RETRY_AFTER > worst[0]:
                worst = (CONCURRENCY_RETRY_AFTER, subject, CONCURRENCY, slots)
    return worst


def exceeded(levels: Sequence[Level], worst: tuple[float, Subject, str, int], checked_at: float) -> LimitExceeded:
    """The refusal for ``worst``: its wait in whole seconds, rounded up."""
    wait, subject, dimension, limit = worst
    retry_after = float(max(1, math.ceil(wait - EPSILON)))
    return LimitExceeded(subject, dimension, limit, retry_after, report(levels, checked_at, retry_after))


def report(levels: Sequence[Level], checked_at: float, retry_after: float | None) -> RateLimitState:
    """The tightest allowance per dimension among ``levels``."""
    requests: Allowance | None = None
    tokens: Allowance | None = None
    concurrency: Allowance | None = None
    for subject, requests_left, tokens_left, in_flight in levels:
        limits = subject.limits
        rpm = limits.requests_per_minute
        if rpm:
            requests = _tighter(requests, _allowance(rpm, requests_left))
        tpm = limits.tokens_per_minute
        if tpm:
            tokens = _tighter(tokens, _allowance(tpm, tokens_left))
        slots = limits.concurrency
        if slots:
            concurrency = _tighter(concurrency, Allowance(slots, max(0, slots - in_flight), 0.0))
    return RateLimitState(
        checked_at=checked_at, requests=requests, tokens=tokens, concurrency=concurrency, retry_after=retry_after
    )


def _allowance(limit: int, level: float) -> Allowance:
    remaining = max(0, math.floor(level + EPSILON))
    reset_after = max(0.0, (limit - level) * WINDOW / limit)
    return Allowance(limit, min(limit, remaining), reset_after)


def _tighter(current: Allowance | None, candidate: Allowance) -> Allowance:
    if current is None:
        return candidate
    if candidate.remaining < current.remaining or (
        candidate.remaining == current.remaining and candidate.reset_after > current.reset_after
    ):
        return candidate
    return current
