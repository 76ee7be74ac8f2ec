"""A client that reads a stream slowly holds the upstream back instead of filling
the gateway's memory (backpressure), and one that stops reading has its stream
ended after ``write_timeout``: the upstream hung up on, the delivered part
billed (status 499, ``write_timeout``). Over real HTTP."""

from __future__ import annotations

import asyncio
import time

import attrs
import orjson
import pytest

from gateway_core.config import Config

MODEL = "gpt-slow"


@pytest.fixture
def relaygate_config(tmp_path) -> Config:
    return Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",), write_timeout=1.0)


@pytest.fixture
def secret(seed, flooding_upstream):
    flooding_upstream.mode = "stream"
    seed.channel("endless", type="openai", base_url=flooding_upstream.url, models=[MODEL])
    seed.price(MODEL, 1_000_000, 1_000_000)
    return seed.key(seed.user("alice", balance_usd=100))[1]


async def open_stream(port: int, secret: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A streaming chat request whose answer's head is read, and nothing more."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = orjson.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "stream": True})
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + secret.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 200")
    return reader, writer


async def test_a_client_that_stops_reading_has_its_stream_ended_and_billed(start_gateway, secret, flooding_upstream, seed):
    gateway = start_gateway()
    reader, writer = await open_stream(gateway.port, secret)
    try:
        started = time.monotonic()
        deadline = started + 20
        while flooding_upstream.cut == 0:  # the gateway hangs up on the upstream
            assert time.monotonic() < deadline, "the stream was never ended"
            await asyncio.sleep(0.05)
        assert time.monotonic() - started < 15
        # what the upstream could send is what the sockets hold, not a growing buffer
        assert flooding_upstream.sent[0] < 64 * 1024 * 1024
        for _ in range(100):
            rows = seed.rows("SELECT status, end_reason, output_tokens, estimated, cost_micros FROM usage_logs")
            if rows:
                break
            await asyncio.sleep(0.05)
        assert len(rows) == 1
        row = rows[0]
        assert (row["status"], row["end_reason"]) == (499, "write_timeout")
        assert row["output_tokens"] > 0 and row["cost_micros"] > 0  # what was delivered is billed
    finally:
        writer.close()


async def test_a_slow_reader_gets_the_whole_stream_without_the_gateway_buffering_it(start_gateway, relaygate_config, seed, fake_upstream):
    from gateway_openai.fake_upstream import FakeOpenAI

    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("echo", type="openai", base_url=upstream.url, models=["gpt-echo"])
    seed.price("gpt-echo", 0, 0, free=True)
    secret = seed.key(seed.user("bob"))[1]
    gateway = start_gateway(attrs.evolve(relaygate_config, write_timeout=2.0))
    reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
    body = orjson.dumps({"model": "gpt-echo", "messages": [{"role": "user", "content": "hi there"}], "stream": True})
    writer.write(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nConnection: close\r\n"
        b"Authorization: Bearer " + secret.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    )
    await writer.drain()
    data = b""
    while chunk := await asyncio.wait_for(reader.read(16), 10):  # slowly, a few bytes at a time
        data += chunk
        await asyncio.sleep(0.001)
    writer.close()
    assert b"data: [DONE]" in data and b"echo" in data
