"""Failover between an azure channel and a direct openai channel serving the same model:
Azure failing (a server error, an api-version it refuses) moves the request to OpenAI;
a content-filter refusal is the request's own fault and does not."""

from __future__ import annotations

import openai
import pytest

from gateway_core.testing import Fault
from gateway_openai.fake_upstream import FakeOpenAI

from .fake_azure import AZURE_KEY, BLOCKED

CHAT = "gpt-4o-mini"


@pytest.fixture
async def direct(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def client(seed, azure, direct, start_gateway):
    _, secret = seed.key(seed.user("alice"))
    seed.channel("az", type="azure", base_url=azure.url, api_keys=[AZURE_KEY], models=[CHAT], model_map={CHAT: "chat-dep"}, priority=10)
    seed.channel("oai", type="openai", base_url=direct.url, models=[CHAT], priority=0)
    return openai.AsyncOpenAI(base_url=start_gateway().url + "/v1", api_key=secret, max_retries=0)


async def test_azure_first_then_openai_when_azure_fails(client, azure, direct, seed):
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "first"}])
    assert answer.choices[0].message.content == "echo: first" and len(azure.requests) == 1 and direct.requests == []
    azure.fail_next(Fault(status=500))
    answer = await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": "second"}])
    assert answer.choices[0].message.content == "echo: second"
    assert len(azure.requests) == 2 and direct.requests[-1]["body"]["model"] == CHAT
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["channel_name"], row["status"]) == ("oai", 200)


async def test_a_content_filter_refusal_is_not_retried_elsewhere(client, azure, direct):
    with pytest.raises(openai.BadRequestError) as refused:
        await client.chat.completions.create(model=CHAT, messages=[{"role": "user", "content": BLOCKED}])
    assert refused.value.code == "content_filter"
    assert len(azure.requests) == 1 and direct.requests == []
