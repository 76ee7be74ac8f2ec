"""API keys as the request path sees them, cached for a short time.

A hit younger than ``ttl`` is one dict lookup and one clock comparison, with
no await on the store. A miss (or a stale entry) reads through the store;
concurrent misses for the same hash share that one read. Unknown keys are
cached too, so a flood of bad keys cannot flood the database. Changes made
elsewhere (another worker, the CLI) are seen within ``ttl``; changes made by
this process can :meth:`KeyCache.invalidate` at once (by hash, or
:meth:`~KeyCache.invalidate_key` / :meth:`~KeyCache.invalidate_user` by id; a
change of a group's limits calls ``invalidate()`` for every key).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..records import KeyRecord
from ..store.request_store import RequestStore

_monotonic = time.monotonic


class KeyCache:
    def __init__(self, store: RequestStore, ttl: float = 1.0, max_entries: int = 100_000) -> None:
        self._store = store
        self._ttl = ttl
        self._max_entries = max(1, max_entries)
        self._entries: dict[str, tuple[float, KeyRecord | None]] = {}  # hash -> (expires, record)
        self._loading: dict[str, asyncio.Future] = {}
        self._generation = 0

    async def get(self, key_hash: str) -> KeyRecord | None:
        """The key with this hash (``None`` when there is none), at most ``ttl`` old."""
        entry = self._entries.get(key_hash)
        if entry is not None and entry[0] > _monotonic():
            return entry[1]
        return await self._load(key_hash)

    def invalidate(self, key_hash: str | None = None) -> None:
        """Forget one key, or every key when ``key_hash`` is ``None``."""
        self._generation += 1  # loads already under way must not refill the cache
        if key_hash is None:
            self._entries.clear()
            self._loading.clear()
        else:
            self._entries.pop(key_hash, None)
            self._loading.pop(key_hash, None)

    def invalidate_key(self, key_id: int) -> None:
        """Forget the key with this id: call it after changing a key in this process
        (disable, delete, edit its limits, models or allow list)."""
        self._forget(lambda record: record.id == key_id)

    def invalidate_user(self, user_id: int) -> None:
        """Forget every key of this user (after disabling the user or changing its limits),
        and the team keys they hold as a member (docs/teams.md)."""
        self._forget(lambda record: record.user_id == user_id or record.member_id == user_id)

    def _forget(self, matches) -> None:
        self._generation += 1  # loads already under way must not refill the cache
        entries = self._entries
        for key_hash in [h for h, (_, record) in entries.items() if record is not None and matches(record)]:
            del entries[key_hash]

    def __len__(self) -> int:
        return len(self._entries)

    async def _load(self, key_hash: str) -> KeyRecord | None:
        loading = self._loading.get(key_hash)
        if loading is None:
            loading = asyncio.ensure_future(self._fetch(key_hash))
            self._loading[key_hash] = loading
            loading.add_done_callback(lambda done: self._forget_load(key_hash, done))
        # shield: one waiter giving up must not cancel the read the others share
        return await asyncio.shield(loading)

    async def _fetch(self, key_hash: str) -> KeyRecord | None:
        generation = self._generation
        record = await self._store.find_key(key_hash)
        if generation == self._generation:
            self._remember(key_hash, record)
        return record

    def _forget_load(self, key_hash: str, done: asyncio.Future) -> None:
        if self._loading.get(key_hash) is done:
            del self._loading[key_hash]
        if not done.cancelled():
            done.exception()  # mark it retrieved: every waiter got it already

    def _remember(self, key_hash: str, record: KeyRecord | None) -> None:
        entries = self._entries
        entries.pop(key_hash, None)
        if len(entries) >= self._max_entries:
            self._evict()
        entries[key_hash] = (_monotonic() + self._ttl, record)

    def _evict(self) -> None:
        """Drop stale entries; if still full, the oldest tenth."""
        now = _monotonic()
        entries = self._entries
        for stale in [h for h, (expires, _) in entries.items() if expires <= now]:
            del entries[stale]
        excess = len(entries) - int(self._max_entries * 0.9)
        if excess > 0:
            for oldest in list(entries)[:excess]:
                del entries[oldest]
