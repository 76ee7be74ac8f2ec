"""Users: creating them, their console passwords, state, groups and rate limits."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..records import DEFAULT_GROUP, UserOverview, UserRecord
from ..secrets import hash_password
from .context import Admin
from .errors import Conflict, Invalid, NotFound
from .groups import check_group_names
from .port import LimitChanges
from .rules import check_limits, check_user_name
from .team_access import refuse_team_wallet

MIN_PASSWORD = 8  # characters of a password set in the console


async def create_user(
    admin: Admin, name: str, *, is_admin: bool = False, password: str | None = None, groups: Sequence[str] = (DEFAULT_GROUP,)
) -> UserRecord:
    """Create a user opened to ``groups`` (missing groups are created), with a
    console password when one is given (stored only hashed)."""
    check_user_name(name)
    if not groups:
        raise Invalid("needs at least one group", "groups")
    check_group_names(groups)
    if password is not None and not password:
        raise Invalid("must not be empty", "password")
    password_hash = await asyncio.to_thread(hash_password, password) if password else None
    try:
        return await admin.store.create_user(name, is_admin=is_admin, password_hash=password_hash, groups=list(groups))
    except Conflict:
        raise Conflict(f"user {name!r} already exists") from None


async def find_user(admin: Admin, name: str) -> UserRecord:
    """The user named ``name``."""
    user = await admin.store.find_user(name)
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return user


async def get_user(admin: Admin, user_id: int) -> UserRecord:
    user = await admin.store.get_user(user_id)
    if user is None:
        raise NotFound(f"no user with id {user_id}")
    return user


async def live_user(admin: Admin, user_id: int) -> UserRecord:
    """The user with this id, unless deleted (:class:`Invalid`: nothing changes a deleted user)."""
    user = await get_user(admin, user_id)
    if user.deleted:
        raise Invalid(f"user {user.name!r} is deleted")
    return user


async def list_users(admin: Admin, *, include_deleted: bool = False) -> list[UserOverview]:
    """Every user (deleted ones only when asked), by id, with its number of live keys."""
    listed = await admin.store.list_users()
    return listed if include_deleted else [item for item in listed if not item.user.deleted]


async def set_user_enabled(admin: Admin, user_id: int, enabled: bool, *, by: int | None = None) -> UserRecord:
    """Enable or disable a user (a disabled user's keys and console sessions stop
    working). ``by`` is the operator acting: nobody disables themselves."""
    if not enabled and by == user_id:
        raise Invalid("You cannot disable yourself.")
    await live_user(admin, user_id)
    if not await admin.store.set_user_enabled(user_id, enabled):
        raise NotFound(f"no user with id {user_id}")
    admin.caches.user_changed(user_id)
    return await get_user(admin, user_id)


async def delete_user(admin: Admin, user_id: int, *, by: int | None = None) -> UserRecord:
    """Delete a user: they can no longer sign in or call (every key deleted, every
    token revoked, every session ended), for good. Money history is never deleted:
    the row keeps its name (never given to another user), balance and ledger, and
    the usage log keeps its rows. A request already in flight settles as usual.
    ``by`` is the operator acting: nobody deletes themselves."""
    if by == user_id:
        raise Invalid("You cannot delete yourself.")
    user = await get_user(admin, user_id)
    if user.deleted:
        raise Invalid(f"user {user.name!r} is already deleted")
    if not await admin.store.delete_user(user_id):
        raise NotFound(f"no user with id {user_id}")
    admin.caches.user_changed(user_id)
    return await get_user(admin, user_id)


def check_password(password: str) -> None:
    """A console password must have :data:`MIN_PASSWORD` characters or more."""
    if len(password) < MIN_PASSWORD:
        raise Invalid(f"needs {MIN_PASSWORD} characters or more", "password")


async def set_password(admin: Admin, user_id: int, password: str) -> None:
    """Set a user's console password (checked by :func:`check_password`, stored only hashed)."""
    check_password(password)
    await live_user(admin, user_id)
    await refuse_team_wallet(admin, user_id, "have a password")
    password_hash = await asyncio.to_thread(hash_password, password)
    if not await admin.store.set_password_hash(user_id, password_hash):
        raise NotFound(f"no user with id {user_id}")


async def change_groups(admin: Admin, user_id: int, *, opened: Sequence[str] = (), closed: Sequence[str] = ()) -> UserRecord:
    """Open groups to a user (missing groups are created) and close others."""
    check_group_names(opened)
    await live_user(admin, user_id)
    if not await admin.store.change_user_groups(user_id, opened=list(opened), closed=list(closed)):
        raise NotFound(f"no user with id {user_id}")
    admin.caches.user_changed(user_id)
    return await get_user(admin, user_id)


async def user_limits(admin: Admin, user: UserRecord) -> dict[str, int | None]:
    """A user's stored rate-limit overrides and budgets."""
    stored = await admin.store.get_user_limits(user.id)
    if stored is None:
        raise NotFound(f"no user named {user.name!r}")
    return stored


async def set_user_limits(admin: Admin, user: UserRecord, changes: LimitChanges) -> dict[str, int | None]:
    """Change a user's rate-limit overrides (``None``: back to its group's
    defaults); the stored limits after."""
    check_limits(changes)
    stored = await admin.store.set_user_limits(user.id, changes)
    if stored is None:
        raise NotFound(f"no user named {user.name!r}")
    admin.caches.user_changed(user.id)
    return stored


async def set_role(admin: Admin, user_id: int, is_admin: bool, *, by: int | None = None) -> UserRecord:
    """Make a user an admin or not. ``by`` is the operator acting: nobody takes
    their own admin role away (the gateway would be left without an operator)."""
    if not is_admin and by == user_id:
        raise Invalid("You cannot take away your own admin role.", "is_admin")
    await live_user(admin, user_id)
    if is_admin:
        await refuse_team_wallet(admin, user_id, "be a site admin")
    if not await admin.store.set_user_admin(user_id, is_admin):
        raise NotFound(f"no user with id {user_id}")
    admin.caches.user_changed(user_id)
    return await get_user(admin, user_id)


async def search_users(admin: Admin, *, query: str = "", after_id: int = 0, limit: int = 50) -> tuple[list[UserOverview], bool]:
    """Users whose name contains ``query`` (any case), by id, after ``after_id``;
    and whether more follow."""
    needle = query.casefold()
    matching = [item for item in await list_users(admin) if item.user.id > after_id and needle in item.user.name.casefold()]
    return matching[:limit], len(matching) > limit
