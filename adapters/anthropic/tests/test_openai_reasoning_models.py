"""Anthropic clients on openai channels serving reasoning models: the output cap goes
in ``max_completion_tokens`` (OpenAI's o-series and gpt-5 family refuse ``max_tokens``
with 400), unless the channel's ``max_tokens_param`` says the older name."""

from __future__ import annotations

import anthropic
import pytest

from gateway_openai.fake_upstream import FakeOpenAI


@pytest.fixture
async def reasoning_upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def client(start_gateway, seed, reasoning_upstream):
    user = seed.user("bob")
    _, secret = seed.key(user)
    seed.channel("gpt5", type="openai", base_url=reasoning_upstream.url, models=["gpt-5-bridge"], model_map={"gpt-5-bridge": "gpt-5-mini"})
    seed.channel("legacy", type="openai", base_url=reasoning_upstream.url, models=["old-bridge"],
                 model_map={"old-bridge": "llama-3"}, settings={"max_tokens_param": "max_tokens"})  # fmt: skip
    gateway = start_gateway()
    return anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)


async def test_reasoning_model_gets_max_completion_tokens(client, reasoning_upstream) -> None:
    message = await client.messages.create(model="gpt-5-bridge", max_tokens=300, messages=[{"role": "user", "content": "hi"}])
    assert message.content[0].text == "echo: hi"
    body = reasoning_upstream.requests[-1]["body"]
    assert body["model"] == "gpt-5-mini" and body["max_completion_tokens"] == 300 and "max_tokens" not in body
    async with client.messages.stream(model="gpt-5-bridge", max_tokens=50, messages=[{"role": "user", "content": "a b"}]) as stream:
        assert (await stream.get_final_message()).content[0].text == "echo: a b"
    assert reasoning_upstream.requests[-1]["body"]["max_completion_tokens"] == 50


async def test_the_channel_setting_keeps_max_tokens_for_older_servers(client, reasoning_upstream) -> None:
    await client.messages.create(model="old-bridge", max_tokens=30, messages=[{"role": "user", "content": "hi"}])
    body = reasoning_upstream.requests[-1]["body"]
    assert body["max_tokens"] == 30 and "max_completion_tokens" not in body


def test_the_setting_is_declared_with_its_choices() -> None:
    from gateway_core.channel_settings import SettingError, validate_settings
    from gateway_openai.channel import OpenAIChannel

    settings = OpenAIChannel().settings
    assert validate_settings(settings, {"max_tokens_param": "max_tokens"}) == {"max_tokens_param": "max_tokens"}
    with pytest.raises(SettingError):
        validate_settings(settings, {"max_tokens_param": "max_output_tokens"})
