"""Users, their groups and rate limits, and API keys, on PostgreSQL (the admin port).

Validation is the SQLite store's (:mod:`gateway_core.store.users`,
:mod:`~gateway_core.store.keys`, :mod:`~gateway_core.store.limits`); only the SQL
is PostgreSQL's. A user's groups read in the order they were opened
(``user_groups.ordinal``, as on SQLite).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import asyncpg
import orjson

from gateway_core.admin.port import LimitChanges
from gateway_core.billing.budgets import BudgetUse
from gateway_core.records import LIMIT_COLUMNS, KeyRecord, UserOverview, UserRecord
from gateway_core.secrets import hash_key, key_prefix, new_api_key
from gateway_core.store.connection import to_json
from gateway_core.store.groups import check_group_name
from gateway_core.store.keys import _checked as checked_key
from gateway_core.store.keys import _SELECT as _KEY
from gateway_core.store.keys import _key as key_record
from gateway_core.store.keys import parse_locks
from gateway_core.store.limits import _TABLES as LIMIT_TABLES
from gateway_core.store.limits import check_limit_changes, limit_columns
from gateway_core.store.migrations import UNIT_RATIO_PPM
from gateway_core.store.users import LEAVE_TEAMS, check_user_name
from .admin_base import AdminBase, changed, found
from .migrate import numbered
from .statements import BUDGET_SPENT_BY_KEY, BUDGET_SPENT_BY_USER

_USER = (
    "SELECT u.id, u.name, u.is_admin, u.enabled, u.balance_micros, u.deleted_at, u.created_at, u.password_hash IS NOT NULL AS has_password, "
    "coalesce((SELECT array_agg(g.group_name ORDER BY g.ordinal) FROM user_groups AS g WHERE g.user_id = u.id), '{}') AS groups, "
    "(SELECT count(*) FROM api_keys AS k WHERE k.user_id = u.id AND k.deleted = 0) AS keys FROM users AS u"
)


def user_record(row: asyncpg.Record) -> UserRecord:
    return UserRecord(
        id=row["id"], name=row["name"], is_admin=bool(row["is_admin"]), enabled=bool(row["enabled"]),
        balance_micros=row["balance_micros"], groups=tuple(row["groups"]), deleted=row["deleted_at"] is not None,
    )  # fmt: skip


async def get_user(conn: asyncpg.Connection, where: str, *params: object) -> UserRecord | None:
    row = await conn.fetchrow(f"{_USER} WHERE {where}", *params)
    return user_record(row) if row is not None else None


async def ensure_groups(conn: asyncpg.Connection, names: Iterable[str]) -> None:
    """Create the groups that do not exist yet (ratio 1)."""
    wanted = list(dict.fromkeys(names))
    for name in wanted:
        check_group_name(name)
    if wanted:
        await conn.execute(
            'INSERT INTO "groups" (name, ratio_ppm, created_at) SELECT unnest($1::text[]), $2::bigint, $3::double precision '
            "ON CONFLICT (name) DO NOTHING",
            wanted, UNIT_RATIO_PPM, time.time(),
        )  # fmt: skip


async def open_groups(conn: asyncpg.Connection, user_id: int, names: Iterable[str]) -> None:
    """Open groups to a user (creating missing ones), in the order given."""
    wanted = list(dict.fromkeys(names))
    await ensure_groups(conn, wanted)
    for name in wanted:  # one row at a time: their order is the order they read in
        await conn.execute(
            "INSERT INTO user_groups (user_id, group_name) VALUES ($1, $2) ON CONFLICT DO NOTHING", user_id, name
        )


async def add_user(conn: asyncpg.Connection, name: str, *, is_admin: bool, password_hash: str | None, groups: Sequence[str]) -> int:
    check_user_name(name)
    user_id: int = await conn.fetchval(
        "INSERT INTO users (name, is_admin, enabled, password_hash, balance_micros, created_at) "
        "VALUES ($1, $2, 1, $3, 0, $4) RETURNING id",
        name, int(bool(is_admin)), password_hash, time.time(),
    )  # fmt: skip
    await open_groups(conn, user_id, groups)
    return user_id


async def set_limits(
    conn: asyncpg.Connection, subject: str, ident: int | str, changes: LimitChanges
) -> dict[str, int | None] | None:
    """Change the limit columns of a ``"group"``, ``"user"`` or ``"key"``; the
    stored limits after (``None``: no such row)."""
    checked = check_limit_changes(changes, subject)
    table, column = LIMIT_TABLES[subject]
    names = limit_columns(subject)
    columns = ", ".join(names)
    if checked:
        assignments = ", ".join(f"{name} = ?" for name in checked)
        sql = numbered(f"UPDATE {table} SET {assignments} WHERE {column} = ? RETURNING {columns}")
        row = await conn.fetchrow(sql, *checked.values(), ident)
    else:
        row = await conn.fetchrow(f"SELECT {columns} FROM {table} WHERE {column} = $1", ident)
    return {name: row[name] for name in names} if row is not None else None


async def get_key(conn: asyncpg.Connection, key_id: int) -> KeyRecord | None:
    row = await conn.fetchrow(f"{_KEY} WHERE k.id = $1", key_id)
    return key_record(row) if row is not None else None


async def list_keys(conn: asyncpg.Connection, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]:
    where = "k.user_id = $1" if include_deleted else "k.user_id = $1 AND k.deleted = 0"
    return [key_record(row) for row in await conn.fetch(f"{_KEY} WHERE {where} ORDER BY k.id", user_id)]


async def create_key(
    conn: asyncpg.Connection, user_id: int, *, name: str, group: str, limits: LimitChanges | None = None, **options: Any
) -> tuple[int, str]:
    """As :func:`gateway_core.store.keys.create_key`: the key's id and its secret."""
    quota_micros, expires_at = options.get("quota_micros"), options.get("expires_at")
    name, networks, model_names = checked_key(name, quota_micros, options.get("models", ()), options.get("allow_ips", ()))
    limit_values = check_limit_changes(limits or {})
    owner = await conn.fetchval("SELECT name FROM users WHERE id = $1", user_id)
    if owner is None:
        raise ValueError(f"no user with id {user_id}")
    opened = [row[0] for row in await conn.fetch("SELECT group_name FROM user_groups WHERE user_id = $1 ORDER BY ordinal", user_id)]
    if group not in opened:
        have = ", ".join(sorted(opened)) or "none"
        raise ValueError(f"group {group!r} is not open to user {owner!r} (open groups: {have})")
    secret = new_api_key()
    key_id: int = await conn.fetchval(
        "INSERT INTO api_keys (user_id, name, key_hash, prefix, group_name, quota_micros, used_micros, "
        "expires_at, models, allow_ips, enabled, deleted, created_at) "
        "VALUES ($1, $2, $3, $4, $5, $6, 0, $7, $8, $9, 1, 0, $10) RETURNING id",
        user_id, name, hash_key(secret), key_prefix(secret), group, quota_micros, expires_at,
        to_json(model_names), to_json(networks), time.time(),
    )  # fmt: skip
    if limit_values:
        await set_limits(conn, "key", key_id, limit_values)
    return key_id, secret


