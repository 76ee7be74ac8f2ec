"""A spent balance is not a rate limit: each official SDK, at its default
settings, hears the refusal after exactly one request (counted at the gateway,
in its usage log), in the shape its provider uses for a spent balance."""

from __future__ import annotations

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from gateway_core.billing import testing as kit
from gateway_core.billing.testing import MODEL
from gateway_openai.fake_upstream import FakeOpenAI

CHAT = [{"role": "user", "content": "one two three four"}]


@pytest.fixture
def relaygate_config(tmp_path):
    return kit.config(tmp_path, ("openai", "anthropic", "gemini", "demo"))


@pytest.fixture
async def spent(start_gateway, seed, fake_upstream):
    upstream = await fake_upstream(FakeOpenAI())
    user_id, _, secret = kit.seed_world(seed, channel_type="openai", base_url=upstream.url, balance_usd=0)
    seed.topup(user_id, 100)  # 0.0001 USD: less than any request may cost
    return start_gateway(), secret, upstream


def requests_logged(seed) -> list[tuple[int, str]]:
    return [(row["status"], row["error_type"]) for row in seed.rows("SELECT status, error_type FROM usage_logs")]


async def test_the_openai_sdk_asks_once_and_reads_insufficient_quota(spent, seed):
    gateway, secret, upstream = spent
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret)  # default: 2 retries
    with pytest.raises(openai.RateLimitError) as caught:
        await client.chat.completions.create(model=MODEL, messages=CHAT, max_tokens=1000)
    await client.close()
    error = caught.value
    assert error.status_code == 429 and error.code == "insufficient_quota" and error.body["type"] == "insufficient_quota"
    assert error.response.headers["x-should-retry"] == "false" and "retry-after" not in error.response.headers
    assert requests_logged(seed) == [(429, "insufficient_quota")]
    assert upstream.requests == []


async def test_the_anthropic_sdk_asks_once_and_reads_the_credit_balance_message(spent, seed):
    gateway, secret, _ = spent
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret)  # default: 2 retries
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client.messages.create(model=MODEL, messages=CHAT, max_tokens=1000)
    await client.close()
    error = caught.value
    assert error.response.headers["x-should-retry"] == "false"
    message = error.body["error"]["message"]
    assert message.startswith("Your credit balance is too low to access this model: 0.0001 USD left")
    assert message.lower().count("too low") == 1  # said once
    assert requests_logged(seed) == [(400, "insufficient_quota")]


async def test_the_gemini_sdk_asks_once_and_reads_resource_exhausted(spent, seed):
    gateway, secret, _ = spent
    client = genai.Client(api_key=secret, http_options=genai_types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
    try:
        with pytest.raises(genai_errors.ClientError) as caught:
            await client.aio.models.generate_content(model=MODEL, contents="one two three four")
    finally:
        await client.aio.aclose()
    assert (caught.value.code, caught.value.status) == (429, "RESOURCE_EXHAUSTED")
    assert "0.0001 USD left" in (caught.value.message or "")
    assert requests_logged(seed) == [(429, "insufficient_quota")]
