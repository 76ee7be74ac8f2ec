"""``GET /{version}/models`` of a Gemini upstream: the fake's pages proven with
google-genai's pager, then the channel type's listing over loopback (every page,
ids without ``models/``, only models the gateway can serve, each failure)."""

from __future__ import annotations

import pytest
from google import genai
from google.genai import errors, types

from gateway_core.channel_type import ListingLimits
from gateway_core.testing import Fault, upstream_models
from gateway_gemini.channel import GeminiChannel
from gateway_gemini.fake_upstream import EXPECTED_KEY, FakeGemini, model_entry

SERVED = ("gemini-2.5-flash", "gemini-2.5-pro", "gemini-embedding-001")  # the fake's, without Imagen and Live


@pytest.fixture
async def google(fake_upstream) -> FakeGemini:
    return await fake_upstream(FakeGemini())


@pytest.mark.parametrize("version", ["v1beta", "v1"])
async def test_the_fakes_pages_are_what_google_genai_pages_through(google, version):
    options = types.HttpOptions(base_url=google.url, api_version=version)
    client = genai.Client(api_key=EXPECTED_KEY, http_options=options)
    pager = await client.aio.models.list(config={"page_size": 2})
    assert [model.name for model in pager.page] == ["models/gemini-2.5-flash", "models/gemini-2.5-pro"]
    models = [model async for model in pager]
    assert [model.name for model in models] == [entry["name"] for entry in google.models]
    assert [r["path"].split("?")[0] for r in google.requests] == [f"/{version}/models"] * 3  # three pages of two
    assert "pageToken=" in google.requests[-1]["path"] and google.requests[-1]["headers"]["x-goog-api-key"] == EXPECTED_KEY
    embed = next(model for model in models if model.name == "models/gemini-embedding-001")
    assert embed.supported_actions == ["embedContent", "countTokens", "countTextTokens"] and embed.input_token_limit == 1048576
    wrong = genai.Client(api_key="wrong-key", http_options=options)
    with pytest.raises(errors.ClientError) as refused:
        await wrong.aio.models.list()
    assert refused.value.code == 400 and "API key not valid" in refused.value.message


async def test_the_channel_type_lists_only_what_it_serves_without_the_prefix(google):
    google.models = [model_entry(f"gemini-fake-{n:04d}", ["generateContent"]) for n in range(1500)] + google.models  # two pages
    listed = await upstream_models(GeminiChannel(), google.url + "/v1beta", EXPECTED_KEY, models=("gemini-2.5-pro",))
    assert listed.ok and listed.models == (*(f"gemini-fake-{n:04d}" for n in range(1500)), *SERVED)
    assert "gemini-2.5-pro" not in listed.new and len(listed.new) == 1502
    paths = [r["path"] for r in google.requests]
    assert paths[0] == "/v1beta/models?pageSize=1000" and paths[1].startswith("/v1beta/models?pageSize=1000&pageToken=") and len(paths) == 2
    v1 = await upstream_models(GeminiChannel(), google.url, EXPECTED_KEY, settings={"api_version": "v1"}, limits=ListingLimits(pages=1))
    assert v1.message == "the upstream's model list goes on past 1 pages, the most the gateway reads"
    assert google.requests[-1]["path"] == "/v1/models?pageSize=1000"


async def test_a_refused_key_an_empty_list_and_answers_that_are_not_lists(google):
    refused = await upstream_models(GeminiChannel(), google.url, "wrong-key-0123456789")
    assert not refused.ok and refused.status == 400
    assert refused.message.startswith("the upstream refused the channel's key (400): API key not valid")
    assert "wrong-key-0123456789" not in refused.message
    google.models = []
    empty = await upstream_models(GeminiChannel(), google.url, EXPECTED_KEY)
    assert empty.ok and empty.models == () and empty.message == "the upstream lists no models"
    google.fail_next(Fault(status=200, body=b"<!doctype html>"), Fault(status=200, body=[1, 2]), Fault(status=200, body={"models": {}}))
    for _ in range(3):
        listed = await upstream_models(GeminiChannel(), google.url, EXPECTED_KEY)
        assert listed.message == "the upstream answered something that is not a model list"
    google.fail_next(Fault(status=200, body=b"{" + b" " * 5000 + b"}"))
    big = await upstream_models(GeminiChannel(), google.url, EXPECTED_KEY, limits=ListingLimits(page_bytes=4096))
    assert big.message == "the upstream's model list is larger than 4096 bytes a page, the most the gateway reads"
