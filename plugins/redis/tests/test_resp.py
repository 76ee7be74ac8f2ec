"""The request path's pipelined Redis connection: replies parsed in order,
scripts sent again by source after Redis forgot them, silence and a lost
connection turned into redis-py's exceptions at once, then a new connection."""

from __future__ import annotations

import asyncio
import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from relaygate_redis.resp import RespClient, Script, _Incomplete, encode, parse


def test_replies_are_parsed_whole_or_not_at_all():
    reply = b"*4\r\n:1\r\n$3\r\n0.5\r\n$-1\r\n*1\r\n+OK\r\n"
    assert parse(reply, 0) == ([1, b"0.5", None, [b"OK"]], len(reply))
    for cut in range(len(reply)):
        with pytest.raises(_Incomplete):
            parse(reply[:cut], 0)
    error, end = parse(b"-NOSCRIPT No matching script\r\n", 0)
    assert isinstance(error, ResponseError) and type(error).__name__ == "NoScriptError" and end == 30
    assert encode(["SET", "k", 1, 0.5, b"\x00"]) == b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n1\r\n$3\r\n0.5\r\n$1\r\n\x00\r\n"


async def test_concurrent_calls_get_their_own_replies_and_forgotten_scripts_are_resent(private_redis):
    client = RespClient(private_redis.url)
    echo = Script("return {KEYS[1], ARGV[1]}")
    answers = await asyncio.gather(*(client.run(echo, [f"k{i}"], [i]) for i in range(200)))
    assert answers == [[f"k{i}".encode(), str(i).encode()] for i in range(200)]
    await client.call("SCRIPT", "FLUSH")
    assert await client.run(echo, ["again"], ["x"]) == [b"again", b"x"]  # NOSCRIPT: sent by source
    with pytest.raises(ResponseError):
        await client.call("NOSUCHCOMMAND")
    assert await client.call("PING") == b"PONG"  # an error reply leaves the connection usable
    await client.close()


async def test_a_silent_server_is_a_timeout_and_a_lost_one_a_connection_error(private_redis):
    async def silent(reader, writer):
        await reader.read(1 << 16)
        await asyncio.sleep(30)

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = RespClient(f"redis://127.0.0.1:{port}/0", timeout=0.3)
    started = time.monotonic()
    with pytest.raises(RedisTimeoutError):
        await client.call("PING")
    assert time.monotonic() - started < 1.0
    server.close()
    await client.close()

    client = RespClient(private_redis.url, timeout=1.0)
    assert await client.call("PING") == b"PONG"
    private_redis.stop()
    with pytest.raises(RedisConnectionError):
        await client.call("PING")
    private_redis.start()
    assert await client.call("PING") == b"PONG"  # connected again by itself
    await client.close()


async def test_a_script_sent_without_waiting_is_run_even_after_redis_forgot_it(private_redis):
    client = RespClient(private_redis.url)
    setter = Script("redis.call('SET', KEYS[1], ARGV[1]) return 1")
    assert not client.run_nowait(setter, ["k"], ["early"])  # not connected yet: nothing sent
    await client.call("PING")
    await client.call("SCRIPT", "FLUSH")
    assert client.run_nowait(setter, ["k"], ["v1"])
    await client.call("PING")  # the NOSCRIPT reply has come: the script was sent again by source
    assert await client.call("GET", "k") == b"v1"
    await client.close()
