"""Billing over real HTTP with the openai SDK: exact amounts for known usage,
the group ratio, cached tokens, refusals before any upstream call, and what
errors, broken streams and clients that hang up are charged; the reservation
capped by each protocol's own output field (OpenAI, Anthropic, Gemini)."""

from __future__ import annotations

import asyncio

import aiohttp
import openai
import orjson
import pytest
from aiohttp import web

from gateway_core.billing import testing as kit
from gateway_core.billing.cost import max_cost_micros
from gateway_core.billing.testing import FREE_MODEL, MODEL, UNPRICED_MODEL
from gateway_core.channel_type import Timeouts
from gateway_core.config import ConfigError, config_from_mapping
from gateway_core.tally import estimate_tokens
from gateway_core.testing import FakeUpstream
from gateway_openai.fake_upstream import Fault, FakeOpenAI, echo_text, usage_for

LOAD = ("openai", "demo")
CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def relaygate_config(tmp_path, db_url):
    """Each test runs on SQLite and on PostgreSQL (a database of its own)."""
    return kit.config(tmp_path, LOAD, db=db_url, timeouts=Timeouts(connect=2, first_byte=0.5, idle=0.5))


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def world(seed, upstream):
    return kit.seed_world(seed, channel_type="openai", base_url=upstream.url)


@pytest.fixture
def gateway(start_gateway, world):
    return start_gateway()


def client(gateway, secret) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0)


async def test_a_request_is_charged_exactly_its_reported_usage(gateway, world, seed):
    user_id, key_id, secret = world
    raw = await client(gateway, secret).chat.completions.with_raw_response.create(model=MODEL, messages=CHAT, max_tokens=50)
    completion = raw.parse()
    request_id = raw.headers["x-request-id"]
    cost = kit.expected_cost(completion.usage.prompt_tokens, completion.usage.completion_tokens)
    row = kit.usage_row(seed, request_id)
    assert (row["cost_micros"], row["estimated"], row["end_reason"], row["overrun_micros"]) == (cost, 0, "done", 0)
    held = row["held_micros"]
    assert held >= cost > 0
    assert held > 0 and kit.ledger_of(seed, request_id) == [("capture", -cost)]
    assert kit.balance_of(seed, user_id) == 10_000_000 - cost
    assert kit.key_used(seed, key_id) == cost
    kit.assert_invariants(seed)


async def test_a_stream_is_charged_its_reported_usage(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    stream = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
    chunks = [chunk async for chunk in stream]
    assert all(chunk.usage is None for chunk in chunks)  # the client did not ask for usage, the gateway did
    row = await kit.wait_for_row(seed)
    usage = upstream_usage(upstream)
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (usage["prompt_tokens"], usage["completion_tokens"], 0)
    assert row["cost_micros"] == kit.expected_cost(usage["prompt_tokens"], usage["completion_tokens"])
    assert kit.ledger_of(seed, row["request_id"])[-1] == ("capture", -row["cost_micros"])
    kit.assert_invariants(seed)


def upstream_usage(upstream: FakeOpenAI) -> dict:
    body = upstream.requests[-1]["body"]
    return usage_for(body, echo_text(body))


async def test_the_group_ratio_multiplies_the_price(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, group="vip")
    seed.group("vip", ratio_ppm=1_500_000)
    gateway = start_gateway()
    completion = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, max_tokens=20)
    row = await kit.wait_for_row(seed)
    usage = completion.usage
    assert row["cost_micros"] == kit.expected_cost(usage.prompt_tokens, usage.completion_tokens, ratio_ppm=1_500_000)
    assert row["cost_micros"] > kit.expected_cost(usage.prompt_tokens, usage.completion_tokens)
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]


class CacheHitUpstream(FakeUpstream):
    """An upstream that reports a prompt-cache hit."""

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/v1/chat/completions", self.chat)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body)
        payload = {
            "id": "chatcmpl-cached", "object": "chat.completion", "created": 1, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 2000, "completion_tokens": 100, "total_tokens": 2100,
                      "prompt_tokens_details": {"cached_tokens": 1500}},
        }  # fmt: skip
        return refusal or self.answer(payload)


