"""Streamed image generation and edits (``stream: true``, ``partial_images``) through
the official ``openai`` SDK over real HTTP: the upstream's events relayed in order
as they come (the fake holds its completed events until the client has seen a
partial image: a buffering gateway would hang), partial images of megabytes under
the default frame limit, billed by the completed events' usage and per image, a
client that leaves mid-stream billed what was delivered (estimated)."""

from __future__ import annotations

import asyncio

import attrs
import openai
import pytest

from gateway_core.billing import testing as kit
from gateway_openai.fake_media import PNG_1PX
from gateway_openai.fake_upstream import Fault

IMAGE, IMAGE_UP = "gpt-image-1", "gpt-image-1-2025-04-15"
INPUT_PRICE, OUTPUT_PRICE, PER_IMAGE = 5_000_000, 40_000_000, 1_000  # 5 / 40 USD per Mtok, 0.001 USD an image
WAIT = 30.0  # generous: the machine is shared


@pytest.fixture
def world(seed, upstream):
    user_id = seed.user("alice", balance_usd=10)
    _, secret = seed.key(user_id)
    seed.channel("oai", type="openai", base_url=upstream.url, models=[IMAGE], model_map={IMAGE: IMAGE_UP}, free_unpriced=False)
    seed.price(IMAGE, INPUT_PRICE, OUTPUT_PRICE, per_image_micros=PER_IMAGE)
    return user_id, secret


@pytest.fixture
def client(start_gateway, world):
    gateway = start_gateway()
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=world[1], max_retries=0)


def cost(input_tokens: int, output_tokens: int, images: int) -> int:
    """By hand: ceil(tokens × price / 1e6) plus the fee per image."""
    return -(-(input_tokens * INPUT_PRICE + output_tokens * OUTPUT_PRICE) // 10**6) + images * PER_IMAGE


def charged(seed, row) -> int:
    ledger = kit.ledger_of(seed, row["request_id"])
    assert [kind for kind, _ in ledger] == ["capture"]
    return -ledger[-1][1]


async def events_released_after_the_first(stream, upstream) -> list:
    """Every event of ``stream``; the fake's completed events are let go only once the
    first event reached this client."""
    events = []
    iterator = stream.__aiter__()
    while True:
        try:
            event = await asyncio.wait_for(iterator.__anext__(), WAIT)
        except StopAsyncIteration:
            return events
        if not events:
            assert not upstream.image_hold.is_set()
            upstream.image_hold.set()
        events.append(event)


async def test_generation_streams_partial_images_in_order_before_the_upstream_finishes(client, upstream, seed, world):
    upstream.image_hold = asyncio.Event()
    stream = await client.images.generate(model=IMAGE, prompt="a red fox", stream=True, partial_images=2, size="1024x1024", quality="low")
    request_id = stream.response.headers["x-request-id"]
    events = await events_released_after_the_first(stream, upstream)
    assert [(e.type, getattr(e, "partial_image_index", None)) for e in events] == [
        ("image_generation.partial_image", 0), ("image_generation.partial_image", 1), ("image_generation.completed", None),
    ]  # fmt: skip
    completed = events[-1]
    assert completed.b64_json == PNG_1PX and completed.size == "1024x1024" and completed.quality == "low"
    assert (completed.usage.input_tokens, completed.usage.output_tokens) == (12, 472)
    received = upstream.requests[-1]
    assert received["body"] == {"model": IMAGE_UP, "prompt": "a red fox", "stream": True, "partial_images": 2, "size": "1024x1024", "quality": "low"}
    row = await kit.wait_for_row(seed, request_id)
    assert (row["endpoint"], row["stream"], row["status"], row["end_reason"], row["estimated"]) == ("images.generations", 1, 200, "done", 0)
    assert (row["upstream_model"], row["input_tokens"], row["output_tokens"]) == (IMAGE_UP, 12, 472)
    assert row["cost_micros"] == cost(12, 472, 1) == charged(seed, row)
    floor = (272 + 2 * 100) * OUTPUT_PRICE // 10**6 + PER_IMAGE  # reserved: the image's tokens and 100 per partial image
    assert floor <= row["held_micros"] <= floor + 500
    kit.assert_invariants(seed)


async def test_several_images_are_billed_by_the_sum_of_their_completed_events(client, upstream, seed):
    stream = await client.images.generate(model=IMAGE, prompt="two foxes", stream=True, partial_images=1, n=2)
    events = [event async for event in stream]
    assert [e.type for e in events] == ["image_generation.partial_image"] * 2 + ["image_generation.completed"] * 2
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"])
    assert (row["input_tokens"], row["output_tokens"]) == (24, 2 * 372)
    assert row["cost_micros"] == cost(24, 744, 2) == charged(seed, row)


async def test_a_partial_image_of_megabytes_passes_under_the_default_frame_limit(client, upstream, seed):
    upstream.partial_image_bytes = 3 * 1024 * 1024  # 4 MiB of base64 in one data line
    stream = await client.images.generate(model=IMAGE, prompt="a big fox", stream=True, partial_images=1)
    events = [event async for event in stream]
    assert [e.type for e in events] == ["image_generation.partial_image", "image_generation.completed"]
    assert len(events[0].b64_json) == 4 * 1024 * 1024
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"])
    assert (row["status"], row["end_reason"], row["output_tokens"]) == (200, "done", 372)


async def test_a_partial_image_over_a_lowered_frame_limit_ends_the_stream_with_an_error(start_gateway, relaygate_config, world, upstream, seed):
    limit = 1024 * 1024
    gateway = start_gateway(attrs.evolve(relaygate_config, max_frame_bytes=limit))
    client = openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=world[1], max_retries=0)
    upstream.partial_image_bytes = limit  # 1.33 MiB of base64: over the limit
    stream = await client.images.generate(model=IMAGE, prompt="a big fox", stream=True, partial_images=1)
    with pytest.raises(openai.APIError) as caught:
        async for _ in stream:
            pass
    assert f"larger than {limit} bytes" in str(caught.value)
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"])
    assert (row["end_reason"], row["output_tokens"]) == ("upstream_error", 0)


