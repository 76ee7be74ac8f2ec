"""What billing reads of each OpenAI request: the call's BillingHints, set by parsing."""

from __future__ import annotations

from typing import Any

import orjson

from gateway_core import BillingHints, MediaUsage, RouteSpec, endpoints
from gateway_openai.protocol import OpenAIProtocol

PROTOCOL = OpenAIProtocol()
CHAT = RouteSpec("/v1/chat/completions", endpoints.CHAT)
RESPONSES = RouteSpec("/v1/responses", endpoints.RESPONSES)
IMAGES = RouteSpec("/v1/images/generations", endpoints.IMAGES_GENERATIONS)
SPEECH = RouteSpec("/v1/audio/speech", endpoints.AUDIO_SPEECH)
MESSAGES = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def hints(route: RouteSpec, body: dict[str, Any]) -> BillingHints:
    return PROTOCOL.parse(route, orjson.dumps(body), {}, {}, {}).billing


def test_chat_caps_its_output_by_max_completion_tokens_then_max_tokens() -> None:
    assert hints(CHAT, MESSAGES | {"max_tokens": 100}) == BillingHints(max_output_tokens=100)
    assert hints(CHAT, MESSAGES | {"max_completion_tokens": 50, "max_tokens": 100}).max_output_tokens == 50
    assert hints(CHAT, MESSAGES | {"max_completion_tokens": 0, "max_tokens": 100}).max_output_tokens == 100
    for value in (None, "100", True, 0, -5):
        assert hints(CHAT, MESSAGES | {"max_tokens": value}) == BillingHints()
    assert hints(CHAT, MESSAGES) == BillingHints()


def test_responses_cap_their_output_by_max_output_tokens() -> None:
    assert hints(RESPONSES, {"model": "m", "input": "hi", "max_output_tokens": 7}) == BillingHints(max_output_tokens=7)
    assert hints(RESPONSES, {"model": "m", "input": "hi"}) == BillingHints()


def test_images_name_their_count_and_price_variants() -> None:
    body = {"model": "dall-e-3", "prompt": "a cat", "n": 2, "size": "1024x1792", "quality": "hd"}
    assert hints(IMAGES, body) == BillingHints(
        max_output_tokens=0, media=MediaUsage(images=2), price_variants=("dall-e-3:1024x1792:hd", "dall-e-3:1024x1792")
    )  # priced per image: no tokens reserved
    assert hints(IMAGES, {"model": "dall-e-3", "prompt": "a cat"}) == BillingHints(max_output_tokens=0, media=MediaUsage(images=1))


def test_token_billed_images_reserve_the_tokens_of_their_size_and_quality() -> None:
    def per_image(**fields: Any) -> int | None:
        return hints(IMAGES, {"model": "gpt-image-1", "prompt": "a cat", **fields}).max_output_tokens

    assert per_image(size="1024x1024", quality="low") == 272
    assert per_image(size="1536x1024", quality="medium") == 1568
    assert per_image(size="1024x1536", quality="high") == 6240
    assert per_image(size="1024x1024") == per_image(size="1024x1024", quality="auto") == 4160  # auto: the highest
    assert per_image(quality="low") == per_image(size="auto", quality="low") == 408  # auto size: the largest
    assert per_image() == 6240
    assert hints(IMAGES, {"model": "some-image-model", "prompt": "a cat"}).max_output_tokens is None  # unknown: the default cap


def test_speech_names_its_characters() -> None:
    assert hints(SPEECH, {"model": "tts", "input": "hello"}) == BillingHints(media=MediaUsage(characters=5))
