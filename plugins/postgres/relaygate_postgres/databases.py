"""Databases of their own on a PostgreSQL server, for tests: the test kit's
``relaygate_postgres_url`` fixture creates one per test and drops it after."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import asyncpg


def with_database(url: str, database: str, *, port: int | None = None) -> str:
    """``url`` naming another database (and, with ``port``, on 127.0.0.1 at that port)."""
    parts = urlsplit(url)
    userinfo, _, host = parts.netloc.rpartition("@")
    host = host if port is None else f"127.0.0.1:{port}"
    return urlunsplit((parts.scheme, f"{userinfo}@{host}" if userinfo else host, "/" + database, parts.query, ""))


async def run_on_server(server: str, sql: str) -> None:
    """Run one statement on the database ``server`` names (``CREATE DATABASE`` cannot run in a transaction)."""
    conn = await asyncpg.connect(server, timeout=5)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def create_database(server: str, prefix: str = "relaygate_test") -> str:
    """A new, empty database on ``server``: its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    await run_on_server(server, f'CREATE DATABASE "{name}"')
    return with_database(server, name)


async def drop_database(server: str, url: str) -> None:
    """Drop the database ``url`` names, closing its sessions."""
    name = urlsplit(url).path.lstrip("/").replace('"', '""')
    await run_on_server(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


UNREACHABLE = (OSError, TimeoutError, asyncpg.PostgresError)  # what a server that is not there raises