class UsersAdmin(AdminBase):
    """The users' and keys' part of :class:`~.admin.PostgresAdmin`."""

    async def create_user(self, name: str, *, is_admin: bool, password_hash: str | None, groups: Sequence[str]) -> UserRecord:
        async def create(conn: asyncpg.Connection) -> UserRecord:
            user_id = await add_user(conn, name, is_admin=is_admin, password_hash=password_hash, groups=groups)
            return found(await get_user(conn, "u.id = $1", user_id))

        return await self._write("create_user", create)

    async def find_user(self, name: str) -> UserRecord | None:
        return await self._read("find_user", lambda conn: get_user(conn, "u.name = $1", name))

    async def get_user(self, user_id: int) -> UserRecord | None:
        return await self._read("get_user", lambda conn: get_user(conn, "u.id = $1", user_id))

    async def list_users(self) -> list[UserOverview]:
        async def overviews(conn: asyncpg.Connection) -> list[UserOverview]:
            rows = await conn.fetch(f"{_USER} WHERE u.id NOT IN (SELECT account_id FROM teams) ORDER BY u.id")  # people only
            return [UserOverview(user_record(row), row["keys"], bool(row["has_password"]), row["created_at"]) for row in rows]

        return await self._read("list_users", overviews)

    async def set_user_enabled(self, user_id: int, enabled: bool) -> bool:
        """Enable or disable a user that is not deleted; the user's sign-ins from before end either way (``sessions_after``)."""
        sql = "UPDATE users SET enabled = $1, sessions_after = $2 WHERE id = $3 AND deleted_at IS NULL"
        return await self._write("set_user_enabled", lambda conn: _updated(conn, sql, int(bool(enabled)), time.time(), user_id))

    async def delete_user(self, user_id: int) -> bool:
        """As the SQLite store's :func:`gateway_core.store.users.delete_user`, in one transaction."""

        async def delete(conn: asyncpg.Connection) -> bool:
            now = time.time()
            sql = "UPDATE users SET enabled = 0, deleted_at = $1, sessions_after = $1, password_hash = NULL WHERE id = $2 AND deleted_at IS NULL"
            if not await _updated(conn, sql, now, user_id):
                return False
            await conn.execute("UPDATE api_keys SET deleted = 1, enabled = 0 WHERE user_id = $1 AND deleted = 0", user_id)
            await conn.execute("UPDATE access_tokens SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL", now, user_id)
            for sql in LEAVE_TEAMS:
                await conn.execute(numbered(sql), user_id)
            return True

        return await self._write("delete_user", delete)

    async def set_password_hash(self, user_id: int, password_hash: str | None) -> bool:
        """Set the hash; the user's sign-ins from before end (``sessions_after``)."""
        sql = "UPDATE users SET password_hash = $1, sessions_after = $2 WHERE id = $3"
        return await self._write("set_password_hash", lambda conn: _updated(conn, sql, password_hash, time.time(), user_id))

    async def change_user_groups(self, user_id: int, *, opened: Sequence[str], closed: Sequence[str]) -> bool:
        async def change(conn: asyncpg.Connection) -> bool:
            if await conn.fetchval("SELECT id FROM users WHERE id = $1 FOR UPDATE", user_id) is None:
                return False
            await open_groups(conn, user_id, opened)
            await conn.execute(
                "DELETE FROM user_groups WHERE user_id = $1 AND group_name = ANY($2::text[])", user_id, list(closed)
            )
            return True

        return await self._write("change_user_groups", change)

    async def get_user_limits(self, user_id: int) -> dict[str, int | None] | None:
        return await self._read("get_user_limits", lambda conn: set_limits(conn, "user", user_id, {}))  # no change: a read

    async def set_user_limits(self, user_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        return await self._write("set_user_limits", lambda conn: set_limits(conn, "user", user_id, changes))

    # --- API keys ----------------------------------------------------------------

    async def create_key(
        self,
        user_id: int,
        *,
        name: str,
        group: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        limits: LimitChanges,
    ) -> tuple[KeyRecord, str]:
        async def create(conn: asyncpg.Connection) -> tuple[KeyRecord, str]:
            key_id, secret = await create_key(
                conn, user_id, name=name, group=group, quota_micros=quota_micros, expires_at=expires_at,
                models=models, allow_ips=allow_ips, limits=limits,
            )  # fmt: skip
            return found(await get_key(conn, key_id)), secret

        return await self._write("create_key", create)

    async def get_key(self, key_id: int) -> KeyRecord | None:
        return await self._read("get_key", lambda conn: get_key(conn, key_id))

    async def list_keys(self, user_id: int, *, include_deleted: bool = False) -> list[KeyRecord]:
        return await self._read("list_keys", lambda conn: list_keys(conn, user_id, include_deleted=include_deleted))

    async def set_key_enabled(self, key_id: int, enabled: bool) -> bool:
        sql = "UPDATE api_keys SET enabled = $1 WHERE id = $2 AND deleted = 0"
        return await self._write("set_key_enabled", lambda conn: _updated(conn, sql, int(bool(enabled)), key_id))

    async def delete_key(self, key_id: int) -> bool:
        sql = "UPDATE api_keys SET deleted = 1, enabled = 0 WHERE id = $1 AND deleted = 0"
        return await self._write("delete_key", lambda conn: _updated(conn, sql, key_id))

    async def update_key(
        self,
        key_id: int,
        *,
        name: str,
        quota_micros: int | None,
        expires_at: float | None,
        models: Sequence[str],
        allow_ips: Sequence[str],
        group: str | None = None,
    ) -> bool:
        async def update(conn: asyncpg.Connection) -> bool:
            stored_name, networks, model_names = checked_key(name, quota_micros, models, allow_ips)
            return await _updated(
                conn,
                'UPDATE api_keys SET name = $1, quota_micros = $2, expires_at = $3, models = $4, allow_ips = $5, group_name = coalesce($6, group_name) '
                "WHERE id = $7 AND deleted = 0",
                stored_name, quota_micros, expires_at, to_json(model_names), to_json(networks), group, key_id,
            )  # fmt: skip

        return await self._write("update_key", update)

    async def set_key_limits(self, key_id: int, changes: LimitChanges) -> dict[str, int | None] | None:
        return await self._write("set_key_limits", lambda conn: set_limits(conn, "key", key_id, changes))

    async def get_key_locks(self, key_id: int) -> dict[str, Any]:
        text = await self._read("get_key_locks", lambda conn: conn.fetchval("SELECT locks FROM api_keys WHERE id = $1", key_id))
        return parse_locks(text)

    async def budget_spending(self, uses: Sequence[BudgetUse]) -> list[tuple[int, int | None]]:
        async def read(conn: asyncpg.Connection) -> list[tuple[int, int | None]]:
            found = []
            for use in uses:
                statement = BUDGET_SPENT_BY_KEY if use.is_key else BUDGET_SPENT_BY_USER
                spent, oldest = await conn.fetchrow(statement, use.subject, use.first_hour, use.subject_id)
                found.append((int(spent), oldest))
            return found

        return await self._read("budget_spending", read)

    async def set_key_cost_header(self, key_id: int, on: bool) -> bool:
        sql = "UPDATE api_keys SET cost_header = $1 WHERE id = $2 AND deleted = 0"
        return await self._write("set_key_cost_header", lambda conn: _updated(conn, sql, int(on), key_id))

    async def set_key_locks(self, key_id: int, locks: Mapping[str, Any]) -> None:
        sql = "UPDATE api_keys SET locks = $1 WHERE id = $2"
        await self._write("set_key_locks", lambda conn: _updated(conn, sql, orjson.dumps(dict(locks)).decode(), key_id))


async def _updated(conn: asyncpg.Connection, sql: str, *params: object) -> bool:
    return changed(await conn.execute(sql, *params)) > 0
