"""The Redis rate limiter against a real Redis (127.0.0.1:6379), beside the in-process one.

The shared semantics run against both limiters with the real clock and limits
small enough that the few milliseconds a test takes refill less than a unit.
Each test counts under a prefix of its own and deletes its keys afterwards.
"""

import asyncio
import subprocess
import sys
import textwrap
import time

import pytest
import redis.asyncio as aioredis
from structlog.testing import capture_logs

from gateway_core.ratelimit import InProcessRateLimiter, LimitExceeded, RateLimits, Subject
from relaygate_redis.limiter import RateLimitStoreUnavailable, RedisRateLimiter

REDIS_URL = "redis://127.0.0.1:6379/0"
UNREACHABLE_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1 of the loopback


def key(rpm=0, tpm=0, concurrency=0, id=1):
    return Subject("key", id, RateLimits(rpm, tpm, concurrency))


def user(rpm=0, tpm=0, concurrency=0, id=1):
    return Subject("user", id, RateLimits(rpm, tpm, concurrency))


@pytest.fixture
def prefix(redis_prefix):
    return redis_prefix


@pytest.fixture
async def redis_limiters(prefix):
    """Limiters on separate connections, as separate replicas would have them."""
    made: list[RedisRateLimiter] = []

    def make(**options) -> RedisRateLimiter:
        limiter = RedisRateLimiter(REDIS_URL, prefix=prefix, **options)
        made.append(limiter)
        return limiter

    yield make
    for limiter in made:
        await limiter.close()


@pytest.fixture(params=["memory", "redis"])
def limiter(request, redis_limiters):
    if request.param == "memory":
        return InProcessRateLimiter()
    return redis_limiters()


async def keys_of(prefix: str) -> dict[str, int]:
    """Every key under ``prefix`` with its time to live in milliseconds."""
    client = aioredis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return {k: await client.pttl(k) async for k in client.scan_iter(match=f"{prefix}:*")}
    finally:
        await client.aclose()


# --- the shared semantics: both limiters give the same answers ------------------------


async def test_requests_per_minute_then_the_real_retry_after(limiter):
    subjects = [key(rpm=3)]
    permits = [await limiter.acquire(subjects, 0) for _ in range(3)]
    assert [p.state.requests.remaining for p in permits] == [2, 1, 0]
    assert permits[-1].state.requests.reset_after == pytest.approx(60.0, abs=0.5)
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire(subjects, 0)
    exceeded = caught.value
    assert (exceeded.dimension, exceeded.limit, exceeded.retry_after) == ("requests", 3, 20.0)
    assert exceeded.state.requests.remaining == 0 and exceeded.state.retry_after == 20.0
    assert exceeded.state.checked_at == pytest.approx(time.time(), abs=5)


async def test_retry_after_rounds_up_to_whole_seconds(limiter):
    for _ in range(7):
        await limiter.acquire([key(rpm=7)], 0)
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire([key(rpm=7)], 0)
    assert caught.value.retry_after == 9.0  # 60/7 = 8.57 s


async def test_a_refusal_takes_nothing_from_any_subject(limiter):
    open_key, full_user = key(rpm=10), user(rpm=1)
    await limiter.acquire([full_user], 0)
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire([open_key, full_user], 0)
    assert caught.value.subject == full_user
    assert (await limiter.acquire([open_key], 0)).state.requests.remaining == 9


async def test_tokens_are_estimated_then_corrected(limiter):
    subjects = [key(tpm=100)]  # one token refills in 0.6 s
    permit = await limiter.acquire(subjects, 40)
    assert permit.state.tokens.remaining == 60
    await limiter.release(permit, 10)
    permit = await limiter.acquire(subjects, 10)
    assert permit.state.tokens.remaining == 80
    await limiter.release(permit, 85)  # 75 more than estimated, taken afterwards
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire(subjects, 10)
    assert (caught.value.dimension, caught.value.retry_after) == ("tokens", 3.0)  # 5 left, 10 needed


