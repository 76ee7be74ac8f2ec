"""After a crash: a gateway that starts releases the reservations of the killed
process at once (not after an hour), and never those of a process still serving;
another replica releases a dead one's once its lease runs out; a released
reservation leaves nothing counted in a budget."""

from __future__ import annotations

import asyncio
import time

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.cost import max_cost_micros
from gateway_core.billing.testing import MODEL
from gateway_core.store.limits import set_user_limits
from gateway_core.tally import estimate_tokens
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


async def test_a_crashed_processs_reservation_leaves_nothing_in_a_budget(tmp_path, seed, upstream, relaygate_config):
    """A daily budget with room for one reservation: the killed process held it; once the
    restarted gateway released it, the budget has the room again (nothing was left counted)."""
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=1000)
    body = orjson.dumps(BODY)
    reservation = max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(body)), max_output_tokens=100)
    seed._write(set_user_limits, user_id, {"daily_budget_micros": reservation})
    db = relaygate_config.db_path
    killed = GatewayProcess(db, plugins_file=plugins(tmp_path, "killed")).start()
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    try:
        async with aiohttp.ClientSession() as http:
            first = await http.post(killed.url + "/v1/chat/completions", data=body, headers=headers)
            await first.content.readline()  # the answer has begun: its reservation is open
            assert [h["amount_micros"] for h in seed.rows("SELECT amount_micros FROM holds")] == [reservation]
            refused = await http.post(killed.url + "/v1/chat/completions", data=body, headers=headers)
            assert refused.status == 429 and (await refused.json())["error"]["code"] == "budget_exceeded"  # the budget is held
            killed.kill()
            first.close()
            # its stream is still being answered when the block ends: a grace of one second
            # (not 30) bounds how long it runs on after SIGTERM
            grace = "shutdown_grace_seconds = 1\n"
            with GatewayProcess(db, plugins_file=plugins(tmp_path, "restarted", grace)) as restarted:
                assert seed.rows("SELECT request_id FROM holds") == []  # released at start
                again = await http.post(restarted.url + "/v1/chat/completions", data=body, headers=headers)
                assert again.status == 200  # the released reservation counts in no budget
                await again.content.readline()
                again.close()
    finally:
        killed.kill()
    kit.assert_invariants(seed)
