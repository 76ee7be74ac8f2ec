"""``relaygate serve --server hypercorn|uvicorn``: the same behaviours on each server,
checked on a real ``relaygate serve`` process over loopback HTTP.

The HTTP layer's refusals as JSON with a request id (400, 431, 501; a broken
chunk), headers up to 16 KiB served; the graceful drain on SIGTERM (``/readyz``
503 at once while requests are still served for ``shutdown_drain_seconds``,
in-flight streams finishing, new connections refused after); bodies over
``max_body_bytes`` (413) or slower than ``body_timeout`` (408) refused and their
connections closed, a normal one kept; a stream cut by the
grace period billed what it delivered, logged ``shutdown`` and ended with the
protocol's error event; a client that stops reading ended after
``write_timeout`` (499); ``--workers 2``; ``[gateway] server``; idle connections
closed after the keep-alive timeout however slowly a head trickles in."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
import urllib.error
import urllib.request

import aiohttp
import orjson
import pytest

from gateway_core.testing import GatewayProcess, free_port
from gateway_openai.fake_upstream import FakeOpenAI

from .test_refused_bodies import Connection, post_head, sending

SERVERS = ("hypercorn", "uvicorn")
HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"

pytestmark = pytest.mark.parametrize("server", SERVERS)


def plugins_file(tmp_path, gateway: str = "", load: str = '"openai", "demo"') -> str:
    path = tmp_path / "plugins.toml"
    path.write_text(f"load = [{load}]\n[gateway]\n{gateway}")
    return str(path)


def serve(db_path, server: str, *, plugins: str | None = None, workers: int = 1) -> GatewayProcess:
    return GatewayProcess(db_path, plugins_file=plugins, workers=workers, args=["--server", server]).start()


async def exchange(port: int, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as it is; the answer's status, headers and body (read until the gateway closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        raw = await asyncio.wait_for(reader.read(), timeout=10)
    finally:
        writer.close()
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    return int(lines[0].split()[1]), headers, body


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


REFUSALS = [
    (HEAD + b"X-Bad: a\rb\r\n\r\n", 400),  # a bare CR inside a header value
    (HEAD + b"X-Bad: \x00\r\n\r\n", 400),  # a forbidden byte
    (HEAD + b"X-Big: " + b"a" * 200_000 + b"\r\n\r\n", 431),  # headers over 16 KiB
    (HEAD + b"Transfer-Encoding: gzip\r\n\r\n", 501),
    (b"NOT HTTP AT ALL\r\n\r\n", 400),
    (HEAD + b"Authorization: Bearer sk-x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZZ\r\n", 400),  # a broken chunk
]


async def test_the_http_layer_refuses_in_json_with_a_request_id_and_serves_big_headers(seed, relaygate_config, server):
    with serve(relaygate_config.db_path, server) as gateway:
        for request_bytes, status in REFUSALS:
            got, headers, body = await exchange(gateway.port, request_bytes)
            assert got == status, request_bytes[:120]
            assert headers["content-type"] == "application/json" and headers["connection"] == "close"
            answer = orjson.loads(body)
            request_id = headers["x-request-id"]
            assert request_id.startswith("req_") and answer["request_id"] == request_id
            assert answer["type"] == "error" and answer["error"]["code"] == status and request_id in answer["error"]["message"]
        if server == "uvicorn":  # 18 KiB of headers arriving at once: refused too (hypercorn reads a head that is whole in one read)
            many = HEAD + (b"X-Pad: " + b"c" * 1000 + b"\r\n") * 18 + b"\r\n"
            assert (await exchange(gateway.port, many))[0] == 431
        # 12 KiB of headers is within the limit: the app answers (401, no key)
        data = f"GET /v1/models HTTP/1.1\r\nHost: gateway\r\nX-Pad: {'p' * 12_000}\r\nConnection: close\r\n\r\n".encode()
        got, headers, body = await exchange(gateway.port, data)
        assert got == 401 and orjson.loads(body)["error"]


async def read_demo_stream(url: str, secret: str, on_first=None) -> str:
    body = {"model": "demo-chat", "stream": True, "messages": [{"role": "user", "content": "one two three four five"}]}
    text = ""
    async with aiohttp.ClientSession() as http:
        async with http.post(url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {secret}"}) as answer:
            assert answer.status == 200
            async for line in answer.content:
                if line.startswith(b"data: {"):
                    chunk = orjson.loads(line[6:])
                    text += "".join(c["delta"].get("content") or "" for c in chunk.get("choices", ()))
                    if on_first is not None:
                        on_first()
                        on_first = None
    return text


async def test_a_drain_answers_readyz_503_serves_on_lets_streams_finish_then_refuses(tmp_path, seed, relaygate_config, demo_key, server):
    plugins = plugins_file(tmp_path, "shutdown_drain_seconds = 1.5\n")
    gateway = serve(relaygate_config.db_path, server, plugins=plugins)
    assert gateway.process is not None
    loop = asyncio.get_running_loop()
    try:
        assert await loop.run_in_executor(None, status_of, gateway.url + "/readyz") == 200
        signalled = time.monotonic()
        text = await read_demo_stream(gateway.url, demo_key, lambda: gateway.process.send_signal(signal.SIGTERM))
        assert text.endswith("You said: one two three four five")
        assert await loop.run_in_executor(None, status_of, gateway.url + "/readyz") == 503  # at once, still serving
        if time.monotonic() - signalled < 1.2:  # still within the drain period: a new request is served
            assert (await read_demo_stream(gateway.url, demo_key)).endswith("five")
        assert await loop.run_in_executor(None, gateway.process.wait, 20) == 0
    finally:
        gateway.kill()
    rows = seed.rows("SELECT status, end_reason FROM usage_logs")
    assert rows and all((row["status"], row["end_reason"]) == (200, "done") for row in rows)
    with pytest.raises(OSError):  # stopped: new connections are refused
        await exchange(gateway.port, b"GET /healthz HTTP/1.1\r\nHost: gateway\r\n\r\n")


async def test_a_client_that_stops_reading_is_ended_after_the_write_timeout(tmp_path, seed, flooding_upstream, relaygate_config, server):
    flooding_upstream.mode = "stream"
    seed.channel("endless", type="openai", base_url=flooding_upstream.url, models=["gpt-slow"])
    seed.price("gpt-slow", 1_000_000, 1_000_000)
    secret = seed.key(seed.user("alice", balance_usd=100))[1]
    # the connection the gateway gave up on is still open when the test ends: a grace of
    # one second (not 30) bounds how long the gateway waits on it after SIGTERM
    gateway_settings = "write_timeout = 1\nshutdown_grace_seconds = 1\n"
    with serve(relaygate_config.db_path, server, plugins=plugins_file(tmp_path, gateway_settings, '"openai"')) as gateway:
        reader, writer = await asyncio.open_connection("127.0.0.1", gateway.port)
        body = orjson.dumps({"model": "gpt-slow", "messages": [{"role": "user", "content": "hi"}], "stream": True})
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + secret.encode() + b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body
        )
        await writer.drain()
        assert (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)).startswith(b"HTTP/1.1 200")
        try:
            deadline = time.monotonic() + 20
            while flooding_upstream.cut == 0:  # nothing read: the gateway hangs up on the upstream
                assert time.monotonic() < deadline, "the stream was never ended"
                await asyncio.sleep(0.05)
            for _ in range(100):
                rows = seed.rows("SELECT status, end_reason, cost_micros FROM usage_logs")
                if rows:
                    break
                await asyncio.sleep(0.05)
            assert [(r["status"], r["end_reason"]) for r in rows] == [(499, "write_timeout")] and rows[0]["cost_micros"] > 0
        finally:
            writer.close()


def test_two_workers_serve_and_drain(tmp_path, seed, relaygate_config, demo_key, server):
    gateway = serve(relaygate_config.db_path, server, plugins=plugins_file(tmp_path, load='"demo"'), workers=2)
    try:
        for _ in range(6):
            assert status_of(gateway.url + "/healthz") == 200
        assert gateway.terminate() == 0
    finally:
        gateway.kill()
    assert server in gateway.output()


def test_the_server_can_be_chosen_in_the_configuration(tmp_path, seed, relaygate_config, demo_key, server):
    plugins = plugins_file(tmp_path, f'server = "{server}"\n', '"demo"')
    with GatewayProcess(relaygate_config.db_path, plugins_file=plugins) as gateway:
        assert status_of(gateway.url + "/healthz") == 200
    assert server in gateway.output()


async def test_bodies_over_the_limit_or_too_slow_are_refused_and_their_connections_closed(tmp_path, seed, fake_upstream, relaygate_config, server):
    upstream = await fake_upstream(FakeOpenAI())
    seed.channel("up", type="openai", base_url=upstream.url, models=["gpt-test"])
    seed.price("gpt-test", 0, 0, free=True)
    secret = seed.key(seed.user("alice"))[1]
    settings = "max_body_bytes = 1048576\nbody_timeout = 1\n"
    with serve(relaygate_config.db_path, server, plugins=plugins_file(tmp_path, settings, '"openai"')) as gateway:
        # a Content-Length over the limit: answered before a byte of the body, and closed
        connection = await Connection.open(gateway.port)
        await connection.send(post_head(secret, Content_Length="1000000000000"))
        status, headers, body = await connection.answer()
        assert (status, headers["connection"], body["error"]["code"]) == (413, "close", "request_too_large")
        assert await connection.closed_by_gateway(5)
        connection.close()
        # a chunked body that would never end: read up to the limit, refused, closed
        connection = await Connection.open(gateway.port)
        await connection.send(post_head(secret, Transfer_Encoding="chunked"))
        chunk = b"x" * 65536

        async def keep_sending() -> None:
            with contextlib.suppress(ConnectionError):
                while True:
                    await connection.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))

        try:
            async with sending(keep_sending()):
                status, headers, body = await connection.answer()
                assert (status, headers["connection"], body["error"]["code"]) == (413, "close", "request_too_large")
                assert await connection.closed_by_gateway()
        finally:
            connection.close()
        # a body trickling in past body_timeout: 408, closed
        connection = await Connection.open(gateway.port)
        await connection.send(post_head(secret, Content_Length="1000"))
        started = time.monotonic()

        async def trickle() -> None:
            with contextlib.suppress(ConnectionError):
                for _ in range(100):
                    await connection.send(b" ")
                    await asyncio.sleep(0.2)

        try:
            async with sending(trickle()):
                status, headers, body = await connection.answer()
                assert 0.9 < time.monotonic() - started < 5
                assert (status, headers["connection"], body["error"]["code"]) == (408, "close", "request_timeout")
                assert await connection.closed_by_gateway()
        finally:
            connection.close()
        # a normal request keeps its connection: two answers on one
        connection = await Connection.open(gateway.port)
        chat = orjson.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]})
        for _ in range(2):
            await connection.send(post_head(secret, Content_Length=str(len(chat))) + chat)
            status, headers, body = await connection.answer()
            assert status == 200 and body["choices"][0]["message"]["content"] == "echo: hi"
        connection.close()
    assert len(upstream.requests) == 2


async def test_idle_connections_close_after_the_keep_alive_timeout_however_slow_the_head(server):
    """With each server's settings as ``relaygate serve`` makes them, the keep-alive
    timeout shortened to 1 s: a silent connection, one whose head trickles in, and
    one idle after an answer all close after it."""

    async def app(scope, receive, send) -> None:
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
            await send({"type": "http.response.body", "body": b"ok"})

    stop = asyncio.Event()
    port = free_port()
    if server == "uvicorn":
        from gateway_core.runtime.server_uvicorn import serve_uvicorn, uvicorn_config

        config = uvicorn_config(app, port=port)
        config.lifespan = "off"
        config.timeout_keep_alive = 1
        serving = asyncio.ensure_future(serve_uvicorn(config, stop, grace=1))
    else:
        from hypercorn.asyncio import serve as hypercorn_serve

        from gateway_core.runtime.server import hypercorn_config

        hconfig = hypercorn_config(f"127.0.0.1:{port}", 1)
        hconfig.keep_alive_timeout = 1
        serving = asyncio.ensure_future(hypercorn_serve(app, hconfig, shutdown_trigger=stop.wait, mode="asgi"))
    try:
        for _ in range(50):
            try:
                _, probe = await asyncio.open_connection("127.0.0.1", port)
                probe.close()
                break
            except OSError:
                await asyncio.sleep(0.1)

        async def closed_after(head: bytes, trickle: bytes = b"") -> tuple[float, bytes]:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(head)
            started = time.monotonic()

            async def dribble() -> None:
                for byte in trickle:
                    writer.write(bytes([byte]))
                    await asyncio.sleep(0.25)

            sender = asyncio.ensure_future(dribble())
            data = await asyncio.wait_for(reader.read(), 10)
            sender.cancel()
            writer.close()
            return time.monotonic() - started, data

        waited, data = await closed_after(b"")
        assert 0.8 < waited < 3 and data == b""
        waited, data = await closed_after(b"", b"GET / HTTP/1.1\r\nHost: a\r\nX-Slow: abcdefghijklmnopqrstuvwxyz")
        assert 0.8 < waited < 3 and data == b""
        waited, data = await closed_after(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")
        assert 0.8 < waited < 3 and data.startswith(b"HTTP/1.1 200") and data.endswith(b"ok")
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
