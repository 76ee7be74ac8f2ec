"""Rate limits: requests and tokens per minute, requests in flight, per key and per user.

The :class:`RateLimiter` interface is what the ``rate_limit`` policy uses; the
in-process :class:`InProcessRateLimiter` is the default implementation.
Console sign-ins are throttled by a :class:`SignInThrottle` (``services.signin``)
under a :class:`SignInRule` (:mod:`.signin`); what happens when Redis cannot be
reached is :mod:`.faults`.
"""

from ..records import NO_LIMITS, RateLimits
from .state import (
    CONCURRENCY,
    REQUESTS,
    TOKENS,
    Allowance,
    LimitExceeded,
    Permit,
    RateLimiter,
    RateLimitState,
    SlotLimits,
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
    "SignInRule",
    "SignInThrottle",
    "SignInThrottleUnavailable",
    "SignInThrottled",
    "SlotLimits",
    "Subject",
]

_SIGNIN = ("SignInRule", "SignInThrottle", "SignInThrottleUnavailable", "SignInThrottled")


def __getattr__(name: str) -> object:
    """The in-process limiter and the sign-in throttle are loaded when asked for,
    not by every import of the contract."""
    if name == "InProcessRateLimiter":
        from .memory import InProcessRateLimiter

        return InProcessRateLimiter
    if name in _SIGNIN:
        from . import signin

        return getattr(signin, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
