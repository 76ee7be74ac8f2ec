"""The request path's coarse timers: late by at most a tick, never lost, and
``deadline`` behaving as ``asyncio.timeout`` does."""

from __future__ import annotations

import asyncio

import pytest

from gateway_core.base.coarse_timers import EARLY, TICK, deadline, timers_of


async def test_a_timer_fires_within_a_tick_after_its_time():
    loop = asyncio.get_running_loop()
    timers = timers_of(loop)
    fired: list[tuple[str, float]] = []
    start = loop.time()
    for name, seconds in (("late", 0.12), ("soon", 0.01), ("middle", 0.06)):
        timers.after(seconds, lambda name=name, seconds=seconds: fired.append((name, loop.time() - start - seconds)))
    await asyncio.sleep(0.12 + TICK + 0.05)
    assert [name for name, _ in fired] == ["soon", "middle", "late"]
    for _, lateness in fired:
        assert -EARLY <= lateness <= TICK + 0.03


async def test_a_cancelled_timer_never_fires_and_leaves_nothing_behind():
    loop = asyncio.get_running_loop()
    timers = timers_of(loop)
    fired: list[int] = []
    kept = timers.after(0.02, lambda: fired.append(1))
    dropped = [timers.after(0.02 + i * TICK, lambda: fired.append(2)) for i in range(50)]
    for timer in dropped:
        timers.cancel(timer)
    await asyncio.sleep(0.02 + TICK + 0.05)
    assert fired == [1]
    timers.cancel(kept)  # after it fired: nothing
    await asyncio.sleep(2 * TICK)
    assert not timers._buckets and not timers._ticks  # emptied buckets are dropped, no loop timer left armed
    assert timers._handle is None


async def test_a_failing_callback_does_not_stop_the_others():
    loop = asyncio.get_running_loop()
    seen: list[dict] = []
    loop.set_exception_handler(lambda _, context: seen.append(context))
    fired: list[int] = []
    timers = timers_of(loop)
    timers.after(0.01, lambda: 1 / 0)
    timers.after(0.01, lambda: fired.append(1))
    await asyncio.sleep(0.01 + TICK + 0.03)
    assert fired == [1] and isinstance(seen[0]["exception"], ZeroDivisionError)


async def test_deadline_raises_timeout_error_when_the_block_is_too_slow():
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(TimeoutError):
        async with deadline(0.05):
            await asyncio.sleep(5)
    assert 0.05 - EARLY <= loop.time() - start <= 0.05 + TICK + 0.05
    assert asyncio.current_task().cancelling() == 0  # its own cancellation taken back


async def test_deadline_lets_a_fast_block_through_and_keeps_the_results():
    async with deadline(1.0) as watch:
        await asyncio.sleep(0)
        value = 7
    assert value == 7 and not watch.expired


async def test_deadline_passes_on_a_cancellation_that_is_not_its_own():
    async def guarded():
        async with deadline(5.0):
            await asyncio.sleep(5)

    task = asyncio.ensure_future(guarded())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_deadline_inside_an_outer_cancellation_still_propagates_it():
    """Expiring while the task is also cancelled from outside: the outer
    cancellation wins (as with ``asyncio.timeout``)."""

    async def guarded():
        async with deadline(0.01):
            try:
                await asyncio.sleep(5)
            finally:
                await asyncio.sleep(TICK + 0.03)  # the deadline expires while this runs

    task = asyncio.ensure_future(guarded())
    await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_timers_belong_to_their_loop():
    assert timers_of(asyncio.get_running_loop()) is timers_of(asyncio.get_running_loop())
    other = asyncio.new_event_loop()
    try:
        assert timers_of(other) is not timers_of(asyncio.get_running_loop())
    finally:
        other.close()
