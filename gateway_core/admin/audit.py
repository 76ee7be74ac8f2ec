"""The audit log: one row per write made through the management API, the
console and the ``relaygate`` commands: who (the user and the token or session;
for a command, ``cli`` and the operating system's user), which action on which
record, the record before and after, and when. Readable by admins."""

from __future__ import annotations

import time
from typing import Any

import attrs

from ..store.access_records import Actor, AuditEntry
from ..runtime.jsonable import to_jsonable
from .context import Admin

MAX_PAGE = 500


def actor(via: str, user_id: int | None = None, user_name: str | None = None, *, token_id: int | None = None, request_id: str | None = None) -> Actor:
    """Who acts: ``via`` is ``"token"``, ``"session"`` or ``"cli"``."""
    return Actor(via, user_id, user_name, token_id, request_id)


async def record(admin: Admin, actor: Actor, action: str, target: str, before: Any = None, after: Any = None) -> AuditEntry:
    """Append one audit row; ``before`` and ``after`` are the record (a record
    or its JSON value; ``None``: it did not exist, or was not read)."""
    entry = AuditEntry(
        id=0, created_at=time.time(), via=actor.via, user_id=actor.user_id, user_name=actor.user_name,
        token_id=actor.token_id, request_id=actor.request_id, action=action, target=target,
        before=_as_object(to_jsonable(before)), after=_as_object(to_jsonable(after)),
    )  # fmt: skip
    entry_id = await admin.store.record_audit(entry)
    return attrs.evolve(entry, id=entry_id)


async def list_entries(admin: Admin, *, before_id: int | None = None, limit: int = 50, target: str | None = None) -> list[AuditEntry]:
    """Audit rows newest first, older than ``before_id``, about ``target`` (``"key 7"``) when given."""
    return await admin.store.list_audit(before_id=before_id, limit=max(1, min(int(limit), MAX_PAGE)), target=target)


def _as_object(value: Any) -> dict[str, Any] | None:
    if value is None or isinstance(value, dict):
        return value
    return {"value": value}
