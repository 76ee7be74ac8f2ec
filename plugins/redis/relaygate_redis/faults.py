"""Counts of the times Redis could not be reached, by kind of shared state and by
what was done (failed open or closed, as :class:`~gateway_core.ratelimit.faults.FaultPolicy`
says: see that module's table)."""

from __future__ import annotations

import time

import structlog

from gateway_core.ratelimit.faults import CLOSED, LOG_EVERY, OPEN, FaultPolicy

log = structlog.get_logger("relaygate.redis")


class RedisFaults:
    """Counts of the times Redis could not be reached, by kind and by what was done."""

    def __init__(self, policy: FaultPolicy = FaultPolicy()) -> None:
        self.policy = policy
        self.counts: dict[tuple[str, str], int] = {}
        self._logged: dict[str, float] = {}

    def fails_open(self, kind: str) -> bool:
        return self.policy.fails_open(kind)

    def record(self, kind: str, error: BaseException, *, opened: bool | None = None) -> bool:
        """Count one failure to reach Redis for ``kind``; ``True`` when it fails open."""
        is_open = self.policy.fails_open(kind) if opened is None else opened
        outcome = OPEN if is_open else CLOSED
        self.counts[(kind, outcome)] = self.counts.get((kind, outcome), 0) + 1
        now = time.monotonic()
        if now - self._logged.get(kind, -LOG_EVERY) >= LOG_EVERY:
            self._logged[kind] = now
            what = "served without the shared state (fail open)" if is_open else "refused (fail closed)"
            log.warning(f"redis unreachable: {what}", kind=kind, error=f"{type(error).__name__}: {error}")
        return is_open

    def total(self, kind: str) -> int:
        return sum(count for (k, _), count in self.counts.items() if k == kind)
