"""Fixtures of the bedrock adapter's tests: the fake Bedrock, a gateway with a bedrock channel.

The gateway's channels: ``aws`` (type bedrock, IAM credentials) serves ``claude-test``
(mapped to ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``) and ``nova-test``
(``amazon.nova-pro-v1:0``); ``aws-key`` (a Bedrock API key) serves ``llama-test``
(``meta.llama3-3-70b-instruct-v1:0``). Test modules repeat these names as constants
(they cannot import this file under ``--import-mode=importlib``).
"""

from __future__ import annotations

import openai
import pytest

from gateway_bedrock.fake_upstream import BEARER_KEY, IAM_KEY, FakeBedrock

MODELS = {
    "claude-test": "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
    "nova-test": "amazon.nova-pro-v1:0",
}


@pytest.fixture
async def bedrock(fake_upstream):
    return await fake_upstream(FakeBedrock())


@pytest.fixture
def user(seed):
    return seed.user("alice")


@pytest.fixture
def gateway_key(seed, user, bedrock):
    _, secret = seed.key(user)
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=list(MODELS), model_map=MODELS,
                 api_keys=[IAM_KEY], settings={"region": "us-east-1"})  # fmt: skip
    seed.channel("aws-key", type="bedrock", base_url=bedrock.url, models=["llama-test"],
                 model_map={"llama-test": "meta.llama3-3-70b-instruct-v1:0"}, api_keys=[BEARER_KEY])  # fmt: skip
    return secret


@pytest.fixture
def gateway(start_gateway, gateway_key):
    return start_gateway()


@pytest.fixture
async def openai_client(gateway, gateway_key):
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=gateway_key, max_retries=0)
    yield client
    await client.close()
