"""The default shared state: a gateway alone, counting in its own memory."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..config import Config
from ..shared_state import SharedState, SharedStateKind

if TYPE_CHECKING:
    from ..routing.affinity import Affinity
    from ..routing.health import HealthBoard
    from ..routing.router import Router


class InProcessState(SharedState):
    def __init__(self) -> None:
        from ..ratelimit.memory import InProcessRateLimiter  # here: the CLI registers this kind without serving
        from ..ratelimit.signin import InProcessSignInThrottle

        self.rate_limiter = InProcessRateLimiter()
        self.signin = InProcessSignInThrottle()
        self.redeem = InProcessSignInThrottle()

    def affinity(self, config: Config) -> Affinity | None:
        if not config.session_affinity:
            return None
        from ..routing.affinity import LocalAffinity

        return LocalAffinity(ttl=config.session_ttl, max_entries=config.session_max_entries, header=config.session_header or None)


class InProcessKind(SharedStateKind):
    name = "in-process"
    default = True
    across_processes = False

    def wanted(self, config: Config) -> bool:
        return True

    def open(self, config: Config, board: HealthBoard, router: Router) -> InProcessState:
        return InProcessState()
