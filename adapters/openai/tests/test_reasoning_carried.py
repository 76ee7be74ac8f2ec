"""Thinking towards openai channels: Anthropic's ``thinking`` (a budget, adaptive,
``output_config.effort``) and Gemini's ``thinkingConfig`` (``thinkingBudget``,
``thinkingLevel``) reach a reasoning model as ``reasoning_effort`` through
``gateway_core.reasoning``'s table; a model that does not reason gets nothing (it
would refuse the field); the reasoning tokens the upstream reports are billed as
output. Driven by the official ``anthropic`` and ``google-genai`` SDKs over loopback
against the fake OpenAI, which refuses ``reasoning_effort`` as OpenAI does."""

from __future__ import annotations

import pytest

from gateway_core.billing import testing as kit
from gateway_core.model import ChatRequest, Message, Role, TextPart
from gateway_core.reasoning import budget_for_effort, common_effort, effort_for_budget
from gateway_openai.chat_request import request_to_wire
from gateway_openai.fake_upstream import REASONING_TOKENS, FakeOpenAI

anthropic = pytest.importorskip("anthropic")
genai = pytest.importorskip("google.genai")
from google.genai import types  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

THINKER, PLAIN = "thinker", "plain"  # served as gpt-5-mini (reasons) and gpt-4o-mini (does not)


@pytest.mark.parametrize(("budget", "effort"), [
    (0, None), (-5, None), (True, None), (1, "low"), (1024, "low"), (4096, "low"), (4097, "medium"),
    (8192, "medium"), (16_384, "medium"), (16_385, "high"), (24_576, "high"), (128_000, "high"), (-1, "medium"),
])  # fmt: skip
def test_the_one_table(budget, effort):
    assert effort_for_budget(budget) == effort
    if effort is not None:  # an effort's own budget reads back as that effort
        assert effort_for_budget(budget_for_effort(effort)) == effort


def test_efforts_are_clamped_to_the_three_every_reasoning_model_takes():
    assert [common_effort(e) for e in ("minimal", "LOW", "medium", "high", "xhigh", "max", "none", "huge", 3)] == [
        "low", "low", "medium", "high", "high", "high", None, None, None,
    ]  # fmt: skip


def wire(model: str = "gpt-5-mini", **extra) -> dict:
    request = ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("hi"),)),), max_tokens=4000, extra=extra)
    return request_to_wire(request, model, max_tokens_field="max_completion_tokens")


@pytest.mark.parametrize(("extra", "effort"), [
    ({"thinking": {"type": "enabled", "budget_tokens": 2048}}, "low"),
    ({"thinking": {"type": "enabled", "budget_tokens": 10_000}}, "medium"),
    ({"thinking": {"type": "enabled", "budget_tokens": 32_000}}, "high"),
    ({"thinking": {"type": "adaptive"}}, "medium"),
    ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "max"}}, "high"),
    ({"thinking": {"type": "enabled", "budget_tokens": 32_000}, "output_config": {"effort": "low"}}, "low"),
    ({"output_config": {"effort": "medium"}}, "medium"),
    ({"thinking": {"type": "disabled"}, "output_config": {"effort": "high"}}, None),
    ({"generationConfig": {"thinkingConfig": {"thinkingBudget": 512}}}, "low"),
    ({"generationConfig": {"thinkingConfig": {"thinkingBudget": -1, "includeThoughts": True}}}, "medium"),
    ({"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}}, None),
    ({"generationConfig": {"thinkingConfig": {"thinkingLevel": "HIGH"}}}, "high"),
    ({"generationConfig": {"thinkingConfig": {"thinkingLevel": "MINIMAL"}}}, "low"),
    ({"generation_config": {"thinking_config": {"thinking_budget": 20_000}}}, "high"),
])  # fmt: skip
def test_another_protocols_request_to_reason_becomes_an_effort(extra, effort):
    assert wire(**extra).get("reasoning_effort") == effort
    assert "reasoning_effort" not in wire("gpt-4o-mini", **extra)  # does not reason: it would refuse the field
    assert "reasoning_effort" not in wire("a-private-model", **extra)  # unknown to the catalogue


