"""TtlSnapshot: one read per ttl, shared by concurrent callers, invalidated at once."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.routing import snapshot as snapshot_module
from gateway_core.routing.snapshot import TtlSnapshot


class Reads:
    def __init__(self) -> None:
        self.count = 0
        self.gate: asyncio.Event | None = None
        self.fail = False

    async def __call__(self) -> int:
        self.count += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise OSError("store unavailable")
        return self.count


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(snapshot_module, "_monotonic", lambda: now[0])
    return now


async def test_a_fresh_value_costs_no_read_and_a_stale_one_is_read_again(clock):
    reads = Reads()
    snap = TtlSnapshot(reads, ttl=1.0)
    assert snap.fresh() is None
    assert await snap.current() == 1
    clock[0] += 0.9
    assert snap.fresh() == 1 and await snap.current() == 1 and reads.count == 1
    clock[0] += 0.2
    assert snap.fresh() is None and await snap.current() == 2


async def test_invalidate_makes_the_next_caller_read(clock):
    reads = Reads()
    snap = TtlSnapshot(reads, ttl=60.0)
    await snap.current()
    snap.invalidate()
    assert await snap.current() == 2


async def test_concurrent_callers_share_one_read_and_one_giving_up_does_not_cancel_it(clock):
    reads = Reads()
    reads.gate = asyncio.Event()
    snap = TtlSnapshot(reads)
    waiters = [asyncio.ensure_future(snap.current()) for _ in range(20)]
    await asyncio.sleep(0)
    waiters[0].cancel()
    reads.gate.set()
    results = await asyncio.gather(*waiters[1:])
    assert results == [1] * 19 and reads.count == 1


async def test_a_failed_read_reaches_every_waiter_and_the_next_call_reads_again(clock):
    reads = Reads()
    reads.fail = True
    snap = TtlSnapshot(reads)
    outcomes = await asyncio.gather(snap.current(), snap.current(), return_exceptions=True)
    assert all(isinstance(outcome, OSError) for outcome in outcomes) and reads.count == 1
    reads.fail = False
    assert await snap.current() == 2
