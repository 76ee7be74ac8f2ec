"""A gateway process killed with SIGKILL in the middle of a load run: every request
that completed for its client is charged and logged, the money invariants hold,
and a restarted gateway releases the reservations the dead process left open."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import FakeOpenAI

LOAD = ("openai", "demo")
CHAT = [{"role": "user", "content": "alpha beta gamma delta epsilon"}]
CLIENTS = 24


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    """The test runs on SQLite and on PostgreSQL (a database of its own)."""
    return kit.config(tmp_path, LOAD, db=db_url)


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI(chunk_delay=0.01))


def plugins_file(tmp_path, extra: str = "") -> str:
    path = tmp_path / "plugins.toml"
    path.write_text("load = [" + ", ".join(f'"{name}"' for name in LOAD) + "]\n" + extra)
    return str(path)


async def complete_one(http: aiohttp.ClientSession, url: str, secret: str, stream: bool) -> str | None:
    """The request id when the answer reached its end for the client, else None."""
    body = {"model": MODEL, "messages": CHAT, "max_tokens": 30, "stream": stream}
    async with http.post(url, data=orjson.dumps(body), headers={"Authorization": f"Bearer {secret}"}) as response:
        request_id = response.headers.get("x-request-id")
        data = await response.read()
    if response.status != 200:
        return None
    if stream:
        return request_id if data.rstrip().endswith(b"data: [DONE]") else None
    return request_id if orjson.loads(data)["choices"][0]["message"]["content"] else None


async def client_loop(url: str, secret: str, worker: int, completed: list[str]) -> None:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
        n = 0
        while True:
            try:
                request_id = await complete_one(http, url, secret, stream=(worker + n) % 2 == 0)
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
                return  # the gateway is gone (or the answer was cut short)
            if request_id is not None:
                completed.append(request_id)
            n += 1


async def test_sigkill_during_load_loses_no_charge_of_a_completed_request(tmp_path, seed, upstream, relaygate_config):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    completed: list[str] = []
    gateway = GatewayProcess(relaygate_config.db_path, plugins_file=plugins_file(tmp_path)).start()
    try:
        url = gateway.url + "/v1/chat/completions"
        clients = [asyncio.ensure_future(client_loop(url, secret, n, completed)) for n in range(CLIENTS)]
        deadline = time.monotonic() + 10
        while len(completed) < 60 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        gateway.kill()  # SIGKILL, mid-load: requests and streams are in flight
        await asyncio.wait_for(asyncio.gather(*clients), timeout=15)
    finally:
        gateway.kill()
    assert len(completed) >= 60

    # every request that completed for its client is logged and charged, exactly once
    for request_id in completed:
        row = kit.usage_row(seed, request_id)
        cost = kit.expected_cost(row["input_tokens"], row["output_tokens"])
        assert (row["status"], row["end_reason"], row["cost_micros"]) == (200, "done", cost) and cost > 0
        assert row["held_micros"] > 0 and kit.ledger_of(seed, request_id) == [("capture", -cost)]
    kit.assert_invariants(seed)  # reservations of the killed requests are still open, and consistent

    charged = sum(r["cost_micros"] for r in seed.rows("SELECT cost_micros FROM usage_logs"))
    open_holds = seed.rows("SELECT coalesce(sum(amount_micros), 0) AS held FROM holds")[0]["held"]
    assert kit.available_of(seed, user_id) == 10_000_000 - charged - open_holds

    # a restarted gateway serves again and releases what the dead process left reserved
    time.sleep(1.1)  # older than stale_hold_seconds below
    extra = "[gateway]\nstale_hold_seconds = 1\n"
    with GatewayProcess(relaygate_config.db_path, plugins_file=plugins_file(tmp_path, extra)) as restarted:
        async with aiohttp.ClientSession() as http:
            assert await complete_one(http, restarted.url + "/v1/chat/completions", secret, stream=True)
        deadline = time.monotonic() + 5
        while seed.rows("SELECT * FROM holds") and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
    assert seed.rows("SELECT * FROM holds") == []
    kit.assert_invariants(seed)
    charged = sum(r["cost_micros"] for r in seed.rows("SELECT cost_micros FROM usage_logs"))
    assert kit.balance_of(seed, user_id) == 10_000_000 - charged
    assert kit.key_used(seed, key_id) == charged