def test_sampling_settings_are_left_out_beside_an_effort():
    request = ChatRequest(model="m", messages=(Message(Role.USER, (TextPart("hi"),)),), temperature=0.2, top_p=1, extra={"thinking": {"type": "adaptive"}})
    body = request_to_wire(request, "gpt-5")
    assert (body["reasoning_effort"], body["top_p"], "temperature" in body) == ("medium", 1, False)  # 1: the default, taken
    assert request_to_wire(request, "gpt-4o")["temperature"] == 0.2  # no effort sent: kept


def test_an_openai_clients_own_effort_is_written_as_it_came():
    body = wire(reasoning_effort="minimal", thinking={"type": "enabled", "budget_tokens": 30_000})
    assert body["reasoning_effort"] == "minimal"


@pytest.fixture
async def upstream(fake_upstream) -> FakeOpenAI:
    return await fake_upstream(FakeOpenAI())


@pytest.fixture
def world(seed, upstream):
    seed.channel("oai", type="openai", base_url=upstream.url, models=[THINKER, PLAIN],
                 model_map={THINKER: "gpt-5-mini", PLAIN: "gpt-4o-mini"})  # fmt: skip
    seed.price(THINKER, kit.INPUT, kit.OUTPUT)
    user_id = seed.user("alice", balance_usd=10)
    _, secret = seed.key(user_id)
    return user_id, secret


async def test_an_anthropic_client_thinks_on_an_openai_reasoning_model(start_gateway, seed, world, upstream):
    user_id, secret = world
    gateway = start_gateway()
    client = anthropic.AsyncAnthropic(base_url=gateway.url, api_key=secret, max_retries=0)
    thinking = {"type": "enabled", "budget_tokens": 2048}
    message = await client.messages.create(model=THINKER, max_tokens=4000, thinking=thinking, messages=[{"role": "user", "content": "hi"}])
    assert upstream.requests[-1]["body"]["reasoning_effort"] == "low"
    # the upstream returned no reasoning text: no thinking block is made up
    assert [block.type for block in message.content] == ["text"] and message.content[0].text == "echo: hi"
    reasoning = REASONING_TOKENS["low"]
    assert message.usage.output_tokens == 2 + reasoning  # reasoning tokens are output tokens
    row = await kit.wait_for_row(seed)
    assert row["output_tokens"] == 2 + reasoning
    assert row["cost_micros"] == kit.expected_cost(row["input_tokens"], 2 + reasoning)
    async with client.messages.stream(model=THINKER, max_tokens=4000, thinking={"type": "adaptive"}, messages=[{"role": "user", "content": "a b"}]) as stream:
        final = await stream.get_final_message()
    assert upstream.requests[-1]["body"]["reasoning_effort"] == "medium" and final.usage.output_tokens == 3 + REASONING_TOKENS["medium"]
    await client.messages.create(model=PLAIN, max_tokens=400, thinking=thinking, messages=[{"role": "user", "content": "hi"}])
    assert "reasoning_effort" not in upstream.requests[-1]["body"]  # gpt-4o-mini would answer 400
    await client.close()
    kit.assert_invariants(seed)


async def test_a_gemini_client_thinks_on_an_openai_reasoning_model(start_gateway, seed, world, upstream):
    _, secret = world
    gateway = start_gateway()
    client = genai.Client(api_key=secret, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
    thinking = types.ThinkingConfig(thinking_budget=12_000, include_thoughts=True)
    config = types.GenerateContentConfig(temperature=0, top_p=0.95, thinking_config=thinking)  # the Gemini CLI's sampling
    response = await client.aio.models.generate_content(model=THINKER, contents="hello", config=config)
    sent = upstream.requests[-1]["body"]
    assert sent["reasoning_effort"] == "medium" and "temperature" not in sent and "top_p" not in sent  # refused while reasoning
    assert response.text == "echo: hello"
    medium = REASONING_TOKENS["medium"]
    assert (response.usage_metadata.thoughts_token_count, response.usage_metadata.candidates_token_count) == (medium, 2)
    level = types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.HIGH))
    async for _ in await client.aio.models.generate_content_stream(model=THINKER, contents="hello", config=level):
        pass
    assert upstream.requests[-1]["body"]["reasoning_effort"] == "high"
    row = await kit.wait_for_row(seed)
    assert row["output_tokens"] == 2 + REASONING_TOKENS["high"]
    await client.aio.aclose()
