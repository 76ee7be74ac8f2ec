"""A reservation written beside the upstream call (gateway_core/request/reservation.py),
over real HTTP on both stores: it happens only in a process that is its store's
sole writer (SQLite, one worker; never on PostgreSQL, whose replicas reserve
unseen) and once it saw a balance that covers the request many times over; a
refusal it meets is still a 429 with nothing charged and no answer delivered
(the balance was spent elsewhere in the meantime); many such requests at once
are charged exactly."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.channel_type import Timeouts
from gateway_openai.fake_upstream import FakeOpenAI

LOAD = ("openai",)
CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    """Each test runs on SQLite and on PostgreSQL (a database of its own)."""
    return kit.config(tmp_path, LOAD, db=db_url, timeouts=Timeouts(connect=2, first_byte=2, idle=2))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def world(seed, upstream):
    return kit.seed_world(seed, channel_type="openai", base_url=upstream.url)


def client(gateway, secret) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


def upstream_calls_when_refused(db_url: str) -> int:
    """The upstream calls after a first answer and a refusal: the refused request
    reached the upstream only where reservations overlap it (SQLite, one worker)."""
    return 1 if db_url.startswith("postgresql") else 2


def open_holds(seed) -> int:
    return seed.rows("SELECT count(*) AS n FROM holds")[0]["n"]


async def test_a_refusal_met_beside_the_upstream_call_is_a_429_charging_nothing(start_gateway, world, seed, upstream, db_url):
    user_id, key_id, secret = world
    gateway = start_gateway()
    openai_client = client(gateway, secret)
    await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)  # 10 USD seen available
    first = kit.balance_of(seed, user_id)
    seed.adjust(user_id, -first)  # spent elsewhere (another replica, an operator): the process still believes 10 USD
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)
    assert caught.value.code == "insufficient_quota" and "balance is too low: 0.00 USD left" in caught.value.message
    # on SQLite the upstream was called beside the reservation, its answer dropped; on PostgreSQL it was never called
    assert len(upstream.requests) == upstream_calls_when_refused(db_url)
    row = kit.usage_row(seed, caught.value.response.headers["x-request-id"])
    assert (row["status"], row["cost_micros"], row["error_type"]) == (429, 0, "insufficient_quota")
    assert kit.ledger_of(seed, row["request_id"]) == []
    assert kit.balance_of(seed, user_id) == 0 and open_holds(seed) == 0
    kit.assert_invariants(seed)
    # having been refused, the next request waits for its reservation again: refused before any upstream call
    with pytest.raises(openai.RateLimitError):
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)
    assert len(upstream.requests) == upstream_calls_when_refused(db_url)


async def test_a_stream_refused_beside_the_upstream_call_sends_no_byte_of_the_answer(start_gateway, world, seed, upstream, db_url):
    user_id, key_id, secret = world
    gateway = start_gateway()
    await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)
    seed.adjust(user_id, -kit.balance_of(seed, user_id))
    body = {"model": MODEL, "messages": CHAT, "max_tokens": 10, "stream": True}
    async with aiohttp.ClientSession() as session:
        async with session.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}) as response:
            status, answer = response.status, await response.json()
    assert status == 429 and answer["error"]["code"] == "insufficient_quota"
    assert len(upstream.requests) == upstream_calls_when_refused(db_url)
    row = await kit.wait_for_row(seed)
    assert (row["status"], row["cost_micros"], row["stream"]) == (429, 0, 1)
    assert kit.balance_of(seed, user_id) == 0 and open_holds(seed) == 0
    kit.assert_invariants(seed)


async def test_a_balance_without_a_wide_margin_is_reserved_before_the_upstream_call(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    seed.topup(user_id, 30_000)  # 0.03 USD: about three reservations of 1,000 output tokens, not eight
    gateway = start_gateway()
    openai_client = client(gateway, secret)
    await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=1000)
    seed.adjust(user_id, -kit.balance_of(seed, user_id))
    with pytest.raises(openai.RateLimitError):
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=1000)
    assert len(upstream.requests) == 1  # refused before any upstream call
    kit.assert_invariants(seed)


async def test_many_requests_reserved_beside_their_upstream_calls_are_charged_exactly(start_gateway, world, seed, upstream):
    user_id, key_id, secret = world
    gateway = start_gateway()
    openai_client = client(gateway, secret)
    await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)

    async def plain() -> None:
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)

    async def stream() -> None:
        chunks = await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10, stream=True)
        async for _ in chunks:
            pass

    await asyncio.gather(*(plain() if n % 2 else stream() for n in range(30)))
    deadline = asyncio.get_running_loop().time() + 10
    while seed.rows("SELECT count(*) AS n FROM usage_logs")[0]["n"] < 31:
        assert asyncio.get_running_loop().time() < deadline, "not every request was recorded"
        await asyncio.sleep(0.05)
    rows = seed.rows("SELECT status, cost_micros FROM usage_logs")
    assert len(rows) == 31 and all(row["status"] == 200 and row["cost_micros"] > 0 for row in rows)
    captured = seed.rows("SELECT sum(amount_micros) AS spent FROM ledger WHERE kind = 'capture'")[0]["spent"]
    assert -captured == sum(row["cost_micros"] for row in rows)
    assert kit.balance_of(seed, user_id) == 10_000_000 + captured == kit.available_of(seed, user_id)
    assert open_holds(seed) == 0
    kit.assert_invariants(seed)
