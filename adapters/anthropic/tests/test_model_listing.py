"""``GET /v1/models`` of an Anthropic upstream: the fake's pages proven with the
official SDK's auto-paging, then the channel type's listing over loopback (every
page followed, each way it can fail)."""

from __future__ import annotations

import anthropic
import pytest

from gateway_anthropic.channel import AnthropicChannel
from gateway_anthropic.fake_upstream import EXPECTED_KEY, MODELS, FakeAnthropic
from gateway_core.channel_type import ListingLimits
from gateway_core.testing import Fault, upstream_models


@pytest.fixture
async def claude(fake_upstream) -> FakeAnthropic:
    return await fake_upstream(FakeAnthropic())


async def test_the_fakes_pages_are_what_the_official_sdk_pages_through(claude):
    async with anthropic.AsyncAnthropic(base_url=claude.url, api_key=EXPECTED_KEY, max_retries=0) as client:
        first = await client.models.list(limit=2)
        assert [model.id for model in first.data] == list(MODELS[:2]) and first.has_more and first.last_id == MODELS[1]
        every = [model.id async for model in await client.models.list(limit=2)]  # auto-paging: two pages
        assert every == list(MODELS)
        assert all(model.type == "model" and model.display_name and model.created_at.year == 2025 for model in first.data)
        before = await client.models.list(limit=1, before_id=MODELS[2])
        assert [model.id for model in before.data] == [MODELS[1]]
    paged = [request["path"] for request in claude.requests[1:3]]
    assert paged == ["/v1/models?limit=2", f"/v1/models?limit=2&after_id={MODELS[1]}"]
    assert claude.requests[-1]["headers"]["anthropic-version"]  # the SDK's own date
    async with anthropic.AsyncAnthropic(base_url=claude.url, api_key="sk-ant-wrong", max_retries=0) as wrong:
        with pytest.raises(anthropic.AuthenticationError):
            await wrong.models.list()


async def test_the_channel_type_follows_every_page(claude):
    claude.models = [f"claude-fake-{n:04d}" for n in range(2500)]  # three pages of 1000
    listed = await upstream_models(AnthropicChannel(), claude.url + "/v1", EXPECTED_KEY, models=("claude-fake-0000",))
    assert listed.ok and listed.models == tuple(claude.models) and len(listed.new) == 2499
    assert [r["path"] for r in claude.requests] == [
        "/v1/models?limit=1000", "/v1/models?limit=1000&after_id=claude-fake-0999", "/v1/models?limit=1000&after_id=claude-fake-1999"]  # fmt: skip
    assert {(r["headers"]["x-api-key"], r["headers"]["anthropic-version"]) for r in claude.requests} == {(EXPECTED_KEY, "2023-06-01")}
    capped = await upstream_models(AnthropicChannel(), claude.url, EXPECTED_KEY, limits=ListingLimits(pages=2))
    assert not capped.ok and capped.message == "the upstream's model list goes on past 2 pages, the most the gateway reads"


async def test_a_refused_key_an_answer_that_is_not_a_list_and_an_oversized_page(claude):
    refused = await upstream_models(AnthropicChannel(), claude.url, "sk-ant-wrong-key-0123456789")
    assert not refused.ok and refused.status == 401
    assert refused.message == "the upstream refused the channel's key (401): invalid x-api-key"
    claude.fail_next(Fault(status=200, body=b"not json at all"), Fault(status=200, body={"data": "claude"}))
    for _ in range(2):
        listed = await upstream_models(AnthropicChannel(), claude.url, EXPECTED_KEY)
        assert listed.message == "the upstream answered something that is not a model list"
    big = await upstream_models(AnthropicChannel(), claude.url, EXPECTED_KEY, limits=ListingLimits(page_bytes=200))
    assert big.message == "the upstream's model list is larger than 200 bytes a page, the most the gateway reads"
