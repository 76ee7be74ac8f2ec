"""200 concurrent requests against a balance that covers only some of them, in one
gateway process and with ``relaygate serve --workers 2`` sharing the store, on
SQLite and on PostgreSQL:
the balance never goes below zero, every admitted request is charged exactly once,
refused ones cost nothing and got 429 ``insufficient_quota``, the ledger holds."""

from __future__ import annotations

import asyncio

import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.commands.cli import main
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import Fault, FakeOpenAI

LOAD = ("openai", "demo")
REQUESTS = 200
CHAT = [{"role": "user", "content": "one two three four"}]
COVERED = 40  # the balance covers about this many reservations at once


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    """Each test runs on SQLite and on PostgreSQL (a database of its own)."""
    return kit.config(tmp_path, LOAD, db=db_url)


@pytest.fixture
async def upstream(fake_upstream):
    fake = await fake_upstream(FakeOpenAI())
    for _ in range(REQUESTS):  # answers take a while: reservations overlap
        fake.fail_next(Fault(first_byte_delay=0.3))
    return fake


@pytest.fixture
def world(seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    # what one request reserves: its body's estimated tokens and max_tokens=20 of output
    reservation = kit.expected_cost(60, 20)
    seed.topup(user_id, reservation * COVERED)
    return user_id, key_id, secret, reservation * COVERED


async def one_request(client: openai.AsyncOpenAI, n: int) -> tuple[int, str, str | None]:
    """(status, request id, error code) of one chat, streaming every fourth."""
    stream = n % 4 == 0
    try:
        raw = await client.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20, stream=stream)
    except openai.APIStatusError as error:
        return error.status_code, error.response.headers["x-request-id"], error.code
    answer = raw.parse()
    if stream:
        chunks = [chunk async for chunk in answer]
        assert chunks and chunks[-1].choices[0].finish_reason == "stop"
    else:
        assert answer.choices[0].message.content == "echo: one two three four"
    return raw.status_code, raw.headers["x-request-id"], None


async def burst(base_url: str, secret: str) -> list[tuple[int, str, str | None]]:
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=secret, max_retries=0, timeout=30)
    try:
        return await asyncio.gather(*(one_request(client, n) for n in range(REQUESTS)))
    finally:
        await client.close()


def assert_charged_exactly_once(seed, results, upstream, user_id, key_id, topped_up) -> None:
    admitted = [request_id for status, request_id, _ in results if status == 200]
    refused = [(request_id, code) for status, request_id, code in results if status != 200]
    assert len(admitted) + len(refused) == REQUESTS
    assert admitted and refused, f"{len(admitted)} admitted: the balance should cover only some"
    assert {code for _, code in refused} == {"insufficient_quota"}
    assert {status for status, _, _ in results} == {200, 429}
    assert len(upstream.requests) == len(admitted)  # refused before any upstream call

    rows = {row["request_id"]: row for row in seed.rows("SELECT * FROM usage_logs")}
    assert len(rows) == REQUESTS
    ledger: dict[str, list[tuple[str, int]]] = {}
    for row in seed.rows("SELECT request_id, kind, amount_micros FROM ledger WHERE request_id IS NOT NULL ORDER BY id"):
        ledger.setdefault(row["request_id"], []).append((row["kind"], row["amount_micros"]))
    charged = 0
    for request_id in admitted:
        row = rows[request_id]
        cost = kit.expected_cost(row["input_tokens"], row["output_tokens"])
        assert row["cost_micros"] == cost > 0 and row["estimated"] == 0 and row["overrun_micros"] == 0
        held = row["held_micros"]
        assert held > 0 and ledger[request_id] == [("capture", -cost)]  # money that moved only
        charged += cost
    for request_id, _ in refused:
        assert rows[request_id]["status"] == 429 and rows[request_id]["cost_micros"] == 0
        assert request_id not in ledger
    assert kit.balance_of(seed, user_id) == topped_up - charged >= 0
    assert kit.key_used(seed, key_id) == charged
    lowest = seed.rows("SELECT min(balance_after_micros) AS low FROM ledger WHERE user_id = ?", (user_id,))[0]["low"]
    assert lowest >= 0
    assert seed.rows("SELECT * FROM holds") == []
    kit.assert_invariants(seed)


def plugins_file(tmp_path) -> str:
    path = tmp_path / "plugins.toml"
    path.write_text("load = [" + ", ".join(f'"{name}"' for name in LOAD) + "]\n")
    return str(path)


def check_command(tmp_path, db_path: str, capsys) -> None:
    capsys.readouterr()
    status = main(["check", "--db", db_path, "--plugins", plugins_file(tmp_path), "--json"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert '"ok": true' in out


async def test_concurrent_requests_against_a_balance_that_covers_some(tmp_path, start_gateway, seed, world, upstream, relaygate_config, capsys):
    user_id, key_id, secret, topped_up = world
    gateway = start_gateway()
    results = await burst(gateway.url, secret)
    assert_charged_exactly_once(seed, results, upstream, user_id, key_id, topped_up)
    check_command(tmp_path, relaygate_config.db_path, capsys)


async def test_concurrent_requests_with_two_worker_processes(tmp_path, seed, world, upstream, relaygate_config, capsys):
    user_id, key_id, secret, topped_up = world
    with GatewayProcess(relaygate_config.db_path, plugins_file=plugins_file(tmp_path), workers=2) as gateway:
        results = await burst(gateway.url, secret)
    assert_charged_exactly_once(seed, results, upstream, user_id, key_id, topped_up)
    check_command(tmp_path, relaygate_config.db_path, capsys)
