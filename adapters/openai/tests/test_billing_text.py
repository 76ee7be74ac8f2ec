"""Billing of legacy completions, moderations, audio translations and rerank: the
usage row and the ledger of each, charged exactly price × usage (tokens, per
request, per minute of audio), and reservations without output for the endpoints
that have none."""

from __future__ import annotations

import httpx2 as httpx
import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_openai.fake_upstream import Fault
from gateway_openai.media import estimated_audio_ms

INSTRUCT, MODERATION, WHISPER, RERANKER = "instruct-priced", "moderation-priced", "whisper-priced", "rerank-priced"
IN, OUT, PER_REQUEST, PER_MINUTE = 1_500_000, 2_000_000, 1_000, 6_000  # 1.50 / 2.00 USD per Mtok, 0.001 a request, 0.006 a minute
AUDIO = b"RIFF" + b"\x01" * 48_000


@pytest.fixture
def world(seed, upstream):
    user_id = seed.user("alice", balance_usd=10)
    key_id, secret = seed.key(user_id)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[INSTRUCT, MODERATION, WHISPER], free_unpriced=False)
    seed.channel("rr", type="rerank", base_url=upstream.url, models=[RERANKER], free_unpriced=False)
    seed.price(INSTRUCT, IN, OUT)
    seed.price(MODERATION, IN, OUT, per_request_micros=PER_REQUEST)  # an output price a moderation must never reserve
    seed.price(WHISPER, 0, 0, per_audio_minute_micros=PER_MINUTE)
    seed.price(RERANKER, IN, OUT, per_request_micros=PER_REQUEST)
    return user_id, key_id, secret


@pytest.fixture
def gateway(start_gateway, world):
    return start_gateway()


@pytest.fixture
def client(gateway, world):
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=world[2], max_retries=0)


def last_row(seed) -> dict:
    return seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]


def charged(seed, row) -> int:
    ledger = kit.ledger_of(seed, row["request_id"])
    assert row["held_micros"] > 0 and row["cost_micros"] > 0 and [kind for kind, _ in ledger] == ["capture"]
    return -ledger[-1][1]


def tokens_cost(input_tokens: int, output_tokens: int = 0) -> int:
    return -(-(input_tokens * IN + output_tokens * OUT) // 10**6)


async def test_completions_are_billed_by_their_tokens(client, seed):
    completion = await client.completions.create(model=INSTRUCT, prompt="bill this prompt", max_tokens=50)
    row = last_row(seed)
    usage = completion.usage
    assert row["cost_micros"] == tokens_cost(usage.prompt_tokens, usage.completion_tokens) == charged(seed, row)
    assert row["estimated"] == 0 and row["held_micros"] >= row["cost_micros"]
    stream = await client.completions.create(model=INSTRUCT, prompt="bill this stream too", stream=True, max_tokens=50)
    text = "".join([c.choices[0].text async for c in stream if c.choices])
    row = last_row(seed)
    assert (row["stream"], row["output_tokens"]) == (1, len(text.split()))
    assert row["cost_micros"] == tokens_cost(row["input_tokens"], row["output_tokens"]) == charged(seed, row)
    kit.assert_invariants(seed)


async def test_completion_reservation_counts_every_completion_asked_for(client, seed):
    await client.completions.create(model=INSTRUCT, prompt=["a", "b"], n=3, max_tokens=1000)
    held = last_row(seed)["held_micros"]
    assert held >= 6 * 1000 * OUT // 10**6  # two prompts, three completions each, 1,000 tokens apiece


async def test_moderations_are_billed_per_request_and_estimated_input_without_output(client, seed):
    text = "a calm sentence " * 25
    await client.moderations.create(model=MODERATION, input=text)
    row = last_row(seed)
    input_tokens = -(-len(text) // 4)
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (input_tokens, 0, 1)
    assert row["cost_micros"] == -(-input_tokens * IN // 10**6) + PER_REQUEST == charged(seed, row)
    assert row["held_micros"] < PER_REQUEST + 1_000  # no output reserved (4,096 tokens would be 8,192 micro-USD)
    kit.assert_invariants(seed)


@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")  # the SDK marks translations so
async def test_translations_are_billed_per_minute_of_audio(client, upstream, seed):
    await client.audio.translations.create(model=WHISPER, file=("rede.wav", AUDIO, "audio/wav"), response_format="verbose_json")
    row = last_row(seed)
    assert (row["endpoint"], row["estimated"]) == ("audio.translations", 0)
    assert row["cost_micros"] == -(-12_500 * PER_MINUTE // 60_000) == charged(seed, row) == 1_250
    # the reservation went by the upload's size (3 s of audio at 128 kbit/s): the reported 12.5 s overran it
    assert row["overrun_micros"] == row["cost_micros"] - row["held_micros"] > 0
    await client.audio.translations.create(model=WHISPER, file=("rede.wav", AUDIO, "audio/wav"))
    row = last_row(seed)
    sent = int(upstream.requests[-1]["headers"]["Content-Length"])
    assert row["estimated"] == 1  # a plain JSON translation says nothing of the length: estimated from the upload
    assert row["cost_micros"] == -(-estimated_audio_ms(sent) * PER_MINUTE // 60_000) == charged(seed, row)
    kit.assert_invariants(seed)


async def test_rerank_is_billed_by_its_reported_tokens_and_per_request(gateway, world, seed):
    body = {"model": RERANKER, "query": "capital of France", "documents": ["Paris is in France.", "Bananas are yellow."] * 20}
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": f"Bearer {world[2]}"}, timeout=30) as client:
        response = await client.post("/v1/rerank", json=body)
    assert response.status_code == 200, response.text
    tokens = response.json()["usage"]["total_tokens"]
    row = last_row(seed)
    assert (row["endpoint"], row["input_tokens"], row["output_tokens"], row["estimated"]) == ("rerank", tokens, 0, 0)
    assert row["cost_micros"] == -(-tokens * IN // 10**6) + PER_REQUEST == charged(seed, row)
    assert row["held_micros"] < PER_REQUEST + 1_000  # the body's bytes at the input price, no output
    kit.assert_invariants(seed)


async def test_a_refused_rerank_costs_nothing(gateway, world, seed, upstream):
    upstream.fail_next(Fault(status=400, body={"detail": "bad"}))
    async with httpx.AsyncClient(base_url=gateway.url, headers={"Authorization": f"Bearer {world[2]}"}, timeout=30) as client:
        response = await client.post("/v1/rerank", json={"model": RERANKER, "query": "q", "documents": ["a"]})
    assert response.status_code == 400
    row = last_row(seed)
    assert row["cost_micros"] == 0 and kit.ledger_of(seed, row["request_id"]) == []
    kit.assert_invariants(seed)
