"""``relaygate copy-store``: every table of one database into another, empty one.

The tables are the source's (every table its applied migrations created, the
plugins' too, ``schema_migrations`` aside: the target is migrated by the same
code), copied parents first (by their foreign keys), rows streamed in batches of
:data:`BATCH` (memory stays bounded with millions of usage rows) and written with
their ids. The target is written in one transaction: the money invariants of
:mod:`.audit` are checked on it before the commit, so a copy whose books do not
balance leaves nothing behind. On PostgreSQL the identity sequences are then set
past the largest id copied. The ledger's append-only triggers refuse updates and
deletes only: the copy inserts. Derived tables (:data:`DERIVED`) are not
copied: the target's triggers fill them from the rows copied.

Both ends are :class:`End` s: :class:`SqliteEnd` here (plain ``sqlite3`` calls:
this is a command of its own, with nothing else on its event loop) and
:class:`~.postgres.copy.PostgresEnd`, opened by their store kinds.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ..records import AuditReport
from ..stores import CopyEnd as End
from .audit import audit

if TYPE_CHECKING:
    from ..sql import Migration
    from ..stores import StoreKind

BATCH = 5000
KEEP = "schema_migrations"
# A target is new when these hold no rows (but the group its migrations create):
# its other tables (plugins') then hold only what their migrations put there,
# such as the console's signing secret, and are cleared before the copy.
CORE_TABLES = ("users", "user_groups", "api_keys", "channels", "prices", "ledger", "holds", "usage_logs", "channel_health")
SEEDED = {"groups": {"default"}}
# tables the target's triggers fill from the rows copied (budget_buckets: from the ledger's captures)
DERIVED = ("budget_buckets",)


class CopyRefused(Exception):
    """The copy cannot start (a non-empty target, schemas that differ) or its
    result failed verification: said in one line."""


@attrs.frozen
class CopyReport:
    source: str
    target: str
    tables: dict[str, int]  # rows copied, per table, in the order copied
    audit: AuditReport


class Kinds(Protocol):
    """What a copy reads of the registry (the runtime's ``Registry``): the store kind of
    a URL, and the migrations the target gets."""

    @property
    def migrations(self) -> Sequence[Migration]: ...

    def store_kind(self, url: str) -> StoreKind: ...


async def copy_store(registry: Kinds, source_url: str, target_url: str, *, timeout: float = 5.0) -> CopyReport:
    """Copy the database at ``source_url`` into the empty one at ``target_url``
    (migrated here first with the code's migrations), each end opened by its
    store kind (:meth:`gateway_core.stores.StoreKind.copy_end`)."""
    if source_url == target_url:
        raise CopyRefused("the source and the target are the same database")
    source_kind, target_kind = registry.store_kind(source_url), registry.store_kind(target_url)
    missing = source_kind.missing(source_url)
    if missing is not None:
        raise CopyRefused(missing)
    migrations = registry.migrations
    source = await source_kind.copy_end(source_url)
    try:
        names = {name for name, _ in migrations}
        applied = await source.applied()
        if names - applied:
            raise CopyRefused(f"{source.name} is older than this code (pending: {', '.join(sorted(names - applied))}): "
                              "run `relaygate migrate` on it first")  # fmt: skip
        if applied - names:
            raise CopyRefused(f"{source.name} has migrations this code does not (load their plugins): {', '.join(sorted(applied - names))}")
        tables = await _in_dependency_order(source)
        await _refuse_non_empty(target_kind, target_url)
        await target_kind.migrate(target_url, migrations, timeout=timeout)
        target = await target_kind.copy_end(target_url)
        try:
            return await _copy(source, target, tables)
        finally:
            await target.close()
    finally:
        await source.close()


async def _refuse_non_empty(kind: StoreKind, url: str) -> None:
    if kind.missing(url) is not None:
        return  # a new file: created by its migrations, readable by its owner only
    target = await kind.copy_end(url)
    try:
        present = set(await target.tables())
        for table in [*CORE_TABLES, *SEEDED]:
            if table in present and not await target.seeded_only(table, SEEDED.get(table, set())):
                raise CopyRefused(f"{target.name} is not empty (table {table} has rows): copy-store only fills a new database")
    finally:
        await target.close()


async def _copy(source: End, target: End, tables: list[str]) -> CopyReport:
    target_tables = set(await target.tables())
    missing = [table for table in tables if table not in target_tables]
    if missing:
        raise CopyRefused(f"{target.name} lacks the table(s) {', '.join(missing)} after its migrations")
    copied: dict[str, int] = {}
    await target.begin()
    for table in reversed(await _in_dependency_order(target)):
        if table != KEEP:
            await target.clear(table)  # only rows its migrations seeded (checked above)
    for table in tables:
        columns = await source.columns(table)
        extra = set(columns) - set(await target.columns(table))
        if extra:
            raise CopyRefused(f"{target.name}: table {table} has no column(s) {', '.join(sorted(extra))}")
        copied[table] = 0
        async for batch in source.rows(table, columns):
            await target.insert(table, columns, batch)
            copied[table] += len(batch)
    await target.finish()
    for table, count in copied.items():
        if await target.count(table) != count:
            raise CopyRefused(f"{target.name}: table {table} has {await target.count(table)} rows after copying {count}")
    checked = await target.audit()
    if not checked.ok:
        first = checked.problems[0]
        raise CopyRefused(f"the copy's books do not balance ({len(checked.problems)} problem(s), first: "
                          f"{first.subject}: {first.message}): nothing was written")  # fmt: skip
    await target.commit()
    return CopyReport(source.name, target.name, copied, checked)


async def _in_dependency_order(end: End) -> list[str]:
    """``end``'s tables (``schema_migrations`` and derived ones aside), each after the ones it refers to."""
    tables = [table for table in await end.tables() if table != KEEP and table not in DERIVED]
    parents = {table: (await end.parents(table)) & set(tables) - {table} for table in tables}
    ordered: list[str] = []
    while len(ordered) < len(tables):
        ready = [t for t in tables if t not in ordered and parents[t] <= set(ordered)]
        if not ready:
            raise CopyRefused(f"{end.name}: the foreign keys of {', '.join(t for t in tables if t not in ordered)} form a cycle")
        ordered += ready
    return ordered


class SqliteEnd:
    """A SQLite file as either end of a copy."""

    def __init__(self, path: str) -> None:
        self.name = path
        self._conn = sqlite3.connect(path, isolation_level=None)
        self._conn.execute("PRAGMA foreign_keys = ON")

    async def applied(self) -> set[str]:
        if KEEP not in await self.tables():
            return set()
        return {row[0] for row in self._conn.execute("SELECT name FROM schema_migrations")}

    async def tables(self) -> list[str]:
        rows = self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        return [row[0] for row in rows]

    async def columns(self, table: str) -> list[str]:
        return [row[1] for row in self._conn.execute(f"PRAGMA table_info({_quoted(table)})")]

    async def parents(self, table: str) -> set[str]:
        return {row[2] for row in self._conn.execute(f"PRAGMA foreign_key_list({_quoted(table)})")}

    async def count(self, table: str) -> int:
        return int(self._conn.execute(f"SELECT count(*) FROM {_quoted(table)}").fetchone()[0])

    async def seeded_only(self, table: str, keys: set[str]) -> bool:
        if not keys:
            return await self.count(table) == 0
        marks = ", ".join("?" for _ in keys)
        return self._conn.execute(f"SELECT 1 FROM {_quoted(table)} WHERE name NOT IN ({marks}) LIMIT 1", tuple(keys)).fetchone() is None

    async def rows(self, table: str, columns: Sequence[str]) -> AsyncIterator[list[tuple[Any, ...]]]:
        cursor = self._conn.execute(f"SELECT {', '.join(map(_quoted, columns))} FROM {_quoted(table)} ORDER BY {self._order(table)}")
        while batch := cursor.fetchmany(BATCH):
            yield batch

    def _order(self, table: str) -> str:
        """The order rows were written in: the rowid, or a ``WITHOUT ROWID`` table's primary key."""
        found = self._conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
        if found is None or "WITHOUT ROWID" not in str(found[0]).upper():
            return "rowid"
        keys = sorted((row[5], row[1]) for row in self._conn.execute(f"PRAGMA table_info({_quoted(table)})") if row[5])
        return ", ".join(_quoted(name) for _, name in keys)

    async def begin(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    async def clear(self, table: str) -> None:
        self._conn.execute(f"DELETE FROM {_quoted(table)}")

    async def insert(self, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
        marks = ", ".join("?" for _ in columns)
        self._conn.executemany(f"INSERT INTO {_quoted(table)} ({', '.join(map(_quoted, columns))}) VALUES ({marks})", rows)

    async def finish(self) -> None:
        """Nothing: SQLite's next rowid follows the largest one."""

    async def audit(self) -> AuditReport:
        return audit(self._conn)

    async def commit(self) -> None:
        self._conn.execute("COMMIT")

    async def close(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._conn.close()


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
