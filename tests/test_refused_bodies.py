"""Request bodies the gateway refuses (too large, too slow) end their connection,
over real HTTP: the official openai SDK sees the 413 instead of a timeout, a
``Content-Length`` over the limit is answered before a byte of the body is sent,
a chunked body stops being read at the limit, a body trickling in past
``body_timeout`` gets 408 in the caller's shape — and a normal request keeps
its connection."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import attrs
import openai
import orjson
import pytest

from gateway_core.config import Config
from gateway_openai.fake_upstream import FakeOpenAI

MODEL = "gpt-test"
LIMIT = 1024 * 1024
CHAT = [{"role": "user", "content": "hi"}]


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",), max_body_bytes=LIMIT)


@pytest.fixture
async def upstream(fake_upstream):
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def secret(seed, upstream):
    seed.channel("up", type="openai", base_url=upstream.url, models=[MODEL, "gpt-image-1"])
    seed.price(MODEL, 0, 0, free=True)
    return seed.key(seed.user("alice"))[1]


def sdk(gateway, key) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=gateway.url + "/v1", api_key=key, max_retries=0, timeout=20)


class Connection:
    """One raw HTTP/1.1 connection: what a client sends, byte for byte, and what comes back."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        return cls(*await asyncio.open_connection("127.0.0.1", port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def answer(self, timeout: float = 10) -> tuple[int, dict[str, str], dict]:
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), timeout)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        body = await asyncio.wait_for(self.reader.readexactly(int(headers["content-length"])), timeout)
        return int(lines[0].split()[1]), headers, orjson.loads(body)

    async def closed_by_gateway(self, timeout: float = 10) -> bool:
        """Whether the gateway ends the connection (what may still come is read and dropped)."""
        try:
            async with asyncio.timeout(timeout):
                while await self.reader.read(65536):
                    pass
            return True
        except ConnectionError:
            return True
        except TimeoutError:
            return False

    def close(self) -> None:
        self.writer.close()


@contextlib.asynccontextmanager
async def sending(work: Coroutine[Any, Any, None]) -> AsyncIterator[None]:
    """``work`` (a client still sending) runs while the block reads the answer, and is stopped after it."""
    sender = asyncio.ensure_future(work)
    try:
        yield
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)


def post_head(secret: str, path: str = "/v1/chat/completions", **headers: str) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: gateway", f"Authorization: Bearer {secret}", "Content-Type: application/json"]
    lines += [f"{name.replace('_', '-')}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_the_sdk_sending_a_prompt_over_the_limit_sees_the_413(start_gateway, secret, upstream):
    gateway = start_gateway()
    started = time.monotonic()
    for _ in range(3):
        with pytest.raises(openai.APIStatusError) as caught:
            async with sdk(gateway, secret) as client:
                await client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "x" * (5 * LIMIT)}])
        assert caught.value.status_code == 413 and caught.value.code == "request_too_large"
        assert caught.value.response.headers["connection"] == "close"
        assert caught.value.response.headers["x-request-id"].startswith("req_")
    assert time.monotonic() - started < 15
    async with sdk(gateway, secret) as client:
        completion = await client.chat.completions.create(model=MODEL, messages=CHAT)  # small ones pass
    assert completion.choices[0].message.content == "echo: hi"
    assert len(upstream.requests) == 1


async def test_a_content_length_over_the_limit_is_answered_before_the_body_is_sent(start_gateway, secret):
    gateway = start_gateway()
    for declared in (LIMIT + 1, 10**12):  # within the drain's budget, and far past it
        connection = await Connection.open(gateway.port)
        try:
            await connection.send(post_head(secret, Content_Length=str(declared)))
            status, headers, body = await connection.answer()  # not a byte of the body sent
            assert (status, headers["connection"]) == (413, "close")
            assert body["error"]["code"] == "request_too_large"
            if declared > 10**9:  # nothing would be read: closed at once
                assert await connection.closed_by_gateway(timeout=5)
        finally:
            connection.close()


async def test_an_upload_declared_over_the_limit_is_refused_at_once(start_gateway, secret, upstream):
    gateway = start_gateway()
    connection = await Connection.open(gateway.port)
    try:
        started = time.monotonic()
        head = post_head(secret, "/v1/images/edits", Content_Length=str(10**11))
        await connection.send(head.replace(b"application/json", b"multipart/form-data; boundary=xyz"))
        status, headers, body = await connection.answer()
        assert (status, headers["connection"], body["error"]["code"]) == (413, "close", "request_too_large")
        assert await connection.closed_by_gateway(timeout=5)
        assert time.monotonic() - started < 5
    finally:
        connection.close()
    assert upstream.requests == []


async def test_a_chunked_body_stops_being_read_at_the_limit_and_its_connection_closes(start_gateway, secret, upstream):
    gateway = start_gateway()
    connection = await Connection.open(gateway.port)
    chunk = b"x" * 65536
    try:
        await connection.send(post_head(secret, Transfer_Encoding="chunked"))
        sent = 0

        async def keep_sending() -> None:  # a client that would send forever
            nonlocal sent
            with contextlib.suppress(ConnectionError):
                while True:
                    await connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    sent += len(chunk)

        async with sending(keep_sending()):
            status, headers, body = await connection.answer()
            assert (status, headers["connection"], body["error"]["code"]) == (413, "close", "request_too_large")
            assert await connection.closed_by_gateway()
        assert sent < 200 * LIMIT  # read and dropped, a bounded amount, then closed
    finally:
        connection.close()
    assert upstream.requests == []


async def test_a_body_trickling_in_past_body_timeout_is_408_and_closed(start_gateway, relaygate_config, secret, upstream):
    gateway = start_gateway(attrs.evolve(relaygate_config, body_timeout=1.0))
    connection = await Connection.open(gateway.port)
    try:
        await connection.send(post_head(secret, Content_Length="1000"))
        started = time.monotonic()

        async def trickle() -> None:
            for _ in range(100):
                await connection.send(b" ")
                await asyncio.sleep(0.2)

        async with sending(trickle()):
            status, headers, body = await connection.answer()
        assert 0.9 < time.monotonic() - started < 5
        assert (status, headers["connection"]) == (408, "close")
        assert body["error"]["code"] == "request_timeout" and "1 s" in body["error"]["message"]
        assert await connection.closed_by_gateway()
    finally:
        connection.close()
    assert upstream.requests == []


async def test_a_request_read_whole_keeps_its_connection(start_gateway, secret):
    gateway = start_gateway()
    connection = await Connection.open(gateway.port)
    try:
        for _ in range(2):  # two requests on one connection
            body = orjson.dumps({"model": MODEL, "messages": CHAT})
            await connection.send(post_head(secret, Content_Length=str(len(body))) + body)
            status, headers, answer = await connection.answer()
            assert status == 200 and "connection" not in headers
            assert answer["choices"][0]["message"]["content"] == "echo: hi"
        # answered without its body being read (an unknown path): answered, then closed
        await connection.send(post_head(secret, "/v1/nowhere", Content_Length=str(len(body))) + body)
        status, headers, answer = await connection.answer()
        assert (status, headers.get("connection"), answer["error"]["code"]) == (404, "close", "unknown_path")
        assert await connection.closed_by_gateway()
    finally:
        connection.close()
