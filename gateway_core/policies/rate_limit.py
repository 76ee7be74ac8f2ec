"""Rate limits per key and per user: requests and tokens per minute, requests in flight.

A key's own limits and its owner's (the user's overrides, else the defaults of
the key's group) arrive folded into the key record, so a request with no limits
costs two identity tests here and one dict lookup in ``finish``. Otherwise the
limiter (``gateway.rate_limiter``) takes one request, the estimated input
tokens and a slot in flight from each limited subject; ``finish`` gives the
slot back and corrects the tokens to the real usage, whatever the outcome.
The response carries the limits in the calling protocol's own header names.

With Redis (``gateway.health.shared`` counts channel slots on the same
connection) a request bound for a channel is not counted here: its
:class:`DeferredLimits` are taken with its first channel's slot, in one script
(:meth:`AttemptPlan.take <gateway_core.routing.failover.AttemptPlan.take>`), and given
back with it when the request settles — one round trip per request instead of
two. A refusal is the same 429, raised there; a request that reaches no
channel (an unknown model, none available) is not counted.
"""

from __future__ import annotations

from ..request.context import RequestContext
from ..endpoints import MODELS
from ..errors import GatewayError, RateLimitError
from ..gateway import Gateway
from ..policy import Policy
from ..ratelimit import CONCURRENCY, NO_LIMITS, REQUESTS, LimitExceeded, Permit, Subject


class RateLimit(Policy):
    name = "rate_limit"
    order = 600

    async def admit(self, ctx: RequestContext, gateway: Gateway) -> None:
        key = ctx.authenticated_key()
        if key.limits is NO_LIMITS and key.user_limits is NO_LIMITS:
            return
        subjects = []
        if key.limits is not NO_LIMITS:
            subjects.append(Subject("key", key.id, key.limits))
        if key.user_limits is not NO_LIMITS:
            subjects.append(Subject("user", key.user_id, key.user_limits))
        shared = gateway.health.shared
        if shared is not None and ctx.call is not None and ctx.call.endpoint != MODELS and shared.counts_with(gateway.rate_limiter):
            ctx.state[self.name] = ctx.slot_limits = DeferredLimits(ctx, subjects, ctx.estimated_input_tokens(), gateway.rate_limiter)
            return
        try:
            permit = await gateway.rate_limiter.acquire(subjects, ctx.estimated_input_tokens())
        except LimitExceeded as exceeded:
            ctx.response_headers.extend(ctx.protocol.rate_limit_headers(exceeded.state))
            raise RateLimitError(describe(exceeded), retry_after=exceeded.retry_after) from None
        ctx.state[self.name] = permit
        headers = ctx.protocol.rate_limit_headers(permit.state)
        if headers:
            ctx.response_headers.extend(headers)

    async def finish(self, ctx: RequestContext, gateway: Gateway) -> None:
        permit = ctx.state.pop(self.name, None)
        if permit is not None:
            row = ctx.row  # the request's usage row: the settlement fills it before the policies finish
            used = 0 if row is None else row.input_tokens + row.output_tokens
            if type(permit) is DeferredLimits:
                await permit.release(used)
            else:
                await gateway.rate_limiter.release(permit, used)


class DeferredLimits:
    """A request's limits, to be taken with its channel's slot (see the module)."""

    __slots__ = ("ctx", "subjects", "tokens", "limiter", "permit", "slot", "slots")

    def __init__(self, ctx: RequestContext, subjects: list[Subject], tokens: int, limiter) -> None:
        self.ctx = ctx
        self.subjects = subjects
        self.tokens = tokens
        self.limiter = limiter  # the shared limiter (the Redis plugin's)
        self.permit: Permit | None = None  # once taken
        self.slot: Permit | None = None  # the channel's slot taken with them, if any
        self.slots = None  # the limiter counting that slot

    @property
    def taken(self) -> bool:
        return self.permit is not None

    async def take(self, slot: Subject | None, slots) -> Permit | None:
        """Take the limits, with ``slot`` (a channel's concurrency, counted by
        ``slots``) when given: the slot's permit. Raises a 429 when the request
        is over its limits; :class:`LimitExceeded` (naming ``slot``) when only
        the channel is full — then nothing was taken."""
        ctx = self.ctx
        try:
            if slot is None:
                self.permit = await self.limiter.acquire(self.subjects, self.tokens)
            else:
                self.permit, self.slot = await self.limiter.acquire_with_slot(self.subjects, self.tokens, slot, slots)
                self.slots = slots
        except LimitExceeded as exceeded:
            if exceeded.subject is slot:
                raise
            ctx.response_headers.extend(ctx.protocol.rate_limit_headers(exceeded.state))
            ctx.refused_by = RateLimit.name
            raise RateLimitError(describe(exceeded), retry_after=exceeded.retry_after) from None
        except GatewayError:  # the limits could not be counted (Redis unreachable, failing closed)
            ctx.refused_by = RateLimit.name
            raise
        headers = ctx.protocol.rate_limit_headers(self.permit.state)
        if headers:
            ctx.response_headers.extend(headers)
        return self.slot

    async def release(self, used: int) -> None:
        """Give the limits back, with the channel's slot when it is still held (one script)."""
        permit, slot = self.permit, self.slot
        if permit is None:
            return
        if slot is not None and self.limiter.release_with_slot(permit, used, slot, self.slots):
            return  # the attempt is over when the request settles: its slot goes back with the limits
        await self.limiter.release(permit, used)


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
