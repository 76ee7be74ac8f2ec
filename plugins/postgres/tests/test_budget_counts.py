"""Budgets on both stores: concurrent reservations never pass a cap, a refused one
changes nothing; a settlement counts its real cost in its hour's bucket (written
with the capture), a released reservation counts nothing, and a rolling window
slides hour by hour."""

from __future__ import annotations

import asyncio
import time

from gateway_core.billing.budgets import HOUR, budget_use, hour_of
from gateway_core.records import UsageRow
from gateway_core.store.request_store import HoldRefused

from .conftest import Books

AMOUNT = 1_000


def usage(request_id: str, user_id: int, key_id: int, cost: int, held: int) -> UsageRow:
    return UsageRow(
        request_id=request_id, started_at=time.time(), protocol="test", endpoint="chat", user_id=user_id, key_id=key_id,
        model="m", status=200, cost_micros=cost, held_micros=held, end_reason="done",
    )  # fmt: skip


async def buckets(books: Books) -> dict[str, int]:
    rows = await books.seed.fetch("SELECT subject, sum(spent_micros) AS spent FROM budget_buckets GROUP BY subject")
    return {row["subject"]: int(row["spent"]) for row in rows}


async def test_concurrent_reservations_never_pass_a_budget_and_count_their_real_cost(books: Books):
    seed, store = books.seed, books.store
    user_id = await seed.user("alice", balance_micros=1_000_000)
    key_id = await seed.key(user_id, "hash-1")
    now = time.time()
    caps = (budget_use(f"k:{key_id}", "daily", 5 * AMOUNT, now), budget_use(f"u:{user_id}", "daily", 7 * AMOUNT, now))
    results = await asyncio.gather(
        *(store.hold_within_budgets(user_id, AMOUNT, f"req-{n:02d}", key_id, caps) for n in range(20)), return_exceptions=True
    )
    held = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, HoldRefused)]
    assert len(held) == 5 and len(refused) == 15 and {r.what for r in refused} == {"budget"}, results
    assert {r.budget.subject for r in refused} == {f"k:{key_id}"} and {r.used for r in refused} == {5 * AMOUNT}
    assert refused[0].resets_at == caps[0].resets_at  # a calendar day: its end
    assert await seed.available(user_id) == 1_000_000 - 5 * AMOUNT
    assert await seed.value("SELECT count(*) FROM holds") == 5
    assert await buckets(books) == {}  # reservations are counted from the holds, not written anywhere else

    # one settles for less: its cost is in its hour's bucket, its reservation gone
    await store.record(usage("req-settled", user_id, key_id, 300, 0), None)  # an unbilled row writes no bucket
    settled = await seed.value("SELECT min(request_id) FROM holds")
    await store.record(usage(settled, user_id, key_id, 300, AMOUNT), user_id)
    assert await buckets(books) == {f"k:{key_id}": 300, f"u:{user_id}": 300}
    assert await seed.value("SELECT hour FROM budget_buckets WHERE subject = ?", f"k:{key_id}") in (hour_of(now), hour_of(time.time()))
    # 4 reservations of 1,000 and 300 captured: room for 700 more
    await store.hold_within_budgets(user_id, 700, "req-fits", key_id, caps)
    try:
        await store.hold_within_budgets(user_id, 1, "req-over", key_id, caps)
        raise AssertionError("the cap was passed")
    except HoldRefused as over:
        assert over.used == 5 * AMOUNT and over.budget.subject == f"k:{key_id}"

    # the sweeper releases every open reservation (a crashed process's): nothing of them stays counted
    assert await store.release_stale_holds(time.time() + 1) == 5
    fresh = (budget_use(f"k:{key_id}", "daily", 300 + AMOUNT, time.time()),)
    await store.hold_within_budgets(user_id, AMOUNT, "req-after-crash", key_id, fresh)  # 300 captured + 1,000 fits exactly
    assert await seed.problems() == []


async def test_a_rolling_window_slides_by_the_hour(books: Books):
    seed, store = books.seed, books.store
    user_id = await seed.user("bob", balance_micros=1_000_000)
    key_id = await seed.key(user_id, "hash-2")
    await store.hold(user_id, AMOUNT, "spent", key_id)
    await store.record(usage("spent", user_id, key_id, 600, AMOUNT), user_id)
    spent_hour = await seed.value("SELECT hour FROM budget_buckets WHERE subject = ?", f"u:{user_id}")

    def cap(now: float):
        return (budget_use(f"u:{user_id}", "daily", AMOUNT, now, window="rolling"),)

    last_inside = (spent_hour + 24) * HOUR - 1  # the spend's hour is the oldest of the 24 counted
    try:
        await store.hold_within_budgets(user_id, 500, "too-soon", key_id, cap(last_inside))
        raise AssertionError("the spend left the window too soon")
    except HoldRefused as refused:
        assert refused.used == 600 and refused.resets_at == (spent_hour + 24) * HOUR
    await store.hold_within_budgets(user_id, 500, "slid", key_id, cap(last_inside + 1))
    assert await seed.problems() == []


async def test_reservations_and_settlements_at_once_keep_the_cap(books: Books):
    """Settlements and budgeted reservations of one user and key at once (both lock the key, then
    the user): every one finishes, and what the window counts never passes the cap."""
    seed, store = books.seed, books.store
    user_id = await seed.user("carol", balance_micros=1_000_000)
    key_id = await seed.key(user_id, "hash-3")
    for n in range(10):
        await store.hold(user_id, AMOUNT, f"open-{n}", key_id)
    cap = 12 * AMOUNT
    caps = (budget_use(f"k:{key_id}", "daily", cap, time.time()), budget_use(f"u:{user_id}", "weekly", cap, time.time()))
    work = [store.record(usage(f"open-{n}", user_id, key_id, 300, AMOUNT), user_id) for n in range(10)]
    work += [store.hold_within_budgets(user_id, AMOUNT, f"new-{n:02d}", key_id, caps) for n in range(20)]
    results = await asyncio.gather(*work, return_exceptions=True)
    failures = [r for r in results if isinstance(r, BaseException) and not isinstance(r, HoldRefused)]
    assert failures == []
    admitted = sum(1 for r in results[10:] if isinstance(r, int))
    held = await seed.value("SELECT coalesce(sum(amount_micros), 0) FROM holds")
    captured = (await buckets(books)).get(f"k:{key_id}", 0)
    assert captured == 10 * 300 and held == admitted * AMOUNT and captured + held <= cap
    assert admitted >= 2  # at least what fitted beside the ten open reservations
    assert await seed.problems() == []
