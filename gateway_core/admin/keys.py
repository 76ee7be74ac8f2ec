"""API keys: created with their secret shown once, changed, switched and deleted.

``owner`` is the signed-in user acting on their own keys (the console): a key
of someone else's, or a deleted one, is then not found, and the limits an
operator set on the key cannot be loosened (:mod:`.key_locks`). Without it (an
operator, the CLI, the management API) any key is, and the limits it sets are
locked against the key's owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..records import DEFAULT_GROUP, KeyRecord
from .context import Admin
from .errors import Invalid, NotFound
from .key_locks import check_owner_change, key_fields, operator_locks
from .port import LimitChanges
from .rules import check_amount, check_models_served, check_limits
from .users import live_user


async def create_key(
    admin: Admin,
    user_id: int,
    *,
    name: str = "default",
    group: str | None = None,
    quota_micros: int | None = None,
    expires_at: float | None = None,
    models: Sequence[str] = (),
    allow_ips: Sequence[str] = (),
    limits: LimitChanges | None = None,
    owner: int | None = None,
) -> tuple[KeyRecord, str]:
    """Create a key in one of the user's groups (by default ``default`` when it
    is open to them, else their first); the key and its secret, which is stored
    only hashed and cannot be shown again."""
    user = await live_user(admin, user_id)
    if quota_micros is not None:
        check_amount(quota_micros, "quota", allow_zero=True)
    check_limits(limits or {})
    if group is None:
        group = DEFAULT_GROUP if DEFAULT_GROUP in user.groups or not user.groups else user.groups[0]
    if group not in user.groups:
        whose = "you" if owner == user.id else f"user {user.name!r} (open groups: {', '.join(sorted(user.groups)) or 'none'})"
        raise Invalid(f"group {group!r} is not open to {whose}")
    await check_models_served(admin, models, group)
    key, secret = await admin.store.create_key(
        user.id, name=name, group=group, quota_micros=quota_micros, expires_at=expires_at,
        models=list(models), allow_ips=list(allow_ips), limits=dict(limits or {}),
    )  # fmt: skip
    if owner is None:  # an operator's limits bind the key's owner
        await _lock(admin, key, {"quota_micros": None, "models": [], "allow_ips": [], "enabled": True, "rpm": None, "tpm": None, "concurrency": None})
    return key, secret


async def list_keys(admin: Admin, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]:
    """A user's keys, oldest first (deleted ones only when asked: their logs remain)."""
    return await admin.store.list_keys(user_id, include_deleted=include_deleted)


async def get_key(admin: Admin, key_id: int, *, owner: int | None = None) -> KeyRecord:
    key = await admin.store.get_key(key_id)
    if key is None or (owner is not None and (key.user_id != owner or key.deleted)):
        raise NotFound(f"no API key with id {key_id}")
    return key


async def set_key_enabled(admin: Admin, key_id: int, enabled: bool, *, owner: int | None = None) -> KeyRecord:
    """Enable or disable a key that is not deleted (its owner cannot enable a key an operator disabled)."""
    before = await get_key(admin, key_id, owner=owner)
    if owner is not None:
        check_owner_change(await admin.store.get_key_locks(key_id), {"enabled": enabled})
    if not await admin.store.set_key_enabled(key_id, enabled):
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await _changed_by(admin, before, owner)


async def delete_key(admin: Admin, key_id: int, *, owner: int | None = None) -> KeyRecord:
    """Delete a key for good (its usage rows keep it)."""
    await get_key(admin, key_id, owner=owner)
    if not await admin.store.delete_key(key_id):
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await get_key(admin, key_id)


async def update_key(
    admin: Admin,
    key_id: int,
    *,
    name: str,
    quota_micros: int | None,
    expires_at: float | None,
    models: Sequence[str],
    allow_ips: Sequence[str],
    owner: int | None = None,
    limits: LimitChanges | None = None,
    group: str | None = None,
) -> KeyRecord:
    """Change a key's name, quota, expiry, models and allowed networks, its group
    (an operator only: one open to the key's user) when ``group`` is given, and
    its rate limits and budgets when ``limits`` has any (checked against the
    operator's locks all together before anything is written)."""
    before = await get_key(admin, key_id, owner=owner)
    if quota_micros is not None:
        check_amount(quota_micros, "quota", allow_zero=True)
    check_limits(limits or {})
    locked = (await admin.store.get_key_locks(key_id)).get("models") or ()  # what an operator allowed stays acceptable
    await check_models_served(admin, models, group or before.group, already=(*before.models, *locked))
    if owner is not None:
        wanted = {"quota_micros": quota_micros, "models": list(models), "allow_ips": list(allow_ips), **(limits or {})}
        check_owner_change(await admin.store.get_key_locks(key_id), wanted)
    if group is not None and group != before.group:
        if owner is not None:
            raise Invalid("only an operator moves a key to another group", "group")
        user = await live_user(admin, before.user_id)
        if group not in user.groups:
            raise Invalid(f"group {group!r} is not open to user {user.name!r} (open groups: {', '.join(sorted(user.groups)) or 'none'})", "group")
    changed = await admin.store.update_key(
        key_id, name=name, quota_micros=quota_micros, expires_at=expires_at, models=list(models), allow_ips=list(allow_ips),
        group=group,
    )
    if not changed or (limits and await admin.store.set_key_limits(key_id, limits) is None):
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await _changed_by(admin, before, owner)


async def set_key_limits(
    admin: Admin, key_id: int, changes: LimitChanges, *, owner: int | None = None
) -> tuple[KeyRecord, dict[str, int | None]]:
    """Change a key's own rate limits and budgets (an operator's: locked against its
    owner; the owner's: within the operator's locks); the key and its stored limits after."""
    before = await get_key(admin, key_id, owner=owner)
    check_limits(changes)
    if owner is not None:
        check_owner_change(await admin.store.get_key_locks(key_id), changes)
    stored = await admin.store.set_key_limits(key_id, changes)
    if stored is None:
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await _changed_by(admin, before, owner), stored


async def set_own_key_limits(admin: Admin, key_id: int, changes: LimitChanges, *, owner: int) -> KeyRecord:
    """The key's owner changing its rate limits (the console): never loosening
    what an operator locked, and locking nothing; the key after."""
    await get_key(admin, key_id, owner=owner)
    check_limits(changes)
    check_owner_change(await admin.store.get_key_locks(key_id), changes)
    if await admin.store.set_key_limits(key_id, changes) is None:
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await get_key(admin, key_id)


async def _changed_by(admin: Admin, before: KeyRecord, owner: int | None) -> KeyRecord:
    """The key after a change; an operator's change locks what it set."""
    after = await get_key(admin, before.id)
    if owner is None:
        await _lock(admin, after, key_fields(before))
    return after


async def _lock(admin: Admin, key: KeyRecord, before: dict[str, Any]) -> None:
    locks = await admin.store.get_key_locks(key.id)
    updated = operator_locks(locks, before, key_fields(key))
    if updated != locks:
        await admin.store.set_key_locks(key.id, updated)


async def set_key_cost_header(admin: Admin, key_id: int, on: bool, *, owner: int | None = None) -> KeyRecord:
    """Whether the key's answers carry their cost (``x-relaygate-cost-usd``)."""
    await get_key(admin, key_id, owner=owner)
    if not await admin.store.set_key_cost_header(key_id, on):
        raise NotFound(f"no API key with id {key_id}")
    admin.caches.key_changed(key_id)
    return await get_key(admin, key_id)

