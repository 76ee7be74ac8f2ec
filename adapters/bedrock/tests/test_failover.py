"""Failover between a bedrock channel and a direct anthropic channel serving one model,
each way: Bedrock's throttling sends a request on to the direct channel, the direct
channel's overload sends it on to Bedrock."""

from __future__ import annotations

import json

import anthropic
import pytest

from gateway_bedrock.fake_upstream import IAM_KEY, Fault

CLAUDE = "claude-sonnet-4-5"


@pytest.fixture
async def direct(fake_upstream):
    fake = pytest.importorskip("gateway_anthropic.fake_upstream")
    return fake.EXPECTED_KEY, await fake_upstream(fake.FakeAnthropic())


@pytest.mark.parametrize("bedrock_first", [True, False])
async def test_failover_between_bedrock_and_the_direct_channel(seed, start_gateway, bedrock, direct, bedrock_first):
    key, anthropic_fake = direct
    _, secret = seed.key(seed.user("alice"))
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=[CLAUDE], api_keys=[IAM_KEY], priority=10 if bedrock_first else 0,
                 model_map={CLAUDE: "global.anthropic.claude-sonnet-4-5-20250929-v1:0"})  # fmt: skip
    seed.channel("direct", type="anthropic", base_url=anthropic_fake.url, models=[CLAUDE], api_keys=[key], priority=0 if bedrock_first else 10,
                 model_map={CLAUDE: "claude-sonnet-4-5-20250929"})  # fmt: skip
    first, second = (bedrock, anthropic_fake) if bedrock_first else (anthropic_fake, bedrock)
    first.fail_next(Fault(status=429 if bedrock_first else 529))
    gateway = start_gateway()
    async with anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0) as client:
        answer = await client.messages.create(model=CLAUDE, max_tokens=20, messages=[{"role": "user", "content": "hi"}])
    assert answer.content[0].type == "text" and "hi" in answer.content[0].text
    assert (len(first.requests), len(second.requests)) == (1, 1)
    (row,) = seed.rows("SELECT channel_name, attempts FROM usage_logs")
    attempts = json.loads(row["attempts"])
    assert row["channel_name"] == ("direct" if bedrock_first else "aws")
    assert [(a["channel"], a["status"]) for a in attempts] == ([("aws", 429), ("direct", 200)] if bedrock_first else [("direct", 529), ("aws", 200)])
