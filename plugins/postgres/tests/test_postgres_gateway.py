"""The gateway on PostgreSQL, end to end over loopback: the test kit's gateway
started with ``store=PostgresStore(...)``, the fake OpenAI upstream and the
official openai SDK. A priced request is charged exactly, streamed or not, and
200 concurrent requests on a small balance never overdraw it, and
``relaygate check`` finds the books clean after them."""

from __future__ import annotations

import asyncio
import json

import attrs
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import CACHED, INPUT, MODEL, OUTPUT
from gateway_core.commands.cli import main
from gateway_core.runtime.plugins import collect
from gateway_core.secrets import hash_key, new_api_key
from relaygate_postgres.store import PostgresStore
from gateway_openai.fake_upstream import Fault, FakeOpenAI, echo_text, usage_for

from .conftest import Seeder

CHAT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "one two three four"}]
BALANCE = 10_000_000


@attrs.frozen
class World:
    seed: Seeder
    user_id: int
    key_id: int
    secret: str


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai",))


@pytest.fixture
async def world(pg_url, upstream, relaygate_config):
    """alice with a balance and a key, a channel to the fake upstream and the
    billing kit's price, written straight into a fresh PostgreSQL database."""
    await PostgresStore(pg_url).migrate()
    seed = await Seeder.open(pg_url)
    base_url = collect(relaygate_config).channel_type("openai").normalize_base_url(upstream.url)
    await seed.channel("up", type="openai", base_url=base_url, models=[MODEL])
    await seed.price(MODEL, INPUT, OUTPUT, cached=CACHED)
    user_id = await seed.user(balance_micros=BALANCE)
    secret = new_api_key()
    key_id = await seed.key(user_id, hash_key(secret))
    yield World(seed, user_id, key_id, secret)
    await seed.close()


@pytest.fixture
def gateway(world, pg_url, start_gateway):
    return start_gateway(store=PostgresStore(pg_url, max_size=8))


def client(gateway, secret: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0, timeout=30)


async def row_of(seed: Seeder, request_id: str) -> dict:
    for _ in range(100):
        rows = await seed.fetch("SELECT * FROM usage_logs WHERE request_id = ?", request_id)
        if rows:
            return rows[0]
        await asyncio.sleep(0.05)
    raise AssertionError(f"no usage row for {request_id}")


async def test_a_priced_request_is_charged_exactly(gateway, world: World):
    seed = world.seed
    async with client(gateway, world.secret) as api:
        raw = await api.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=50)
    completion = raw.parse()
    assert completion.choices[0].message.content == "echo: one two three four" and completion.usage is not None
    request_id = raw.headers["x-request-id"]
    cost = kit.expected_cost(completion.usage.prompt_tokens, completion.usage.completion_tokens)
    row = await row_of(seed, request_id)
    assert (row["status"], row["cost_micros"], row["estimated"], row["end_reason"], row["overrun_micros"]) == (200, cost, 0, "done", 0)
    held = row["held_micros"]
    assert held >= cost > 0
    assert held > 0 and await seed.ledger(request_id) == [("capture", -cost)]
    assert await seed.balance(world.user_id) == BALANCE - cost
    assert await seed.value("SELECT used_micros FROM api_keys WHERE id = ?", world.key_id) == cost
    assert await seed.problems() == []


async def test_a_priced_stream_is_charged_exactly(gateway, world: World, upstream: FakeOpenAI):
    seed = world.seed
    async with client(gateway, world.secret) as api:
        stream = await api.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, stream=True)
        request_id = stream.headers["x-request-id"]
        chunks = [chunk async for chunk in stream.parse()]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "echo: one two three four"
    body = upstream.requests[-1]["body"]
    usage = usage_for(body, echo_text(body))
    cost = kit.expected_cost(usage["prompt_tokens"], usage["completion_tokens"])
    row = await row_of(seed, request_id)
    assert (row["stream"], row["input_tokens"], row["output_tokens"], row["estimated"], row["cost_micros"]) == (
        1, usage["prompt_tokens"], usage["completion_tokens"], 0, cost,
    )  # fmt: skip
    assert row["held_micros"] > 0 and await seed.ledger(request_id) == [("capture", -cost)]
    assert await seed.balance(world.user_id) == BALANCE - cost
    assert await seed.problems() == []


REQUESTS = 200
COVERED = 40  # the balance covers about this many reservations at once


async def one_request(api: openai.AsyncOpenAI, n: int) -> tuple[int, str | None]:
    stream = n % 4 == 0
    try:
        raw = await api.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20, stream=stream)
    except openai.APIStatusError as error:
        return error.status_code, error.code
    answer = raw.parse()
    if isinstance(answer, openai.AsyncStream):
        assert [chunk async for chunk in answer][-1].choices[0].finish_reason == "stop"
    return raw.status_code, None


async def test_200_concurrent_requests_on_a_small_balance(world: World, upstream: FakeOpenAI, pg_url, start_gateway, capsys):
    seed = world.seed
    reservation = kit.expected_cost(60, 20)  # the body's estimated input and max_tokens=20
    await seed.execute("UPDATE api_keys SET quota_micros = NULL")
    small = await seed.user("bob", balance_micros=reservation * COVERED)
    secret = new_api_key()
    await seed.key(small, hash_key(secret), name="bob")
    for _ in range(REQUESTS):  # answers take a while: reservations overlap
        upstream.fail_next(Fault(first_byte_delay=0.3))
    gateway = start_gateway(store=PostgresStore(pg_url, max_size=8))

    async with client(gateway, secret) as api:
        results = await asyncio.gather(*(one_request(api, n) for n in range(REQUESTS)))
    admitted = sum(1 for status, _ in results if status == 200)
    refused = [(status, code) for status, code in results if status != 200]
    assert admitted >= COVERED and refused and set(refused) == {(429, "insufficient_quota")}
    rows = await seed.fetch("SELECT status, cost_micros FROM usage_logs WHERE user_id = ?", small)
    assert len(rows) == REQUESTS
    charged = sum(row["cost_micros"] for row in rows)
    assert await seed.balance(small) == reservation * COVERED - charged >= 0
    assert await seed.value("SELECT min(balance_after_micros) FROM ledger WHERE user_id = ?", small) >= 0
    assert await seed.value("SELECT count(*) FROM holds") == 0
    assert await seed.problems() == []
    status = await asyncio.to_thread(main, ["check", "--json", "--db", pg_url])  # the operator's check agrees
    report = json.loads(capsys.readouterr().out.splitlines()[-1])  # after the gateway's request log lines
    assert status == 0 and (report["ok"], report["problems"], report["open_holds"]) == (True, [], 0)
    assert report["ledger_rows"] == await seed.value("SELECT count(*) FROM ledger")
