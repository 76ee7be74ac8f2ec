"""The channel list's requests in flight with Redis: those of every gateway (worker or
replica), not only of the one answering the page."""

from __future__ import annotations

import asyncio
import time

import attrs

from gateway_core.testing import Fault
from gateway_openai.fake_upstream import FakeOpenAI

REDIS_URL = "redis://127.0.0.1:6379/0"


async def test_the_channel_list_counts_requests_in_flight_on_every_gateway(
    relaygate_config, users, seed, start_gateway, browsers, openai_client, fake_upstream, relaygate_redis_prefix
):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("slow", type="openai", base_url=upstream.url, models=["gpt-slow"])
    _, key = seed.key(users["alice"])
    config = attrs.evolve(relaygate_config, redis=REDIS_URL, redis_prefix=relaygate_redis_prefix)
    a, b = start_gateway(config), start_gateway(config)
    upstream.fail_next(Fault(first_byte_delay=4.0), Fault(first_byte_delay=4.0))
    client = openai_client(a.url, key)
    held = [asyncio.ensure_future(client.chat.completions.create(model="gpt-slow", messages=[{"role": "user", "content": "hi"}])) for _ in range(2)]
    root = await browsers(url=b.url)
    assert (await root.sign_in("root"))[0] == 200
    deadline = time.monotonic() + 3.5
    page = ""
    while "2 in flight" not in page:  # both on a; the page is b's
        assert time.monotonic() < deadline, page[-2000:]
        await asyncio.sleep(0.1)
        status, page = await root.get("/console/admin/channels")
        assert status == 200
    for answer in await asyncio.gather(*held):
        assert answer.choices[0].message.content
