"""Personal access tokens, the audit log, roles and idempotent credits on
PostgreSQL: the access part of the admin port, on the tables of
:mod:`.access_schema`, with the SQL of :mod:`..access` numbered for asyncpg.

A credit with an idempotency key is one transaction: the balance's change, its
ledger row and the key's row. A second transaction with the same key waits on
the key's unique index until the first commits, then inserts nothing and rolls
back its own change, and answers with the first credit: the same top-up sent
twice at once credits once. Such a credit is safe to run again after a lost
connection (the key tells whether it committed); one without a key is not.
"""

from __future__ import annotations

import time
from typing import Any

import asyncpg

from gateway_core.store.access_records import AccessTokenRecord, AuditEntry, Credit
from gateway_core.store.access import (
    AUDIT_INSERT,
    AUDIT_SELECT,
    FIND_REQUEST,
    IDEMPOTENT_SELECT,
    SET_ADMIN,
    TOKEN_INSERT,
    TOKEN_REVOKE,
    TOKEN_TOUCH,
    TOKEN_SELECT,
    audit_entry,
    audit_values,
    check_replay,
    credit_record,
    token_record,
    token_values,
)
from gateway_core.store.usage import usage_dict
from .admin_base import AdminBase, changed, found
from .migrate import numbered

_TOKEN_BY_ID = numbered(f"{TOKEN_SELECT} WHERE t.id = ?")
_TOKEN_BY_HASH = numbered(f"{TOKEN_SELECT} WHERE t.token_hash = ?")
_TOKENS = numbered(f"{TOKEN_SELECT} WHERE ?::bigint IS NULL OR t.user_id = ? ORDER BY t.id")
# $1 user, $2 signed amount, $3 kind, $4 note, $5 now: the ledger row, or none (no such user); one statement
_CREDIT = """
WITH changed AS (
    UPDATE users SET balance_micros = balance_micros + $2::bigint WHERE id = $1::bigint RETURNING balance_micros
)
INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, note, created_at)
SELECT $1::bigint, $3::text, $2::bigint, balance_micros, $4::text, $5::double precision FROM changed
RETURNING id, balance_after_micros, created_at
"""
_CLAIM_KEY = (
    "INSERT INTO idempotency_keys (key, user_id, kind, amount_micros, note, ledger_id, created_at) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (key) DO NOTHING RETURNING key"
)
_AUDIT = numbered(AUDIT_SELECT.replace("(? IS NULL OR id < ?)", "(?::bigint IS NULL OR id < ?)").replace("(? IS NULL OR target", "(?::text IS NULL OR target"))


class _Replayed(Exception):
    """The idempotency key was claimed by a transaction that committed first."""


class AccessAdmin(AdminBase):
    """The access part of :class:`~.admin.PostgresAdmin`."""

    async def create_token(self, user_id: int, *, name: str, scope: str, expires_at: float | None) -> tuple[AccessTokenRecord, str]:
        secret, values = token_values(user_id, name, scope, expires_at)

        async def create(conn: asyncpg.Connection) -> tuple[AccessTokenRecord, str]:
            if await conn.fetchval("SELECT 1 FROM users WHERE id = $1", user_id) is None:
                raise ValueError(f"no user with id {user_id}")
            token_id = await conn.fetchval(numbered(TOKEN_INSERT) + " RETURNING id", *values)
            return found(await _token(conn, _TOKEN_BY_ID, token_id)), secret

        return await self._write("create_token", create)

    async def get_token(self, token_id: int) -> AccessTokenRecord | None:
        return await self._read("get_token", lambda conn: _token(conn, _TOKEN_BY_ID, token_id))

    async def find_token(self, token_hash: str) -> AccessTokenRecord | None:
        return await self._read("find_token", lambda conn: _token(conn, _TOKEN_BY_HASH, token_hash))

    async def list_tokens(self, user_id: int | None) -> list[AccessTokenRecord]:
        async def tokens(conn: asyncpg.Connection) -> list[AccessTokenRecord]:
            return [token_record(row) for row in await conn.fetch(_TOKENS, user_id, user_id)]

        return await self._read("list_tokens", tokens)

    async def touch_token(self, token_id: int, used_at: float) -> None:
        async def touch(conn: asyncpg.Connection) -> None:
            await conn.execute(numbered(TOKEN_TOUCH), used_at, token_id)

        await self._write("touch_token", touch)

    async def revoke_token(self, token_id: int) -> bool:
        async def revoke(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute(numbered(TOKEN_REVOKE), _now(), token_id)) > 0

        return await self._write("revoke_token", revoke)

    async def set_user_admin(self, user_id: int, is_admin: bool) -> bool:
        async def change(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute(numbered(SET_ADMIN), int(is_admin), user_id)) > 0

        return await self._write("set_user_admin", change)

    async def record_audit(self, entry: AuditEntry) -> int:
        async def record(conn: asyncpg.Connection) -> int:
            return int(await conn.fetchval(numbered(AUDIT_INSERT) + " RETURNING id", *audit_values(entry)))

        return await self._write("record_audit", record)

    async def list_audit(self, *, before_id: int | None, limit: int, target: str | None = None) -> list[AuditEntry]:
        async def entries(conn: asyncpg.Connection) -> list[AuditEntry]:
            return [audit_entry(row) for row in await conn.fetch(_AUDIT, before_id, before_id, target, target, limit)]

        return await self._read("list_audit", entries)

    async def credit(self, user_id: int, amount_micros: int, *, kind: str, note: str | None, idempotency_key: str | None) -> Credit:
        amount = int(amount_micros)

        async def move(conn: asyncpg.Connection) -> Credit:
            if idempotency_key is not None:
                earlier = await conn.fetchrow(numbered(IDEMPOTENT_SELECT), idempotency_key)
                if earlier is not None:
                    return check_replay(credit_record(earlier, replayed=True), user_id, kind, amount)
            row = await conn.fetchrow(_CREDIT, user_id, amount, kind, note, _now())
            if row is None:
                raise ValueError(f"no user with id {user_id}")
            ledger_id, balance, created_at = row
            if idempotency_key is not None:
                claimed = await conn.fetchval(_CLAIM_KEY, idempotency_key, user_id, kind, amount, note, ledger_id, _now())
                if claimed is None:
                    raise _Replayed  # rolls this transaction's change back
            return Credit(ledger_id, user_id, kind, amount, balance, note, idempotency_key, created_at)

        if idempotency_key is None:
            return await self._write(kind, move, once=True)  # one statement: not run again after a lost connection
        try:
            return await self._write(kind, move)
        except _Replayed:
            return await self._write(kind, move)  # now finds the committed credit

    async def find_request(self, request_id: str) -> dict[str, Any] | None:
        async def one(conn: asyncpg.Connection) -> dict[str, Any] | None:
            row = await conn.fetchrow(numbered(FIND_REQUEST), request_id)
            return usage_dict(row) if row is not None else None

        return await self._read("find_request", one)


async def _token(conn: asyncpg.Connection, sql: str, value: Any) -> AccessTokenRecord | None:
    row = await conn.fetchrow(sql, value)
    return token_record(row) if row is not None else None


def _now() -> float:
    return time.time()
