"""The PostgreSQL schema: the same migrations, tables, columns and indexes as on
SQLite, applied once by replicas migrating at once, an append-only ledger, and
usage-log pages served by an index with no sort."""

from __future__ import annotations

import asyncio
import re
import sqlite3

import asyncpg
import pytest

from gateway_core.config import Config
from gateway_core.runtime.plugins import collect
from gateway_core.sql import POSTGRESQL, SchemaHandle
from gateway_core.store import CORE_MIGRATIONS as SQLITE_MIGRATIONS
from gateway_core.store import Store
from gateway_core.testing.stores import open_store
from gateway_core.store.sqlite_sql import sqlite_only
from relaygate_postgres.schema import CORE_MIGRATIONS
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.migrate import SchemaOutdated, apply_migrations, pending
from relaygate_postgres.migrate import numbered, script
from gateway_core.store.usage import usage_query


async def connect(url: str) -> asyncpg.Connection:
    return await asyncpg.connect(url)


def test_the_migrations_have_sqlite_s_names():
    assert [name for name, _ in CORE_MIGRATIONS] == [name for name, _ in SQLITE_MIGRATIONS]


async def test_tables_columns_and_indexes_match_sqlite(tmp_path, pg_url):
    Store(str(tmp_path / "relaygate.db"), SQLITE_MIGRATIONS).migrate()
    lite = sqlite3.connect(tmp_path / "relaygate.db")
    tables = [row[0] for row in lite.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    sqlite_columns = {t: sorted(row[1] for row in lite.execute(f'PRAGMA table_info("{t}")')) for t in tables}
    sqlite_indexes = {row[0] for row in lite.execute("SELECT name FROM sqlite_master WHERE type = 'index'") if not row[0].startswith("sqlite_")}
    lite.close()

    await PostgresStore(pg_url).migrate()
    conn = await connect(pg_url)
    try:
        rows = await conn.fetch("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public'")
        pg_columns: dict[str, list[str]] = {}
        for row in rows:
            pg_columns.setdefault(row["table_name"], []).append(row["column_name"])
        pg_indexes = {row["indexname"] for row in await conn.fetch("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'")}
    finally:
        await conn.close()
    assert {t: sorted(c) for t, c in pg_columns.items()} == sqlite_columns
    assert {name for name in pg_indexes if not name.endswith("_pkey")} == sqlite_indexes


async def test_replicas_migrating_at_once_apply_each_migration_once(pg_url):
    conns = [await connect(pg_url) for _ in range(3)]
    try:
        assert await pending(conns[0], CORE_MIGRATIONS) == [name for name, _ in CORE_MIGRATIONS]
        applied = await asyncio.gather(*(apply_migrations(conn, CORE_MIGRATIONS) for conn in conns))
        names = [name for each in applied for name in each]
        assert sorted(names) == [name for name, _ in CORE_MIGRATIONS]  # each once, by whichever replica got there
        assert await conns[0].fetchval("SELECT count(*) FROM schema_migrations") == len(CORE_MIGRATIONS)
        assert await pending(conns[1], CORE_MIGRATIONS) == []
        assert await apply_migrations(conns[2], CORE_MIGRATIONS) == []
        assert await conns[0].fetchval('SELECT count(*) FROM "groups"') == 1  # 0001's insert ran once
    finally:
        for conn in conns:
            await conn.close()


async def test_a_failing_migration_leaves_nothing_behind(pg_url):
    broken = [*CORE_MIGRATIONS, ("9999_broken", script("CREATE TABLE half_done (id INTEGER); SELECT no_such_column FROM users"))]
    conn = await connect(pg_url)
    try:
        with pytest.raises(asyncpg.UndefinedColumnError):
            await apply_migrations(conn, broken)
        assert await pending(conn, broken) == ["9999_broken"]
        assert await conn.fetchval("SELECT to_regclass('half_done')") is None
    finally:
        await conn.close()


async def test_a_store_refuses_to_start_on_an_older_schema(pg_url):
    conn = await connect(pg_url)
    try:
        await apply_migrations(conn, CORE_MIGRATIONS[:2])
    finally:
        await conn.close()
    store = PostgresStore(pg_url)
    later = [name for name, _ in CORE_MIGRATIONS[2:]]
    assert later[:3] == ["0003_billing", "0004_channel_health", "0005_user_group_order"]
    assert await store.pending_migrations() == later
    with pytest.raises(SchemaOutdated, match=re.escape(f"pending: {', '.join(later)}): run `relaygate migrate`")) as outdated:
        await store.start()
    assert "PostgreSQL at 127.0.0.1:5432/relaygate_test_" in str(outdated.value) and not store.running
    assert await store.migrate() == later
    await store.start()
    assert store.running
    await store.close()


async def test_the_ledger_is_append_only(pg_url):
    await PostgresStore(pg_url).migrate()
    conn = await connect(pg_url)
    try:
        user_id = await conn.fetchval("INSERT INTO users (name, balance_micros) VALUES ('alice', 5) RETURNING id")
        await conn.execute("INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros) VALUES ($1, 'topup', 5, 5)", user_id)
        for statement in ("UPDATE ledger SET amount_micros = 6", "DELETE FROM ledger", "TRUNCATE ledger"):
            with pytest.raises(asyncpg.RestrictViolationError, match="ledger is append-only"):
                await conn.execute(statement)
        with pytest.raises(asyncpg.CheckViolationError, match="ledger_kind_check"):
            await conn.execute("INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros) VALUES ($1, 'gift', 1, 6)", user_id)
        with pytest.raises(asyncpg.CheckViolationError):  # flags are 0 or 1, as on SQLite
            await conn.execute("UPDATE users SET enabled = 2")
        assert await conn.fetchval("SELECT sum(amount_micros) FROM ledger") == 5
    finally:
        await conn.close()


@pytest.mark.parametrize(
    ("filters", "index"),
    [
        ({"key_id": 7}, "idx_usage_logs_key_id_created_at"),
        ({"user_id": 3, "model": "m"}, "idx_usage_logs_user_id_created_at"),
        ({"model": "m", "since": 1.0}, "idx_usage_logs_model_created_at"),
        ({"status": 429, "before": (5.0, 9)}, "idx_usage_logs_status_created_at"),
        ({"since": 1.0, "until": 9.0}, "idx_usage_logs_created_at"),
    ],
)
async def test_usage_log_pages_are_an_index_range_with_no_sort(pg_url, filters, index):
    """The pager's query as the PostgreSQL admin port runs it (SQLite's, without its
    INDEXED BY) reads its page in ``created_at DESC, id DESC`` order straight from an index."""
    await PostgresStore(pg_url).migrate()
    sql, params = usage_query(limit=50, indexed=False, **filters)
    assert "INDEXED BY" not in sql
    sql = numbered(sql)
    conn = await connect(pg_url)
    try:
        await conn.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")
        plan = "\n".join(row[0] for row in await conn.fetch(f"EXPLAIN {sql}", *params))
    finally:
        await conn.close()
    assert f"Index Scan Backward using {index} on usage_logs" in plan, plan
    assert "Sort" not in plan, plan


def test_qmark_placeholders_are_numbered_outside_quotes():
    assert numbered("SELECT ?, '?', \"a?\", 'it''s ?' || ? WHERE x = ?") == "SELECT $1, '?', \"a?\", 'it''s ?' || $2 WHERE x = $3"


def migrate_notes(schema: SchemaHandle) -> None:
    """A plugin's migration: portable SQL, a branch on the dialect, parameters."""
    key = "BIGINT GENERATED BY DEFAULT AS IDENTITY" if schema.dialect == POSTGRESQL else "INTEGER"
    schema.execute(f"CREATE TABLE notes (id {key} PRIMARY KEY, body TEXT NOT NULL)")
    schema.execute("INSERT INTO notes (body) VALUES (?), ('why?'), (?)", ("hello", "bye"))


async def test_plugins_migrations_run_on_postgresql_beside_the_core_s(pg_url, tmp_path):
    registry = collect(Config(db_path=str(tmp_path / "unused.db"), load=("console",)))
    store = open_store(pg_url, [*registry.migrations, ("9000_notes", migrate_notes)])
    assert isinstance(store, PostgresStore)
    assert await store.migrate() == [*(name for name, _ in CORE_MIGRATIONS), "8000_console", "9000_notes"]
    conn = await connect(pg_url)
    try:
        assert [r["body"] for r in await conn.fetch("SELECT body FROM notes ORDER BY id")] == ["hello", "why?", "bye"]
        assert await conn.fetchval("SELECT count(*) FROM console_settings") == 1
    finally:
        await conn.close()
    with pytest.raises(TypeError, match="written for SQLite, not postgresql"):
        await PostgresStore(pg_url, migrations=[("9100_sqlite_only", sqlite_only(lambda db: None))]).migrate()
