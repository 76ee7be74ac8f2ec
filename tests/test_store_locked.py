"""A SQLite database whose write lock another process holds longer than the busy
timeout (``[gateway] db_timeout``): requests that must write answer 503 in the
caller's shape with ``Retry-After`` (the SDKs retry it), never 500, and the cause
is logged; once the lock is gone, requests pass again."""

from __future__ import annotations

import asyncio
import sqlite3

import anthropic
import attrs
import openai
import pytest

from gateway_openai.fake_upstream import FakeOpenAI


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def gateway(seed, start_gateway, relaygate_config, upstream):
    user = seed.user("alice", balance_usd=10)
    _, key = seed.key(user)
    seed.channel("oai", type="openai", base_url=upstream.url + "/v1", models=["priced"])
    seed.price("priced", 1_000_000, 2_000_000)
    return start_gateway(attrs.evolve(relaygate_config, db_timeout=0.3, locked_retry_seconds=3)), key


async def test_a_write_lock_held_by_another_process_is_a_503_in_the_callers_shape(gateway, relaygate_config, capsys):
    server, key = gateway
    chat = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)
    claude = anthropic.AsyncAnthropic(base_url=server.url, api_key=key, max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    await chat.chat.completions.create(model="priced", messages=messages)  # warm: keys and prices cached
    holder = sqlite3.connect(relaygate_config.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process's write lock
    try:
        with pytest.raises(openai.APIStatusError) as refused:
            await chat.chat.completions.create(model="priced", messages=messages)
        assert refused.value.status_code == 503
        assert refused.value.response.headers["retry-after"] == "1"
        assert refused.value.body["code"] == "store_unavailable" and "locked by another process" in refused.value.body["message"]
        with pytest.raises(anthropic.APIStatusError) as refused_too:
            await claude.messages.create(model="priced", max_tokens=10, messages=messages)
        assert refused_too.value.status_code == 503 and refused_too.value.body["type"] == "error"
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    answer = await chat.chat.completions.create(model="priced", messages=messages)
    assert answer.choices[0].message.content
    assert "store.locked" in capsys.readouterr().out


async def test_a_lock_taken_while_a_request_runs_delays_its_settlement_and_loses_nothing(gateway, relaygate_config, upstream, seed, capsys):
    """The request was admitted (its hold written) before the lock: its settlement,
    refused past the busy timeout with nothing written, is sent again until the lock
    is gone — the client gets its answer and the charge and usage row are kept."""
    from gateway_core.testing import Fault

    server, key = gateway
    chat = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=key, max_retries=0)
    messages = [{"role": "user", "content": "hi"}]
    await chat.chat.completions.create(model="priced", messages=messages)  # warm: keys and prices cached
    before = seed.rows("SELECT COUNT(*) AS n FROM usage_logs")[0]["n"]
    upstream.fail_next(Fault(first_byte_delay=0.5))
    pending = asyncio.ensure_future(chat.chat.completions.create(model="priced", messages=messages))
    deadline = asyncio.get_running_loop().time() + 10
    # admitted, and its hold written (the write may go beside the upstream call: reservation.py)
    while upstream.requests_in_flight == 0 or seed.rows("SELECT COUNT(*) AS n FROM holds")[0]["n"] == 0:
        assert asyncio.get_running_loop().time() < deadline
        await asyncio.sleep(0.01)
    holder = sqlite3.connect(relaygate_config.db_path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # held past the busy timeout (0.3 s) twice over
    try:
        await asyncio.sleep(1.5)
        assert not pending.done()  # the settlement waits for the lock
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    answer = await asyncio.wait_for(pending, 15)
    assert answer.choices[0].message.content
    rows = seed.rows("SELECT status, cost_micros FROM usage_logs ORDER BY id")
    assert len(rows) == before + 1 and rows[-1]["status"] == 200 and rows[-1]["cost_micros"] > 0
    assert seed.rows("SELECT COUNT(*) AS n FROM holds")[0]["n"] == 0  # settled, not left to the sweeper
    charged = sum(row["cost_micros"] for row in rows)
    assert seed.rows("SELECT balance_micros FROM users WHERE name = 'alice'") == [{"balance_micros": 10_000_000 - charged}]
    assert "store.locked_retry" in capsys.readouterr().out
