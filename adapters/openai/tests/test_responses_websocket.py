"""The Responses API over a WebSocket (``GET /v1/responses`` upgraded, Codex's
transport) on real loopback: ``response.create`` messages one after another on one
connection, on an OpenAI channel that speaks Responses and on Anthropic and Gemini
channels (converted); each response billed exactly as its HTTP twin; ``previous_response_id``
across messages with ``store: false`` (Codex's way, its ``generate: false`` warm-up
included); the key refused before the upgrade; errors as ``error`` messages with
the connection still usable; an upstream broken mid-stream; a client leaving
mid-response (the upstream cancelled, what was delivered billed); limits and closes;
the official SDK's ``beta.responses.connect``."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import openai
import orjson
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_core.billing import testing as kit
from gateway_core.config import Config
from gateway_gemini.fake_upstream import EXPECTED_KEY as GEMINI_KEY
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI, Fault

GPT, CLAUDE, GEMINI, SECRET_MODEL = "gpt-ws", "claude-ws", "gemini-ws", "gpt-team-only"
BETA = {"OpenAI-Beta": "responses_websockets=2026-02-06"}
IDLE = 3.0  # seconds with no response running or asked for before the gateway closes


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), max_frame_bytes=256 * 1024, websocket_idle_timeout=IDLE)


@pytest.fixture
async def claude(fake_upstream) -> FakeAnthropic:
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
async def gemini(fake_upstream) -> FakeGemini:
    return await fake_upstream(FakeGemini())


@pytest.fixture
def world(seed, upstream, claude, gemini):
    seed.channel("native", type="openai", base_url=upstream.url, models=[GPT], settings={"responses": True}, free_unpriced=False)
    seed.channel("claude", type="anthropic", base_url=claude.url, models=[CLAUDE], api_keys=(ANTHROPIC_KEY,), free_unpriced=False)
    seed.channel("gemini", type="gemini", base_url=gemini.url + "/v1beta", models=[GEMINI], api_keys=(GEMINI_KEY,), free_unpriced=False)
    seed.channel("team", type="openai", base_url=upstream.url, models=[SECRET_MODEL], groups=("team",), settings={"responses": True})
    for model in (GPT, CLAUDE, GEMINI):
        seed.price(model, kit.INPUT, kit.OUTPUT, cached_input_micros_per_mtok=kit.CACHED)
    user_id = seed.user("alice", balance_usd=10)
    key_id, secret = seed.key(user_id)
    return user_id, key_id, secret


@pytest.fixture
def gateway(start_gateway, world):
    return start_gateway()


def ws_url(gateway) -> str:
    return gateway.url.replace("http://", "ws://") + "/v1/responses"


def create(model: str, text: str, **fields: Any) -> dict[str, Any]:
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    return {"type": "response.create", "model": model, "store": False, "input": [user], **fields}


async def until_done(ws: aiohttp.ClientWebSocketResponse) -> list[dict[str, Any]]:
    """The messages of one response, up to its last (completed, failed, or an error)."""
    events = []
    while True:
        message = await asyncio.wait_for(ws.receive(), 20)
        assert message.type == aiohttp.WSMsgType.TEXT, message
        event = orjson.loads(message.data)
        events.append(event)
        kind = event.get("type")  # (an upstream's own error frame may have none: passed on as it came)
        if kind in ("response.completed", "response.incomplete", "response.failed", "error") and not (
            kind == "error" and "status" not in event  # a stream's error event: response.failed follows
        ):
            return events


async def rows_until(seed, count: int, timeout: float = 20.0) -> list[dict[str, Any]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        rows = seed.rows("SELECT * FROM usage_logs WHERE endpoint = 'responses' ORDER BY id")
        if len(rows) >= count or asyncio.get_running_loop().time() > deadline:
            return rows
        await asyncio.sleep(0.05)


def assert_billed_exactly(seed, rows: list[dict[str, Any]], user_id: int, finals: list[dict[str, Any]]) -> None:
    assert [r["status"] for r in rows] == [200] * len(finals)
    spent = 0
    for row, final in zip(rows, finals, strict=True):
        usage = final["response"]["usage"]
        cost = kit.expected_cost(usage["input_tokens"], usage["output_tokens"], usage["input_tokens_details"]["cached_tokens"])
        assert (row["input_tokens"], row["output_tokens"], row["cost_micros"]) == (usage["input_tokens"], usage["output_tokens"], cost)
        assert kit.ledger_of(seed, row["request_id"]) == [("capture", -cost)]
        spent += cost
    assert kit.balance_of(seed, user_id) == 10_000_000 - spent


@pytest.mark.parametrize("model", [GPT, CLAUDE, GEMINI])
async def test_two_responses_on_one_connection_each_billed_exactly(gateway, world, seed, upstream, claude, gemini, model):
    user_id, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}", **BETA}) as ws:
            await ws.send_str(orjson.dumps(create(model, "my name is Ada")).decode())
            first = await until_done(ws)
            kinds = [e["type"] for e in first]
            assert kinds[0] == "response.created" and kinds[-1] == "response.completed", kinds
            assert "response.output_item.done" in kinds and "response.output_text.delta" in kinds
            text = first[-1]["response"]["output"][0]["content"][0]["text"]
            assert "my name is Ada" in text
            # the next turn names the last one and sends only what is new (Codex's incremental request)
            await ws.send_str(orjson.dumps(create(model, "what is my name?", previous_response_id=first[-1]["response"]["id"])).decode())
            second = await until_done(ws)
            assert second[-1]["type"] == "response.completed"
            assert "what is my name?" in second[-1]["response"]["output"][0]["content"][0]["text"]
    if model == GPT:
        body = upstream.requests[-1]["body"]
        assert "previous_response_id" not in body and body["stream"] is True and body["store"] is False and "type" not in body
        assert [item.get("role") for item in body["input"]] == ["user", "assistant", "user"]
    elif model == CLAUDE:
        messages = claude.requests[-1]["body"]["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    else:
        contents = gemini.requests[-1]["body"]["contents"]
        assert [c["role"] for c in contents] == ["user", "model", "user"]
    rows = await rows_until(seed, 2)
    assert_billed_exactly(seed, rows, user_id, [first[-1], second[-1]])
    assert rows[0]["request_id"] != rows[1]["request_id"]


async def test_a_message_sent_while_one_runs_waits_its_turn(gateway, world, upstream):
    upstream.chunk_delay = 0.02
    _, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str(orjson.dumps(create(GPT, "first")).decode())
            await ws.send_str(orjson.dumps(create(GPT, "second")).decode())
            first, second = await until_done(ws), await until_done(ws)
    assert "first" in first[-1]["response"]["output"][0]["content"][0]["text"]
    assert "second" in second[-1]["response"]["output"][0]["content"][0]["text"]
    assert upstream.most_in_flight == 1


async def test_codex_warm_up_then_a_turn_building_on_it(gateway, world, seed, upstream):
    _, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str(orjson.dumps(create(GPT, "hello there", generate=False)).decode())
            warm = await until_done(ws)
            assert [e["type"] for e in warm] == ["response.created", "response.completed"]
            assert warm[-1]["response"]["output"] == [] and not upstream.requests
            await ws.send_str(orjson.dumps({**create(GPT, "x"), "input": [], "previous_response_id": warm[-1]["response"]["id"]}).decode())
            turn = await until_done(ws)
    assert turn[-1]["type"] == "response.completed"
    assert "hello there" in turn[-1]["response"]["output"][0]["content"][0]["text"]
    rows = await rows_until(seed, 2)
    assert [(r["status"], r["cost_micros"]) for r in rows][0] == (200, 0)


async def test_generate_false_over_http_is_answered_without_a_model_call(gateway, world, seed, upstream):
    _, _, secret = world
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    warm = await client.responses.create(model=GPT, input="prepare only", store=False, extra_body={"generate": False})
    assert warm.status == "completed" and warm.output == [] and warm.usage is not None and warm.usage.total_tokens == 0
    assert not upstream.requests and [r["cost_micros"] for r in await rows_until(seed, 1)] == [0]


async def test_a_wrong_key_is_refused_before_the_upgrade(gateway, world, seed):
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(ws_url(gateway), headers={"Authorization": "Bearer sk-wrong"})
        assert refused.value.status == 401
        headers = {"Authorization": "Bearer sk-wrong", "Connection": "Upgrade", "Upgrade": "websocket",
                   "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}  # fmt: skip
        async with http.get(gateway.url + "/v1/responses", headers=headers) as answer:
            body = await answer.json()
            assert answer.status == 401 and answer.headers["x-request-id"]
            assert body["error"]["code"] == "invalid_api_key"
    rows = seed.rows("SELECT status FROM usage_logs")
    assert [r["status"] for r in rows] == [401, 401]


async def test_a_key_refused_from_this_address_gets_403_before_the_upgrade(gateway, world, seed):
    user_id, _, _ = world
    _, fenced = seed.key(user_id, name="fenced", allow_ips=("10.9.0.0/16",))
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {fenced}"})
    assert refused.value.status == 403
    assert seed.rows("SELECT status FROM usage_logs")[-1]["status"] == 403


async def test_a_model_the_key_may_not_use_is_refused_in_band_as_over_http(gateway, world, seed):
    _, _, secret = world
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    with pytest.raises(openai.APIStatusError) as over_http:
        await client.responses.create(model=SECRET_MODEL, input="hi", stream=True)
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str(orjson.dumps(create(SECRET_MODEL, "hi")).decode())
            refused = await until_done(ws)
            assert [e["type"] for e in refused] == ["error"]
            assert refused[0]["status"] == over_http.value.status_code
            assert refused[0]["error"]["code"] == over_http.value.body["code"]
            await ws.send_str(orjson.dumps(create(GPT, "still here")).decode())  # the connection stays usable
            assert (await until_done(ws))[-1]["type"] == "response.completed"


async def test_bad_messages_are_answered_with_errors_and_the_connection_stays(gateway, world):
    _, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str("{not json")
            assert (await until_done(ws))[0]["status"] == 400
            await ws.send_str(orjson.dumps({"type": "response.cancel"}).decode())
            assert (await until_done(ws))[0]["error"]["code"] == "unsupported_event_type"
            await ws.send_str(orjson.dumps({"type": "response.processed", "response_id": "resp_x"}).decode())  # Codex's ack: no answer
            await ws.send_str(orjson.dumps(create(GPT, "fine", stream_id="lane-1")).decode())
            done = await until_done(ws)
            assert done[-1]["type"] == "response.completed" and {e.get("stream_id") for e in done} == {"lane-1"}


@pytest.mark.parametrize("fault", [Fault(drop_after=4), Fault(error_after=4)], ids=["dropped", "error-event"])
async def test_an_upstream_broken_mid_stream_fails_the_response_and_the_next_works(gateway, world, seed, upstream, fault):
    user_id, _, secret = world
    upstream.fail_next(fault)
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str(orjson.dumps(create(GPT, "one two three four five")).decode())
            broken = await until_done(ws)
            kinds = [e.get("type") for e in broken]
            assert kinds[0] == "response.created" and kinds[-2:] == ["error", "response.failed"], kinds
            await ws.send_str(orjson.dumps(create(GPT, "again")).decode())
            assert (await until_done(ws))[-1]["type"] == "response.completed"
    rows = await rows_until(seed, 2)
    assert [(r["status"], r["end_reason"]) for r in rows] == [(200, "upstream_error"), (200, "done")]


async def test_a_client_leaving_mid_response_cancels_the_upstream_and_is_billed(gateway, world, seed, upstream):
    user_id, _, secret = world
    upstream.chunk_delay = 0.2
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"})
        await ws.send_str(orjson.dumps(create(GPT, "a long answer of many words to come")).decode())
        while orjson.loads((await ws.receive()).data)["type"] != "response.output_text.delta":
            pass
        await ws.close()
        assert ws.close_code == 1000
    rows = await rows_until(seed, 1)
    for _ in range(100):
        if upstream.cancelled:
            break
        await asyncio.sleep(0.05)
    assert upstream.cancelled == 1
    assert [(r["status"], r["end_reason"]) for r in rows] == [(499, "client_gone")]
    assert rows[0]["cost_micros"] > 0 and kit.balance_of(seed, user_id) == 10_000_000 - rows[0]["cost_micros"]


async def test_a_message_over_the_limit_closes_with_1009(gateway, world):
    _, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}, max_msg_size=0) as ws:
            await ws.send_str(orjson.dumps(create(GPT, "x" * 300 * 1024)).decode())
            error = orjson.loads((await ws.receive()).data)
            assert error["type"] == "error" and error["status"] == 413
            assert (await ws.receive()).type == aiohttp.WSMsgType.CLOSE and ws.close_code == 1009


async def test_an_idle_connection_is_closed_cleanly(gateway, world):
    _, _, secret = world
    async with aiohttp.ClientSession() as http:
        async with http.ws_connect(ws_url(gateway), headers={"Authorization": f"Bearer {secret}"}) as ws:
            await ws.send_str(orjson.dumps(create(GPT, "then silence")).decode())
            await until_done(ws)
            started = asyncio.get_running_loop().time()
            closed = await ws.receive(timeout=IDLE * 5)
            waited = asyncio.get_running_loop().time() - started
    assert closed.type == aiohttp.WSMsgType.CLOSE and ws.close_code == 1000 and IDLE - 0.5 <= waited, (closed, waited)


async def test_the_official_sdk_responses_connection(gateway, world):
    _, _, secret = world
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)
    async with client.beta.responses.connect() as connection:
        await connection.response.create(model=GPT, input="hello sdk", store=False)
        kinds = []
        async for event in connection:
            kinds.append(event.type)
            if event.type == "response.completed":
                assert "hello sdk" in event.response.output[0].content[0].text
                break
    assert kinds[0] == "response.created" and "response.output_text.delta" in kinds
