"""Migration ``0006_ledger_money_only`` on a database of the old layout, on both
stores: every ledger row that moved money stays (same id, kind, amount), the
reservation rows go, what each user may spend and their open reservations stay
to the micro-USD, every balance equals its ledger's sum, and ``relaygate check``
is clean.

The old layout is built as the old code left it: migrations up to 0005, then
rows written by the old wallet's rules (a ``hold`` row taking the reservation
from the balance, a ``release`` giving it back, a ``capture``; the sweeper's
``release``), replayed here by :class:`OldWallet`."""

from __future__ import annotations

import json
from typing import Any

import asyncpg
import pytest

from gateway_core.commands.cli import main
from gateway_core.records import UsageRow
from gateway_core.store import CORE_MIGRATIONS, Store
from relaygate_postgres.schema import CORE_MIGRATIONS as POSTGRES_MIGRATIONS
from relaygate_postgres.store import PostgresStore
from relaygate_postgres.migrate import apply_migrations

from .conftest import POSTGRESQL, Seeder

MIGRATION = "0006_ledger_money_only"
MONEY = ("topup", "capture", "refund", "adjustment")


class OldWallet:
    """The wallet's writes as the code before 0006 made them."""

    def __init__(self, seed: Seeder) -> None:
        self.seed = seed
        self.clock = 1_700_000_000.0

    async def _ledger(self, user: int, kind: str, amount: int, request_id: str | None, key: int | None, note: str | None = None) -> None:
        self.clock += 1
        balance = await self.seed.value(
            "UPDATE users SET balance_micros = balance_micros + ? WHERE id = ? RETURNING balance_micros", amount, user
        )
        await self.seed.execute(
            "INSERT INTO ledger (user_id, kind, amount_micros, balance_after_micros, request_id, note, key_id, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            user, kind, amount, balance, request_id, note, key, self.clock,
        )  # fmt: skip

    async def move(self, user: int, kind: str, amount: int, key: int | None = None, note: str = "operator") -> None:
        await self._ledger(user, kind, amount, None, key, note)
        if kind == "refund" and key is not None:
            await self.seed.execute("UPDATE api_keys SET used_micros = used_micros - ? WHERE id = ?", amount, key)

    async def hold(self, user: int, key: int | None, amount: int, request_id: str) -> None:
        if key is not None:
            await self.seed.execute("UPDATE api_keys SET held_micros = held_micros + ? WHERE id = ?", amount, key)
        await self.seed.execute(
            "INSERT INTO holds (request_id, user_id, key_id, amount_micros, created_at) VALUES (?, ?, ?, ?, ?)",
            request_id, user, key, amount, self.clock,
        )  # fmt: skip
        await self._ledger(user, "hold", -amount, request_id, key)

    async def settle(self, user: int, key: int | None, request_id: str, cost: int) -> None:
        held = await self.seed.value("SELECT amount_micros FROM holds WHERE request_id = ?", request_id) or 0
        await self.seed.execute("DELETE FROM holds WHERE request_id = ?", request_id)
        if held:
            await self._ledger(user, "release", held, request_id, key)
        if cost:
            await self._ledger(user, "capture", -cost, request_id, key)
        if key is not None:
            await self.seed.execute(
                "UPDATE api_keys SET held_micros = held_micros - ?, used_micros = used_micros + ? WHERE id = ?", held, cost, key
            )

    async def sweep(self, user: int, key: int | None, request_id: str) -> None:
        held = await self.seed.value("SELECT amount_micros FROM holds WHERE request_id = ?", request_id)
        await self.seed.execute("DELETE FROM holds WHERE request_id = ?", request_id)
        await self._ledger(user, "release", held, request_id, key, "stale reservation released")
        if key is not None:
            await self.seed.execute("UPDATE api_keys SET held_micros = held_micros - ? WHERE id = ?", held, key)


async def old_database(dialect: str, target: str) -> None:
    """A database at schema 0005, as the old code left it."""
    if dialect == POSTGRESQL:
        conn = await asyncpg.connect(target)
        try:
            await apply_migrations(conn, [m for m in POSTGRES_MIGRATIONS if m[0] < MIGRATION])
        finally:
            await conn.close()
    else:
        Store(target, [m for m in CORE_MIGRATIONS if m[0] < MIGRATION]).migrate()


