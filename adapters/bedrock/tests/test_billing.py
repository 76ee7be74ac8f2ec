"""A Bedrock model id the operator never priced is charged its catalogue price,
exactly, from the upstream's usage (cache reads and writes included)."""

from __future__ import annotations

import openai

from gateway_bedrock.fake_upstream import IAM_KEY

SONNET = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"  # a regional profile: AWS's price +10%


async def test_a_bedrock_id_is_priced_from_the_catalogue_exactly(seed, start_gateway, bedrock):
    alice = seed.user("alice", balance_usd=5)
    _, secret = seed.key(alice)
    seed.channel("aws", type="bedrock", base_url=bedrock.url, models=[SONNET], api_keys=[IAM_KEY], free_unpriced=False)
    bedrock.cache_read, bedrock.cache_write = 1000, 2000
    gateway = start_gateway()
    async with openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=secret, max_retries=0) as client:
        completion = await client.chat.completions.create(model=SONNET, messages=[{"role": "user", "content": "hello there"}])
    assert completion.usage.prompt_tokens == 2 + 1000 + 2000
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["input_tokens"], row["cached_tokens"], row["cache_write_tokens"], row["output_tokens"]) == (3002, 1000, 2000, 3)
    # USD per million: input 3.3, cache read 0.33, cache write 4.125, output 16.5; rounded up once
    # 2 × 3.3 + 1000 × 0.33 + 2000 × 4.125 + 3 × 16.5 = 8636.1 micro-USD
    assert row["cost_micros"] == 8637
    assert bedrock.requests[-1]["raw_path"] == "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
