"""The access part of the admin port on SQLite (:class:`~gateway_core.admin.port_access.AccessStore`):
tokens, the audit log, roles and idempotent credits (:mod:`.access`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .access_records import AccessTokenRecord, AuditEntry, Credit
from . import access


class SqliteAccess:
    """Mixed into :class:`~.sqlite_admin.SqliteAdmin`, whose ``_read`` and ``_write`` it uses."""

    _read: Callable[..., Awaitable[Any]]
    _write: Callable[..., Awaitable[Any]]

    async def create_token(self, user_id: int, *, name: str, scope: str, expires_at: float | None) -> tuple[AccessTokenRecord, str]:
        result: tuple[AccessTokenRecord, str] = await self._write(access.create_token, user_id, name, scope, expires_at)
        return result

    async def get_token(self, token_id: int) -> AccessTokenRecord | None:
        found: AccessTokenRecord | None = await self._read(access.get_token, token_id)
        return found

    async def find_token(self, token_hash: str) -> AccessTokenRecord | None:
        found: AccessTokenRecord | None = await self._read(access.find_token, token_hash)
        return found

    async def list_tokens(self, user_id: int | None) -> list[AccessTokenRecord]:
        tokens: list[AccessTokenRecord] = await self._read(access.list_tokens, user_id)
        return tokens

    async def touch_token(self, token_id: int, used_at: float) -> None:
        await self._write(access.touch_token, token_id, used_at)

    async def revoke_token(self, token_id: int) -> bool:
        return bool(await self._write(access.revoke_token, token_id))

    async def set_user_admin(self, user_id: int, is_admin: bool) -> bool:
        return bool(await self._write(access.set_user_admin, user_id, is_admin))

    async def record_audit(self, entry: AuditEntry) -> int:
        return int(await self._write(access.record_audit, entry))

    async def list_audit(self, *, before_id: int | None, limit: int, target: str | None = None) -> list[AuditEntry]:
        entries: list[AuditEntry] = await self._read(access.list_audit, before_id, limit, target)
        return entries

    async def credit(self, user_id: int, amount_micros: int, *, kind: str, note: str | None, idempotency_key: str | None) -> Credit:
        done: Credit = await self._write(access.credit, user_id, amount_micros, kind, note, idempotency_key)
        return done

    async def find_request(self, request_id: str) -> dict[str, Any] | None:
        row: dict[str, Any] | None = await self._read(access.find_request, request_id)
        return row
