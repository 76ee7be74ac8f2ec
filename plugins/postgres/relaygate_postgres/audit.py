"""The money invariants of :mod:`gateway_core.store.audit` on PostgreSQL: the
same statements, in one REPEATABLE READ snapshot (or in the caller's transaction)."""

from __future__ import annotations

import asyncpg

from gateway_core.store.audit import INVARIANTS, SUMMARY, AuditReport, report
from .migrate import numbered


async def audit(conn: asyncpg.Connection, *, max_problems: int = 100) -> AuditReport:
    """Check every invariant on ``conn``'s database; report up to ``max_problems``."""
    if conn.is_in_transaction():
        return await _audit(conn, max_problems)
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        return await _audit(conn, max_problems)


async def _audit(conn: asyncpg.Connection, limit: int) -> AuditReport:
    found = [(invariant, tuple(row)) for invariant in INVARIANTS for row in await conn.fetch(numbered(invariant.sql), limit)]
    summary = await conn.fetchrow(SUMMARY)
    return report(found, tuple(summary), limit)
