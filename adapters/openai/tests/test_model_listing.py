"""``GET /v1/models`` of an OpenAI upstream: the fake's list proven with the official
SDK, then the channel type's listing over loopback, and each way it can fail."""

from __future__ import annotations

import openai
import pytest

from gateway_core.channel_type import ListingLimits, Timeouts
from gateway_core.testing import Fault, upstream_models
from gateway_openai.channel import OpenAIChannel
from gateway_openai.fake_upstream import EXPECTED_KEY, MODELS


async def test_the_fakes_list_is_what_the_official_sdk_reads(upstream):
    async with openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key=EXPECTED_KEY, max_retries=0) as client:
        listed = [model async for model in client.models.list()]
    assert [model.id for model in listed] == list(MODELS)
    assert {model.object for model in listed} == {"model"} and all(model.owned_by and model.created for model in listed)
    async with openai.AsyncOpenAI(base_url=upstream.url + "/v1", api_key="sk-wrong", max_retries=0) as wrong:
        with pytest.raises(openai.AuthenticationError) as refused:
            await wrong.models.list()
    assert refused.value.status_code == 401


async def test_the_channel_type_lists_the_upstreams_models_with_the_channels_key(upstream):
    listed = await upstream_models(OpenAIChannel(), upstream.url + "/v1/", EXPECTED_KEY, models=("gpt-4o",))
    assert listed.ok and listed.models == MODELS
    assert listed.new == tuple(m for m in MODELS if m != "gpt-4o")
    assert listed.message == f"the upstream lists {len(MODELS)} models, {len(MODELS) - 1} not yet served by the channel"
    request = upstream.requests[-1]
    assert request["path"] == "/v1/models" and request["headers"]["Authorization"] == f"Bearer {EXPECTED_KEY}"
    matching = await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY, match="gpt-4o*")
    assert matching.models == ("gpt-4o-mini", "gpt-4o") and "matching 'gpt-4o*'" in matching.message


async def test_a_refused_key_is_said_so_and_the_key_never_shown(upstream):
    key = "sk-wrong-key-abcdefghijkl"
    upstream.fail_next(Fault(status=401, body={"error": {"message": f"Incorrect API key provided: {key}.", "type": "invalid_request_error"}}))
    upstream.api_key = None  # the fault answers, with the key echoed as some servers do
    listed = await upstream_models(OpenAIChannel(), upstream.url, key)
    assert not listed.ok and listed.status == 401 and listed.models == ()
    assert listed.message.startswith("the upstream refused the channel's key (401): Incorrect API key provided")
    assert key not in listed.message and "sk-w…ijkl" in listed.message


async def test_an_answer_that_is_not_a_model_list(upstream):
    upstream.fail_next(Fault(status=200, body=b"<html>welcome</html>"), Fault(status=200, body={"object": "list"}), Fault(malformed=True))
    for _ in range(3):
        listed = await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY)
        assert (listed.ok, listed.message) == (False, "the upstream answered something that is not a model list")
    upstream.fail_next(Fault(status=200, body=[{"id": "llama-3-70b", "object": "model"}, {"id": 7}]))  # Together's bare list
    assert (await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY)).models == ("llama-3-70b",)


async def test_an_oversized_list_a_slow_upstream_and_a_missing_route(upstream, fake_upstream):
    upstream.models = [f"model-{n:05d}" for n in range(2000)]
    listed = await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY, limits=ListingLimits(page_bytes=10_000))
    assert not listed.ok and listed.message == "the upstream's model list is larger than 10000 bytes a page, the most the gateway reads"
    assert (await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY)).models[-1] == "model-01999"  # within the default
    capped = await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY, limits=ListingLimits(models=100))
    assert capped.ok and len(capped.models) == 100
    upstream.fail_next(Fault(first_byte_delay=1.0))
    slow = await upstream_models(OpenAIChannel(), upstream.url, EXPECTED_KEY, timeouts=Timeouts(connect=1, first_byte=0.3, idle=1))
    assert (slow.ok, slow.message, slow.status) == (False, "the upstream did not answer within 0.3 s", None)
    missing = await upstream_models(OpenAIChannel(), upstream.url + "/nowhere", EXPECTED_KEY)
    assert missing.message == "the upstream serves no model list at /nowhere/v1/models (404)"
