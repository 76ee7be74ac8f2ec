"""The test kit's fake upstream (gateway_core.testing.FakeUpstream) over loopback
HTTP: what it records, how it checks keys, and every fault it can play."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import aiohttp
import orjson
import pytest
from aiohttp import web
from multidict import CIMultiDict

from gateway_core.testing import FakeUpstream, Fault, UpstreamServers

KEY = "sk-upstream-test"
WORDS = "one two three four five"


class WordsUpstream(FakeUpstream):
    """A tiny wire: ``POST /chat {"text"}`` answers the text back, or streams its
    words as newline-delimited JSON ending with ``{"done": true}``."""

    malformed_chunk = b"{not json}\n"
    error_event = b'{"error": "fake failure mid-stream"}\n'

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/chat", self.chat)

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        fault, refusal = await self.admit(request, body, route="chat")
        if refusal is not None:
            return refusal
        if body.get("stream"):
            lines = [orjson.dumps({"delta": word}) + b"\n" for word in body["text"].split()]
            return await self.stream(request, lines, fault, content_type="application/x-ndjson", end=b'{"done": true}\n')
        return self.answer({"text": body["text"]}, fault)


async def call(fake: FakeUpstream, body: dict[str, Any], key: str = KEY, timeout: float = 5.0) -> tuple[int, CIMultiDict[str], bytes]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) as session:
        async with session.post(fake.url + "/chat", json=body, headers={"Authorization": f"Bearer {key}"}) as response:
            return response.status, response.headers.copy(), await response.read()


async def test_it_records_each_request_and_answers(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    assert fake.url.startswith("http://127.0.0.1:") and not fake.url.endswith("/")
    status, _, body = await call(fake, {"text": WORDS})
    assert (status, orjson.loads(body)) == (200, {"text": WORDS})
    (seen,) = fake.requests
    assert (seen["path"], seen["body"], seen["route"]) == ("/chat", {"text": WORDS}, "chat")
    assert seen["headers"]["Authorization"] == f"Bearer {KEY}"


async def test_a_wrong_key_is_refused_unless_any_key_is_accepted(fake_upstream):
    strict = await fake_upstream(WordsUpstream())
    status, _, body = await call(strict, {"text": "hi"}, key="sk-wrong")
    assert status == 401 and orjson.loads(body)["error"]["message"] == "Incorrect API key provided."
    lenient = await fake_upstream(WordsUpstream(api_key=None))
    assert (await call(lenient, {"text": "hi"}, key="sk-anything"))[0] == 200


async def test_faults_play_once_each_in_order(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(status=429, headers={"retry-after": "7"}), Fault(status=502, body=b"<html>bad gateway</html>"))
    status, headers, body = await call(fake, {"text": "a"})
    assert (status, headers["retry-after"]) == (429, "7")
    assert orjson.loads(body) == {"error": {"message": "fake failure 429", "type": "invalid_request_error"}}
    assert (await call(fake, {"text": "a"}))[::2] == (502, b"<html>bad gateway</html>")
    assert (await call(fake, {"text": "a"}))[0] == 200
    assert len(fake.requests) == 3


async def test_a_slow_first_byte(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(first_byte_delay=0.3))
    started = time.monotonic()
    assert (await call(fake, {"text": "a"}))[0] == 200
    assert time.monotonic() - started >= 0.3


async def test_a_malformed_answer_and_a_malformed_stream_chunk(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(malformed=True), Fault(malformed=True))
    _, _, body = await call(fake, {"text": "a"})
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(body)
    _, _, stream = await call(fake, {"text": WORDS, "stream": True})
    assert stream.splitlines() == [b'{"delta":"one"}', b"{not json}", b'{"delta":"three"}', b'{"delta":"four"}', b'{"delta":"five"}', b'{"done": true}']


async def test_a_stream_paced_by_chunk_delay_and_ended(fake_upstream):
    fake = await fake_upstream(WordsUpstream(chunk_delay=0.05))
    started = time.monotonic()
    _, headers, stream = await call(fake, {"text": WORDS, "stream": True})
    assert time.monotonic() - started >= 0.25
    assert headers["Content-Type"] == "application/x-ndjson"
    assert [orjson.loads(line) for line in stream.splitlines()][-2:] == [{"delta": "five"}, {"done": True}]


async def test_a_stream_dropped_mid_way(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(drop_after=2))
    lines: list[bytes] = []
    async with aiohttp.ClientSession() as session:
        async with session.post(fake.url + "/chat", json={"text": WORDS, "stream": True}, headers={"Authorization": f"Bearer {KEY}"}) as response:
            with pytest.raises(aiohttp.ClientPayloadError):
                async for line in response.content:
                    lines.append(line)
    assert lines == [b'{"delta":"one"}\n', b'{"delta":"two"}\n']


async def test_an_error_event_mid_stream(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(error_after=3))
    _, _, stream = await call(fake, {"text": WORDS, "stream": True})
    assert stream.splitlines()[3:] == [b'{"error": "fake failure mid-stream"}']


async def test_it_counts_the_requests_the_caller_hung_up_on(fake_upstream):
    fake = await fake_upstream(WordsUpstream())
    fake.fail_next(Fault(first_byte_delay=5))
    with pytest.raises(asyncio.TimeoutError):
        await call(fake, {"text": "a"}, timeout=0.2)
    deadline = time.monotonic() + 3
    while fake.cancelled == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    assert fake.cancelled == 1


async def test_servers_stop_when_closed():
    async with UpstreamServers() as servers:
        fake = await servers.start(WordsUpstream())
        assert (await call(fake, {"text": "a"}))[0] == 200
    with pytest.raises(aiohttp.ClientConnectionError):
        await call(fake, {"text": "a"})


def test_a_fake_without_routes_says_so():
    with pytest.raises(NotImplementedError, match="FakeUpstream must add its routes"):
        FakeUpstream().app()
