"""GenerateContentResponse bodies through every conversion direction:
Gemini → core → Gemini, Gemini → core → OpenAI, OpenAI → core → Gemini."""

from __future__ import annotations

import json

import pytest

from gateway_core import UpstreamError
from gateway_core.model import ChatResponse, ReasoningPart, StopReason, TextPart, ToolCallPart, Usage
from gateway_gemini.response import (
    finish_reason_to_wire,
    response_from_wire,
    response_to_wire,
    stop_reason_from_wire,
    usage_from_wire,
    usage_to_wire,
)
from gateway_openai.chat_response import response_from_wire as openai_from_wire
from gateway_openai.chat_response import response_to_wire as openai_to_wire


def test_text_response(examples):
    body = examples.json("generate_response_text.json")
    response = response_from_wire(body)
    assert response.parts == (TextPart(body["candidates"][0]["content"]["parts"][0]["text"]),)
    assert (response.id, response.model, response.stop_reason) == ("mBmZaM7dLNKBz7IP1rjM6Qk", "gemini-2.5-flash", StopReason.END_TURN)
    assert response.usage == Usage(input_tokens=8, output_tokens=27)
    back = response_to_wire(response, "gemini-2.5-flash")
    assert back["candidates"] == body["candidates"]
    assert back["usageMetadata"] == {"promptTokenCount": 8, "candidatesTokenCount": 27, "totalTokenCount": 35}
    openai = openai_to_wire(response, "gemini-x")
    assert openai["choices"][0]["message"]["content"].startswith("Once upon a time")
    assert openai["choices"][0]["finish_reason"] == "stop"
    assert openai["usage"]["prompt_tokens"] == 8 and openai["usage"]["completion_tokens"] == 27


def test_function_call_response(examples):
    response = response_from_wire(examples.json("generate_response_function_call.json"))
    calls = [p for p in response.parts if isinstance(p, ToolCallPart)]
    assert [c.id for c in calls] == ["call_get_temperature_0_Xr3uaKDgKo2Oz7IP", "call_get_temperature_1_Xr3uaKDgKo2Oz7IP"]
    assert [json.loads(c.arguments) for c in calls] == [{"location": "London"}, {"location": "Paris"}]
    assert calls[0].provider_metadata == {"gemini_thought_signature": "CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwc75myDA=="}
    assert response.stop_reason is StopReason.TOOL_USE
    assert response.usage == Usage(input_tokens=62, output_tokens=90, reasoning_tokens=60)
    openai = openai_to_wire(response, "gemini-x")["choices"][0]
    assert openai["finish_reason"] == "tool_calls"
    assert [c["id"] for c in openai["message"]["tool_calls"]] == [c.id for c in calls]
    back = response_to_wire(response, "gemini-2.5-pro")
    assert back["candidates"][0]["finishReason"] == "STOP"
    assert back["candidates"][0]["content"]["parts"][0] == {
        "functionCall": {"id": calls[0].id, "name": "get_temperature", "args": {"location": "London"}},
        "thoughtSignature": "CiQB0e2Kb3dRh+BYdbZvmulSN2Pwwc75myDA==",
    }
    assert back["usageMetadata"] == {"promptTokenCount": 62, "candidatesTokenCount": 30, "totalTokenCount": 152, "thoughtsTokenCount": 60}


def test_thoughts_and_cached_tokens(examples):
    response = response_from_wire(examples.json("generate_response_thoughts_cached.json"))
    thought, text = response.parts
    assert isinstance(thought, ReasoningPart) and thought.provider_metadata == {"gemini_thought": True}
    assert text == TextPart("The answer is 17.", {"gemini_thought_signature": "EuYBCuMBAcu98PBXHAb"})
    assert response.stop_reason is StopReason.MAX_TOKENS
    assert response.usage == Usage(input_tokens=2054, output_tokens=96, cached_input_tokens=2048, reasoning_tokens=90)
    openai = openai_to_wire(response, "gemini-x")
    assert openai["choices"][0]["finish_reason"] == "length"
    assert openai["choices"][0]["message"]["reasoning_content"].startswith("**Weighing")
    assert openai["usage"]["prompt_tokens_details"]["cached_tokens"] == 2048
    assert openai["usage"]["completion_tokens_details"]["reasoning_tokens"] == 90
    parts = response_to_wire(response, "gemini-2.5-flash")["candidates"][0]["content"]["parts"]
    assert parts == examples.json("generate_response_thoughts_cached.json")["candidates"][0]["content"]["parts"]


