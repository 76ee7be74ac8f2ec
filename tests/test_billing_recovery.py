"""After a crash: a gateway that starts releases the reservations of the killed
process at once (not after an hour), and never those of a process still serving;
another replica releases a dead one's once its lease runs out."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import FakeOpenAI

BODY = {"model": MODEL, "stream": True, "max_tokens": 100, "messages": [{"role": "user", "content": " ".join(["w"] * 40)}]}


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "demo"))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI(chunk_delay=0.5))  # 20 seconds of answer


def plugins(tmp_path, name: str, gateway: str = "") -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text('load = ["openai", "demo"]\n[gateway]\n' + gateway)
    return str(path)


async def open_stream(http: aiohttp.ClientSession, gateway: GatewayProcess, secret: str) -> aiohttp.ClientResponse:
    response = await http.post(gateway.url + "/v1/chat/completions", json=BODY, headers={"Authorization": f"Bearer {secret}"})
    await response.content.readline()  # the answer has begun: its reservation is open
    return response


async def wait_for(condition, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


async def test_a_restarted_gateway_releases_the_killed_processs_holds_and_no_others(tmp_path, seed, upstream, relaygate_config):
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=1000)
    db = relaygate_config.db_path
    alive = GatewayProcess(db, plugins_file=plugins(tmp_path, "alive")).start()
    killed = GatewayProcess(db, plugins_file=plugins(tmp_path, "killed")).start()
    try:
        async with aiohttp.ClientSession() as http:
            streams = [await open_stream(http, alive, secret), await open_stream(http, killed, secret)]
            holds = seed.rows("SELECT request_id, owner, amount_micros FROM holds ORDER BY request_id")
            assert len(holds) == 2 and len({h["owner"] for h in holds}) == 2
            killed.kill()  # SIGKILL: its reservation stays open
            kept = [h for h in holds if h["request_id"] == streams[0].headers["x-request-id"]]
            with GatewayProcess(db, plugins_file=plugins(tmp_path, "restarted")):  # stale_hold_seconds stays the default
                # started: the killed process's hold is released, the live one's is not
                assert seed.rows("SELECT request_id, owner, amount_micros FROM holds") == kept
            assert kit.balance_of(seed, user_id) == 1000_000_000  # no money moved
            assert kit.available_of(seed, user_id) == 1000_000_000 - kept[0]["amount_micros"]  # only the live hold is reserved
            for stream in streams:
                stream.close()
    finally:
        alive.kill()
        killed.kill()
    kit.assert_invariants(seed)


async def test_another_replica_releases_a_dead_replicas_holds_when_its_lease_runs_out(tmp_path, seed, upstream, relaygate_config):
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=1000)
    db = relaygate_config.db_path
    lease = "hold_lease_seconds = 1\n"
    first = GatewayProcess(db, plugins_file=plugins(tmp_path, "r1", lease + 'replica = "r1"\n')).start()
    try:
        async with aiohttp.ClientSession() as http:
            stream = await open_stream(http, first, secret)
            first.kill()
            stream.close()
        assert len(seed.rows("SELECT * FROM holds")) == 1
        with GatewayProcess(db, plugins_file=plugins(tmp_path, "r2", lease + 'replica = "r2"\n')):
            # another replica cannot tell whether r1's process runs: it waits for the lease
            await wait_for(lambda: not seed.rows("SELECT * FROM holds"), timeout=5)
    finally:
        first.kill()
    assert kit.available_of(seed, user_id) == kit.balance_of(seed, user_id) == 1000_000_000
    kit.assert_invariants(seed)
