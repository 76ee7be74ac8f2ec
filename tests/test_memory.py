"""The gateway's memory stays bounded whatever its clients and upstreams send,
measured as the resident size of a real ``relaygate serve`` process with its
default limits (32 MiB bodies, answers and frames):

- request bodies over the limit, declared and chunked, sent by the official
  openai SDK and by a raw client that would send forever: each refused 413,
  its connection closed;
- upstream answers over ``max_answer_bytes`` (declared and endless) and a stream
  frame over ``max_frame_bytes``: each a 502, the upstream hung up on;

leave the process within 50 MB of its size when idle. And a short soak: the
size stays flat over a few thousand ordinary requests.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import aiohttp
import openai
import pytest

from gateway_core.config import Config
from gateway_core.testing import GatewayProcess, Seed
from gateway_openai.fake_upstream import FakeOpenAI

MIB = 1024 * 1024
OK_MODEL = "gpt-ok"
FLOOD_MODEL = "gpt-flood"
CHAT = [{"role": "user", "content": "hi"}]


def rss_mib(pid: int) -> tuple[float, float]:
    """The process's resident size now, and its peak, in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        fields[name] = value
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


@pytest.fixture
async def gateway(tmp_path, fake_upstream, flooding_upstream):
    ok = await fake_upstream(FakeOpenAI())
    plugins = tmp_path / "plugins.toml"
    # failures must not open the flooding channel's breaker: every request reaches it
    plugins.write_text('load = ["openai"]\n[gateway]\nbreaker_failures = 100000\nmax_attempts = 1\n')
    config = Config(db_path=str(tmp_path / "relaygate.db"), load=("openai",))
    seed = Seed(config)
    seed.channel("ok", type="openai", base_url=ok.url, models=[OK_MODEL])
    seed.channel("flood", type="openai", base_url=flooding_upstream.url, models=[FLOOD_MODEL])
    for model in (OK_MODEL, FLOOD_MODEL):
        seed.price(model, 0, 0, free=True)
    secret = seed.key(seed.user("alice"))[1]
    seed.close()  # its store and checkpoint thread: the gateway process has the database from here
    process = GatewayProcess(config.db_path, plugins_file=str(plugins))
    await asyncio.to_thread(process.start)
    try:
        yield process, secret
    finally:
        await asyncio.to_thread(process.__exit__)


def sdk(url: str, secret: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=url + "/v1", api_key=secret, max_retries=0, timeout=60)


async def ordinary_requests(url: str, secret: str, count: int, concurrency: int = 8) -> None:
    headers = {"Authorization": f"Bearer {secret}"}
    payload = {"model": OK_MODEL, "messages": CHAT}
    async with aiohttp.ClientSession() as http:

        async def worker(n: int) -> None:
            for _ in range(n):
                async with http.post(url + "/v1/chat/completions", json=payload, headers=headers) as response:
                    assert response.status == 200
                    await response.read()

        await asyncio.gather(*(worker(count // concurrency) for _ in range(concurrency)))


async def chunked_forever(port: int, secret: str) -> tuple[int, bool]:
    """A chunked body that never ends: the answer's status, and whether the gateway closed."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {secret}\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    chunk = b"x" * (256 * 1024)

    async def send_forever() -> None:
        writer.write(head)
        with contextlib.suppress(ConnectionError):
            while True:
                writer.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                await writer.drain()

    sender = asyncio.ensure_future(send_forever())
    try:
        status_line = await asyncio.wait_for(reader.readline(), 30)
        closed = True  # read to its end, or reset: the gateway closed it
        try:
            async with asyncio.timeout(30):
                while await reader.read(65536):
                    pass
        except ConnectionError:
            pass
        except TimeoutError:
            closed = False
        return int(status_line.split()[1]), closed
    finally:
        sender.cancel()
        await asyncio.gather(sender, return_exceptions=True)
        writer.close()


async def test_oversized_bodies_answers_and_frames_keep_the_gateway_within_50_mb(gateway, flooding_upstream):
    process, secret = gateway
    pid = process.process.pid
    await ordinary_requests(process.url, secret, 200)  # everything loaded and warm
    idle, _ = rss_mib(pid)

    async with sdk(process.url, secret) as client:
        for _ in range(2):  # declared: 40 MB prompts through the official SDK
            with pytest.raises(openai.APIStatusError) as caught:
                await client.chat.completions.create(model=OK_MODEL, messages=[{"role": "user", "content": "x" * 40 * MIB}])
            assert caught.value.status_code == 413 and caught.value.response.headers["connection"] == "close"
        for _ in range(3):  # chunked, never ending
            assert await chunked_forever(process.port, secret) == (413, True)

        for mode in ("declared", "endless", "frame") * 2:
            flooding_upstream.mode = mode
            if mode == "frame":
                stream = await client.chat.completions.create(model=FLOOD_MODEL, messages=CHAT, stream=True)
                with pytest.raises(openai.APIError, match="max_frame_bytes|larger than"):
                    async for _ in stream:
                        pass
            else:
                with pytest.raises(openai.APIStatusError) as caught:
                    await client.chat.completions.create(model=FLOOD_MODEL, messages=CHAT)
                assert caught.value.status_code == 502
        await asyncio.sleep(0.5)
        assert flooding_upstream.cut == 6  # every flooding answer was hung up on
        completion = await client.chat.completions.create(model=OK_MODEL, messages=CHAT)
        assert completion.choices[0].message.content == "echo: hi"  # still serving

    now, peak = rss_mib(pid)
    print(f"RSS idle {idle:.0f} MiB, after {now:.0f} MiB, peak {peak:.0f} MiB")
    assert now - idle < 50, (idle, now, peak)
    assert peak - idle < 80, (idle, now, peak)  # one 32 MiB body or answer at a time, and its copy


async def test_soak_memory_stays_flat_over_thousands_of_requests(gateway):
    process, secret = gateway
    pid = process.process.pid
    await ordinary_requests(process.url, secret, 1000)
    warm, _ = rss_mib(pid)
    await ordinary_requests(process.url, secret, 2000)
    after, _ = rss_mib(pid)
    print(f"RSS after 1000 requests {warm:.1f} MiB, after 3000 {after:.1f} MiB")
    assert after - warm < 8, (warm, after)
