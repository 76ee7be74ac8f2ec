"""Settling a finished request: its usage-log row, filled in one place from its
context and its outcome, priced, and recorded durably once its policies finish.

The relay's branches end a request with an :class:`~gateway_core.request.outcome.Outcome`
and hand it to :func:`settle`; nothing else writes the row.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from . import reservation
from .context import RequestContext
from .outcome import NO_USAGE, Outcome
from ..records import UsageRow

if TYPE_CHECKING:
    from ..runtime.services import Services


async def settle(ctx: RequestContext, outcome: Outcome, services: Services) -> None:
    """Fill the request's row from ``outcome`` and price it, let the policies
    that admitted it finish (they read the row), then record the row and the
    charge's settlement in one durable write; then count it in the metrics.
    Once per request: later calls do nothing."""
    if ctx.settled:
        return
    ctx.settled = True
    if reservation.pending(ctx):  # its reservation is still being written: settle after it, even if cancelled
        await asyncio.shield(_settle(ctx, outcome, services))
    else:
        await _settle(ctx, outcome, services)


async def _settle(ctx: RequestContext, outcome: Outcome, services: Services) -> None:
    await reservation.wait(ctx)
    row = ctx.row = usage_row(ctx, outcome)
    try:
        await services.pipeline.finish(ctx, services)
    finally:
        try:
            await services.recorder.record(row, ctx.charge)
        finally:
            services.observers.finished(ctx, outcome, row)


def usage_row(ctx: RequestContext, outcome: Outcome) -> UsageRow:
    """The request's usage-log row, whole and priced (its overrun is the store's to tell)."""
    key, call, target, charge, error = ctx.key, ctx.call, ctx.target, ctx.charge, outcome.error
    usage = outcome.usage or NO_USAGE
    priced = None if charge is None else charge.priced(outcome)
    return UsageRow(
        request_id=ctx.request_id,
        started_at=ctx.started_at,
        protocol=ctx.protocol.name,
        endpoint=ctx.endpoint,
        client_ip=ctx.client_ip,
        client_request_id=ctx.headers.get("x-request-id"),
        user_id=None if key is None else key.user_id,
        key_id=None if key is None else key.id,
        key_name=None if key is None else key.name,
        model=(call.model or None) if call is not None else None,
        upstream_model=None if target is None else target.upstream_model,
        channel_id=None if target is None else target.channel.id,
        channel_name=None if target is None else target.channel.name,
        stream=call is not None and call.stream,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cached_tokens=usage.cached_input_tokens,
        cache_write_tokens=usage.cache_write_tokens,
        cost_micros=0 if priced is None else priced.total,
        cost_detail=None if priced is None or not priced.total else priced.as_dict(),
        held_micros=0 if charge is None else charge.held_micros,
        estimated=outcome.estimated,
        duration_ms=ctx.elapsed_ms(),
        first_token_ms=outcome.first_token_ms,
        status=outcome.status,
        end_reason=outcome.end_reason,
        error_type=None if error is None else error.kind,
        error_message=None if error is None else error.message,
        upstream_status=None if error is None else error.upstream_status,
        upstream_error=None if error is None else error.upstream_body,
        attempts=ctx.attempts,
        served_model=ctx.served_model,
        team_id=None if key is None else key.team_id,
    )
