"""The settlement: one function fills a finished request's usage row from its context
and its outcome, prices it, lets the admitted policies finish, and records it, once."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from gateway_core.billing.charge import Charge
from gateway_core.channel_type import Target
from gateway_core.client_protocol import BillingHints, Call
from gateway_core.errors import UpstreamError
from gateway_core.model import MediaUsage, Usage
from gateway_core.observers import Observer
from gateway_core.request.observing import Observers
from gateway_core.request.outcome import CLIENT_GONE, Outcome, answered
from gateway_core.policy import Pipeline, Policy
from gateway_core.records import ChannelRecord, PriceRecord
from gateway_core.request.settlement import settle, usage_row
from gateway_core.testing import make_context, make_key_record

PRICE = PriceRecord("m", 2_500_000, 10_000_000, per_mchar_micros=15_000_000)  # 2.50 / 10.00 USD per Mtok, 15 USD per Mchar
CHANNEL = ChannelRecord(
    id=7, name="up", type="demo", base_url="local://demo", api_keys=("k",), models=("m",), model_map={}, groups=("default",)
)


def context(billing: BillingHints = BillingHints(), body: bytes = b"x" * 40):
    call = Call("openai", "chat", "openai.chat", "m", True, {}, billing=billing)
    ctx = make_context(key=make_key_record(id=2, user_id=1, name="laptop"), body=body, call=call)
    ctx.endpoint = "chat"
    ctx.target = Target(channel=CHANNEL, api_key="k", upstream_model="m-2026")
    ctx.charge = Charge(user_id=1, key_id=2, price=PRICE, ratio_ppm=1_000_000, held_micros=900, hints=billing)
    ctx.attempts.append({"channel": "up", "status": 200})
    return ctx


def test_the_row_is_filled_from_the_context_and_the_outcome_and_priced():
    ctx = context()
    row = usage_row(ctx, answered(Usage(input_tokens=1000, output_tokens=500, cached_input_tokens=10), 40, 0, first_token_ms=12.5))
    assert (row.request_id, row.protocol, row.endpoint, row.client_ip) == (ctx.request_id, "bare", "chat", "127.0.0.1")
    assert (row.user_id, row.key_id, row.key_name, row.model, row.stream) == (1, 2, "laptop", "m", True)
    assert (row.channel_id, row.channel_name, row.upstream_model) == (7, "up", "m-2026")
    assert (row.input_tokens, row.output_tokens, row.cached_tokens, row.estimated) == (1000, 500, 10, False)
    assert (row.status, row.end_reason, row.first_token_ms, row.error_type) == (200, "done", 12.5, None)
    # 1000 input tokens × 2.50 (no cached price: the input price) + 500 × 10.00 USD per million
    assert (row.held_micros, row.cost_micros, row.overrun_micros) == (900, 2_500 + 5_000, 0)
    assert row.attempts == [{"channel": "up", "status": 200}] and row.started_at == ctx.started_at


def test_an_answer_without_usage_is_estimated_and_an_error_is_kept():
    error = UpstreamError("the upstream broke")
    error.upstream_status, error.upstream_body = 502, "bad gateway"
    row = usage_row(context(body=b"x" * 400), answered(None, 100, 40, end_reason="upstream_error", error=error))
    assert (row.input_tokens, row.output_tokens, row.estimated) == (100, 10, True)
    assert (row.error_type, row.error_message, row.upstream_status, row.upstream_error) == ("upstream", "the upstream broke", 502, "bad gateway")
    assert row.cost_micros == 250 + 100  # 100 estimated input tokens × 2.50, 10 delivered × 10.00 USD per million
    refused = usage_row(context(), Outcome(429, error=UpstreamError("no")))
    assert (refused.status, refused.end_reason, refused.input_tokens, refused.cost_micros) == (429, None, 0, 0)


def test_units_the_request_named_are_charged_once_its_answer_reached_the_client():
    speech = BillingHints(media=MediaUsage(characters=1000))
    assert usage_row(context(speech), Outcome(200, "done", first_token_ms=5.0)).cost_micros == 15_000
    assert usage_row(context(speech), Outcome(200, "timeout")).cost_micros == 0
    reported = Outcome(200, "done", media=MediaUsage(characters=10), first_token_ms=5.0)
    assert usage_row(context(speech), reported).cost_micros == 150  # the answer's report wins


class Holding(Policy):
    name, order = "holding", 700

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def finish(self, ctx, services) -> None:
        self.seen.append(ctx.row.status)


class Told(Observer):
    """An observer of the settlement: the status of each row it was told of."""

    def __init__(self) -> None:
        self.statuses: list[int] = []

    def finished(self, ctx, outcome, row) -> None:
        self.statuses.append(row.status)


async def test_settle_finishes_the_admitted_policies_with_the_row_then_records_once():
    policy = Holding()
    recorded = []

    async def record(row, charge):
        recorded.append((row.status, list(policy.seen)))

    told = Told()
    services = SimpleNamespace(pipeline=Pipeline([policy]), recorder=SimpleNamespace(record=record), observers=Observers([told]))
    ctx = context()
    await services.pipeline.admit(ctx, services)
    assert ctx.admitted == [policy]
    await settle(ctx, CLIENT_GONE, services)
    await settle(ctx, Outcome(200, "done"), services)  # already settled: nothing more
    assert recorded == [(499, [499])] and ctx.admitted == [] and ctx.settled
    assert told.statuses == [499]  # the observers are told once


async def test_a_policy_that_fails_to_finish_still_leaves_the_request_recorded():
    class Broken(Holding):
        async def finish(self, ctx, services) -> None:
            raise RuntimeError("finish failed")

    recorded = []

    async def record(row, charge):
        recorded.append(row.status)

    services = SimpleNamespace(pipeline=Pipeline([Broken()]), recorder=SimpleNamespace(record=record), observers=Observers([Told()]))
    ctx = context()
    await services.pipeline.admit(ctx, services)
    with pytest.raises(RuntimeError):
        await settle(ctx, Outcome(200, "done"), services)
    assert recorded == [200]
