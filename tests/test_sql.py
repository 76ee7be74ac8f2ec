"""The dialect-neutral SQL handles plugins get: a SchemaHandle in their migrations,
an async SqlHandle at run time (gateway_core.sql), on the SQLite store."""

from __future__ import annotations

import pytest

from gateway_core.sql import SQLITE, SchemaHandle, SqlHandle
from gateway_core.store import CORE_MIGRATIONS, Store
from gateway_core.store.sqlite_sql import SqliteSql, sqlite_only

seen: list[str] = []


def migrate_notes(schema: SchemaHandle) -> None:
    seen.append(schema.dialect)
    schema.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, dialect TEXT)")
    schema.execute("INSERT INTO notes (body, dialect) VALUES (?, ?)", ("first", schema.dialect))


@pytest.fixture
async def store(tmp_path):
    store = Store(str(tmp_path / "sql.db"), [*CORE_MIGRATIONS, ("9000_notes", migrate_notes)])
    store.migrate()
    await store.start()
    yield store
    await store.close()


async def test_a_migration_gets_a_handle_that_names_its_dialect(store):
    assert isinstance(SqliteSql(store), SqlHandle)
    assert seen[-1] == SQLITE
    assert await SqliteSql(store).fetch_all("SELECT body, dialect FROM notes") == [{"body": "first", "dialect": "sqlite"}]


async def test_the_run_time_handle_reads_and_writes_with_qmark_parameters(store):
    sql = SqliteSql(store)
    assert sql.dialect == SQLITE
    assert await sql.execute("INSERT INTO notes (body) VALUES (?)", ("second",)) == 1
    assert await sql.execute("UPDATE notes SET body = upper(body) WHERE body = ?", ("nothing",)) == 0
    assert await sql.fetch_one("SELECT body FROM notes WHERE id = ?", (2,)) == {"body": "second"}
    assert await sql.fetch_one("SELECT body FROM notes WHERE id = ?", (99,)) is None
    assert [row["body"] for row in await sql.fetch_all("SELECT body FROM notes ORDER BY id")] == ["first", "second"]
    with pytest.raises(Exception, match="NOT NULL"):
        await sql.execute("INSERT INTO notes (body) VALUES (?)", (None,))


class OtherDialect:
    dialect = "postgresql"

    def execute(self, sql: str, params=()) -> None:
        raise AssertionError("not to be called")


def test_the_cores_sqlite_utils_migrations_refuse_another_dialect():
    run = sqlite_only(lambda db: None)
    with pytest.raises(TypeError, match="written for SQLite, not postgresql"):
        run(OtherDialect())
