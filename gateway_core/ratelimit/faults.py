"""What the gateway does, per kind of shared state, when Redis cannot be reached.

Each kind fails **open** or **closed**:

- ``rate_limits`` (key and user limits): open, the request goes through without
  its limits; closed (the default), a 503 in the caller's protocol.
- ``channel_concurrency``: open, each process caps a channel on its own count;
  closed (the default), a 503 in the caller's protocol.
- ``breakers``: open (the default), each process keeps its own breakers;
  closed, a channel due for its half-open probe is skipped.
- ``signin`` (console sign-in throttling): open (the default), each process
  throttles on its own; closed, the sign-in is refused with "try again".

Open or closed, the event is counted in :class:`RedisFaults` (``services.redis_faults``:
``counts[(kind, "open" | "closed")]``, for a metrics endpoint) and logged as a
warning at most once every :data:`LOG_EVERY` seconds per kind. Nothing waits
longer than the Redis client's timeout, and the next call tries Redis again,
so service recovers by itself when Redis is back.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import attrs


RATE_LIMITS = "rate_limits"
CHANNEL_CONCURRENCY = "channel_concurrency"
BREAKERS = "breakers"
SIGNIN = "signin"
KINDS = (RATE_LIMITS, CHANNEL_CONCURRENCY, BREAKERS, SIGNIN)
OPEN, CLOSED = "open", "closed"
LOG_EVERY = 10.0  # seconds between two warnings of one kind


@attrs.frozen
class FaultPolicy:
    """``open`` or ``closed`` for each kind of shared state (see the module's table)."""

    rate_limits: str = CLOSED
    channel_concurrency: str = CLOSED
    breakers: str = OPEN
    signin: str = OPEN

    def fails_open(self, kind: str) -> bool:
        return bool(getattr(self, kind) == OPEN)

    @classmethod
    def parse(cls, table: Mapping[str, object], *, fail_open: bool = False) -> FaultPolicy:
        """``[gateway.redis_faults]`` (``kind = "open" | "closed"``); ``fail_open``
        (the older ``redis_fail_open = true``) opens ``rate_limits``."""
        unknown = set(table) - set(KINDS)
        if unknown:
            raise ValueError(f"[gateway.redis_faults] knows {', '.join(KINDS)}; not {', '.join(sorted(unknown))}")
        values: dict[str, str] = {RATE_LIMITS: OPEN} if fail_open else {}
        for kind, value in table.items():
            if value not in (OPEN, CLOSED):
                raise ValueError(f"[gateway.redis_faults] {kind} must be \"open\" or \"closed\", got {value!r}")
            values[kind] = str(value)
        return cls(**values)


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
            import structlog  # here, not at the top: the CLI reads the configuration that names this module without logging

            structlog.get_logger("relaygate.redis").warning(f"redis unreachable: {what}", kind=kind, error=f"{type(error).__name__}: {error}")
        return is_open

    def total(self, kind: str) -> int:
        return sum(count for (k, _), count in self.counts.items() if k == kind)
