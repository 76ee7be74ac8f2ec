"""Sign-in attempts, limited in memory per client address and per user name.

Every attempt counts against its address; failed attempts count against the
user name (a success clears them). Past a limit the attempt is refused before
the password is even checked, so guessing costs the attacker time, not the
gateway CPU. One process keeps its own counts: with several workers the limit
applies per worker.
"""

from __future__ import annotations

import math

from gateway_core.throttle import SlidingWindow


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
