"""The Realtime API over WebSocket through the gateway, against the fake Realtime
upstream: the official SDK's realtime client (Authorization header) and a
browser-style client (the key in a subprotocol, aiohttp's ws client); the
channel's key upstream; each response billed exactly from its ``response.done``;
a client leaving mid-response (cancelled upstream, its usage still billed), an
upstream dropping mid-response (estimated), refusals, the frame limit, a balance
spent mid-session."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.config import Config
from gateway_openai.fake_realtime import ANSWER, FakeRealtime

MODEL, UPSTREAM_MODEL = "gpt-rt", "gpt-realtime-2026"
SAY = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hello, please."}]}


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), max_frame_bytes=64 * 1024)


@pytest.fixture
async def realtime(fake_upstream) -> FakeRealtime:
    return await fake_upstream(FakeRealtime())


@pytest.fixture
def world(seed, realtime):
    user_id = seed.user("alice", balance_usd=10)
    key_id, secret = seed.key(user_id)
    seed.channel("rt", type="openai", base_url=realtime.url + "/v1", models=[MODEL], model_map={MODEL: UPSTREAM_MODEL}, free_unpriced=False)
    seed.price(MODEL, kit.INPUT, kit.OUTPUT, cached_input_micros_per_mtok=kit.CACHED)
    return user_id, key_id, secret


@pytest.fixture
def gateway(start_gateway, world):
    return start_gateway()


def ws_url(gateway, model: str = MODEL) -> str:
    return gateway.url.replace("http://", "ws://") + f"/v1/realtime?model={model}"


def cost_of(usage: dict) -> int:
    return kit.expected_cost(usage["input_tokens"], usage["output_tokens"], usage["input_token_details"]["cached_tokens"])


async def rows_until(seed, count: int, timeout: float = 20.0) -> list[dict]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        rows = seed.rows("SELECT * FROM usage_logs WHERE endpoint = 'realtime' ORDER BY id")
        if len(rows) >= count or asyncio.get_running_loop().time() > deadline:
            return rows
        await asyncio.sleep(0.05)


async def test_sdk_session_two_responses_billed_exactly(gateway, world, realtime, seed):
    user_id, key_id, secret = world
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    transcripts, kinds = [], []
    async with client.realtime.connect(model=MODEL) as connection:
        await connection.session.update(session={"type": "realtime", "instructions": "Be brief."})
        for _ in range(2):
            await connection.conversation.item.create(item=SAY)
            await connection.response.create()
            async for event in connection:
                kinds.append(event.type)
                if event.type == "response.output_audio_transcript.delta":
                    transcripts.append(event.delta)
                if event.type == "response.done":
                    assert event.response.usage.input_tokens == realtime.usages[-1]["input_tokens"]  # passed on as it came
                    break
    assert kinds[0] == "session.created" and "session.updated" in kinds and kinds.count("response.done") == 2
    assert "".join(transcripts) == ANSWER * 2
    session = realtime.sessions[0]
    assert session["headers"]["Authorization"] == "Bearer sk-upstream-test"  # the channel's key, never the client's
    assert secret not in str(session["headers"]) and session["model"] == UPSTREAM_MODEL
    assert [e["type"] for e in session["received"]] == ["session.update", *["conversation.item.create", "response.create"] * 2]
    rows = await rows_until(seed, 3)
    billed, closing = rows[:2], rows[2]
    for row, usage in zip(billed, realtime.usages, strict=True):
        assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"], row["estimated"]) == (
            usage["input_tokens"], usage["output_tokens"], usage["input_token_details"]["cached_tokens"], 0)
        assert (row["cost_micros"], row["status"], row["end_reason"], row["model"], row["upstream_model"]) == (
            cost_of(usage), 200, "done", MODEL, UPSTREAM_MODEL)
        assert kit.ledger_of(seed, row["request_id"]) == [("capture", -cost_of(usage))]
    assert (closing["input_tokens"], closing["output_tokens"], closing["cost_micros"]) == (0, 0, 0)
    total = sum(cost_of(u) for u in realtime.usages)
    assert kit.balance_of(seed, user_id) == 10_000_000 - total
    assert kit.available_of(seed, user_id) == 10_000_000 - total  # no reservation left behind
    assert kit.key_used(seed, key_id) == total
    kit.assert_invariants(seed)


async def test_browser_style_key_in_a_subprotocol(gateway, world, realtime):
    secret = world[2]
    async with aiohttp.ClientSession() as http:
        protocols = ("realtime", f"openai-insecure-api-key.{secret}")
        async with http.ws_connect(ws_url(gateway), protocols=protocols) as ws:
            assert ws.protocol == "realtime"  # never the key's subprotocol
            first = orjson.loads((await ws.receive()).data)
            assert first["type"] == "session.created" and first["session"]["model"] == UPSTREAM_MODEL
            await ws.send_str(orjson.dumps({"type": "input_audio_buffer.append", "audio": "AAAA" * 50}).decode())
            await ws.send_str(orjson.dumps({"type": "response.create"}).decode())
            async for message in ws:
                if orjson.loads(message.data)["type"] == "response.done":
                    break
    assert realtime.sessions[0]["received"][0]["type"] == "input_audio_buffer.append"
    assert "openai-insecure-api-key" not in str(realtime.sessions[0]["headers"])


@pytest.mark.parametrize(
    "headers,query,code,status",
    [({"Authorization": "Bearer sk-wrong"}, f"model={MODEL}", "invalid_api_key", 1008),
     ({}, f"model={MODEL}", "missing_api_key", 1008),
     (None, "", None, 1008),
     (None, "model=unknown-model", "model_not_found", 1008)],
)  # fmt: skip
async def test_refusals_are_an_error_event_then_the_close(gateway, world, realtime, headers, query, code, status):
    async with aiohttp.ClientSession() as http:
        sent = headers if headers is not None else {"Authorization": f"Bearer {world[2]}"}
        async with http.ws_connect(gateway.url.replace("http://", "ws://") + "/v1/realtime?" + query, headers=sent) as ws:
            event = orjson.loads((await ws.receive()).data)
            assert event["type"] == "error" and (code is None or event["error"]["code"] == code)
            assert (await ws.receive()).type is aiohttp.WSMsgType.CLOSE and ws.close_code == status
    assert realtime.sessions == []


async def test_client_leaving_mid_response_still_bills_its_usage(gateway, world, realtime, seed):
    realtime.hold = True
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {world[2]}"}) as ws:
            await ws.receive()  # session.created
            await ws.send_str(orjson.dumps({"type": "conversation.item.create", "item": SAY}).decode())
            await ws.send_str(orjson.dumps({"type": "response.create"}).decode())
            async for message in ws:
                if orjson.loads(message.data)["type"] == "response.output_audio_transcript.delta":
                    break
        # closed here, mid-response
    rows = await rows_until(seed, 1)
    assert realtime.cancels == 1 and len(realtime.usages) == 1
    usage = realtime.usages[0]
    row = rows[0]
    assert (row["input_tokens"], row["output_tokens"], row["estimated"], row["cost_micros"]) == (
        usage["input_tokens"], usage["output_tokens"], 0, cost_of(usage))
    assert len(rows) == 1  # no reservation opened after the client left
    assert kit.available_of(seed, world[0]) == kit.balance_of(seed, world[0]) == 10_000_000 - cost_of(usage)
    kit.assert_invariants(seed)


async def test_upstream_dropping_mid_response_ends_the_session_and_estimates(gateway, world, realtime, seed):
    realtime.drop_mid_response = True
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {world[2]}"}) as ws:
            await ws.receive()
            await ws.send_str(orjson.dumps({"type": "conversation.item.create", "item": SAY}).decode())
            await ws.send_str(orjson.dumps({"type": "response.create"}).decode())
            events = []
            async for message in ws:
                events.append(orjson.loads(message.data))
            assert events[-1]["type"] == "error" and ws.close_code == 1011
    rows = await rows_until(seed, 1)
    row = rows[-1]
    assert (row["status"], row["end_reason"], row["estimated"]) == (502, "upstream_error", 1)
    assert row["output_tokens"] > 0 and row["cost_micros"] > 0
    kit.assert_invariants(seed)


async def test_a_message_over_the_frame_limit_closes_the_session(gateway, world, realtime):
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {world[2]}"}) as ws:
            await ws.receive()
            await ws.send_str(orjson.dumps({"type": "input_audio_buffer.append", "audio": "A" * 70_000}).decode())
            event = orjson.loads((await ws.receive()).data)
            assert event["type"] == "error"
            assert (await ws.receive()).type is aiohttp.WSMsgType.CLOSE and ws.close_code == 1009
    await asyncio.sleep(0.2)
    assert all(e["type"] != "input_audio_buffer.append" for s in realtime.sessions for e in s["received"])


async def test_a_spent_balance_ends_the_session_after_the_response(gateway, world, realtime, seed):
    user_id = world[0]
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {world[2]}"}) as ws:
            await ws.receive()
            seed.rows("UPDATE users SET balance_micros = 1 WHERE id = ? RETURNING id", (user_id,))  # spent elsewhere
            await ws.send_str(orjson.dumps({"type": "response.create"}).decode())
            events = [orjson.loads(m.data) async for m in ws]
            kinds = [e["type"] for e in events]
            assert kinds.index("response.done") < kinds.index("error")
            assert events[-1]["error"]["code"] == "insufficient_quota" and ws.close_code == 1008
    rows = await rows_until(seed, 2)
    assert rows[0]["output_tokens"] == realtime.usages[0]["output_tokens"] and rows[0]["estimated"] == 0
    assert rows[1]["error_type"] is not None and rows[1]["cost_micros"] == 0
