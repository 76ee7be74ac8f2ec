"""One circuit breaker: closed, open for a cool-down, or half-open with one probe
(see :mod:`gateway_core.routing.health` for what opens and closes it)."""

from __future__ import annotations

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"


class Breaker:
    __slots__ = ("state", "failures", "until", "probing", "last_error", "opened_at", "resorted_at")

    def __init__(self) -> None:
        self.state = CLOSED
        self.failures = 0
        self.until = 0.0  # monotonic time the cool-down ends
        self.probing = False
        self.last_error: str | None = None
        self.opened_at = 0.0  # when it last opened (or reopened: its latest failure)
        self.resorted_at = 0.0  # when a request last took it as its last resort

    def ready(self, now: float) -> bool:
        """Whether an attempt may go through now."""
        if self.state is CLOSED:
            return True
        if self.state is OPEN:
            return now >= self.until
        return not self.probing

    def take(self) -> bool:
        """Start an attempt the breaker is :meth:`ready` for; ``True`` for a probe."""
        if self.state is CLOSED:
            return False
        self.state = HALF_OPEN
        self.probing = True
        return True

    def succeed(self) -> bool:
        """Record a success; ``True`` when that closed the breaker."""
        self.failures = 0
        self.probing = False
        if self.state is CLOSED:
            return False
        self.state = CLOSED
        return True

    def fail(self, now: float, threshold: int, cooldown: float, message: str, hold: float | None = None) -> bool:
        """Record a failure; ``True`` when that opened the breaker."""
        self.count(message)
        if self.state is not CLOSED or self.failures >= threshold or hold:
            self.trip(now, hold or cooldown)
            return True
        return False

    def count(self, message: str) -> None:
        """Count a failure without deciding whether it opens the breaker (where
        the count is shared, the shared count decides)."""
        self.failures += 1
        self.last_error = message
        self.probing = False

    def trip(self, now: float, period: float) -> None:
        """Open for ``period`` seconds from ``now``."""
        self.state = OPEN
        self.probing = False
        self.opened_at = now
        self.until = now + period
