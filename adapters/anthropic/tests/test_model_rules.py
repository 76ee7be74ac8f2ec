"""Per-model parameter rules of the anthropic channel: ``top_p`` is left out beside
``temperature`` for the Claude models that refuse the pair (the fake upstream refuses
it as Anthropic does), always on conversion, on the fast path only when the channel's
``parameter_rules`` setting is on."""

from __future__ import annotations

import anthropic
import openai
import pytest

from gateway_anthropic.fake_upstream import EXPECTED_KEY, FakeAnthropic
from gateway_anthropic.model_rules import ClaudeVersion, apply_rules, claude_version

NEW, NEW_UP = "claude-new", "claude-sonnet-4-5-20250929"
RULED = "claude-ruled"  # the same upstream model, on a channel with parameter_rules on
OLD, OLD_UP = "claude-old", "claude-sonnet-4-20250514"


@pytest.mark.parametrize(("name", "version"), [
    ("claude-sonnet-4-5-20250929", ClaudeVersion("sonnet", 4, 5)),
    ("claude-opus-4-1-20250805", ClaudeVersion("opus", 4, 1)),
    ("claude-haiku-4-5", ClaudeVersion("haiku", 4, 5)),
    ("anthropic.claude-opus-4-5-20251101-v1:0", ClaudeVersion("opus", 4, 5)),
    ("claude-sonnet-4-5@20250929", ClaudeVersion("sonnet", 4, 5)),
    ("claude-sonnet-4-20250514", ClaudeVersion("sonnet", 4, 0)),
    ("claude-3-5-sonnet-20241022", ClaudeVersion("sonnet", 3, 5)),
    ("claude-test-2026", None),
    ("gpt-5", None),
])  # fmt: skip
def test_model_names_are_read_as_versions(name, version) -> None:
    assert claude_version(name) == version


def test_the_pair_rule_keeps_temperature_for_newer_models_only() -> None:
    body = {"model": "m", "temperature": 0.5, "top_p": 0.9}
    for model in ("claude-sonnet-4-5", "claude-opus-4-1-20250805", "claude-opus-5-0", "claude-haiku-4-5-20251001"):
        assert apply_rules(body, model) == {"model": "m", "temperature": 0.5}
    for model in ("claude-sonnet-4-20250514", "claude-sonnet-4-1", "claude-3-7-sonnet-20250219", "my-alias"):
        assert apply_rules(body, model) is body
    assert apply_rules({"top_p": 0.9}, "claude-sonnet-4-5") == {"top_p": 0.9}  # alone it is accepted
    assert body == {"model": "m", "temperature": 0.5, "top_p": 0.9}


@pytest.fixture
async def claude(fake_upstream) -> FakeAnthropic:
    return await fake_upstream(FakeAnthropic())


@pytest.fixture
def gateway(start_gateway, seed, claude):
    user = seed.user("carol")
    _, secret = seed.key(user)
    seed.channel("plain", type="anthropic", base_url=claude.url, models=[NEW, OLD], model_map={NEW: NEW_UP, OLD: OLD_UP},
                 api_keys=(EXPECTED_KEY,))
    seed.channel("ruled", type="anthropic", base_url=claude.url, models=[RULED], model_map={RULED: NEW_UP},
                 api_keys=(EXPECTED_KEY,), settings={"parameter_rules": True})  # fmt: skip
    return start_gateway(), secret


async def test_converted_requests_drop_top_p_for_newer_models(gateway, claude) -> None:
    server, secret = gateway
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key=secret, max_retries=0)
    completion = await client.chat.completions.create(model=NEW, messages=[{"role": "user", "content": "hi"}], temperature=0.4, top_p=0.8)
    assert completion.choices[0].message.content == "echo: hi"
    body = claude.requests[-1]["body"]
    assert body["model"] == NEW_UP and body["temperature"] == 0.4 and "top_p" not in body
    await client.chat.completions.create(model=OLD, messages=[{"role": "user", "content": "hi"}], temperature=0.4, top_p=0.8)
    body = claude.requests[-1]["body"]
    assert (body["temperature"], body["top_p"]) == (0.4, 0.8)  # an older model takes both


async def test_the_fast_path_applies_them_only_when_the_channel_says_so(gateway, claude) -> None:
    server, secret = gateway
    client = anthropic.AsyncAnthropic(base_url=server.url, api_key=secret, max_retries=0)
    both = {"max_tokens": 50, "extra_body": {"temperature": 0.3, "top_p": 0.7}, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(anthropic.BadRequestError) as refused:  # untouched: the upstream's own 400 reaches the client
        await client.messages.create(model=NEW, **both)
    assert "top_p" in refused.value.message
    assert claude.requests[-1]["body"]["top_p"] == 0.7
    message = await client.messages.create(model=RULED, **both)
    assert message.content[0].text == "echo: hi"
    body = claude.requests[-1]["body"]
    assert body["model"] == NEW_UP and body["temperature"] == 0.3 and "top_p" not in body


def test_the_setting_is_declared() -> None:
    from gateway_anthropic.channel import AnthropicChannel
    from gateway_core.channel_settings import validate_settings

    assert validate_settings(AnthropicChannel().settings, {"parameter_rules": "on"}) == {"parameter_rules": True}
