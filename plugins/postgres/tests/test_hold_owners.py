"""Reservations carry the process that made them and its lease, on both stores:
a live owner's holds stay however old the sweep's window, a gone owner's (its lease
ended by a restarted process of its replica, or run out) are released exactly once."""

from __future__ import annotations

import time

import attrs

from gateway_core.billing.sweeper import new_owner

from .conftest import Books, open_books


async def test_holds_are_released_when_their_owner_is_gone_or_its_lease_ran_out(books: Books):
    seed, store = books.seed, books.store
    users = [await seed.user(f"user-{n}", balance_micros=1_000_000) for n in range(2)]
    key = await seed.key(users[0], "hash-0")
    a, b = new_owner("replica-a"), new_owner("replica-b")
    lease = time.time() + 60
    store.own_holds(a.id)
    assert await store.renew_hold_owner(attrs.evolve(a, lease_until=lease)) == []
    for n in range(3):
        await store.hold(users[0], 100, f"a-{n}", key)
    other = await open_books(books.dialect, books.target)  # another replica's store
    try:
        other.store.own_holds(b.id)
        seen = await other.store.renew_hold_owner(attrs.evolve(b, lease_until=lease))
        assert [owner.id for owner in seen] == [a.id]
        for n in range(2):
            await other.store.hold(users[1], 70, f"b-{n}", None)

        # both owners alive: nothing is released, whatever the window
        assert await store.release_stale_holds(time.time() - 3600) == 0

        # b finds a gone (as a restarted process of a's replica would): a's holds go, once
        await other.store.renew_hold_owner(attrs.evolve(b, lease_until=lease), [a.id])
        assert await other.store.release_stale_holds(time.time() - 3600) == 3
        assert await store.release_stale_holds(time.time() - 3600) == 0
        assert await seed.available(users[0]) == 1_000_000
        assert await seed.value("SELECT count(*) FROM holds") == 2

        # b's lease runs out (it was killed and never renewed): its holds go too
        await other.store.renew_hold_owner(attrs.evolve(b, lease_until=time.time() - 1))
        assert await store.release_stale_holds(time.time() - 3600) == 2
        assert await seed.available(users[1]) == 1_000_000
        assert await seed.value("SELECT count(*) FROM holds") == 0
        assert await seed.value("SELECT count(*) FROM ledger") == 2  # the two top-ups: releasing moves no money
        assert await seed.problems() == []
    finally:
        await other.store.close()
        await other.seed.close()
