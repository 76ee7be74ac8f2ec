"""Answers a client protocol keeps for its clients.

Some client protocols let a client build on an earlier answer by its id, or read
and delete it later. When
the channel that answered keeps no such state, the protocol keeps it here: one
:class:`StoredResponse` per answer, owned by the key's user, until it expires.
The store implements :class:`ResponseStore` on both databases (table
``stored_responses``, migration ``0012_stored_responses``); a protocol reaches it
through :class:`~gateway_core.client_protocol.Caller`.
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class StoredResponse:
    """One kept answer.

    ``response`` is the answer as the client received it (JSON text).
    ``items`` is the conversation the answer closes, as the protocol writes it
    (JSON text): kept by the gateway for channels that keep nothing. A response
    an upstream keeps itself has no ``items`` and names its ``channel_id``: the
    protocol sends reads and deletions of it to that channel.
    """

    id: str
    user_id: int
    model: str
    created_at: float
    expires_at: float
    response: str
    items: str | None = None
    channel_id: int | None = None
    key_id: int | None = None

    @property
    def size(self) -> int:
        """Characters kept (what the size limit counts)."""
        return len(self.response) + len(self.items or "")


class ResponseStore(Protocol):
    """Kept answers, by id and owner. Every call is its own transaction."""

    async def save(self, record: StoredResponse, keep_per_user: int) -> None:
        """Keep ``record`` (replacing one of the same id and owner), then drop every
        expired row and the owner's oldest beyond ``keep_per_user``."""

    async def get(self, response_id: str, user_id: int, now: float) -> StoredResponse | None:
        """The user's unexpired answer of that id (another user's is ``None``)."""

    async def delete(self, response_id: str, user_id: int) -> bool:
        """Forget the user's answer of that id; whether there was one."""

    async def sweep(self, now: float) -> int:
        """Drop every answer expired at ``now``; how many."""
