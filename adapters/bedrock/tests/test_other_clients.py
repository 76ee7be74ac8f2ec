"""The other clients a bedrock channel serves: OpenAI's Responses API and google-genai
(the Gemini protocol), both through the core's chat model."""

from __future__ import annotations

from google import genai
from google.genai import types


async def test_responses_api(openai_client, bedrock):
    response = await openai_client.responses.create(model="nova-test", input="hello there", instructions="Be brief.")
    assert response.output_text == "echo: hello there"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (4, 3)
    assert bedrock.requests[-1]["body"]["system"] == [{"text": "Be brief."}]


async def test_responses_api_stream(openai_client, bedrock):
    stream = await openai_client.responses.create(model="claude-test", input="one two", stream=True)
    done = [event async for event in stream if event.type == "response.completed"]
    assert done[0].response.output_text == "echo: one two"


async def test_google_genai_client(gateway, gateway_key, bedrock):
    client = genai.Client(api_key=gateway_key, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
    try:
        answer = await client.aio.models.generate_content(
            model="llama-test", contents="hello gemini", config=types.GenerateContentConfig(max_output_tokens=50, temperature=0.1)
        )
        assert answer.text == "echo: hello gemini"
        assert bedrock.requests[-1]["body"]["inferenceConfig"] == {"maxTokens": 50, "temperature": 0.1}
        chunks = [chunk.text or "" async for chunk in await client.aio.models.generate_content_stream(model="llama-test", contents="a b")]
        assert "".join(chunks) == "echo: a b"
    finally:
        await client.aio.aclose()


async def test_a_gemini_thinking_budget_thinks_on_claude(gateway, gateway_key, bedrock):
    client = genai.Client(api_key=gateway_key, http_options=types.HttpOptions(base_url=gateway.url, api_version="v1beta"))
    try:
        config = types.GenerateContentConfig(max_output_tokens=8000, thinking_config=types.ThinkingConfig(thinking_budget=2048, include_thoughts=True))
        answer = await client.aio.models.generate_content(model="claude-test", contents="think", config=config)
    finally:
        await client.aio.aclose()
    assert bedrock.requests[-1]["body"]["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 2048}}
    parts = answer.candidates[0].content.parts
    assert [(bool(part.thought), part.text) for part in parts] == [(True, "Let me think."), (False, "echo: think")]
