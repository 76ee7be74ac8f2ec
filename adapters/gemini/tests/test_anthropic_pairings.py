"""The pairings with the anthropic adapter, through the core model: the ``anthropic``
SDK to a gemini channel, and the ``google-genai`` SDK to an anthropic channel.
Skipped when the anthropic adapter is not installed."""

from __future__ import annotations

import pytest

anthropic = pytest.importorskip("anthropic")
fake_anthropic = pytest.importorskip("gateway_anthropic.fake_upstream")

from google.genai import types  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Inheritance class AiohttpClientSession:DeprecationWarning")

GEMINI_MODEL = "gemini-test"
CLAUDE_MODEL = "claude-test"


@pytest.fixture
async def anthropic_upstream(fake_upstream):
    return await fake_upstream(fake_anthropic.FakeAnthropic())


@pytest.fixture
def pairing_key(seed, user, gateway_key, anthropic_upstream):
    seed.channel("claude", type="anthropic", base_url=anthropic_upstream.url, models=[CLAUDE_MODEL], api_keys=[fake_anthropic.EXPECTED_KEY])
    return gateway_key


@pytest.fixture
def claude_client(start_gateway, pairing_key):
    gateway = start_gateway()
    return gateway, anthropic.AsyncAnthropic(base_url=gateway.url, api_key=pairing_key, max_retries=0)


