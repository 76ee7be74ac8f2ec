"""Counting attempts in memory: at most so many per name in a sliding window.

Used where attempts at guessing a secret are throttled (console sign-in,
redemption codes). One process keeps its own counts: with several workers a
limit applies per worker.
"""

from __future__ import annotations

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
