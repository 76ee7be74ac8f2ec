"""Migration ``0015_holds_in_flight`` on a database of the old layout, on both
stores: the reservations in flight survive it, the indexes only the sweeps read
are gone, and reserving, sweeping and settling work on the new layout."""

from __future__ import annotations

import time

from relaygate_postgres.schema import CORE_MIGRATIONS as POSTGRES_MIGRATIONS

from .conftest import POSTGRESQL, Seeder
from .test_budget_buckets_migration import migrate

MIGRATION = "0015_holds_in_flight"
HOLD = "INSERT INTO holds (request_id, user_id, key_id, amount_micros, created_at, owner) VALUES (?, ?, ?, ?, ?, ?)"


async def index_names(seed: Seeder, dialect: str) -> set[str]:
    if dialect == POSTGRESQL:
        rows = await seed.fetch("SELECT indexname AS name FROM pg_indexes WHERE tablename = 'holds'")
    else:
        rows = await seed.fetch("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'holds'")
    return {str(row["name"]) for row in rows}


async def test_reservations_in_flight_survive_and_the_sweeps_indexes_go(store_target):
    dialect, target = store_target
    assert MIGRATION in {name for name, _ in POSTGRES_MIGRATIONS}  # one name on both stores
    await migrate(dialect, target, until=MIGRATION)
    seed = await Seeder.open(target)
    try:
        alice = await seed.user("alice")
        ci = await seed.key(alice, "hash-ci", name="ci")
        now = time.time()
        await seed.execute(HOLD, "req_a", alice, ci, 1_500, now, "proc-1")
        await seed.execute(HOLD, "req_b", alice, None, 250, now - 3600, None)
        assert {"idx_holds_created_at", "idx_holds_owner"} <= await index_names(seed, dialect)
        await seed.close()

        await migrate(dialect, target)
        seed = await Seeder.open(target)
        rows = await seed.fetch("SELECT request_id, user_id, key_id, amount_micros, created_at, owner FROM holds ORDER BY request_id")
        assert [tuple(row[name] for name in ("request_id", "user_id", "key_id", "amount_micros", "owner")) for row in rows] == [
            ("req_a", alice, ci, 1_500, "proc-1"), ("req_b", alice, None, 250, None),
        ]  # fmt: skip
        assert abs(float(rows[1]["created_at"]) - (now - 3600)) < 1e-3
        names = await index_names(seed, dialect)
        assert "idx_holds_created_at" not in names and "idx_holds_owner" not in names
        assert {"idx_holds_user_id", "idx_holds_key_id"} <= names  # a budget's sum reads these
        # what the sweeps ask still works, by a scan of the table
        stale = await seed.fetch("SELECT request_id FROM holds WHERE created_at < ?", now - 60)
        assert [row["request_id"] for row in stale] == ["req_b"]
        assert await seed.value("SELECT coalesce(sum(amount_micros), 0) FROM holds WHERE key_id = ?", ci) == 1_500
        assert await seed.value("SELECT count(*) FROM schema_migrations WHERE name = ?", MIGRATION) == 1
        await seed.execute("DELETE FROM holds WHERE request_id = ?", "req_a")
        assert await seed.value("SELECT count(*) FROM holds") == 1
    finally:
        await seed.close()