async def test_anthropic_sdk_on_a_gemini_channel(claude_client, gemini_upstream):
    _, client = claude_client
    message = await client.messages.create(
        model=GEMINI_MODEL, max_tokens=100, system="Be brief.", messages=[{"role": "user", "content": "hello there"}]
    )
    assert message.content[0].text == "echo: hello there" and message.stop_reason == "end_turn"
    body = gemini_upstream.requests[-1]["body"]
    assert body["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert body["generationConfig"]["maxOutputTokens"] == 100


async def test_anthropic_sdk_streams_a_tool_call_from_gemini(claude_client, gemini_upstream):
    _, client = claude_client
    gemini_upstream.function_call = {"name": "get_weather", "args": {"city": "Oslo"}}
    tools = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    async with client.messages.stream(model=GEMINI_MODEL, max_tokens=100, tools=tools, messages=[{"role": "user", "content": "oslo?"}]) as stream:
        message = await stream.get_final_message()
    assert message.stop_reason == "tool_use"
    call = next(b for b in message.content if b.type == "tool_use")
    assert (call.name, call.input) == ("get_weather", {"city": "Oslo"})


async def test_genai_sdk_on_an_anthropic_channel(pairing_key, genai_client, anthropic_upstream):
    client = genai_client(pairing_key, "v1beta")
    config = types.GenerateContentConfig(system_instruction="Be brief.", max_output_tokens=64)
    response = await client.models.generate_content(model=CLAUDE_MODEL, contents="hello there", config=config)
    assert response.text == "echo: hello there"
    assert response.candidates[0].finish_reason == types.FinishReason.STOP
    body = anthropic_upstream.requests[-1]["body"]
    assert body["max_tokens"] == 64 and body["system"] == "Be brief."
    chunks = [c async for c in await client.models.generate_content_stream(model=CLAUDE_MODEL, contents="one two")]
    assert "".join(c.text or "" for c in chunks) == "echo: one two"
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


def claude_code_mid_system_contents():
    """What a gemini channel must receive for Claude Code's mid-conversation system message."""
    return [
        {"role": "user", "parts": [{"text": "run the tests"}]},
        {"role": "model", "parts": [{"text": "Running them."}, {"functionCall": {"id": "toolu_01", "name": "Bash", "args": {"command": "pytest -q"}},
                                                               "thoughtSignature": "skip_thought_signature_validator"}]},
        {"role": "user", "parts": [
            {"functionResponse": {"id": "toolu_01", "name": "Bash", "response": {"output": "3 passed"}}},
            {"text": "now list the files"},  # the user's words stay last: the system text went to systemInstruction
        ]},
    ]  # fmt: skip


def test_claude_code_mid_conversation_system_message_keeps_its_place(anthropic_examples):
    from gateway_anthropic.messages_request import request_from_wire
    from gateway_gemini.request import request_to_wire

    body = request_to_wire(request_from_wire(anthropic_examples.json("messages_request_claude_code_mid_system.json")),
                           signature_placeholder="skip_thought_signature_validator")  # fmt: skip
    assert body["systemInstruction"] == {"parts": [{"text": "You are Claude Code, Anthropic's official CLI for Claude."},
                                                   {"text": "The user changed the working directory to /home/user/other."}]}  # fmt: skip
    assert body["contents"] == claude_code_mid_system_contents()
    # a system message ahead of the conversation (the first Claude Code fixture) joins the system instruction
    first = request_to_wire(request_from_wire(anthropic_examples.json("messages_request_claude_code.json")))
    assert first["systemInstruction"]["parts"][-1] == {"text": "The working directory is /home/user/project."}
    assert all("<system>" not in str(part) for part in first["contents"][0]["parts"])


async def test_claude_code_mid_system_message_through_the_gateway(claude_client, gemini_upstream, anthropic_examples):
    _, client = claude_client
    recorded = anthropic_examples.json("messages_request_claude_code_mid_system.json")
    async with client.messages.stream(model=GEMINI_MODEL, max_tokens=200, system=recorded["system"], messages=recorded["messages"],
                                      tools=recorded["tools"], metadata=recorded["metadata"]) as stream:  # fmt: skip
        message = await stream.get_final_message()
    assert message.content[0].text.startswith("echo: ") and message.stop_reason == "end_turn"
    received = gemini_upstream.requests[-1]
    assert ":streamGenerateContent" in received["path"]
    assert received["body"]["contents"] == claude_code_mid_system_contents()


@pytest.fixture
def claude_45_key(seed, pairing_key, anthropic_upstream):
    seed.channel("claude45", type="anthropic", base_url=anthropic_upstream.url, models=["claude-45"],
                 model_map={"claude-45": "claude-sonnet-4-5-20250929"}, api_keys=[fake_anthropic.EXPECTED_KEY])  # fmt: skip
    return pairing_key


async def test_gemini_cli_sampling_defaults_reach_a_newer_claude(claude_45_key, genai_client, anthropic_upstream):
    """The Gemini CLI sends temperature and topP; Claude 4.5 refuses the pair (the fake does too)."""
    client = genai_client(claude_45_key)
    config = types.GenerateContentConfig(temperature=0, top_p=1, max_output_tokens=64)
    response = await client.models.generate_content(model="claude-45", contents="hello", config=config)
    assert response.text == "echo: hello"
    body = anthropic_upstream.requests[-1]["body"]
    assert body["model"] == "claude-sonnet-4-5-20250929" and body["temperature"] == 0 and "top_p" not in body


def test_claude_code_web_search_becomes_google_search(anthropic_examples):
    from gateway_anthropic.messages_request import request_from_wire
    from gateway_gemini.request import request_to_wire

    request = request_from_wire(anthropic_examples.json("messages_request_claude_code.json"))  # Bash and the web_search server tool
    assert request_to_wire(request, model="gemini-3-pro-preview")["tools"] == [
        {"functionDeclarations": [request_to_wire(request)["tools"][0]["functionDeclarations"][0]]}, {"googleSearch": {}}]
    assert [list(t) for t in request_to_wire(request, model="gemini-2.5-flash")["tools"]] == [["functionDeclarations"]]


async def test_anthropic_sdk_web_search_on_a_gemini_channel(claude_client, gemini_upstream):
    _, client = claude_client
    tools = [{"type": "web_search_20250305", "name": "web_search", "max_uses": 3}]
    message = await client.messages.create(model=GEMINI_MODEL, max_tokens=100, tools=tools, messages=[{"role": "user", "content": "news?"}])
    assert message.content[0].text == "echo: news?"
    assert gemini_upstream.requests[-1]["body"]["tools"] == [{"googleSearch": {}}]


async def test_genai_count_tokens_on_an_anthropic_channel_is_counted_there(pairing_key, genai_client, anthropic_upstream, seed):
    client = genai_client(pairing_key, "v1beta")
    result = await client.models.count_tokens(model=CLAUDE_MODEL, contents="how many tokens is this?")
    received = anthropic_upstream.requests[-1]
    assert received["path"] == "/v1/messages/count_tokens" and received["body"]["model"] == CLAUDE_MODEL
    assert "max_tokens" not in received["body"] and "stream" not in received["body"]  # what count_tokens takes only
    assert result.total_tokens > 0
    row = seed.rows("SELECT * FROM usage_logs")[-1]
    assert (row["endpoint"], row["status"], row["cost_micros"]) == ("count_tokens", 200, 0)


async def test_genai_json_output_reaches_an_anthropic_channel_as_structured_output(pairing_key, genai_client, anthropic_upstream):
    """The Gemini CLI's model router asks for JSON first (responseMimeType and a schema)."""
    client = genai_client(pairing_key, "v1beta")
    schema = {"type": "object", "properties": {"reasoning": {"type": "string"}, "model_choice": {"type": "string", "enum": ["flash", "pro"]}}, "required": ["reasoning", "model_choice"]}
    config = types.GenerateContentConfig(response_mime_type="application/json", response_json_schema=schema)
    await client.models.generate_content(model=CLAUDE_MODEL, contents="route this", config=config)
    sent = anthropic_upstream.requests[-1]["body"]["output_config"]["format"]
    assert sent["type"] == "json_schema" and sent["schema"]["properties"]["model_choice"]["enum"] == ["flash", "pro"]
    assert sent["schema"]["additionalProperties"] is False  # Anthropic's structured outputs want closed objects
    await client.models.generate_content(model=CLAUDE_MODEL, contents="any json", config=types.GenerateContentConfig(response_mime_type="application/json"))
    system = anthropic_upstream.requests[-1]["body"]["system"]
    assert "JSON object" in (system if isinstance(system, str) else system[-1]["text"])
