"""Short-lived upstream credentials a channel type keeps per channel (OAuth access
tokens of an identity provider): fetched once at a time however many
requests wait, kept until they are due for refresh, and a failed refresh answered
with the kept token while it is still valid. The fetch is the channel type's; this
is only the keeping."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

import attrs

from .errors import UpstreamError

K = TypeVar("K", bound=Hashable)
REFRESH_MARGIN = 300.0  # seconds before its end a long-lived token is fetched again (a short one: at half its life)
MAX_ENTRIES = 1024  # tokens kept per cache (one a channel, unless its credentials change)


@attrs.frozen
class FetchedToken:
    """What a fetch returns: the token and how many seconds it lives from when the fetch began."""

    value: str = attrs.field(repr=False)
    lifetime: float


@attrs.frozen
class _Kept:
    value: str = attrs.field(repr=False)
    refresh_at: float
    expires_at: float


class TokenCache(Generic[K]):
    """Tokens by key (a channel and its credentials), each fetched by one call at a time."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, max_entries: int = MAX_ENTRIES, margin: float = REFRESH_MARGIN) -> None:
        self._clock = clock
        self._max_entries = max_entries
        self._margin = margin
        self._kept: dict[K, _Kept] = {}
        self._fetching: dict[K, asyncio.Future[_Kept]] = {}
        self.fetches = 0  # fetches started (for tests and diagnostics)

    async def token(self, key: K, fetch: Callable[[], Awaitable[FetchedToken]]) -> str:
        """A valid token for ``key``: the kept one until it is due for refresh, else a
        new one from ``fetch()`` (one fetch shared by every caller). When the refresh
        fails with an :class:`~gateway_core.errors.UpstreamError` while the kept token
        is still valid, the kept one."""
        held = self._kept.get(key)
        if held is not None and self._clock() < held.refresh_at:
            return held.value
        pending = self._fetching.get(key)
        if pending is None:
            pending = asyncio.ensure_future(self._fetch(fetch))
            self._fetching[key] = pending
            pending.add_done_callback(lambda done: self._settle(key, done))
        try:
            return (await asyncio.shield(pending)).value
        except UpstreamError:
            if held is not None and self._clock() < held.expires_at:
                return held.value
            raise

    def forget(self, key: K, token: str | None = None) -> None:
        """Drop ``key``'s token (the upstream refused it), or only if it is still ``token``."""
        held = self._kept.get(key)
        if held is not None and (token is None or held.value == token):
            del self._kept[key]

    async def _fetch(self, fetch: Callable[[], Awaitable[FetchedToken]]) -> _Kept:
        self.fetches += 1
        started = self._clock()
        fetched = await fetch()
        margin = min(self._margin, fetched.lifetime / 2)
        return _Kept(fetched.value, refresh_at=started + fetched.lifetime - margin, expires_at=started + fetched.lifetime)

    def _settle(self, key: K, done: asyncio.Future[_Kept]) -> None:
        self._fetching.pop(key, None)
        if done.cancelled() or done.exception() is not None:
            return
        self._kept.pop(key, None)
        while len(self._kept) >= self._max_entries:
            self._kept.pop(next(iter(self._kept)))
        self._kept[key] = done.result()
