"""Listing an upstream's models, the core's part: the admin layer's runner (every
front's) and ``gateway_core.upstream_models`` against fake upstreams on loopback —
the default "cannot list", a broken adapter, missing keys, the caps on pages and ids,
redirects, an unreachable upstream, and no key in any message or log line."""

from __future__ import annotations

import logging

import pytest
from aiohttp import web

from gateway_core import ChannelType, Exchange, ModelQuery, Reply
from gateway_core.channel_type import ListingLimits, Timeouts
from gateway_core.testing import FakeUpstream, Fault, free_port, upstream_models
from gateway_core.upstream_models import Page, collect_pages, entries, get_page
from gateway_openai.channel_rerank import RerankChannel

KEY = "sk-listing-secret-0123456789"


class Paged(FakeUpstream):
    """``GET /models?cursor=N``: ``per_page`` ids a page, ``next`` the next cursor."""

    total: int = 25
    per_page: int = 10

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/models", self.models)

    async def models(self, request: web.Request) -> web.StreamResponse:
        fault, refused = await self.admit(request, None)
        if refused is not None:
            return refused
        start = int(request.query.get("cursor", "0"))
        ids = [f"model-{n}" for n in range(start, min(start + self.per_page, self.total))]
        following = start + self.per_page
        return self.answer({"ids": ids, "next": str(following) if following < self.total else None}, fault)


class PagedChannel(ChannelType):
    """A channel type listing :class:`Paged`'s models, cursor by cursor."""

    name = "paged"

    def wire(self, endpoint: str) -> str | None:
        return None

    async def send(self, exchange: Exchange) -> Reply:
        raise NotImplementedError

    async def list_models(self, query: ModelQuery) -> list[str]:
        async def fetch(cursor: str | None) -> Page:
            url = query.channel.base_url + "/models" + (f"?cursor={cursor}" if cursor else "")
            page = await get_page(query, url, headers={"Authorization": f"Bearer {query.api_key}"}, error_message=lambda s, b: b.decode())
            return entries(page, "ids"), page.get("next")

        return await collect_pages(query, fetch)


class Broken(PagedChannel):
    name = "broken"

    async def list_models(self, query: ModelQuery) -> list[str]:
        raise KeyError(query.api_key)  # a bug that carries the key


@pytest.fixture
async def paged(fake_upstream) -> Paged:
    return await fake_upstream(Paged(api_key=KEY))


async def test_pages_are_followed_and_capped(paged):
    listed = await upstream_models(PagedChannel(), paged.url, KEY)
    assert listed.ok and listed.models == tuple(f"model-{n}" for n in range(25)) and len(paged.requests) == 3
    assert (await upstream_models(PagedChannel(), paged.url, KEY, limits=ListingLimits(pages=2))).message == (
        "the upstream's model list goes on past 2 pages, the most the gateway reads")  # fmt: skip
    assert (await upstream_models(PagedChannel(), paged.url, KEY, limits=ListingLimits(models=15))).message == (
        "the upstream lists more than 15 models, the most the gateway reads")  # fmt: skip


async def test_every_page_together_comes_within_the_first_byte_timeout(paged):
    paged.fail_next(*(Fault(first_byte_delay=0.25) for _ in range(3)))  # each page in time, not all three
    slow = await upstream_models(PagedChannel(), paged.url, KEY, timeouts=Timeouts(connect=1, first_byte=0.5, idle=1))
    assert (slow.ok, slow.message) == (False, "the upstream did not answer within 0.5 s") and len(paged.requests) == 2


async def test_what_cannot_be_listed_is_a_message_never_a_trace(paged, caplog):
    caplog.set_level(logging.DEBUG)
    rerank = await upstream_models(RerankChannel(), paged.url, KEY)
    assert (rerank.ok, rerank.message, rerank.status) == (False, "the channel type 'rerank' cannot list its upstream's models", None)
    assert (await upstream_models(RerankChannel(), paged.url, "")).message == rerank.message  # whatever its keys
    broken = await upstream_models(Broken(), paged.url, KEY)
    assert broken.message == "the channel type 'broken' failed to list its models (KeyError)"
    keyless = await upstream_models(PagedChannel(), paged.url, "")
    assert keyless.message == "the channel has no upstream key to ask its upstream with" and len(paged.requests) == 0
    paged.fail_next(Fault(status=503, body=f"overloaded, key {KEY}".encode()))
    failed = await upstream_models(PagedChannel(), paged.url, KEY)
    assert failed.message == "the upstream is overloaded (503): overloaded, key sk-l…6789" and failed.status == 503
    down = await upstream_models(PagedChannel(), f"http://127.0.0.1:{free_port()}", KEY)
    assert down.message.startswith("could not connect to the upstream: ") and down.status is None
    assert KEY not in caplog.text and all(KEY not in m for m in (rerank.message, broken.message, failed.message, down.message))


async def test_a_redirect_is_not_followed(fake_upstream):
    class Moving(Paged):
        def add_routes(self, router: web.UrlDispatcher) -> None:
            router.add_get("/models", self.moved)

        async def moved(self, request: web.Request) -> web.Response:
            return web.Response(status=302, headers={"Location": "http://127.0.0.1:9/models"})

    moving = await fake_upstream(Moving(api_key=KEY))
    listed = await upstream_models(PagedChannel(), moving.url, KEY)
    assert listed.message == "the upstream answered 302 instead of a model list"