async def test_edit_streams_its_events_and_sends_the_form_intact(client, upstream, seed):
    upstream.image_hold = asyncio.Event()
    stream = await client.images.edit(
        model=IMAGE, image=("a.png", b"\x89PNG" * 300, "image/png"), prompt="add a hat", stream=True, partial_images=1
    )
    events = await events_released_after_the_first(stream, upstream)
    assert [e.type for e in events] == ["image_edit.partial_image", "image_edit.completed"]
    assert events[-1].usage.output_tokens == 372
    form = upstream.requests[-1]["body"]
    assert form["fields"] == {"model": IMAGE_UP, "prompt": "add a hat", "stream": "true", "partial_images": "1"}
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"])
    assert (row["endpoint"], row["stream"], row["end_reason"], row["input_tokens"], row["output_tokens"]) == ("images.edits", 1, "done", 12, 372)
    assert row["cost_micros"] == cost(12, 372, 1) == charged(seed, row)


async def test_a_client_leaving_after_a_partial_image_is_billed_what_it_got_estimated(client, upstream, seed, world):
    user_id, _ = world
    upstream.image_hold = asyncio.Event()  # never set before the client leaves: no completed event, no usage
    stream = await client.images.generate(model=IMAGE, prompt="a fox that leaves", stream=True, partial_images=2)
    first = await asyncio.wait_for(stream.__aiter__().__anext__(), WAIT)
    assert first.type == "image_generation.partial_image"
    await stream.close()
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"], timeout=WAIT)
    upstream.image_hold.set()
    assert (row["status"], row["end_reason"], row["estimated"]) == (499, "client_gone", 1)
    assert row["cost_micros"] == cost(row["input_tokens"], row["output_tokens"], 1) == charged(seed, row)  # the image delivered in part
    assert kit.balance_of(seed, user_id) == 10_000_000 - row["cost_micros"]
    kit.assert_invariants(seed)


@pytest.mark.parametrize(("fault", "message"), [(Fault(drop_after=2), "connection dropped"), (Fault(error_after=2), "fake failure mid-stream")])
async def test_a_stream_broken_before_its_completed_event_ends_with_an_error(client, upstream, seed, fault, message):
    upstream.fail_next(fault)
    stream = await client.images.generate(model=IMAGE, prompt="a fox", stream=True, partial_images=2)
    seen = []
    with pytest.raises(openai.APIError) as caught:
        async for event in stream:
            seen.append(event.type)
    assert seen == ["image_generation.partial_image"] * 2
    row = await kit.wait_for_row(seed, stream.response.headers["x-request-id"])
    assert (row["end_reason"], row["estimated"]) == ("upstream_error", 1)
    assert message in row["error_message"] or message in (row["upstream_error"] or "")
    del caught


@pytest.mark.parametrize(
    ("extra", "param"), [({"partial_images": 4}, "partial_images"), ({"partial_images": "2"}, "partial_images"), ({"stream": "yes"}, "stream")]
)
async def test_bad_stream_fields_are_a_clear_400(client, upstream, extra, param):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.images.generate(model=IMAGE, prompt="x", extra_body=extra)
    assert caught.value.param == param
    assert upstream.requests == []


async def test_a_bad_edit_stream_field_is_a_clear_400(client, upstream):
    with pytest.raises(openai.BadRequestError) as caught:
        await client.images.edit(model=IMAGE, image=("a.png", b"x", "image/png"), prompt="x", extra_body={"stream": "maybe"})
    assert caught.value.param == "stream"
    assert upstream.requests == []