async def test_cached_tokens_are_charged_at_the_cached_price(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(CacheHitUpstream())
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    gateway = start_gateway()
    await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, max_tokens=200)
    row = await kit.wait_for_row(seed)
    # 500 × 2.50 + 1500 × 1.25 + 100 × 10.00 USD per million tokens
    assert (row["input_tokens"], row["cached_tokens"], row["cost_micros"]) == (2000, 1500, 1250 + 1875 + 1000)
    assert row["cost_micros"] == kit.expected_cost(2000, 100, cached=1500)
    # the reservation assumed no cache and covered 2000 input tokens: the estimate was lower
    assert row["overrun_micros"] == max(0, row["cost_micros"] - row["held_micros"])
    kit.assert_invariants(seed)


async def test_a_free_model_writes_no_money(gateway, world, seed):
    user_id, key_id, secret = world
    await client(gateway, secret).chat.completions.create(model=FREE_MODEL, messages=CHAT)
    row = await kit.wait_for_row(seed)
    assert (row["cost_micros"], row["held_micros"], row["status"]) == (0, 0, 200)
    assert seed.rows("SELECT kind FROM ledger") == [{"kind": "topup"}]
    assert seed.rows("SELECT * FROM holds") == []


async def test_an_unpriced_model_is_refused_before_any_upstream_call(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    with pytest.raises(openai.PermissionDeniedError) as caught:
        await client(gateway, secret).chat.completions.create(model=UNPRICED_MODEL, messages=CHAT)
    assert caught.value.status_code == 403 and caught.value.code == "model_not_priced"
    assert UNPRICED_MODEL in caught.value.message and "price" in caught.value.message
    assert upstream.requests == []
    row = await kit.wait_for_row(seed)
    assert (row["status"], row["cost_micros"], row["error_type"]) == (403, 0, "permission")
    assert seed.rows("SELECT kind FROM ledger") == [{"kind": "topup"}]


async def test_a_balance_too_low_is_refused_with_insufficient_quota(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    seed.topup(user_id, 100)  # 0.0001 USD
    gateway = start_gateway()
    with pytest.raises(openai.RateLimitError) as caught:
        await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, max_tokens=1000)
    error = caught.value
    assert error.status_code == 429 and error.code == "insufficient_quota"
    assert error.body["type"] == "insufficient_quota"
    assert "balance is too low: 0.0001 USD left" in error.message and "may cost up to 0.01" in error.message
    assert upstream.requests == []
    row = await kit.wait_for_row(seed)
    assert (row["status"], row["cost_micros"], row["error_type"]) == (429, 0, "insufficient_quota")
    assert kit.balance_of(seed, user_id) == 100
    assert [r["kind"] for r in seed.rows("SELECT kind FROM ledger")] == ["topup"]


async def test_a_key_quota_too_low_is_refused_naming_the_key_quota(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, quota_micros=10_000)
    gateway = start_gateway()
    openai_client = client(gateway, secret)
    await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=10)  # fits: 10 output tokens
    used = kit.key_used(seed, key_id)
    assert used > 0
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=5000)
    assert caught.value.code == "insufficient_quota"
    message = caught.value.message
    assert f"This API key has used 0.{used:06d}".rstrip("0") in message and "of its 0.01 USD quota" in message, message
    assert len(upstream.requests) == 1
    assert kit.balance_of(seed, user_id) == 10_000_000 - used
    kit.assert_invariants(seed)


async def test_an_upstream_error_charges_nothing(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.fail_next(Fault(status=500))
    with pytest.raises(openai.InternalServerError):
        await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT)
    row = await kit.wait_for_row(seed)
    assert (row["status"], row["cost_micros"]) == (502, 0)
    held = row["held_micros"]
    assert held > 0 and kit.ledger_of(seed, row["request_id"]) == []  # reserved, released: no money moved
    assert kit.balance_of(seed, user_id) == 10_000_000 and kit.key_used(seed, key_id) == 0
    kit.assert_invariants(seed)


