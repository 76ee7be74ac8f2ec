"""Sign-in attempts, limited in memory per client address and per user name.

Every attempt counts against its address; failed attempts count against the
user name (a success clears them). Past a limit the attempt is refused before
the password is even checked, so guessing costs the attacker time, not the
gateway CPU. One process keeps its own counts: with several workers the limit
applies per worker.
"""

from __future__ import annotations

import math
import time
from collections import deque


class SlidingWindow:
    """At most ``limit`` events per ``window`` seconds for each name."""

    def __init__(self, limit: int, window: float, max_names: int = 50_000) -> None:
        self.limit = limit
        self.window = window
        self.max_names = max_names
        self._events: dict[str, deque[float]] = {}

    def retry_after(self, name: str, now: float | None = None) -> float:
        """Seconds until ``name`` may try again (0: now)."""
        if self.limit <= 0:
            return 0.0
        now = time.monotonic() if now is None else now
        events = self._recent(name, now)
        if events is None or len(events) < self.limit:
            return 0.0
        return max(0.0, events[0] + self.window - now)

    def add(self, name: str, now: float | None = None) -> None:
        if self.limit <= 0:
            return
        now = time.monotonic() if now is None else now
        if len(self._events) >= self.max_names:
            self._prune(now)
        events = self._events.setdefault(name, deque())
        events.append(now)
        while len(events) > self.limit:
            events.popleft()

    def clear(self, name: str) -> None:
        self._events.pop(name, None)

    def _recent(self, name: str, now: float) -> deque[float] | None:
        events = self._events.get(name)
        if events is None:
            return None
        while events and events[0] <= now - self.window:
            events.popleft()
        if not events:
            del self._events[name]
            return None
        return events

    def _prune(self, now: float) -> None:
        for name in list(self._events):
            self._recent(name, now)
        if len(self._events) >= self.max_names:  # still full: forget the oldest tenth
            for name in list(self._events)[: max(1, self.max_names // 10)]:
                del self._events[name]


class SignInLimiter:
    def __init__(self, per_address: int, per_name: int, window: float) -> None:
        self.addresses = SlidingWindow(per_address, window)
        self.names = SlidingWindow(per_name, window)

    def retry_after(self, address: str, name: str) -> int:
        """Whole seconds to wait before this attempt is allowed (0: allowed)."""
        wait = max(self.addresses.retry_after(address), self.names.retry_after(name.casefold()))
        return math.ceil(wait) if wait > 0 else 0

    def attempted(self, address: str) -> None:
        self.addresses.add(address)

    def failed(self, name: str) -> None:
        self.names.add(name.casefold())

    def succeeded(self, name: str) -> None:
        self.names.clear(name.casefold())
