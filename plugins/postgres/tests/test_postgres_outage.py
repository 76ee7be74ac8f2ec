"""The gateway on PostgreSQL when the database goes away, end to end: requests
that need it get a 503 in their own protocol's shape naming the store, within
the configured timeout; the gateway recovers by itself when the server is back;
and connections killed with ``pg_terminate_backend`` under load lose or double
no money (``relaygate check`` stays clean)."""

from __future__ import annotations

import asyncio
import time

import anthropic
import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.commands.cli import main
from relaygate_postgres.store import PostgresStore

from .conftest import TcpProxy
from .test_postgres_gateway import BALANCE, CHAT, World, client, row_of, upstream, world  # noqa: F401 (fixtures)

TIMEOUT = 1.0


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "anthropic"))


async def test_a_database_gone_while_serving_is_a_503_in_each_protocol_then_recovers(world: World, pg_url, proxy: TcpProxy, start_gateway):
    # started from a thread: this test's loop must keep serving the proxy meanwhile
    gateway = await asyncio.to_thread(start_gateway, store=PostgresStore(proxy.url(pg_url), max_size=4, timeout=TIMEOUT))
    api = client(gateway, world.secret)
    claude = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=world.secret, max_retries=0)
    before = await api.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=20)
    assert before.choices[0].message.content

    await proxy.cut()
    await asyncio.sleep(1.1)  # past the key cache's second: the key must be read from the store
    began = time.monotonic()
    with pytest.raises(openai.APIStatusError) as down:
        await api.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=20)
    assert time.monotonic() - began < TIMEOUT + 1.5
    assert down.value.status_code == 503 and down.value.code == "store_unavailable"
    assert f"PostgreSQL at 127.0.0.1:{proxy.port}/relaygate_test_" in down.value.message
    with pytest.raises(anthropic.APIStatusError) as down_too:  # the Anthropic client gets its own shape
        await claude.messages.create(model=MODEL, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert down_too.value.status_code == 503 and down_too.value.body["type"] == "error"
    assert "PostgreSQL at 127.0.0.1" in down_too.value.body["error"]["message"]

    await proxy.start()  # the server is back on the same address
    for _ in range(50):
        try:
            after = await api.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20)
            break
        except openai.APIStatusError:
            await asyncio.sleep(0.1)
    else:
        raise AssertionError("the gateway did not recover")
    row = await row_of(world.seed, after.headers["x-request-id"])
    assert row["status"] == 200 and row["cost_micros"] > 0
    await api.close()
    await claude.close()
    await asyncio.to_thread(gateway.stop)
    charged = await world.seed.value("SELECT coalesce(sum(cost_micros), 0) FROM usage_logs WHERE status = 200")
    assert await world.seed.balance(world.user_id) == BALANCE - charged  # nothing lost or doubled across the outage
    assert await world.seed.problems() == []


async def test_backends_killed_under_load_lose_and_double_nothing(world: World, pg_url, start_gateway, capsys):
    seed = world.seed
    gateway = start_gateway(store=PostgresStore(pg_url, max_size=6, timeout=5.0))
    done = asyncio.Event()
    outcomes: list[tuple[int, str]] = []

    async def load(n: int) -> None:
        async with client(gateway, world.secret) as api:
            while not done.is_set():
                try:
                    raw = await api.chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=20)
                    outcomes.append((raw.status_code, raw.headers["x-request-id"]))
                except openai.APIStatusError as error:
                    outcomes.append((error.status_code, error.response.headers.get("x-request-id", "")))

    clients = [asyncio.ensure_future(load(n)) for n in range(16)]
    killed = 0
    for _ in range(8):
        await asyncio.sleep(0.3)
        killed += await seed.value(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = 'relaygate' AND datname = current_database()"
        )
    done.set()
    await asyncio.gather(*clients)
    gateway.stop()
    assert killed >= 8
    answered = [request_id for status, request_id in outcomes if status == 200]
    assert len(answered) >= 50, len(outcomes)
    for request_id in answered:  # every answered request is logged and charged exactly once
        row = await row_of(seed, request_id)
        assert row["cost_micros"] > 0 and await seed.ledger(request_id) == [("capture", -row["cost_micros"])]
    assert {status for status, _ in outcomes} <= {200, 503}
    assert await seed.problems() == []
    status = await asyncio.to_thread(main, ["check", "--db", pg_url])
    assert status == 0, capsys.readouterr().out