async def test_a_timeout_before_any_output_charges_nothing(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.fail_next(Fault(first_byte_delay=1.5))
    with pytest.raises(openai.APIStatusError) as caught:
        await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
    assert caught.value.status_code == 504
    row = await kit.wait_for_row(seed)
    assert (row["status"], row["cost_micros"], row["error_type"]) == (504, 0, "timeout")
    assert kit.balance_of(seed, user_id) == 10_000_000
    kit.assert_invariants(seed)


async def test_a_stream_the_upstream_breaks_is_charged_for_what_was_delivered(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.report_usage = False
    upstream.fail_next(Fault(drop_after=4))  # role chunk, "echo:", " one", " two", then gone
    stream = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
    text = ""
    with pytest.raises(openai.APIError):
        async for chunk in stream:
            text += chunk.choices[0].delta.content or ""
    assert text == "echo: one two"
    row = await kit.wait_for_row(seed)
    assert (row["end_reason"], row["estimated"]) == ("upstream_error", 1)
    assert row["output_tokens"] == estimate_tokens(len(text))  # the error text is not output
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"]) > 0
    assert row["cost_micros"] < row["held_micros"]
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)


async def test_a_stream_broken_before_any_output_charges_nothing(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.report_usage = False
    upstream.fail_next(Fault(drop_after=1))  # only the role chunk: no content
    stream = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT, stream=True)
    with pytest.raises(openai.APIError):
        async for _ in stream:
            pass
    row = await kit.wait_for_row(seed)
    assert (row["end_reason"], row["cost_micros"]) == ("upstream_error", 0)
    assert kit.balance_of(seed, user_id) == 10_000_000


async def test_a_stream_the_client_cancels_half_way_is_charged_for_the_tokens_delivered(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.report_usage = False
    upstream.chunk_delay = 0.05
    words = [f"w{n:02d}" for n in range(40)]
    body = {"model": MODEL, "stream": True, "stream_options": {"include_usage": True}, "max_tokens": 200,
            "messages": [{"role": "user", "content": " ".join(words)}]}  # fmt: skip
    full_text = "echo: " + " ".join(words)
    received = ""
    async with aiohttp.ClientSession() as http:
        response = await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"})
        request_id = response.headers["x-request-id"]
        async for line in response.content:
            if line.startswith(b"data: {"):
                chunk = orjson.loads(line[6:])
                received += "".join(c["delta"].get("content") or "" for c in chunk["choices"])
            if len(received) >= len(full_text) // 2:
                break
        response.close()  # hang up half-way
    row = await kit.wait_for_row(seed, request_id)
    assert (row["end_reason"], row["estimated"], row["status"]) == ("client_gone", 1, 499)
    # what the gateway had delivered when it saw the client go: at least what the client read,
    # at most a few chunks more, well short of the whole answer
    assert estimate_tokens(len(received)) <= row["output_tokens"] <= estimate_tokens(len(received) + 60)
    assert row["output_tokens"] < estimate_tokens(len(full_text))
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"])
    assert 0 < row["cost_micros"] < row["held_micros"]
    assert row["held_micros"] > 0 and kit.ledger_of(seed, request_id) == [("capture", -row["cost_micros"])]
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    await asyncio.sleep(0.3)
    assert len(upstream.requests) == 1
    kit.assert_invariants(seed)


async def test_an_answer_without_usage_is_charged_an_estimate_marked_estimated(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.report_usage = False
    completion = await client(gateway, secret).chat.completions.create(model=MODEL, messages=CHAT)
    assert completion.usage is None
    row = await kit.wait_for_row(seed)
    assert (row["estimated"], row["end_reason"]) == (1, "done")
    assert row["output_tokens"] == estimate_tokens(len(completion.choices[0].message.content))
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], row["output_tokens"]) > 0


MANY_WORDS = [{"role": "user", "content": " ".join(["a"] * 30)}]


async def post_exact(gateway, secret, body: bytes) -> tuple[int, dict]:
    async with aiohttp.ClientSession() as http:
        headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
        async with http.post(gateway.url + "/v1/chat/completions", data=body, headers=headers) as response:
            return response.status, await response.json()


async def test_a_cost_above_the_reservation_is_charged_and_the_overrun_recorded(gateway, world, seed):
    user_id, key_id, secret = world
    # the upstream ignores max_tokens=1 and echoes 31 words: more output than reserved
    completion = await client(gateway, secret).chat.completions.create(model=MODEL, messages=MANY_WORDS, max_tokens=1)
    assert completion.usage.completion_tokens == 31
    row = await kit.wait_for_row(seed)
    assert row["cost_micros"] == kit.expected_cost(completion.usage.prompt_tokens, 31)
    assert row["overrun_micros"] == row["cost_micros"] - row["held_micros"] > 0
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)


