"""The in-process rate limiter: token buckets per subject, exact, all or nothing."""

import asyncio

import pytest

from gateway_core.ratelimit import InProcessRateLimiter, LimitExceeded, RateLimits, Subject
from gateway_core.ratelimit.memory import SWEEP_EVERY


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def limiter(clock):
    return InProcessRateLimiter(clock=clock, wall=lambda: 1_700_000_000.0 + clock.now)


def key(rpm=0, tpm=0, concurrency=0, id=1):
    return Subject("key", id, RateLimits(rpm, tpm, concurrency))


def user(rpm=0, tpm=0, concurrency=0, id=1):
    return Subject("user", id, RateLimits(rpm, tpm, concurrency))


def test_requests_per_minute_refill_continuously(limiter, clock):
    subjects = [key(rpm=3)]
    permits = [limiter.acquire_now(subjects, 0) for _ in range(3)]
    assert [p.state.requests.remaining for p in permits] == [2, 1, 0]
    assert permits[-1].state.requests.reset_after == pytest.approx(60.0)
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 0)
    exceeded = caught.value
    assert (exceeded.dimension, exceeded.limit, exceeded.retry_after) == ("requests", 3, 20.0)
    assert exceeded.state.requests.remaining == 0 and exceeded.state.retry_after == 20.0
    clock.now += 19.5
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 0)
    assert caught.value.retry_after == 1.0  # 0.5 s, rounded up to whole seconds
    clock.now += 0.5
    limiter.acquire_now(subjects, 0)


def test_retry_after_is_when_the_request_would_pass(limiter, clock):
    subjects = [key(rpm=7)]
    for _ in range(7):
        limiter.acquire_now(subjects, 0)
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 0)
    wait = caught.value.retry_after  # 60/7 = 8.57 s, rounded up
    assert wait == 9.0
    clock.now += wait
    limiter.acquire_now(subjects, 0)


def test_a_refusal_takes_nothing_from_any_subject(limiter):
    open_key, full_user = key(rpm=10), user(rpm=1)
    limiter.acquire_now([full_user], 0)
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now([open_key, full_user], 0)
    assert caught.value.subject == full_user
    assert limiter.acquire_now([open_key], 0).state.requests.remaining == 9  # the key lost nothing


def test_tokens_are_estimated_then_corrected(limiter, clock):
    subjects = [key(tpm=1000)]
    permit = limiter.acquire_now(subjects, 400)
    assert permit.state.tokens.remaining == 600
    limiter.release_now(permit, 100)  # the real usage was 100
    assert limiter.acquire_now(subjects, 0).state.tokens.remaining == 900
    # more than estimated: the difference is taken afterwards
    permit = limiter.acquire_now(subjects, 100)
    limiter.release_now(permit, 850)
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 100)
    assert caught.value.dimension == "tokens"
    assert caught.value.retry_after == 3.0  # 50 tokens left, 100 needed: 50 more at 1000/min


def test_an_estimate_above_the_whole_budget_waits_for_a_full_bucket(limiter, clock):
    subjects = [key(tpm=100)]
    permit = limiter.acquire_now(subjects, 500)  # full bucket: it passes, in debt
    assert permit.state.tokens.remaining == 0
    limiter.release_now(permit, 500)
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 500)
    assert caught.value.retry_after == 300.0  # -400 back to a full 100 at 100/min
    clock.now += 300
    limiter.acquire_now(subjects, 500)


def test_concurrency_is_released_by_release(limiter):
    subjects = [key(concurrency=2)]
    first, second = limiter.acquire_now(subjects, 0), limiter.acquire_now(subjects, 0)
    assert second.state.concurrency.remaining == 0
    with pytest.raises(LimitExceeded) as caught:
        limiter.acquire_now(subjects, 0)
    assert (caught.value.dimension, caught.value.retry_after) == ("concurrency", 1.0)
    limiter.release_now(first, 0)
    limiter.release_now(first, 0)  # idempotent: no second slot freed
    third = limiter.acquire_now(subjects, 0)
    with pytest.raises(LimitExceeded):
        limiter.acquire_now(subjects, 0)
    limiter.release_now(second, 0)
    limiter.release_now(third, 0)


def test_the_state_reports_the_tightest_subject(limiter):
    permit = limiter.acquire_now([key(rpm=100, tpm=50), user(rpm=5, tpm=1000)], 10)
    state = permit.state
    assert (state.requests.limit, state.requests.remaining) == (5, 4)
    assert (state.tokens.limit, state.tokens.remaining) == (50, 40)
    assert state.concurrency is None
    assert state.reset_at(state.requests) == pytest.approx(state.checked_at + 12.0)


def test_changed_limits_apply_to_the_existing_bucket(limiter):
    for _ in range(5):
        limiter.acquire_now([key(rpm=10)], 0)
    assert limiter.acquire_now([key(rpm=3)], 0).state.requests.remaining == 2  # clamped to the new size


def test_idle_full_buckets_are_forgotten(limiter, clock):
    limiter.release_now(limiter.acquire_now([key(rpm=60, id=1)], 0), 0)
    held = limiter.acquire_now([key(concurrency=1, id=2)], 0)
    assert len(limiter) == 2
    clock.now += SWEEP_EVERY + 1
    limiter.acquire_now([key(rpm=60, id=3)], 0)
    assert len(limiter) == 2  # key 1 refilled and idle: gone; key 2 still in flight
    with pytest.raises(LimitExceeded):  # key 2's slot is still counted until released
        limiter.acquire_now([key(concurrency=1, id=2)], 0)
    limiter.release_now(held, 0)
    limiter.acquire_now([key(concurrency=1, id=2)], 0)


async def test_exact_under_concurrent_acquires():
    limiter = InProcessRateLimiter()
    subjects = [key(rpm=10, concurrency=4)]
    peak = in_flight = admitted = refused = 0

    async def one():
        nonlocal peak, in_flight, admitted, refused
        try:
            permit = await limiter.acquire(subjects, 0)
        except LimitExceeded:
            refused += 1
            return
        admitted += 1
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.01)
        in_flight -= 1
        await limiter.release(permit, 0)

    for _ in range(5):
        await asyncio.gather(*(one() for _ in range(20)))
    assert peak <= 4
    assert admitted == 10 and refused == 90  # the minute's ten, not one more
