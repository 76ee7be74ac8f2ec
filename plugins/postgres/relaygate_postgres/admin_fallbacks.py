"""Model fallbacks on PostgreSQL (the admin port's part; see :mod:`gateway_core.routing.fallbacks`)."""

from __future__ import annotations

import time

import asyncpg

from gateway_core.routing.fallbacks import ModelFallback
from gateway_core.store.fallbacks import _COLUMNS
from .admin_base import AdminBase, changed

UPSERT = (
    f"INSERT INTO model_fallbacks ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT (scope, owner, model) DO UPDATE SET fallback = excluded.fallback, created_at = excluded.created_at"
)
DELETE = "DELETE FROM model_fallbacks WHERE scope = $1 AND owner = $2 AND model = $3"
LIST = f"SELECT {_COLUMNS} FROM model_fallbacks ORDER BY scope, owner, model"


class FallbacksAdmin(AdminBase):
    async def set_fallback(self, scope: str, owner: str, model: str, fallback: str) -> ModelFallback:
        record = ModelFallback(scope, owner, model, fallback, time.time())

        async def upsert(conn: asyncpg.Connection) -> ModelFallback:
            await conn.execute(UPSERT, record.scope, record.owner, record.model, record.fallback, record.created_at)
            return record

        return await self._write("set_fallback", upsert)

    async def delete_fallback(self, scope: str, owner: str, model: str) -> bool:
        async def delete(conn: asyncpg.Connection) -> bool:
            return changed(await conn.execute(DELETE, scope, owner, model)) > 0

        return await self._write("delete_fallback", delete)

    async def list_fallbacks(self) -> list[ModelFallback]:
        async def rows(conn: asyncpg.Connection) -> list[ModelFallback]:
            return [ModelFallback(*row) for row in await conn.fetch(LIST)]

        return await self._read("list_fallbacks", rows)