async def test_a_balance_goes_below_zero_only_by_a_recorded_overrun(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    body = orjson.dumps({"model": MODEL, "messages": MANY_WORDS, "max_tokens": 1})
    reservation = max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(body)), max_output_tokens=1)
    seed.topup(user_id, reservation)  # exactly what the request reserves
    gateway = start_gateway()
    status, answer = await post_exact(gateway, secret, body)
    assert status == 200
    row = await kit.wait_for_row(seed)
    assert row["held_micros"] == reservation
    balance = kit.balance_of(seed, user_id)
    assert balance == reservation - row["cost_micros"] == -row["overrun_micros"] < 0
    lowest = seed.rows("SELECT min(balance_after_micros) AS low FROM ledger WHERE user_id = ?", (user_id,))[0]["low"]
    assert lowest == -row["overrun_micros"]
    kit.assert_invariants(seed)
    # with the balance below zero the next request is refused, before any upstream call
    calls = len(upstream.requests)
    status, answer = await post_exact(gateway, secret, body)
    assert status == 429 and answer["error"]["code"] == "insufficient_quota"
    assert len(upstream.requests) == calls


async def test_a_request_refused_by_a_later_policy_releases_its_reservation(start_gateway, seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    seed.key_limits(key_id, rpm=1)  # the rate limit (600) runs after the reservation (500)
    gateway = start_gateway()
    openai_client = client(gateway, secret)
    await openai_client.chat.completions.create(model=MODEL, messages=CHAT)
    with pytest.raises(openai.RateLimitError) as caught:
        await openai_client.chat.completions.create(model=MODEL, messages=CHAT)
    assert caught.value.code == "rate_limit_exceeded"
    request_id = caught.value.response.headers["x-request-id"]
    row = kit.usage_row(seed, request_id)
    assert (row["status"], row["cost_micros"]) == (429, 0)
    assert row["held_micros"] > 0 and kit.ledger_of(seed, request_id) == []
    assert len(upstream.requests) == 1
    first = seed.rows("SELECT cost_micros FROM usage_logs WHERE status = 200")[0]["cost_micros"]
    assert kit.balance_of(seed, user_id) == 10_000_000 - first
    kit.assert_invariants(seed)


async def test_a_client_that_hangs_up_on_a_plain_request_leaves_nothing_reserved(gateway, world, seed, upstream):
    user_id, key_id, secret = world
    upstream.fail_next(Fault(first_byte_delay=0.4))  # a slow (non-streaming) answer
    body = {"model": MODEL, "messages": CHAT, "max_tokens": 20}
    async with aiohttp.ClientSession() as http:
        with pytest.raises(asyncio.TimeoutError):
            await http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"},
                            timeout=aiohttp.ClientTimeout(total=0.15))  # fmt: skip
    row = await kit.wait_for_row(seed)
    # the upstream call is cancelled at once (issue 8): gone before the first token, it costs nothing
    assert (row["status"], row["end_reason"], row["estimated"], row["output_tokens"], row["cost_micros"]) == (499, "client_gone", 1, 0, 0)
    assert row["held_micros"] > 0 and kit.ledger_of(seed, row["request_id"]) == []
    assert seed.rows("SELECT * FROM holds") == []
    kit.assert_invariants(seed)


async def test_the_reservation_is_the_maximum_cost_of_the_request(tmp_path, start_gateway, seed, upstream, relaygate_config):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url)
    gateway = start_gateway(kit.config(tmp_path, LOAD, db=relaygate_config.db_path, default_max_output_tokens=100))
    for fields, max_output in (({}, 100), ({"max_tokens": 7}, 7), ({"max_completion_tokens": 9, "max_tokens": 7}, 9)):
        body = orjson.dumps({"model": MODEL, "messages": CHAT, **fields})
        status, _ = await post_exact(gateway, secret, body)
        assert status == 200
        row = await kit.wait_for_row(seed)
        # every byte of the body counted as input (4 bytes a token), the output at its cap
        assert row["held_micros"] == max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(body)), max_output_tokens=max_output)


