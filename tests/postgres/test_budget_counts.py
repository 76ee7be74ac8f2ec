"""Budget counts on both stores: concurrent reservations never pass a cap, a refused
one changes nothing (balance, quota, counts), and a settlement moves the count to
the real cost in its own window only."""

from __future__ import annotations

import asyncio
import time

from gateway_core.billing.budgets import BudgetUse
from gateway_core.request_store import HoldRefused

from .conftest import Books

AMOUNT = 1_000


def daily(subject: str, cap: int, start: float) -> BudgetUse:
    return BudgetUse(subject, "daily", cap, start, start, start + 86400, 86400.0)


async def test_concurrent_reservations_never_pass_a_budget(books: Books):
    seed, store = books.seed, books.store
    user_id = await seed.user("alice", balance_micros=1_000_000)
    key_id = await seed.key(user_id, "hash-1")
    start = time.time() - 10
    caps = (daily(f"k:{key_id}", 5 * AMOUNT, start), daily(f"u:{user_id}", 7 * AMOUNT, start))
    results = await asyncio.gather(
        *(store.hold_within_budgets(user_id, AMOUNT, f"req-{n:02d}", key_id, caps) for n in range(20)), return_exceptions=True
    )
    held = [r for r in results if isinstance(r, tuple)]
    refused = [r for r in results if isinstance(r, HoldRefused)]
    assert len(held) == 5 and len(refused) == 15 and {r.what for r in refused} == {"budget"}
    assert {r.budget.subject for r in refused} == {f"k:{key_id}"} and refused[0].resets_at == start + 86400
    assert await seed.available(user_id) == 1_000_000 - 5 * AMOUNT
    assert await seed.value("SELECT count(*) FROM holds") == 5
    spent = {row["subject"]: row["spent_micros"] for row in await seed.fetch("SELECT subject, spent_micros FROM budget_spend")}
    assert spent == {f"k:{key_id}": 5 * AMOUNT, f"u:{user_id}": 5 * AMOUNT}

    # a request settles for less: its windows count its cost
    windows = held[0][1]
    await store.adjust_budgets(windows, 300 - AMOUNT)
    spent = {row["subject"]: row["spent_micros"] for row in await seed.fetch("SELECT subject, spent_micros FROM budget_spend")}
    assert spent == {f"k:{key_id}": 4 * AMOUNT + 300, f"u:{user_id}": 4 * AMOUNT + 300}
    # a new window starts from nothing, and an old window's settlement does not touch it
    later = (daily(f"k:{key_id}", 5 * AMOUNT, start + 86400),)
    await store.hold_within_budgets(user_id, AMOUNT, "req-next-day", key_id, later)
    await store.adjust_budgets(windows, -AMOUNT)
    assert await seed.value("SELECT spent_micros FROM budget_spend WHERE subject = ?", f"k:{key_id}") == AMOUNT
    assert await seed.problems() == []
