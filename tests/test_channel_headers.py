"""A channel's own headers (``relaygate channel add --header``) reach its upstream on
every request, added by the core: for a channel type that does nothing about
them, for each bundled one, and for uploads. The channel type's own headers win
a clash, and no header goes twice."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from aiohttp import web

from gateway_core import ChannelType, ChatResponse, Exchange, JsonReply, StopReason, TextPart, Usage, endpoints, hookimpl
from gateway_core.testing import FakeUpstream
from gateway_core.upstream import parse_answer, post, read_all
from gateway_anthropic.fake_upstream import EXPECTED_KEY as ANTHROPIC_KEY
from gateway_anthropic.fake_upstream import FakeAnthropic
from gateway_gemini.fake_upstream import FakeGemini
from gateway_openai.fake_upstream import FakeOpenAI

OPERATOR_HEADERS = {"X-Org": "acme", "x-trace-tag": "blue", "authorization": "Bearer the-operators-own"}
CHAT = [{"role": "user", "content": "hello there"}]


class TextUpstream(FakeUpstream):
    """``POST /answer {"model", "prompt"}`` → ``{"text"}``; notes every Authorization header that came."""

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/answer", self.handle)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        _, refusal = await self.admit(request, body, authorizations=request.headers.getall("Authorization", []))
        return refusal or self.answer({"text": f"you said: {body['prompt']}"})


class CookieSettingUpstream(TextUpstream):
    """Answers as :class:`TextUpstream` does, and sets a cookie on every answer
    (as providers behind a CDN do: a bot-management cookie)."""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        response = await super().handle(request)
        response.set_cookie("__cf_bm", "session-of-whoever-came-first", path="/")
        return response


class BareChannel(ChannelType):
    """A channel type that knows nothing of channel headers: it sends its key only."""

    name = "bare"

    def wire(self, endpoint: str) -> str | None:
        return "bare" if endpoint == endpoints.CHAT else None

    async def send(self, exchange: Exchange) -> JsonReply:
        target = exchange.target
        prompt = exchange.request.messages[-1].parts[0].text  # type: ignore[union-attr]
        body = f'{{"model": "{target.upstream_model}", "prompt": "{prompt}"}}'.encode()
        headers = {"Authorization": f"Bearer {target.api_key}", "Content-Type": "application/json"}
        response = await post(exchange, target.channel.base_url + "/answer", headers=headers, body=body, error_message=lambda status, data: data.decode())
        answer = parse_answer(await read_all(response))
        usage = Usage(input_tokens=3, output_tokens=3)
        reply = ChatResponse(id="bare-1", model=target.upstream_model, parts=(TextPart(answer["text"]),), stop_reason=StopReason.END_TURN, usage=usage)
        return JsonReply(body=None, response=reply, usage=usage)


class BarePlugin:
    @hookimpl
    def register_channel_types(self, register: Any) -> None:
        register(BareChannel())


@pytest.fixture
def relaygate_plugins() -> list[Any]:
    return [BarePlugin()]


@pytest.fixture
def key(seed) -> str:
    return seed.key(seed.user("alice"))[1]


def client(gateway, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0)


async def test_a_channel_type_that_ignores_headers_still_sends_the_channels(seed, key, fake_upstream, start_gateway):
    upstream = await fake_upstream(TextUpstream())
    seed.channel("plain", type="bare", base_url=upstream.url, models=["bare-1"], headers=OPERATOR_HEADERS)
    seed.channel("quiet", type="bare", base_url=upstream.url, models=["bare-2"])
    api = client(start_gateway(), key)
    answer = await api.chat.completions.create(model="bare-1", messages=CHAT)
    assert answer.choices[0].message.content == "you said: hello there"
    sent = upstream.requests[-1]
    assert (sent["headers"]["X-Org"], sent["headers"]["x-trace-tag"]) == ("acme", "blue")
    assert sent["authorizations"] == ["Bearer sk-upstream-test"]  # the channel type's own wins, sent once
    await api.chat.completions.create(model="bare-2", messages=CHAT)  # a channel without headers sends none
    assert "X-Org" not in upstream.requests[-1]["headers"] and upstream.requests[-1]["authorizations"] == ["Bearer sk-upstream-test"]


async def test_a_cookie_an_upstream_sets_is_not_sent_on_later_requests(seed, key, fake_upstream, start_gateway):
    upstream = await fake_upstream(CookieSettingUpstream())
    # by a host name: aiohttp's own jar keeps no cookie of a bare IP address
    seed.channel("plain", type="bare", base_url=upstream.url.replace("127.0.0.1", "localhost"), models=["bare-1"])
    bob = seed.key(seed.user("bob"))[1]
    gateway = start_gateway()
    await client(gateway, key).chat.completions.create(model="bare-1", messages=CHAT)
    answer = await client(gateway, bob).chat.completions.with_raw_response.create(model="bare-1", messages=CHAT)
    assert "set-cookie" not in answer.headers  # nor is it passed to the client
    assert [sent["headers"].get("Cookie") for sent in upstream.requests] == [None, None]


@pytest.mark.parametrize("channel_type", ["openai", "anthropic", "gemini"])
async def test_every_bundled_channel_type_sends_them(channel_type, seed, key, fake_upstream, start_gateway):
    fake, base_url, keys = {
        "openai": (FakeOpenAI(), "", ("sk-upstream-test",)),
        "anthropic": (FakeAnthropic(), "/v1", (ANTHROPIC_KEY,)),
        "gemini": (FakeGemini(), "/v1beta", ("sk-upstream-test",)),
    }[channel_type]
    upstream = await fake_upstream(fake)
    seed.channel("up", type=channel_type, base_url=upstream.url + base_url, models=["m-1"], api_keys=keys, headers=OPERATOR_HEADERS)
    api = client(start_gateway(), key)
    for stream in (False, True):
        if stream:
            async for _ in await api.chat.completions.create(model="m-1", messages=CHAT, stream=True):
                pass
        else:
            await api.chat.completions.create(model="m-1", messages=CHAT)
        headers = upstream.requests[-1]["headers"]
        assert (headers["X-Org"], headers["x-trace-tag"]) == ("acme", "blue")
        if channel_type == "openai":  # the key is the channel type's, not the operator's Authorization
            assert headers["Authorization"] == "Bearer sk-upstream-test"


async def test_an_upload_sends_them_too(seed, key, fake_upstream, start_gateway):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("oai", type="openai", base_url=upstream.url, models=["gpt-image-1"], headers=OPERATOR_HEADERS)
    api = client(start_gateway(), key)
    await api.images.edit(model="gpt-image-1", image=("a.png", b"\x89PNG" * 100, "image/png"), prompt="add a hat")
    sent = upstream.requests[-1]
    assert sent["path"] == "/v1/images/edits" and sent["headers"]["X-Org"] == "acme"
    assert sent["headers"]["Authorization"] == "Bearer sk-upstream-test"
