"""Rate limits: requests and tokens per minute, requests in flight, per key and per user.

The :class:`RateLimiter` interface is what the ``rate_limit`` policy uses; the
in-process :class:`InProcessRateLimiter` is the default implementation.
"""

from ..records import NO_LIMITS, RateLimits
from .memory import InProcessRateLimiter
from .state import (
    CONCURRENCY,
    REQUESTS,
    TOKENS,
    Allowance,
    LimitExceeded,
    Permit,
    RateLimiter,
    RateLimitState,
    Subject,
)

__all__ = [
    "CONCURRENCY",
    "NO_LIMITS",
    "REQUESTS",
    "TOKENS",
    "Allowance",
    "InProcessRateLimiter",
    "LimitExceeded",
    "Permit",
    "RateLimitState",
    "RateLimiter",
    "RateLimits",
    "Subject",
]