def test_blocked_prompt_is_a_content_filter_stop(examples):
    response = response_from_wire(examples.json("generate_response_blocked.json"))
    assert response.parts == () and response.stop_reason is StopReason.CONTENT_FILTER
    assert openai_to_wire(response, "m")["choices"][0]["finish_reason"] == "content_filter"
    back = response_to_wire(response, "m")
    assert back["promptFeedback"]["blockReason"] == "SAFETY"


def test_openai_tool_call_response_to_gemini(openai_examples):
    response = openai_from_wire(openai_examples.json("chat_response_tool_calls.json"))
    body = response_to_wire(response, "gpt-test")
    candidate = body["candidates"][0]
    assert candidate["finishReason"] == "STOP"
    assert candidate["content"]["parts"] == [
        {"functionCall": {"id": "call_Vb6Qm0D3kT2pXh7uYd1Ls9aZ", "name": "get_weather", "args": {"location": "Paris, France", "unit": "celsius"}}},
        {"functionCall": {"id": "call_R2nW8cJ5eK4gF1tP0oXy7Hqb", "name": "get_weather", "args": {"location": "Tokyo, Japan", "unit": "celsius"}}},
    ]
    assert body["usageMetadata"] == {"promptTokenCount": 118, "candidatesTokenCount": 58, "totalTokenCount": 176}
    assert (body["modelVersion"], body["responseId"]) == ("gpt-test", "chatcmpl-C1xB2mHn0sWq6eRt4YuI8oPa1SdF3")


def test_other_providers_reasoning_is_a_thought_only_when_asked(openai_examples):
    response = openai_from_wire(openai_examples.json("chat_response_reasoning_cached.json"))
    plain = response_to_wire(response, "deepseek")["candidates"][0]["content"]["parts"]
    assert plain == [{"text": "9.11 is smaller than 9.8."}]
    with_thoughts = response_to_wire(response, "deepseek", thoughts=True)
    assert with_thoughts["candidates"][0]["content"]["parts"][0]["thought"] is True
    assert with_thoughts["usageMetadata"] == {
        "promptTokenCount": 1542,
        "candidatesTokenCount": 36,
        "totalTokenCount": 1729,
        "cachedContentTokenCount": 1536,
        "thoughtsTokenCount": 151,
    }


@pytest.mark.parametrize(
    ("wire", "core"),
    [
        ("STOP", StopReason.END_TURN),
        ("MAX_TOKENS", StopReason.MAX_TOKENS),
        ("SAFETY", StopReason.CONTENT_FILTER),
        ("RECITATION", StopReason.CONTENT_FILTER),
        ("PROHIBITED_CONTENT", StopReason.CONTENT_FILTER),
        ("MALFORMED_FUNCTION_CALL", StopReason.ERROR),
        ("OTHER", StopReason.ERROR),
        ("FINISH_REASON_UNSPECIFIED", None),
        (None, None),
    ],
)
def test_finish_reasons(wire, core):
    assert stop_reason_from_wire(wire) is core


def test_every_core_stop_reason_has_a_finish_reason():
    assert {r: finish_reason_to_wire(r) for r in StopReason} == {
        StopReason.END_TURN: "STOP",
        StopReason.MAX_TOKENS: "MAX_TOKENS",
        StopReason.TOOL_USE: "STOP",
        StopReason.STOP_SEQUENCE: "STOP",
        StopReason.CONTENT_FILTER: "SAFETY",
        StopReason.ERROR: "OTHER",
    }
    assert finish_reason_to_wire(None) == "STOP"


def test_usage_counts_tool_use_prompts_and_reads_int64_strings():
    usage = usage_from_wire({"promptTokenCount": "10", "toolUsePromptTokenCount": 5, "candidatesTokenCount": 3, "thoughtsTokenCount": 2})
    assert usage == Usage(input_tokens=15, output_tokens=5, reasoning_tokens=2)
    assert usage_to_wire(usage) == {"promptTokenCount": 15, "candidatesTokenCount": 3, "totalTokenCount": 20, "thoughtsTokenCount": 2}
    assert usage_from_wire(None) is None


def test_an_error_body_is_not_a_response(examples):
    with pytest.raises(UpstreamError) as caught:
        response_from_wire(examples.json("error_invalid_argument.json"))
    assert "contents is not specified" in caught.value.message


def test_written_response_has_a_finish_reason_even_without_a_stop_reason():
    body = response_to_wire(ChatResponse(id="", model="m", parts=(TextPart("hi"),), stop_reason=None), "m")
    assert body["candidates"][0]["finishReason"] == "STOP" and "responseId" not in body
