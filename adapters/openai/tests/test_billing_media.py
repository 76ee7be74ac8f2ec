"""Billing of the Responses, embeddings, images and audio endpoints: the usage row
and the ledger of each, at token prices, per image (by size and quality), per
million characters and per minute of audio."""

from __future__ import annotations

import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_openai.media import estimated_audio_ms

GPT, EMBED, IMAGE, DALLE, TTS, WHISPER = "gpt-priced", "embed-priced", "gpt-image-1", "dall-e-3", "tts-priced", "whisper-priced"
AUDIO = b"RIFF" + b"\x01" * 48_000


@pytest.fixture
def world(seed, upstream):
    user_id = seed.user("alice", balance_usd=10)
    key_id, secret = seed.key(user_id)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[GPT, EMBED, IMAGE, DALLE, TTS, WHISPER],
                 settings={"responses": True}, free_unpriced=False)  # fmt: skip
    seed.price(GPT, kit.INPUT, kit.OUTPUT, cached_input_micros_per_mtok=kit.CACHED)
    seed.price(EMBED, 20_000, 0)  # 0.02 USD per million tokens
    seed.price(IMAGE, 5_000_000, 40_000_000, per_image_micros=1_000)  # tokens and a fee per image
    seed.price(DALLE, 0, 0, per_image_micros=40_000)  # 0.04 USD an image
    seed.price(f"{DALLE}:1024x1792:hd", 0, 0, per_image_micros=120_000)  # 0.12 USD a large HD image
    seed.price(TTS, 0, 0, per_mchar_micros=15_000_000)  # 15 USD per million characters
    seed.price(WHISPER, 0, 0, per_audio_minute_micros=6_000)  # 0.006 USD a minute
    return user_id, key_id, secret


@pytest.fixture
def client(start_gateway, world):
    gateway = start_gateway()
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=world[2], max_retries=0)


def last_row(seed) -> dict:
    return seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]


def charged(seed, row) -> int:
    ledger = kit.ledger_of(seed, row["request_id"])
    assert row["held_micros"] > 0 and [kind for kind, _ in ledger] == ["capture"]  # reserved, then one row: the money
    return -ledger[-1][1]


async def test_responses_are_billed_by_their_tokens(client, seed):
    response = await client.responses.create(model=GPT, input="bill me")
    row = last_row(seed)
    usage = response.usage
    expected = kit.expected_cost(usage.input_tokens, usage.output_tokens, cached=usage.input_tokens_details.cached_tokens)
    assert row["cost_micros"] == expected == charged(seed, row)
    async with client.responses.stream(model=GPT, input="stream bill") as stream:
        final = await stream.get_final_response()
    row = last_row(seed)
    assert row["cost_micros"] == kit.expected_cost(final.usage.input_tokens, final.usage.output_tokens, cached=2)
    kit.assert_invariants(seed)


async def test_embeddings_are_billed_by_their_input_tokens(client, seed):
    result = await client.embeddings.create(model=EMBED, input=["a" * 4000, "b" * 4000])
    row = last_row(seed)
    assert row["input_tokens"] == result.usage.prompt_tokens == 2002
    assert row["cost_micros"] == -(-2002 * 20_000 // 10**6) == charged(seed, row)  # 40.04 → 41 micro-USD
    assert row["held_micros"] >= row["cost_micros"]


async def test_images_are_billed_per_image_by_size_and_quality(client, seed):
    await client.images.generate(model=DALLE, prompt="fox", n=2)
    row = last_row(seed)
    assert row["cost_micros"] == 2 * 40_000 == charged(seed, row) and row["held_micros"] == 2 * 40_000
    await client.images.generate(model=DALLE, prompt="fox", size="1024x1792", quality="hd")
    row = last_row(seed)
    assert row["cost_micros"] == 120_000 == charged(seed, row)
    edited = await client.images.edit(model=DALLE, image=("a.png", b"\x89PNG" * 100, "image/png"), prompt="hat", n=3)
    assert len(edited.data) == 3
    assert last_row(seed)["cost_micros"] == 3 * 40_000
    kit.assert_invariants(seed)


async def test_token_priced_images_add_their_tokens(client, seed):
    result = await client.images.generate(model=IMAGE, prompt="fox")
    row = last_row(seed)
    tokens = result.usage.input_tokens * 5_000_000 + result.usage.output_tokens * 40_000_000
    assert (row["input_tokens"], row["output_tokens"]) == (12, 272)
    assert row["cost_micros"] == -(-tokens // 10**6) + 1_000 == charged(seed, row)


async def test_token_priced_images_reserve_by_size_and_quality_not_a_text_cap(client, seed):
    await client.images.generate(model=IMAGE, prompt="two foxes", n=2, size="1024x1024", quality="low")
    row = last_row(seed)
    floor = 2 * 272 * 40 + 2 * 1_000  # 272 output tokens at 40 USD per million, and the fee, per image
    assert floor <= row["held_micros"] <= floor + 500  # and the prompt's few input tokens
    assert row["held_micros"] >= row["cost_micros"] > 0 and row["held_micros"] < 2 * 4096 * 40  # not the 4,096-token default
    kit.assert_invariants(seed)


async def test_speech_is_billed_per_character(client, seed):
    text = "Hello, world! " * 10
    async with client.audio.speech.with_streaming_response.create(model=TTS, voice="alloy", input=text) as response:
        await response.read()
    row = last_row(seed)
    assert row["end_reason"] == "done" and row["estimated"] == 0
    assert row["cost_micros"] == -(-len(text) * 15_000_000 // 10**6) == charged(seed, row) == 2_100


async def test_transcription_is_billed_per_minute_of_reported_audio(client, seed):
    await client.audio.transcriptions.create(model=WHISPER, file=("talk.wav", AUDIO, "audio/wav"), response_format="verbose_json")
    row = last_row(seed)
    assert row["cost_micros"] == -(-12_500 * 6_000 // 60_000) == charged(seed, row) == 1_250
    assert row["estimated"] == 0


async def test_transcription_without_a_length_is_estimated_from_the_upload(client, upstream, seed):
    await client.audio.transcriptions.create(model=WHISPER, file=("talk.wav", AUDIO, "audio/wav"), response_format="text")
    row = last_row(seed)
    sent = int(upstream.requests[-1]["headers"]["Content-Length"])  # the model is not mapped: the size the client sent
    assert row["estimated"] == 1
    assert row["cost_micros"] == -(-estimated_audio_ms(sent) * 6_000 // 60_000) == charged(seed, row)
    kit.assert_invariants(seed)
