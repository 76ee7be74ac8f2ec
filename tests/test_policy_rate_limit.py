"""The rate-limit policy: subjects from the key record, 429 with Retry-After and a
short phrase, headers through the protocol, release and token correction in finish."""

import attrs
import pytest

from gateway_core.errors import RateLimitError
from gateway_core.policies.rate_limit import RateLimit
from gateway_core.routing.health import HealthBoard
from gateway_core.ratelimit import InProcessRateLimiter, RateLimits
from gateway_core.records import NO_LIMITS
from gateway_core.testing import make_context, make_key_record


class HeaderProtocol:
    name = "test"

    def __init__(self):
        self.states = []

    def rate_limit_headers(self, state):
        self.states.append(state)
        return [(b"x-test-remaining", str(state.requests.remaining if state.requests else "-").encode())]


class Services:
    def __init__(self):
        self.rate_limiter = InProcessRateLimiter()
        self.health = HealthBoard()  # no shared health: limits are taken at admission


@pytest.fixture
def services():
    return Services()


def ctx_for(key, protocol=None, body=b""):
    return make_context(protocol or HeaderProtocol(), key=key, body=body)


async def test_no_limits_take_nothing_and_send_no_headers(services):
    key = make_key_record()
    assert key.limits is NO_LIMITS and key.user_limits is NO_LIMITS
    ctx = ctx_for(key)
    await RateLimit().admit(ctx, services)
    assert ctx.response_headers == [] and ctx.state == {} and ctx.protocol.states == []
    await RateLimit().finish(ctx, services)
    assert len(services.rate_limiter) == 0


async def test_all_zero_limits_are_no_limits():
    assert make_key_record(limits=RateLimits(0, 0, 0)).limits is NO_LIMITS


async def test_key_limit_then_429_with_retry_after_and_headers(services):
    policy = RateLimit()
    key = make_key_record(limits=RateLimits(requests_per_minute=2))
    for remaining in (b"1", b"0"):
        ctx = ctx_for(key)
        await policy.admit(ctx, services)
        assert ctx.response_headers == [(b"x-test-remaining", remaining)]
        await policy.finish(ctx, services)
    ctx = ctx_for(key)
    with pytest.raises(RateLimitError) as caught:
        await policy.admit(ctx, services)
    error = caught.value
    assert error.status == 429 and error.retry_after == 30.0
    assert error.message == "Rate limit reached: this API key may make 2 requests per minute. Try again in 30 s."
    assert ctx.response_headers == [(b"x-test-remaining", b"0")]  # the 429 carries them too
    assert ctx.state == {}


async def test_user_limits_span_the_users_keys(services):
    policy = RateLimit()
    first = make_key_record(id=1, user_limits=RateLimits(requests_per_minute=1))
    second = make_key_record(id=2, user_limits=RateLimits(requests_per_minute=1))
    await policy.admit(ctx_for(first), services)
    with pytest.raises(RateLimitError, match="your account may make 1 requests per minute"):
        await policy.admit(ctx_for(second), services)


async def test_finish_releases_the_slot_and_corrects_tokens(services):
    policy = RateLimit()
    key = make_key_record(limits=RateLimits(tokens_per_minute=1000, concurrency=1))
    ctx = ctx_for(key, body=b"x" * 2000)  # estimated 500 tokens
    await policy.admit(ctx, services)
    assert ctx.protocol.states[-1].tokens.remaining == 500
    with pytest.raises(RateLimitError, match="1 request\\(s\\) in progress"):
        await policy.admit(ctx_for(key), services)
    ctx.row = attrs.evolve(ctx.row, input_tokens=30, output_tokens=20)
    await policy.finish(ctx, services)
    after = ctx_for(key)
    await policy.admit(after, services)
    assert after.protocol.states[-1].tokens.remaining == 950
    await policy.finish(after, services)
    await policy.finish(after, services)  # a second finish changes nothing


async def test_tokens_limit_message(services):
    policy = RateLimit()
    key = make_key_record(limits=RateLimits(tokens_per_minute=10))
    ctx = ctx_for(key, body=b"x" * 400)
    await policy.admit(ctx, services)
    ctx.row = attrs.evolve(ctx.row, input_tokens=100)
    await policy.finish(ctx, services)
    with pytest.raises(RateLimitError, match="may use 10 tokens per minute"):
        await policy.admit(ctx_for(key, body=b"x" * 40), services)