def test_billing_settings_in_plugins_toml():
    config = config_from_mapping({"gateway": {"default_max_output_tokens": 512, "stale_hold_seconds": 600}})
    assert (config.default_max_output_tokens, config.stale_hold_seconds) == (512, 600.0)
    for bad in (0, -1, "many", 1.5):
        with pytest.raises(ConfigError, match="default_max_output_tokens"):
            config_from_mapping({"gateway": {"default_max_output_tokens": bad}})


# --- the reservation reads each protocol's own output cap ---------------------
# The same small request in OpenAI, Anthropic and Gemini form passes on a small balance
# when it caps its output, and is refused when it leaves the cap to the default (4,096
# tokens). Gemini's generationConfig.maxOutputTokens used to be ignored, so every Gemini
# request reserved the default and was refused where the other forms passed.

ALL_PROTOCOLS = ("openai", "anthropic", "gemini")
CAP = 16
SMALL_BALANCE = 5_000  # 0.005 USD: 16 output tokens fit, the default 4,096 (0.041 USD) does not
# each form's request, key header and answer to a balance too low (Anthropic's own: 400);
# uncapped, Anthropic (which requires max_tokens) asks for the default's 4,096
FORMS = {
    "openai": ("/v1/chat/completions", "authorization", 429),
    "anthropic": ("/v1/messages", "x-api-key", 400),
    "gemini": (f"/v1beta/models/{MODEL}:generateContent", "x-goog-api-key", 429),
}


def form_body(protocol: str, cap: int | None) -> bytes:
    text = "one two three four"
    if protocol == "gemini":
        config = {"generationConfig": {"maxOutputTokens": cap}} if cap else {}
        return orjson.dumps({"contents": [{"role": "user", "parts": [{"text": text}]}], **config})
    cap = cap or (4096 if protocol == "anthropic" else None)
    return orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": text}], **({"max_tokens": cap} if cap else {})})


async def post_form(gateway, secret: str, protocol: str, body: bytes) -> tuple[int, str]:
    path, key_header, _ = FORMS[protocol]
    headers = {key_header: f"Bearer {secret}" if key_header == "authorization" else secret, "anthropic-version": "2023-06-01"}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + path, data=body, headers={**headers, "content-type": "application/json"}) as response:
            await response.read()
            return response.status, response.headers["x-request-id"]


@pytest.fixture
def small_balance(tmp_path, seed, upstream, start_gateway, relaygate_config):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    seed.topup(user_id, SMALL_BALANCE)
    return start_gateway(kit.config(tmp_path, ALL_PROTOCOLS, db=relaygate_config.db_path)), user_id, secret


@pytest.mark.parametrize("protocol", ALL_PROTOCOLS)
async def test_a_capped_request_passes_on_a_small_balance_in_every_protocol(small_balance, seed, protocol):
    gateway, user_id, secret = small_balance
    body = form_body(protocol, CAP)
    status, request_id = await post_form(gateway, secret, protocol, body)
    assert status == 200
    row = kit.usage_row(seed, request_id)
    # reserved: every byte of the body as input (4 bytes a token), and the request's own output cap
    assert row["held_micros"] == max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(body)), max_output_tokens=CAP)
    assert (row["status"], row["protocol"], row["cost_micros"] > 0) == (200, protocol, True)
    assert kit.balance_of(seed, user_id) == SMALL_BALANCE - row["cost_micros"]
    kit.assert_invariants(seed)


@pytest.mark.parametrize("protocol", ALL_PROTOCOLS)
async def test_an_uncapped_request_reserves_the_default_and_is_refused_in_every_protocol(small_balance, seed, upstream, protocol):
    gateway, user_id, secret = small_balance
    status, request_id = await post_form(gateway, secret, protocol, form_body(protocol, None))
    assert status == FORMS[protocol][2]
    row = kit.usage_row(seed, request_id)
    assert (row["status"], row["error_type"], row["held_micros"]) == (status, "insufficient_quota", 0)
    assert "for up to 4096 output tokens" in row["error_message"]
    assert upstream.requests == [] and kit.balance_of(seed, user_id) == SMALL_BALANCE