async def test_an_estimate_above_the_whole_budget_waits_for_a_full_bucket(limiter):
    subjects = [key(tpm=100)]
    permit = await limiter.acquire(subjects, 500)
    assert permit.state.tokens.remaining == 0
    await limiter.release(permit, 500)
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire(subjects, 500)
    assert caught.value.retry_after == 300.0  # -400 back to a full 100 at 100/min


async def test_concurrency_is_given_back_by_release_once(limiter):
    subjects = [key(concurrency=2)]
    first, second = await limiter.acquire(subjects, 0), await limiter.acquire(subjects, 0)
    assert second.state.concurrency.remaining == 0
    with pytest.raises(LimitExceeded) as caught:
        await limiter.acquire(subjects, 0)
    assert (caught.value.dimension, caught.value.retry_after) == ("concurrency", 1.0)
    await limiter.release(first, 0)
    await limiter.release(first, 0)  # idempotent: no second slot freed
    third = await limiter.acquire(subjects, 0)
    with pytest.raises(LimitExceeded):
        await limiter.acquire(subjects, 0)
    await limiter.release(second, 0)
    await limiter.release(third, 0)


async def test_the_state_reports_the_tightest_subject(limiter):
    permit = await limiter.acquire([key(rpm=100, tpm=50), user(rpm=5, tpm=1000)], 10)
    state = permit.state
    assert (state.requests.limit, state.requests.remaining) == (5, 4)
    assert (state.tokens.limit, state.tokens.remaining) == (50, 40)
    assert state.concurrency is None
    assert state.reset_at(state.requests) == pytest.approx(state.checked_at + 12.0, abs=0.1)


async def test_changed_limits_apply_to_the_existing_bucket(limiter):
    for _ in range(5):
        await limiter.acquire([key(rpm=10)], 0)
    assert (await limiter.acquire([key(rpm=3)], 0)).state.requests.remaining == 2


# --- Redis only: exact across replicas and processes ------------------------------------


async def test_three_replicas_admit_exactly_the_minutes_ten(redis_limiters):
    replicas = [redis_limiters() for _ in range(3)]
    subjects = [key(rpm=10)]

    async def one(limiter):
        try:
            await limiter.acquire(subjects, 0)
            return True
        except LimitExceeded:
            return False

    results = await asyncio.gather(*(one(replicas[i % 3]) for i in range(60)))
    assert sum(results) == 10


def test_three_processes_admit_exactly_ten(prefix):
    script = textwrap.dedent(
        f"""
        import asyncio, sys, time
        from gateway_core.ratelimit import LimitExceeded, RateLimits, Subject
        from relaygate_redis.limiter import RedisRateLimiter

        async def main():
            limiter = RedisRateLimiter({REDIS_URL!r}, prefix={prefix!r})
            await limiter.ping()
            while time.time() < float(sys.argv[1]):
                await asyncio.sleep(0.001)
            admitted = 0
            for _ in range(20):
                try:
                    await limiter.acquire([Subject("key", 7, RateLimits(10, 0, 0))], 0)
                    admitted += 1
                except LimitExceeded:
                    pass
            await limiter.close()
            print(admitted)

        asyncio.run(main())
        """
    )
    start = str(time.time() + 1.5)
    processes = [
        subprocess.Popen([sys.executable, "-c", script, start], stdout=subprocess.PIPE, text=True) for _ in range(3)
    ]
    counts = [int(p.communicate(timeout=30)[0]) for p in processes]
    assert all(p.returncode == 0 for p in processes)
    assert sum(counts) == 10, counts