async def busy_books(seed: Seeder) -> dict[str, int]:
    """Users with every kind of history, their requests interleaved."""
    old = OldWallet(seed)
    alice, bob, carol, _dave = [await seed.user(name) for name in ("alice", "bob", "carol", "dave")]
    ci, batch = await seed.key(alice, "hash-ci", name="ci"), await seed.key(alice, "hash-batch", name="batch")
    bobs = await seed.key(bob, "hash-bob", name="bob")
    for user, amount in ((alice, 10_000_000), (bob, 2_000_000), (carol, 500_000)):
        await old.move(user, "topup", amount)
    await old.hold(alice, ci, 300_000, "r1")
    await old.hold(bob, bobs, 100_000, "r7")  # open when the migration runs
    await old.settle(alice, ci, "r1", 120_000)
    await old.hold(alice, batch, 50_000, "r2")
    await old.hold(bob, bobs, 400_000, "r8")
    await old.settle(alice, batch, "r2", 80_000)  # an overrun
    await old.hold(alice, ci, 200_000, "r3")  # open when the migration runs
    await old.hold(alice, None, 70_000, "r4")
    await old.sweep(alice, None, "r4")  # released as stale
    await old.hold(alice, ci, 90_000, "r5")
    await old.sweep(alice, ci, "r5")
    await old.settle(alice, ci, "r5", 40_000)  # settled after the sweep: a capture, nothing to release
    await old.settle(bob, bobs, "r8", 0)  # an error before any output
    await old.move(bob, "adjustment", -150_000, note="correction")
    await old.hold(alice, batch, 10_000, "r6")
    await old.settle(alice, batch, "r6", 10_000)
    await old.move(alice, "refund", 25_000, key=batch, note="refund of r6")
    return {"alice": alice, "bob": bob, "carol": carol, "ci": ci}


async def snapshot(seed: Seeder) -> dict[str, Any]:
    return {
        "users": await seed.fetch("SELECT id, name, balance_micros FROM users ORDER BY id"),
        "holds": await seed.fetch("SELECT request_id, user_id, key_id, amount_micros FROM holds ORDER BY request_id"),
        "keys": await seed.fetch("SELECT id, used_micros, held_micros FROM api_keys ORDER BY id"),
        "ledger": await seed.fetch("SELECT id, user_id, kind, amount_micros, request_id, key_id, note, created_at FROM ledger ORDER BY id"),
    }


async def test_the_ledger_money_only_migration_keeps_every_balance(store_target, capsys):
    dialect, target = store_target
    await old_database(dialect, target)
    seed = await Seeder.open(target)
    try:
        users = await busy_books(seed)
        before = await snapshot(seed)
        assert {row["kind"] for row in before["ledger"]} == {"topup", "hold", "release", "capture", "refund", "adjustment"}

        store: Store | PostgresStore
        if dialect == POSTGRESQL:
            store = PostgresStore(target)
            assert (await store.migrate())[:1] == [MIGRATION]  # and the later ones
        else:
            store = Store(target, CORE_MIGRATIONS)
            assert store.migrate()[:1] == [MIGRATION]  # and the later ones
        after = await snapshot(seed)

        # the money rows stay as they were (ids, kinds, amounts, notes), the reservation rows go
        assert after["ledger"] == [row for row in before["ledger"] if row["kind"] in MONEY]
        assert len(after["ledger"]) == 9 and len(before["ledger"]) == 23
        # what each user may spend, and what their requests in flight reserve, are unchanged
        open_holds = {u["id"]: sum(h["amount_micros"] for h in before["holds"] if h["user_id"] == u["id"]) for u in before["users"]}
        held = {row["id"]: row for row in await seed.fetch("SELECT id, balance_micros, held_micros FROM users")}
        for user in before["users"]:
            now = held[user["id"]]
            assert now["held_micros"] == open_holds[user["id"]]
            assert now["balance_micros"] - now["held_micros"] == user["balance_micros"], user["name"]
        assert held[users["alice"]]["held_micros"] == 200_000 and held[users["bob"]]["held_micros"] == 100_000
        assert held[users["alice"]]["balance_micros"] == 10_000_000 - 120_000 - 80_000 - 40_000 - 10_000 + 25_000
        assert held[users["bob"]]["balance_micros"] == 2_000_000 - 150_000
        assert after["holds"] == before["holds"] and after["keys"] == before["keys"]
        assert await seed.problems() == []  # balances are their ledgers' sums, the chain has no gap

        capsys.readouterr()
        status = main(["check", "--db", target, "--json"])
        report = json.loads(capsys.readouterr().out)
        assert status == 0 and report["ok"] and (report["ledger_rows"], report["open_holds"]) == (9, 2)
        with pytest.raises(Exception, match="append-only"):  # the rule is back once the migration is done
            await seed.execute("DELETE FROM ledger WHERE id = 1")

        # the migrated books carry on: the open reservation settles with one capture row
        await store.start()
        try:
            row = UsageRow(request_id="r3", started_at=1.0, protocol="openai", endpoint="chat", user_id=users["alice"], key_id=users["ci"], cost_micros=150_000)
            await store.record(row, users["alice"])
        finally:
            await store.close()
        assert await seed.ledger("r3") == [("capture", -150_000)]
        assert await seed.problems() == []
    finally:
        await seed.close()
