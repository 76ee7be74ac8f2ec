"""A stream the shutdown's grace period cuts: charged what it delivered, logged as
``shutdown`` (not as a client that went away), and ended with the protocol's error
event, so the client knows its answer is incomplete."""

from __future__ import annotations

import asyncio
import os
import signal

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_core.tally import estimate_tokens
from gateway_core.testing import GatewayProcess
from gateway_openai.fake_upstream import FakeOpenAI

LOAD = ("openai", "demo")


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, LOAD)


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI(chunk_delay=0.2))


@pytest.mark.parametrize("server", ["hypercorn", "uvicorn"])  # the same cut on each server `serve` offers
async def test_a_stream_cut_by_the_shutdown_is_billed_logged_as_shutdown_and_ends_with_an_error(tmp_path, seed, upstream, relaygate_config, server):
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = ["openai", "demo"]\n[gateway]\nshutdown_grace_seconds = 1\n')
    gateway = GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins), args=["--server", server]).start()
    assert gateway.process is not None
    words = " ".join(f"w{n:02d}" for n in range(60))  # 12 seconds of answer
    body = {"model": MODEL, "stream": True, "max_tokens": 300, "messages": [{"role": "user", "content": words}]}
    received, error, signalled = "", None, False
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}) as response:
                request_id = response.headers["x-request-id"]
                async for line in response.content:
                    if not line.startswith(b"data: {"):
                        continue
                    chunk = orjson.loads(line[6:])
                    if "error" in chunk:
                        error = chunk["error"]
                        continue
                    received += "".join(c["delta"].get("content") or "" for c in chunk["choices"])
                    if len(received) > 10 and not signalled:
                        os.killpg(gateway.process.pid, signal.SIGTERM)  # a shutdown with a 1-second grace
                        signalled = True
        assert await asyncio.get_running_loop().run_in_executor(None, gateway.process.wait, 20) == 0
        assert signalled
    finally:
        gateway.kill()
    assert error is not None and "shutting down" in error["message"]
    row = kit.usage_row(seed, request_id)
    assert (row["end_reason"], row["estimated"]) == ("shutdown", 1)
    assert estimate_tokens(len(received)) <= row["output_tokens"] < estimate_tokens(len("echo: " + words))
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"]) > 0
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    assert seed.rows("SELECT * FROM holds") == []
    kit.assert_invariants(seed)


def test_a_clean_sigterm_stop_ends_the_lease_so_the_next_start_does_not_warn(tmp_path, seed, relaygate_config):
    """A stopped worker ends its hold owner's lease; only a killed one is found gone."""
    plugins = tmp_path / "plugins.toml"
    plugins.write_text('load = ["openai", "demo"]\n')
    first = GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins)).start()
    try:
        assert first.terminate() == 0
    finally:
        first.kill()
    assert seed.rows("SELECT * FROM hold_owners") == []  # its lease ended: forgotten at once (it holds nothing)
    second = GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins)).start()
    try:
        assert "hold_owners_gone" not in second.output()
    finally:
        second.kill()  # a crash: the next start finds it gone
    with GatewayProcess(relaygate_config.db_path, plugins_file=str(plugins)) as third:
        assert "billing.hold_owners_gone" in third.output()
