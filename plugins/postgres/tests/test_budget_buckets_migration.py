"""Migration ``0014_budget_buckets`` on a database of the old layout, on both
stores: the captures of the last 32 days become hourly buckets per user and per
key (older ones and other kinds of rows do not count), the old per-window
counters go, and captures written after it are counted by the database itself."""

from __future__ import annotations

import time

import asyncpg
import pytest

from gateway_core.billing.budgets import KEEP_HOURS, hour_of
from gateway_core.store import CORE_MIGRATIONS, Store
from relaygate_postgres.schema import CORE_MIGRATIONS as POSTGRES_MIGRATIONS
from relaygate_postgres.migrate import apply_migrations

from .conftest import POSTGRESQL, Seeder

MIGRATION = "0014_budget_buckets"


async def migrate(dialect: str, target: str, *, until: str | None = None) -> None:
    if dialect == POSTGRESQL:
        conn = await asyncpg.connect(target)
        try:
            await apply_migrations(conn, [m for m in POSTGRES_MIGRATIONS if until is None or m[0] < until])
        finally:
            await conn.close()
    else:
        Store(target, [m for m in CORE_MIGRATIONS if until is None or m[0] < until]).migrate()


async def ledger(seed: Seeder, user: int, kind: str, amount: int, key: int | None, when: float) -> None:
    balance = await seed.value("UPDATE users SET balance_micros = balance_micros + ? WHERE id = ? RETURNING balance_micros", amount, user)
    await seed.execute(
        "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, note, key_id, created_at) "
        "VALUES (?, ?, ?, ?, NULL, NULL, ?, ?)",
        user, kind, amount, balance, key, when,
    )  # fmt: skip


async def buckets(seed: Seeder) -> dict[tuple[str, int], int]:
    rows = await seed.fetch("SELECT subject, hour, spent_micros FROM budget_buckets")
    return {(row["subject"], int(row["hour"])): int(row["spent_micros"]) for row in rows}


async def test_recent_captures_become_hourly_buckets(store_target):
    dialect, target = store_target
    await migrate(dialect, target, until=MIGRATION)
    seed = await Seeder.open(target)
    try:
        alice, bob = await seed.user("alice"), await seed.user("bob")
        ci = await seed.key(alice, "hash-ci", name="ci")
        now = time.time()
        this_hour, long_ago = hour_of(now), now - (KEEP_HOURS + 48) * 3600
        await ledger(seed, alice, "topup", 10_000_000, None, now - 7200)
        await ledger(seed, alice, "capture", -300, ci, now - 3 * 86400)
        await ledger(seed, alice, "capture", -200, ci, hour_of(now - 3 * 86400) * 3600 + 1)  # the same hour
        await ledger(seed, alice, "capture", -50, None, now - 60)  # no key: the user's only
        await ledger(seed, alice, "capture", -999, ci, long_ago)  # older than any window
        await ledger(seed, alice, "refund", 100, ci, now - 30)
        await ledger(seed, bob, "adjustment", 5_000, None, now - 30)
        await seed.execute("INSERT INTO budget_spend (subject, period, window_start, spent_micros) VALUES ('k:1', 'daily', 0, 7)")
        await seed.close()

        await migrate(dialect, target)
        seed = await Seeder.open(target)
        three_days = hour_of(now - 3 * 86400)
        assert await buckets(seed) == {
            (f"u:{alice}", three_days): 500, (f"k:{ci}", three_days): 500, (f"u:{alice}", hour_of(now - 60)): 50,
        }
        assert await seed.value("SELECT count(*) FROM schema_migrations WHERE name = ?", MIGRATION) == 1
        with pytest.raises(Exception, match="budget_spend"):  # the old counters are gone
            await seed.fetch("SELECT * FROM budget_spend")
        # from now on the database counts each capture itself, in its hour
        await ledger(seed, alice, "capture", -70, ci, now)
        found = await buckets(seed)
        assert found[(f"k:{ci}", this_hour)] == 70 and found[(f"u:{alice}", this_hour)] == 70 + (50 if hour_of(now - 60) == this_hour else 0)
        # a capture prunes its subject's buckets past the longest window
        await ledger(seed, bob, "capture", -1, None, long_ago)
        await ledger(seed, bob, "capture", -2, None, now)
        assert [hour for (subject, hour) in await buckets(seed) if subject == f"u:{bob}"] == [this_hour]
    finally:
        await seed.close()