async def test_a_concurrency_limit_of_three_holds_under_fifty_acquirers(redis_limiters):
    replicas = [redis_limiters() for _ in range(3)]
    subjects = [key(concurrency=3, id=9)]
    held = peak = admitted = 0

    async def one(i):
        nonlocal held, peak, admitted
        for _ in range(100):
            try:
                permit = await replicas[i % 3].acquire(subjects, 0)
            except LimitExceeded:
                await asyncio.sleep(0.002)
                continue
            held += 1
            peak = max(peak, held)
            admitted += 1
            await asyncio.sleep(0.005)
            held -= 1
            await replicas[i % 3].release(permit, 0)
            return

    await asyncio.gather(*(one(i) for i in range(50)))
    assert peak == 3
    assert admitted >= 10


async def test_an_expired_lease_frees_its_slot(redis_limiters):
    killed, live = redis_limiters(lease_seconds=0.3), redis_limiters(lease_seconds=0.3)
    subjects = [key(concurrency=1)]
    lost = await killed.acquire(subjects, 0)
    await killed.close()  # as if its replica was killed: no more refreshes, never released
    with pytest.raises(LimitExceeded):
        await live.acquire(subjects, 0)
    await asyncio.sleep(0.4)
    current = await live.acquire(subjects, 0)
    await live.release(lost, 0)  # a late release frees its own lease, not the current one
    with pytest.raises(LimitExceeded):
        await live.acquire(subjects, 0)
    await live.release(current, 0)
    await live.acquire(subjects, 0)


async def test_a_long_request_keeps_its_lease(redis_limiters):
    limiter = redis_limiters(lease_seconds=0.3)
    subjects = [key(concurrency=1)]
    long = await limiter.acquire(subjects, 0)
    await asyncio.sleep(0.7)  # more than two leases: extended every 0.1 s
    with pytest.raises(LimitExceeded):
        await limiter.acquire(subjects, 0)
    await limiter.release(long, 0)
    await limiter.acquire(subjects, 0)


async def test_every_key_expires(redis_limiters, prefix):
    limiter = redis_limiters(lease_seconds=30)
    permit = await limiter.acquire([key(rpm=3, tpm=600, concurrency=2), user(concurrency=4)], 60)
    ttls = await keys_of(prefix)
    assert len(ttls) == 3 and all(ttl > 0 for ttl in ttls.values())
    assert 19_000 < ttls[f"{prefix}:rl:key:1"] <= 21_000  # one request of 3/min back in 20 s (+1 s)
    assert 29_000 < ttls[f"{prefix}:rs:user:1"] <= 31_000  # the lease's 30 s (+1 s)
    await limiter.release(permit, 6)
    ttls = await keys_of(prefix)
    assert list(ttls) == [f"{prefix}:rl:key:1"] and ttls[f"{prefix}:rl:key:1"] > 0  # empty lease sets are gone


# --- Redis unreachable -----------------------------------------------------------------


async def test_unreachable_fails_closed_with_a_503():
    limiter = RedisRateLimiter(UNREACHABLE_URL, timeout=0.5)
    started = time.monotonic()
    with pytest.raises(RateLimitStoreUnavailable) as caught:
        await limiter.acquire([key(rpm=3)], 0)
    assert time.monotonic() - started < 2.0
    assert caught.value.status == 503 and "rate-limit store" in str(caught.value)
    await limiter.close()


async def test_unreachable_fails_open_with_a_warning_when_asked():
    limiter = RedisRateLimiter(UNREACHABLE_URL, timeout=0.5, fail_open=True)
    with capture_logs() as logs:
        permit = await limiter.acquire([key(rpm=1)], 0)
        await limiter.acquire([key(rpm=1)], 0)  # no limit counted
        await limiter.release(permit, 0)
    assert permit.state.requests is None
    assert [entry["log_level"] for entry in logs] == ["warning"]  # one warning per kind every 10 s
    assert "fail open" in logs[0]["event"] and logs[0]["kind"] == "rate_limits"
    assert limiter.faults.counts == {("rate_limits", "open"): 2}  # each one counted
    await limiter.close()
