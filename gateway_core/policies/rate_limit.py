"""Rate limits per key and per user: requests and tokens per minute, requests in flight.

A key's own limits and its owner's (the user's overrides, else the defaults of
the key's group) arrive folded into the key record, so a request with no limits
costs two identity tests here and one dict lookup in ``finish``. Otherwise the
limiter (``services.rate_limiter``) takes one request, the estimated input
tokens and a slot in flight from each limited subject; ``finish`` gives the
slot back and corrects the tokens to the real usage, whatever the outcome.
The response carries the limits in the calling protocol's own header names.
"""

from __future__ import annotations

from ..context import RequestContext
from ..errors import RateLimitError
from ..policy import Policy
from ..ratelimit import CONCURRENCY, NO_LIMITS, REQUESTS, LimitExceeded, Subject


class RateLimit(Policy):
    name = "rate_limit"
    order = 600

    async def admit(self, ctx: RequestContext, services) -> None:
        key = ctx.authenticated_key()
        if key.limits is NO_LIMITS and key.user_limits is NO_LIMITS:
            return
        subjects = []
        if key.limits is not NO_LIMITS:
            subjects.append(Subject("key", key.id, key.limits))
        if key.user_limits is not NO_LIMITS:
            subjects.append(Subject("user", key.user_id, key.user_limits))
        try:
            permit = await services.rate_limiter.acquire(subjects, ctx.estimated_input_tokens())
        except LimitExceeded as exceeded:
            ctx.response_headers.extend(ctx.protocol.rate_limit_headers(exceeded.state))
            raise RateLimitError(describe(exceeded), retry_after=exceeded.retry_after) from None
        ctx.state[self.name] = permit
        headers = ctx.protocol.rate_limit_headers(permit.state)
        if headers:
            ctx.response_headers.extend(headers)

    async def finish(self, ctx: RequestContext, services) -> None:
        permit = ctx.state.pop(self.name, None)
        if permit is not None:
            row = ctx.row  # the request's usage row: the settlement fills it before the policies finish
            used = 0 if row is None else row.input_tokens + row.output_tokens
            await services.rate_limiter.release(permit, used)


def describe(exceeded: LimitExceeded) -> str:
    """``Rate limit reached: this API key may make 60 requests per minute. Try again in 2 s.``"""
    who = "this API key" if exceeded.subject.kind == "key" else "your account"
    if exceeded.dimension == REQUESTS:
        what = f"may make {exceeded.limit} requests per minute"
    elif exceeded.dimension == CONCURRENCY:
        what = f"may have {exceeded.limit} request(s) in progress at once"
    else:
        what = f"may use {exceeded.limit} tokens per minute"
    return f"Rate limit reached: {who} {what}. Try again in {exceeded.retry_after:.0f} s."
