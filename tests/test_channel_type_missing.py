"""A channel whose adapter is not loaded (its package uninstalled, or left out of
``plugins.toml``): a start-up warning naming it, its models off ``/v1/models``,
and its requests answered 503 naming the missing channel type, in each
protocol's shape, while the other channels go on serving."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from structlog.testing import capture_logs

from gateway_core import ChannelType, Exchange, Reply, hookimpl
from gateway_core.testing import Seed
from gateway_openai.fake_upstream import FakeOpenAI

CHAT = [{"role": "user", "content": "hello"}]


class LocalLLMChannel(ChannelType):
    """The channel type of an adapter that was installed when the channel was added."""

    name = "localllm"

    def wire(self, endpoint: str) -> str | None:
        return "localllm"

    async def send(self, exchange: Exchange) -> Reply:  # pragma: no cover - never loaded by the gateway here
        raise NotImplementedError


class LocalLLMPlugin:
    @hookimpl
    def register_channel_types(self, register: Any) -> None:
        register(LocalLLMChannel())


@pytest.fixture
async def gateway(relaygate_config, fake_upstream, start_gateway):
    upstream = await fake_upstream(FakeOpenAI())
    with Seed(relaygate_config, extra_plugins=[LocalLLMPlugin()]) as seed:  # the adapter was there then
        seed.channel("openai-main", type="openai", base_url=upstream.url, models=["gpt-ok", "shared"])
        seed.channel("local-box", type="localllm", base_url="http://127.0.0.1:9", models=["llama-local", "shared"])
        seed.channel("local-off", type="localllm", base_url="http://127.0.0.1:9", models=["llama-off"], enabled=False)
        secret = seed.key(seed.user("alice"))[1]
    with capture_logs() as logs:
        gateway = start_gateway()  # the adapter is gone now
    gateway.key, gateway.logs, gateway.seed = secret, logs, seed
    return gateway


async def post(gateway, path: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http:
        async with http.post(gateway.url + path, json=body, headers=headers) as response:
            return response.status, await response.json()


def test_start_up_warns_about_the_channel_and_its_missing_type(gateway):
    warnings = [log for log in gateway.logs if log["log_level"] == "warning" and log["event"].startswith("channel type not loaded")]
    assert [(w["channel"], w["channel_type"]) for w in warnings] == [("local-box", "localllm")]  # not the disabled one
    assert "openai" in warnings[0]["loaded"]


async def test_its_models_are_not_listed(gateway):
    async with aiohttp.ClientSession() as http:
        async with http.get(gateway.url + "/v1/models", headers={"Authorization": f"Bearer {gateway.key}"}) as response:
            listed = [model["id"] for model in (await response.json())["data"]]
    assert listed == ["gpt-ok", "shared"]


async def test_its_requests_are_503_naming_the_missing_type_in_each_protocol(gateway):
    status, body = await post(gateway, "/v1/chat/completions", {"model": "llama-local", "messages": CHAT}, {"Authorization": f"Bearer {gateway.key}"})
    assert status == 503 and body["error"]["code"] == "channel_type_not_loaded"
    assert body["error"]["message"].startswith(
        "The model 'llama-local' is served here only by channels of type 'localllm', whose adapter is not loaded on this gateway."
    )
    anthropic_headers = {"x-api-key": gateway.key, "anthropic-version": "2023-06-01"}
    status, body = await post(gateway, "/v1/messages", {"model": "llama-local", "max_tokens": 10, "messages": CHAT}, anthropic_headers)
    assert status == 503 and body["type"] == "error" and "'localllm'" in body["error"]["message"]
    row = gateway.seed.rows("SELECT * FROM usage_logs ORDER BY id DESC LIMIT 1")[0]
    assert (row["status"], row["error_type"], row["channel_name"]) == (503, "unavailable", None)


async def test_the_other_channels_serve_on(gateway):
    for model in ("gpt-ok", "shared"):  # "shared" is served by the loaded channel too
        status, body = await post(gateway, "/v1/chat/completions", {"model": model, "messages": CHAT}, {"Authorization": f"Bearer {gateway.key}"})
        assert status == 200 and body["choices"][0]["message"]["content"] == "echo: hello"
    status, body = await post(gateway, "/v1/chat/completions", {"model": "nobody-serves", "messages": CHAT}, {"Authorization": f"Bearer {gateway.key}"})
    assert (status, body["error"]["code"]) == (400, "model_not_found")  # an unknown model stays a 400
