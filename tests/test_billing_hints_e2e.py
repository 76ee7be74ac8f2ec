"""The reservation reads each protocol's own output cap, over real HTTP: the same
small request in OpenAI, Anthropic and Gemini form passes on a small balance when
it caps its output, and is refused when it leaves the cap to the gateway's default
of 4,096 tokens (or, in Anthropic's form, which requires a cap, asks for as many). Gemini's ``generationConfig.maxOutputTokens`` used to be ignored,
so every Gemini request reserved the default."""

from __future__ import annotations

import aiohttp
import orjson
import pytest

from gateway_core.billing import testing as kit
from gateway_core.billing.cost import max_cost_micros
from gateway_core.billing.testing import MODEL
from gateway_core.store.wallet import topup
from gateway_core.tally import estimate_tokens
from gateway_openai.fake_upstream import FakeOpenAI

LOAD = ("openai", "anthropic", "gemini")
CAP = 16
BALANCE_MICROS = 5_000  # 0.005 USD: 16 output tokens fit, the default 4,096 (0.041 USD) does not
TEXT = "one two three four"


def openai_form(cap: int | None) -> tuple[str, dict[str, str], dict]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": TEXT}]}
    return "/v1/chat/completions", {}, body | ({"max_tokens": cap} if cap else {})


def anthropic_form(cap: int | None) -> tuple[str, dict[str, str], dict]:
    body = {"model": MODEL, "messages": [{"role": "user", "content": TEXT}]}
    return "/v1/messages", {"anthropic-version": "2023-06-01"}, body | ({"max_tokens": cap} if cap else {})


def gemini_form(cap: int | None) -> tuple[str, dict[str, str], dict]:
    body = {"contents": [{"role": "user", "parts": [{"text": TEXT}]}]}
    path = f"/v1beta/models/{MODEL}:generateContent"
    return path, {}, body | ({"generationConfig": {"maxOutputTokens": cap}} if cap else {})


# what each form sends to leave its output uncapped (Anthropic requires max_tokens: the default's 4,096)
UNCAPPED = {"openai": None, "anthropic": 4096, "gemini": None}
# how each protocol answers a balance too low (Anthropic's own: 400, "credit balance is too low")
REFUSED = {"openai": 429, "anthropic": 400, "gemini": 429}
FORMS = {"openai": (openai_form, "Bearer"), "anthropic": (anthropic_form, "x-api-key"), "gemini": (gemini_form, "x-goog-api-key")}


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, LOAD)


@pytest.fixture
async def upstream(aiohttp_server):
    fake = FakeOpenAI()
    server = await aiohttp_server(fake.app())
    fake.url = str(server.make_url("")).rstrip("/")
    return fake


@pytest.fixture
def world(seed, upstream):
    user_id, key_id, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    conn = seed.store.connect()
    topup(conn, user_id, BALANCE_MICROS)
    conn.close()
    return user_id, key_id, secret


async def post(gateway, secret: str, protocol: str, cap: int | None) -> tuple[int, bytes, str]:
    """Send the request in ``protocol``'s form; its status, its exact body and its request id."""
    form, key_header = FORMS[protocol]
    path, headers, body = form(cap)
    data = orjson.dumps(body)
    headers = {**headers, "content-type": "application/json"}
    headers["authorization" if key_header == "Bearer" else key_header] = f"Bearer {secret}" if key_header == "Bearer" else secret
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + path, data=data, headers=headers) as response:
            await response.read()
            return response.status, data, response.headers["x-request-id"]


@pytest.mark.parametrize("protocol", list(FORMS))
async def test_a_capped_request_passes_on_a_small_balance_in_every_protocol(start_gateway, seed, world, upstream, protocol):
    user_id, key_id, secret = world
    gateway = start_gateway()
    status, body, request_id = await post(gateway, secret, protocol, CAP)
    assert status == 200
    row = kit.usage_row(seed, request_id)
    # reserved: every byte of the body as input (4 bytes a token), and the request's own output cap
    assert row["held_micros"] == max_cost_micros(kit.PRICE, 1_000_000, input_tokens=estimate_tokens(len(body)), max_output_tokens=CAP)
    assert row["held_micros"] <= BALANCE_MICROS
    assert (row["status"], row["protocol"], row["cost_micros"] > 0) == (200, protocol, True)
    assert kit.balance_of(seed, user_id) == BALANCE_MICROS - row["cost_micros"]
    kit.assert_invariants(seed)


@pytest.mark.parametrize("protocol", list(FORMS))
async def test_an_uncapped_request_reserves_the_default_and_is_refused_in_every_protocol(start_gateway, seed, world, upstream, protocol):
    user_id, key_id, secret = world
    gateway = start_gateway()
    status, body, request_id = await post(gateway, secret, protocol, UNCAPPED[protocol])
    assert status == REFUSED[protocol]
    row = kit.usage_row(seed, request_id)
    assert (row["status"], row["error_type"], row["held_micros"]) == (status, "insufficient_quota", 0)
    assert "for up to 4096 output tokens" in row["error_message"]
    assert upstream.requests == []
    assert kit.balance_of(seed, user_id) == BALANCE_MICROS
