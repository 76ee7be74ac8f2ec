"""The channel type through a real gateway over loopback HTTP, against the fake
upstream: answers whole and streamed, usage billed, the channel's headers and its
setting sent, upstream failures rendered in the client's protocol."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson
import pytest

from gateway_core.testing import Fault, upstream_models
from relaygate_skeleton.channel import SkeletonChannel
from relaygate_skeleton.fake_upstream import EXPECTED_KEY, FakeSkeleton

MODEL = "tiny"
CHAT = [{"role": "user", "content": "hello there"}]


@pytest.fixture
async def upstream(fake_upstream) -> FakeSkeleton:
    return await fake_upstream(FakeSkeleton())


@pytest.fixture
def gateway(seed, upstream, start_gateway) -> Any:
    seed.channel("tiny", type="skeleton", base_url=upstream.url, models=[MODEL],
                 model_map={MODEL: "tiny-1b"}, headers={"X-Team": "blue"}, settings={"keep_alive": "10m"})  # fmt: skip
    gateway = start_gateway()
    gateway.key = seed.key(seed.user("alice"))[1]
    return gateway


async def chat(gateway: Any, **fields: Any) -> tuple[int, bytes]:
    body = {"model": MODEL, "messages": CHAT, **fields}
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + "/v1/chat/completions", json=body, headers={"Authorization": f"Bearer {gateway.key}"}) as response:
            return response.status, await response.read()


def data_of(stream: bytes) -> list[Any]:
    datas = [line[6:] for line in stream.split(b"\n") if line.startswith(b"data: ")]
    return [orjson.loads(data) for data in datas if data != b"[DONE]"]


async def test_a_whole_answer(gateway, upstream, seed):
    status, body = await chat(gateway)
    assert status == 200 and orjson.loads(body)["choices"][0]["message"]["content"] == "echo: hello there"
    sent = upstream.requests[-1]
    assert sent["body"]["model"] == "tiny-1b" and sent["headers"]["X-Team"] == "blue"
    assert sent["body"]["keep_alive"] == "10m"  # the channel's setting
    row = seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["input_tokens"], row["output_tokens"], row["estimated"]) == (2, 3, 0)


async def test_a_streamed_answer(gateway, seed):
    status, body = await chat(gateway, stream=True, stream_options={"include_usage": True})
    chunks = data_of(body)
    assert status == 200 and body.endswith(b"data: [DONE]\n\n")
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"]) == "echo: hello there"
    assert chunks[-1]["usage"]["completion_tokens"] == 3


async def test_an_upstream_failure_is_the_clients_502(gateway, upstream):
    upstream.fail_next(Fault(status=500))
    status, body = await chat(gateway)
    assert status == 502 and "fake failure 500" in orjson.loads(body)["error"]["message"]


async def test_a_stream_broken_mid_way_ends_with_an_error(gateway, upstream):
    upstream.fail_next(Fault(error_after=2))
    status, body = await chat(gateway, stream=True)
    assert status == 200 and "fake failure mid-stream" in data_of(body)[-1]["error"]["message"]


async def test_the_upstreams_models_are_listed_and_a_refused_key_said_so(upstream):
    listed = await upstream_models(SkeletonChannel(), upstream.url, EXPECTED_KEY, models=("tiny-1b",))
    assert listed.ok and listed.models == ("tiny-1b", "small-3b") and listed.new == ("small-3b",)
    refused = await upstream_models(SkeletonChannel(), upstream.url, "sk-wrong-0123456789")
    assert not refused.ok and refused.message.startswith("the upstream refused the channel's key (401)")
